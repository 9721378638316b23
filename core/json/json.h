// core/json — RapidJSON helpers that every other layer stands on.
//
//  * parse():       hardened parsing of untrusted text (a plugin or engine under test, a trace file,
//                   a scenario). Validates UTF-8, caps nesting depth BEFORE building the DOM (RapidJSON
//                   overflows the stack around 10^6 levels), rejects non-finite numbers (RapidJSON
//                   parses 1.8e308 to +inf without error and its Writer then writes nothing), reports
//                   duplicate member names (RapidJSON accepts them silently), refuses lone
//                   surrogate escapes ("\udc80": not UTF-8 once decoded), reads numbers correctly
//                   rounded (so parse(canonical(v)) == v exactly) and never uses
//                   kParseFullPrecisionFlag (it segfaults on `0.` + 360 zeros + a digit).
//  * Path / ObjectMapper / fromJSON(): typed field access whose errors carry the JSON path, in the
//                   style of clangd's Protocol.h:  `params.capabilities.tools: expected boolean,
//                   found string`.
//  * matchSubset(): the subset-pattern matcher the scenario DSL and replay use (wildcards, captures).
//  * compact() / canonical(): writing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "core/util/expected.h"

namespace conform::json {

using Value = rapidjson::Value;
using Document = rapidjson::Document;
using Allocator = rapidjson::Document::AllocatorType;

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

// Nesting deeper than this is refused before RapidJSON sees the text (its recursive parser,
// writer and every validator would overflow the stack long before 10^6 levels).
inline constexpr std::size_t kDefaultMaxDepth = 512;

// True when decoded string bytes hold a UTF-16 surrogate. RapidJSON's escape decoder turns "\udc80"
// (a low surrogate with no high one before it) into ED B2 80, the UTF-8 form of a surrogate, which
// is not UTF-8 (RFC 3629) — and kParseValidateEncodingFlag validates only the input bytes, not what
// escapes decode to. In text that is valid UTF-8, ED followed by A0..BF can only come from such an
// escape, so this is the whole check (FRAME-04). Used by parse() and by core/trace's own SAX pass.
inline bool holdsSurrogate(const char* s, std::size_t n) {
  const char* end = s + n;
  for (const char* p = s; p < end;) {
    p = static_cast<const char*>(std::memchr(p, '\xED', static_cast<std::size_t>(end - p)));
    if (!p || p + 1 >= end) return false;
    const auto next = static_cast<unsigned char>(p[1]);
    if (next >= 0xA0 && next <= 0xBF) return true;
    ++p;
  }
  return false;
}

struct ParseOptions {
  std::size_t max_depth = kDefaultMaxDepth;
  // Duplicate member names are reported in ParseResult::duplicates; when true they are an error.
  bool reject_duplicates = false;
  // The caller already checked that `text` is valid UTF-8 (a FrameDecoder frame: FRAME-04/05), so
  // RapidJSON's per-string re-validation (~28% of a frame decode) is skipped. Never set it for text
  // that did not come through such a check.
  bool utf8_prevalidated = false;
};

enum class ParseErrorKind {
  Syntax,       // not JSON, trailing garbage, empty input
  InvalidUtf8,  // a byte sequence that is not UTF-8, or a lone surrogate escape ("\udc80")
  TooDeep,      // nesting beyond ParseOptions::max_depth
  NonFinite,    // a number that overflows double (parses to ±inf)
  Duplicate,    // duplicate member name, when ParseOptions::reject_duplicates
};

struct ParseError {
  ParseErrorKind kind = ParseErrorKind::Syntax;
  std::size_t offset = 0;   // byte offset of the problem in the input
  std::string message;      // human text, e.g. "invalid value at offset 3"
};
const char* toString(ParseErrorKind);

struct Parsed {
  Document doc;
  // JSON paths (Path::str() form) of every member name that repeats within one object.
  std::vector<std::string> duplicates;
};

// Parses exactly one JSON value (any type; leading/trailing whitespace allowed, nothing else).
Expected<Parsed, ParseError> parse(std::string_view text, const ParseOptions& = {});

// ---------------------------------------------------------------------------------------------
// Paths and typed access (clangd style)
// ---------------------------------------------------------------------------------------------

// A position inside a JSON document, built on the stack while decoding; only turned into text when
// an error is reported. Root holds the first error. Rendering: `params.capabilities.tools`,
// `tools[2].name`, and `<root>` for the root itself; keys that are not identifiers are quoted:
// `headers["x-api-key"]`.
class Path {
 public:
  class Root {
   public:
    explicit Root(std::string name = "") : name_(std::move(name)) {}
    bool failed() const { return error_.has_value(); }
    // "params.capabilities.tools: expected boolean, found string"
    const std::optional<std::string>& error() const { return error_; }
    // Only the path part of the first error ("params.capabilities.tools").
    const std::string& errorPath() const { return error_path_; }
    const std::string& errorMessage() const { return error_msg_; }

   private:
    friend class Path;
    std::string name_;
    std::optional<std::string> error_;
    std::string error_path_, error_msg_;
  };

  Path(Root& root) : root_(&root) {}  // NOLINT: implicit on purpose, like clangd's llvm::json::Path
  Path field(std::string_view key) const { return Path(root_, this, key, 0, Seg::Field); }
  Path index(std::size_t i) const { return Path(root_, this, {}, i, Seg::Index); }

  // Records `message` at this path unless an earlier error was recorded. Always returns false so
  // decoders can `return P.report("expected string");`.
  bool report(std::string_view message) const;
  std::string str() const;
  Root& root() const { return *root_; }

 private:
  enum class Seg { Root, Field, Index };
  Path(Root* r, const Path* parent, std::string_view key, std::size_t idx, Seg s)
      : root_(r), parent_(parent), key_(key), index_(idx), seg_(s) {}
  Root* root_;
  const Path* parent_ = nullptr;
  std::string_view key_;
  std::size_t index_ = 0;
  Seg seg_ = Seg::Root;
};

// "null", "boolean", "integer", "number", "string", "array", "object".
const char* typeName(const Value&);

// fromJSON overloads for scalars and containers. Each returns false after P.report(...).
// Integers: int64 accepts any JSON integer in range; uint64 rejects negatives; neither accepts 1.0.
bool fromJSON(const Value&, bool&, Path);
bool fromJSON(const Value&, std::int64_t&, Path);
bool fromJSON(const Value&, std::uint64_t&, Path);
bool fromJSON(const Value&, std::uint32_t&, Path);
bool fromJSON(const Value&, std::int32_t&, Path);
bool fromJSON(const Value&, double&, Path);
bool fromJSON(const Value&, std::string&, Path);
// Keeps any JSON value (deep copy into its own Document).
bool fromJSON(const Value&, Document&, Path);

template <class T>
bool fromJSON(const Value& v, std::vector<T>& out, Path p) {
  if (!v.IsArray()) return p.report(std::string("expected array, found ") + typeName(v));
  out.clear();
  out.resize(v.Size());
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
    if (!fromJSON(v[i], out[i], p.index(i))) return false;
  return true;
}
template <class T>
bool fromJSON(const Value& v, std::map<std::string, T>& out, Path p) {
  if (!v.IsObject()) return p.report(std::string("expected object, found ") + typeName(v));
  out.clear();
  for (auto& m : v.GetObject()) {
    std::string k(m.name.GetString(), m.name.GetStringLength());
    if (!fromJSON(m.value, out[k], p.field(k))) return false;
  }
  return true;
}
template <class T>
bool fromJSON(const Value& v, std::optional<T>& out, Path p) {
  if (v.IsNull()) { out.reset(); return true; }
  out.emplace();
  return fromJSON(v, *out, p);
}

// Decodes the members of one object. Typical use in a message decoder:
//   bool fromJSON(const Value& v, PingParams& r, Path p) {
//     ObjectMapper o(v, p);
//     return o && o.map("session_id", r.session_id) && o.mapOptional("reason", r.reason) &&
//            o.closed();
//   }
// Presence rules of PROTOCOL.md §0.3:
//   map()          `req`       present and non-null
//   mapNullable()  `req/null`  present; null allowed (T must be std::optional<…>)
//   mapOptional()  `opt`       may be absent; null equals absent (T must be std::optional<…>)
//   mapDefault()   `opt=V`     may be absent (keeps the caller's default); null is an error
// closed() fails on any member that no map*() call named (closed objects, deny_unknown_fields).
class ObjectMapper {
 public:
  ObjectMapper(const Value& v, Path p);
  explicit operator bool() const { return ok_; }

  template <class T>
  bool map(std::string_view key, T& out) {
    note(key);
    const Value* m = find(key);
    if (!m) return path_.field(key).report("required member is missing");
    if (m->IsNull()) return path_.field(key).report("required member is null");
    return fromJSON(*m, out, path_.field(key));
  }
  template <class T>
  bool mapNullable(std::string_view key, std::optional<T>& out) {
    note(key);
    const Value* m = find(key);
    if (!m) return path_.field(key).report("required member is missing (it may be null)");
    return fromJSON(*m, out, path_.field(key));
  }
  template <class T>
  bool mapOptional(std::string_view key, std::optional<T>& out) {
    note(key);
    const Value* m = find(key);
    if (!m || m->IsNull()) { out.reset(); return true; }
    out.emplace();
    return fromJSON(*m, *out, path_.field(key));
  }
  template <class T>
  bool mapDefault(std::string_view key, T& out) {
    note(key);
    const Value* m = find(key);
    if (!m) return true;
    if (m->IsNull()) return path_.field(key).report("member may be omitted but must not be null");
    return fromJSON(*m, out, path_.field(key));
  }
  // Member lookup without decoding (nullptr when absent). Counts as "known" for closed().
  const Value* get(std::string_view key) { note(key); return find(key); }
  bool closed();
  Path path() const { return path_; }

 private:
  const Value* find(std::string_view key) const;
  void note(std::string_view key) { known_.push_back(key); }
  const Value* v_;
  Path path_;
  bool ok_;
  std::vector<std::string_view> known_;
};

// Convenience: decodes a whole value into T and returns the first error as "path: message".
template <class T>
Expected<T, std::string> decode(const Value& v, std::string_view root_name = "") {
  Path::Root root{std::string(root_name)};
  T out{};
  if (!fromJSON(v, out, Path(root))) return unexpected(root.error().value_or("invalid value"));
  return out;
}

// Member access helpers that never throw or assert on the wrong type.
const Value* member(const Value& obj, std::string_view key);        // nullptr unless obj is object
std::optional<std::string_view> stringMember(const Value& obj, std::string_view key);

// ---------------------------------------------------------------------------------------------
// Subset-pattern matching (the DSL's `expect`, replay's comparison)
// ---------------------------------------------------------------------------------------------
//
// A pattern is an ordinary JSON value. Matching rules:
//   * object pattern: every member of the pattern must exist in the subject and match; extra
//     subject members are allowed (that is what "subset" means);
//   * array pattern: same length, element-wise match;
//   * numbers compare by value (1 == 1.0); other scalars by type and value;
//   * the string "$*" matches any value, including null, but not an absent member;
//   * the string "$?" as a member value means "this member must be ABSENT from the subject";
//   * a string "$name" or "$name.field.sub" (identifier characters, dots for member paths) is a
//     capture reference: if `name` is bound in Captures, the subject must equal the bound value
//     (or the named member of it); if it is unbound (and has no dots), it binds to the subject;
//   * "$$…" is the literal string "$…".
using Captures = std::map<std::string, Document, std::less<>>;

struct Mismatch {
  std::string path;     // where in the subject, e.g. "params.bus"
  std::string expected; // compact text of the pattern part
  std::string actual;   // compact text of the subject part, or "(absent)"
  std::string str() const;  // "params.bus: expected \"published\", found \"dropped\""
};

// On success new captures are added to `caps`; on failure `caps` is left unchanged.
std::optional<Mismatch> matchSubset(const Value& pattern, const Value& subject, Captures& caps);

// Looks up "$name" / "$name.a.b" in caps (the leading '$' optional). nullptr when unbound.
const Value* resolveCapture(const Captures& caps, std::string_view ref);

// Replaces every capture reference in `pattern` by its bound value (for `send` steps). Unbound
// references are an error naming the first one.
Expected<Document, std::string> substitute(const Value& pattern, const Captures& caps);

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

// Compact, member order preserved.
std::string compact(const Value&);
// Compact with object members sorted by name (bytewise), recursively: equal values give equal
// text. Used for idempotency comparisons, golden files and replay normalisation.
std::string canonical(const Value&);
// Deep equality with numbers compared by value and member order ignored. A repeated member name
// counts once, with its last value (the one decoders keep): {"a":1,"a":2} equals {"a":2}.
bool equal(const Value& a, const Value& b);

// Helpers to build values.
Value str(std::string_view s, Allocator& a);
// A deep copy that owns every string. Values parsed in situ (core/trace's reader reuses one line
// buffer) hold "const" strings pointing into that buffer; RapidJSON's default CopyFrom keeps such
// pointers, which dangle once the next line is read (RapidJSON 1.1 has no copyConstStrings flag).
// So core/ never calls CopyFrom on a value it did not build itself: it calls deepCopy.
Document copy(const Value& v);
void deepCopy(Value& out, const Value& in, Allocator& a);

}  // namespace conform::json
