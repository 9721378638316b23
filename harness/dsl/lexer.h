// harness/dsl/lexer — splits one scenario line into tokens with their columns.
//
// Why a line lexer: the DSL is one step a line (docs/dsl.md), so a broken line can be reported and
// skipped without losing the rest of the file. JSON literals are cut out by bracket balance
// (strings respected) and parsed by core/json — never by a second JSON parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/dsl/plan.h"

namespace conform::dsl::detail {

struct Token {
  enum class Kind : std::uint8_t {
    Word,    // bare word: keywords, methods, $refs, numbers, durations, key=value, hex:…
    String,  // "…" (JSON string syntax), `text` holds the decoded value
    Json,    // {…} or […]; `json` holds the parsed value
    Text,    // text:"…" — `text` holds the decoded bytes
  };
  Kind kind = Kind::Word;
  std::string text;
  JsonPtr json;
  std::uint32_t column = 0;  // 1-based
};

// Lexes `line` (without its LF). Stops at a `#` outside strings/JSON. On error fills `err`
// (column and message) and returns false.
bool lexLine(std::string_view line, std::vector<Token>& out, std::uint32_t& err_column,
             std::string& err_message);

// Rewrites bare capture references ($name, $name.a.b) outside JSON strings into strings, so
// {"id": $r.id} becomes {"id": "$r.id"}. `shifts` receives, per rewrite, the rewritten offset
// after which two bytes were inserted (for mapping error offsets back to columns).
std::string quoteBareRefs(std::string_view json, std::vector<std::size_t>* shifts = nullptr);

// Decodes hex digits ("ff0A", spaces and '_' ignored). False on odd length or a non-hex char.
bool decodeHex(std::string_view hex, std::string& out);

}  // namespace conform::dsl::detail
