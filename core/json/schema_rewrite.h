// core/json/schema_rewrite — internal helpers shared by schema.cpp and schema_check.cpp (not part
// of the public API): local `$ref` resolution, the PCRE2 wrapper, and the draft 2020-12 -> valijson
// rewrite described at the top of schema.h.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::json::schema_detail {

// Resolves a document-local reference ("#", "#/$defs/X", "#/properties/a~1b/items/0", percent
// encoding allowed). nullptr when it is not local or does not resolve.
const Value* resolveLocalRef(const Value& root, std::string_view ref);

// A compiled PCRE2 pattern (PCRE2_UTF|PCRE2_UCP), immutable and shareable between threads.
class Regex {
 public:
  static Expected<std::shared_ptr<const Regex>, std::string> compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Unanchored search (ECMA-262 `pattern` semantics). A match error (limit hit, bad UTF-8) is
  // reported as "no match" with `error` set.
  bool search(std::string_view subject, bool* error = nullptr) const;
  const std::string& source() const { return source_; }

 private:
  Regex() = default;
  void* code_ = nullptr;   // pcre2_code_8*
  void* mctx_ = nullptr;   // pcre2_match_context_8* (read-only after construction: shareable)
  std::string source_;
};

// Rewrites `schema` (draft 2020-12 as written by authors) into the form compiled by valijson.
// Fails on a non-local or unresolvable $ref or a $ref cycle that never descends into the instance
// (valijson would recurse forever on it). `uses_pattern_properties` is set when any schema has
// `patternProperties`.
Expected<Ok, std::string> rewriteForValijson(const Value& schema, Document& out,
                                             bool& uses_pattern_properties);

}  // namespace conform::json::schema_detail
