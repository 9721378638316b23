// core/json/schema_check — our own structural check that a value is a usable draft 2020-12 JSON
// Schema (INIT-21, SDK-03: tool `parameters` must pass meta-validation), plus the hand-written
// `uuid` and `date-time` format checks. Written from the draft 2020-12 specification's keyword
// definitions; no meta-schema text is embedded.
#include <array>
#include <string_view>
#include <unordered_set>

#include "core/json/schema.h"
#include "core/json/schema_rewrite.h"

namespace conform::json {

namespace {

std::string_view sv(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly n digits at s[pos..]; -1 if any is not a digit.
int digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!isDigit(s[pos + i])) return -1;
    v = v * 10 + (s[pos + i] - '0');
  }
  return v;
}

class Checker {
 public:
  explicit Checker(const Value& root) : root_(root) {}
  std::optional<SchemaViolation> error;

  bool schema(const Value& s, const Path& p) {
    if (s.IsBool()) return true;
    if (!s.IsObject()) return fail(p, std::string("expected a schema (object or boolean), found ") + typeName(s));
    for (auto& m : s.GetObject())
      if (!keyword(sv(m.name), m.value, p.field(sv(m.name)))) return false;
    return true;
  }

 private:
  bool fail(const Path& p, std::string msg) {
    error = SchemaViolation{p.str(), std::move(msg)};
    return false;
  }
  bool expect(bool ok, const Value& v, const char* what, const Path& p) {
    return ok || fail(p, std::string("expected ") + what + ", found " + typeName(v));
  }
  static bool nonNegInt(const Value& v) {
    if (v.IsUint64()) return true;
    if (v.IsDouble()) {
      double d = v.GetDouble();
      return d >= 0 && d == static_cast<double>(static_cast<std::uint64_t>(d));
    }
    return false;
  }
  bool uniqueStrings(const Value& v, const Path& p) {
    if (!v.IsArray()) return expect(false, v, "array of strings", p);
    std::unordered_set<std::string_view> seen;
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      if (!v[i].IsString()) return expect(false, v[i], "string", p.index(i));
      if (!seen.insert(sv(v[i])).second) return fail(p.index(i), "duplicate entry \"" + std::string(sv(v[i])) + "\"");
    }
    return true;
  }
  bool schemaMap(const Value& v, const Path& p, bool keys_are_patterns = false) {
    if (!v.IsObject()) return expect(false, v, "object", p);
    for (auto& m : v.GetObject()) {
      Path mp = p.field(sv(m.name));
      if (keys_are_patterns) {
        auto re = schema_detail::Regex::compile(sv(m.name));
        if (!re) return fail(mp, re.error());
      }
      if (!schema(m.value, mp)) return false;
    }
    return true;
  }
  bool schemaArray(const Value& v, const Path& p) {
    if (!v.IsArray()) return expect(false, v, "array of schemas", p);
    if (v.Size() == 0) return fail(p, "expected a non-empty array of schemas");
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
      if (!schema(v[i], p.index(i))) return false;
    return true;
  }
  bool typeName1(const Value& v, const Path& p) {
    static constexpr std::array<std::string_view, 7> kTypes = {"null", "boolean", "object", "array",
                                                               "number", "string", "integer"};
    if (!v.IsString()) return expect(false, v, "type name string", p);
    for (auto t : kTypes)
      if (sv(v) == t) return true;
    return fail(p, "unknown type name \"" + std::string(sv(v)) + "\"");
  }

  bool keyword(std::string_view k, const Value& v, const Path& p) {
    if (k == "type") {
      if (v.IsArray()) {
        if (!uniqueStrings(v, p)) return false;
        for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
          if (!typeName1(v[i], p.index(i))) return false;
        return true;
      }
      return typeName1(v, p);
    }
    if (k == "required") return uniqueStrings(v, p);
    if (k == "properties" || k == "$defs" || k == "definitions" || k == "dependentSchemas") return schemaMap(v, p);
    if (k == "patternProperties") return schemaMap(v, p, true);
    if (k == "additionalProperties" || k == "items" || k == "contains" || k == "propertyNames" || k == "if" ||
        k == "then" || k == "else" || k == "not" || k == "unevaluatedItems" || k == "unevaluatedProperties")
      return schema(v, p);
    if (k == "allOf" || k == "anyOf" || k == "oneOf" || k == "prefixItems") return schemaArray(v, p);
    if (k == "enum" || k == "examples") return expect(v.IsArray(), v, "array", p);
    if (k == "multipleOf") {
      if (!v.IsNumber()) return expect(false, v, "number", p);
      return v.GetDouble() > 0 || fail(p, "expected a number greater than 0");
    }
    if (k == "maximum" || k == "minimum" || k == "exclusiveMaximum" || k == "exclusiveMinimum")
      return expect(v.IsNumber(), v, "number", p);
    if (k == "maxLength" || k == "minLength" || k == "maxItems" || k == "minItems" || k == "maxProperties" ||
        k == "minProperties" || k == "minContains" || k == "maxContains")
      return nonNegInt(v) || fail(p, std::string("expected a non-negative integer, found ") + compact(v));
    if (k == "uniqueItems" || k == "readOnly" || k == "writeOnly" || k == "deprecated")
      return expect(v.IsBool(), v, "boolean", p);
    if (k == "pattern") {
      if (!v.IsString()) return expect(false, v, "string", p);
      auto re = schema_detail::Regex::compile(sv(v));
      return re || fail(p, re.error());
    }
    if (k == "format" || k == "$id" || k == "$schema" || k == "$anchor" || k == "$comment" || k == "title" ||
        k == "description" || k == "$dynamicRef" || k == "$dynamicAnchor" || k == "contentEncoding" ||
        k == "contentMediaType")
      return expect(v.IsString(), v, "string", p);
    if (k == "dependentRequired") {
      if (!v.IsObject()) return expect(false, v, "object", p);
      for (auto& m : v.GetObject())
        if (!uniqueStrings(m.value, p.field(sv(m.name)))) return false;
      return true;
    }
    if (k == "$ref") {
      if (!v.IsString()) return expect(false, v, "string", p);
      if (!schema_detail::resolveLocalRef(root_, sv(v)))
        return fail(p, "reference " + std::string(sv(v)) + " does not resolve within the document");
      return true;
    }
    return true;  // const, default, unknown keywords: any value
  }

  const Value& root_;
};

}  // namespace

std::optional<SchemaViolation> checkSchemaDocument(const Value& schema) {
  Checker c(schema);
  Path::Root root;
  if (c.schema(schema, Path(root))) return std::nullopt;
  return c.error;
}

bool isUuid(std::string_view s) {
  // Table-driven and branch-free over the 32 digits: lint checks the session_id of nearly every
  // frame (issue 6).
  static constexpr auto kHex = [] {
    std::array<std::uint8_t, 256> t{};
    for (int c = 0; c < 256; ++c)
      t[static_cast<std::size_t>(c)] = ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) ? 1 : 0;
    return t;
  }();
  if (s.size() != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') return false;
  unsigned ok = 1;
  for (std::size_t i = 0; i < 36; ++i)
    if (i != 8 && i != 13 && i != 18 && i != 23) ok &= kHex[static_cast<unsigned char>(s[i])];
  return ok != 0;
}

bool isDateTime(std::string_view s) {
  // full-date: YYYY-MM-DD
  int y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || s.size() < 20 || s[4] != '-' || s[7] != '-') return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  int maxd = kDays[mo - 1] + (mo == 2 && leap ? 1 : 0);
  if (d > maxd) return false;
  if (s[10] != 'T' && s[10] != 't') return false;
  // partial-time: HH:MM:SS[.frac]
  int h = digits(s, 11, 2), mi = digits(s, 14, 2), sec = digits(s, 17, 2);
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60 || s[13] != ':' || s[16] != ':') return false;
  std::size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    std::size_t start = ++pos;
    while (pos < s.size() && isDigit(s[pos])) ++pos;
    if (pos == start) return false;
  }
  if (pos >= s.size()) return false;
  int offset_minutes = 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh = digits(s, pos + 1, 2), om = digits(s, pos + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59 || pos + 3 >= s.size() || s[pos + 3] != ':') return false;
    offset_minutes = (s[pos] == '+' ? 1 : -1) * (oh * 60 + om);
    pos += 6;
  } else {
    return false;
  }
  if (pos != s.size()) return false;
  if (sec == 60) {
    // A leap second only exists at 23:59:60 UTC.
    int utc = ((h * 60 + mi - offset_minutes) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return false;
  }
  return true;
}

}  // namespace conform::json
