// core/json — hardened parsing, paths, typed decoding and writing (see json.h for the contract).
//
// Why parse() is built the way it is (DEPENDENCIES.md, "JSON: RapidJSON 1.1.0"):
//  * RapidJSON's recursive descent overflows the stack around 10^6 nesting levels. We run the
//    Reader ourselves with a thin SAX handler that forwards to the Document and refuses the
//    (max_depth+1)-th StartObject/StartArray *before* the parser recurses into it, so the stack
//    depth is bounded by max_depth frames whatever the input. This is the depth "pre-scan" done in
//    the same single pass as the parse (no second walk over the text).
//  * 1.8e308 parses to +inf without error; the handler refuses non-finite doubles on the spot.
//  * Duplicate member names are accepted silently by RapidJSON; the handler notes whether any
//    object had >= 2 members, and only then a walk over the DOM looks for repeats (small objects:
//    pairwise compare; large ones: sort).
//  * kParseValidateEncodingFlag validates UTF-8 inside strings; escapes are checked after
//    decoding (a lone "\udc80" decodes to a UTF-8-encoded surrogate, which is not UTF-8).
//  * kParseFullPrecisionFlag is never used (it segfaults on `0.` + 360 zeros + a digit); doubles
//    are re-read from their text with std::from_chars, which is correctly rounded, so a double
//    written by compact()/canonical() (Grisu2: round-trips) reads back bit for bit. kParseStopWhenDoneFlag is never used (`{}{}` must be a Syntax error). A NUL byte looks like end-of-input to RapidJSON's streams,
//    so after a successful parse the stream must have consumed every byte.
#include "core/json/json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace conform::json {

const char* toString(ParseErrorKind k) {
  switch (k) {
    case ParseErrorKind::Syntax: return "syntax";
    case ParseErrorKind::InvalidUtf8: return "invalid-utf8";
    case ParseErrorKind::TooDeep: return "too-deep";
    case ParseErrorKind::NonFinite: return "non-finite";
    case ParseErrorKind::Duplicate: return "duplicate";
  }
  return "unknown";
}

namespace {

// Decimal exponent of the leading significant digit of a JSON number that std::from_chars reported
// out of range, so overflow (refused as NonFinite) can be told from underflow (a JSON number like
// 1e-400 is valid and reads as 0, as RapidJSON and strtod read it). Saturates on absurd exponents.
long leadingDecimalExponent(std::string_view num) {
  std::size_t i = 0;
  if (i < num.size() && num[i] == '-') ++i;
  long e10 = 0;
  bool nonzero = false;
  for (; i < num.size() && num[i] >= '0' && num[i] <= '9'; ++i) {
    if (nonzero) ++e10;
    else if (num[i] != '0') nonzero = true;
  }
  if (i < num.size() && num[i] == '.') {
    for (++i; i < num.size() && num[i] >= '0' && num[i] <= '9'; ++i) {
      if (nonzero) continue;
      --e10;
      if (num[i] != '0') nonzero = true;
    }
  }
  long exp = 0;
  if (i < num.size() && (num[i] == 'e' || num[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < num.size() && (num[i] == '+' || num[i] == '-')) neg = num[i++] == '-';
    constexpr long kSaturate = 1'000'000;
    for (; i < num.size() && num[i] >= '0' && num[i] <= '9'; ++i) exp = std::min(kSaturate, exp * 10 + (num[i] - '0'));
    if (neg) exp = -exp;
  }
  return e10 + exp;
}

// Character classes of the JSON number grammar, for the backward scan in GuardHandler::Double().
enum : std::uint8_t { kNotNumber = 0, kDigit, kPoint, kExponent, kSign };
constexpr std::array<std::uint8_t, 256> kNumberChars = [] {
  std::array<std::uint8_t, 256> t{};
  for (char c = '0'; c <= '9'; ++c) t[static_cast<unsigned char>(c)] = kDigit;
  t['.'] = kPoint;
  t['e'] = t['E'] = kExponent;
  t['-'] = t['+'] = kSign;
  return t;
}();

// Forwards SAX events to the Document while enforcing the depth cap, finiteness and UTF-8 of
// decoded strings.
//
// Doubles are re-read from their text: RapidJSON's default conversion is not correctly rounded (a
// written double came back a few ulps away, so canonical() text drifted on every re-parse) and
// kParseFullPrecisionFlag crashes (see the top of this file). std::from_chars (libstdc++ 12:
// fast_float plus a big-decimal fallback) is correctly rounded for any input length, and the
// writer's Grisu2 output round-trips, so parse(canonical(v)) gives v back bit for bit. Integers
// that fit 64 bits are exact in RapidJSON already and keep its typing (Uint/Int/Uint64/Int64).
// The text is found without kParseNumbersAsStringsFlag, which copied every number twice through
// RapidJSON's stack and halved the parse rate of number-heavy frames: the MemoryStream is not
// copy-optimised (StreamTraits), so when Double() is called the stream stands just past the
// number, and the number is the run of number characters before it (what precedes a JSON number —
// `[`, `,`, `:`, whitespace or the start — is never one).
struct GuardHandler {
  Document& doc;
  std::size_t max_depth;
  const rapidjson::MemoryStream& is;
  std::string_view text;
  std::size_t depth = 0;
  bool too_deep = false;
  bool non_finite = false;
  bool surrogate = false;   // a decoded string held a UTF-16 surrogate (lone \uDC00..\uDFFF escape)
  bool bad_number = false;  // the text before the stream position is not a number (never seen)
  bool multi_member_object = false;  // some object had >= 2 members: duplicates possible

  bool Null() { return doc.Null(); }
  bool Bool(bool b) { return doc.Bool(b); }
  bool Int(int i) { return doc.Int(i); }
  bool Uint(unsigned u) { return doc.Uint(u); }
  bool Int64(std::int64_t i) { return doc.Int64(i); }
  bool Uint64(std::uint64_t u) { return doc.Uint64(u); }
  bool Double(double fast) {
    const std::size_t end = is.Tell();
    std::size_t begin = end, point = end, exponent = end;
    for (; begin > 0; --begin) {
      const auto k = kNumberChars[static_cast<unsigned char>(text[begin - 1])];
      if (k == kNotNumber) break;
      if (k == kPoint) point = begin - 1;
      else if (k == kExponent) exponent = begin - 1;
    }
    if (begin == end) { bad_number = true; return false; }
    // RapidJSON's default conversion is already correctly rounded when the significand has at most
    // 15 digits (it accumulates them into an exact integer below 2^53) and the decimal scale p is
    // within ±22 (10^p is exact in its Pow10 table): one multiply or divide, rounded once —
    // Clinger's fast path. Most protocol numbers (0.7, 1.5e-3, 123.25) take it, skipping the
    // slower exact re-read.
    const std::size_t digits = (exponent - begin) - (text[begin] == '-') - (point < exponent);
    if (digits <= 15) {
      const long frac = point < exponent ? static_cast<long>(exponent - point - 1) : 0;
      long exp = 0;
      if (exponent < end) {
        std::size_t i = exponent + 1;
        const bool neg = text[i] == '-';
        if (text[i] == '-' || text[i] == '+') ++i;
        for (; i < end && exp <= 1000; ++i) exp = exp * 10 + (text[i] - '0');
        if (neg) exp = -exp;
      }
      if (exp - frac >= -22 && exp - frac <= 22) return doc.Double(fast);
    }
    double d = 0;
    auto r = std::from_chars(text.data() + begin, text.data() + end, d);
    if (r.ptr != text.data() + end) { bad_number = true; return false; }
    if (r.ec == std::errc::result_out_of_range) {
      if (leadingDecimalExponent(text.substr(begin, end - begin)) >= 0) { non_finite = true; return false; }
      d = text[begin] == '-' ? -0.0 : 0.0;  // underflow: rounds to zero
    } else if (r.ec != std::errc()) {
      bad_number = true;
      return false;
    }
    if (!std::isfinite(d)) { non_finite = true; return false; }
    return doc.Double(d);
  }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) { return doc.RawNumber(s, n, copy); }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    if (holdsSurrogate(s, n)) { surrogate = true; return false; }
    return doc.String(s, n, copy);
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    if (holdsSurrogate(s, n)) { surrogate = true; return false; }
    return doc.Key(s, n, copy);
  }
  bool StartObject() {
    if (++depth > max_depth) { too_deep = true; return false; }
    return doc.StartObject();
  }
  bool EndObject(rapidjson::SizeType n) {
    --depth;
    if (n >= 2) multi_member_object = true;
    return doc.EndObject(n);
  }
  bool StartArray() {
    if (++depth > max_depth) { too_deep = true; return false; }
    return doc.StartArray();
  }
  bool EndArray(rapidjson::SizeType n) { --depth; return doc.EndArray(n); }
};

constexpr unsigned kParseFlags = rapidjson::kParseValidateEncodingFlag;
constexpr unsigned kParsePrevalidatedFlags = rapidjson::kParseDefaultFlags;

bool sameName(const Value& a, const Value& b) {
  return a.GetStringLength() == b.GetStringLength() &&
         std::memcmp(a.GetString(), b.GetString(), a.GetStringLength()) == 0;
}
std::string_view nameView(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

// Objects up to this many members are checked pairwise (no allocation); larger ones are sorted.
constexpr rapidjson::SizeType kSmallObject = 8;

void findDuplicates(const Value& v, const Path& p, std::vector<std::string>& out) {
  if (v.IsArray()) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
      if (v[i].IsObject() || v[i].IsArray()) findDuplicates(v[i], p.index(i), out);
    return;
  }
  if (!v.IsObject()) return;
  const rapidjson::SizeType n = v.MemberCount();
  if (n >= 2) {
    std::vector<std::string_view> reported;
    auto report = [&](std::string_view name) {
      if (std::find(reported.begin(), reported.end(), name) != reported.end()) return;
      reported.push_back(name);
      out.push_back(p.field(name).str());
    };
    auto begin = v.MemberBegin();
    if (n <= kSmallObject) {
      for (rapidjson::SizeType i = 1; i < n; ++i)
        for (rapidjson::SizeType j = 0; j < i; ++j)
          if (sameName(begin[i].name, begin[j].name)) { report(nameView(begin[i].name)); break; }
    } else {
      std::vector<std::string_view> names;
      names.reserve(n);
      for (auto& m : v.GetObject()) names.push_back(nameView(m.name));
      std::vector<std::string_view> sorted = names;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
        // Report in document order of the second occurrence.
        std::vector<std::string_view> seen;
        for (auto nm : names) {
          auto it = std::lower_bound(sorted.begin(), sorted.end(), nm);
          bool repeated = (it + 1 != sorted.end() && *(it + 1) == nm);
          if (!repeated) continue;
          if (std::find(seen.begin(), seen.end(), nm) != seen.end()) report(nm);
          else seen.push_back(nm);
        }
      }
    }
  }
  for (auto& m : v.GetObject())
    if (m.value.IsObject() || m.value.IsArray()) findDuplicates(m.value, p.field(nameView(m.name)), out);
}

}  // namespace

Expected<Parsed, ParseError> parse(std::string_view text, const ParseOptions& opts) {
  Parsed out;
  // The raw MemoryStream on purpose: EncodedInputStream would skip a BOM, which FRAME-14 makes an
  // error.
  rapidjson::MemoryStream is(text.data(), text.size());
  rapidjson::Reader reader;
  GuardHandler h{out.doc, opts.max_depth, is, text};
  auto gen = [&](Document& d) {
    (void)d;
    if (opts.utf8_prevalidated) return !reader.Parse<kParsePrevalidatedFlags>(is, h).IsError();
    return !reader.Parse<kParseFlags>(is, h).IsError();
  };
  out.doc.Populate(gen);

  if (reader.HasParseError()) {
    ParseError e;
    e.offset = reader.GetErrorOffset();
    auto code = reader.GetParseErrorCode();
    if (h.too_deep) {
      e.kind = ParseErrorKind::TooDeep;
      e.message = "nesting deeper than " + std::to_string(opts.max_depth) + " levels at offset " +
                  std::to_string(e.offset);
    } else if (h.non_finite || code == rapidjson::kParseErrorNumberTooBig) {
      e.kind = ParseErrorKind::NonFinite;
      e.message = "number out of range (not a finite double) before offset " + std::to_string(e.offset);
    } else if (code == rapidjson::kParseErrorStringInvalidEncoding) {
      e.kind = ParseErrorKind::InvalidUtf8;
      e.message = "invalid UTF-8 in string at offset " + std::to_string(e.offset);
    } else if (h.surrogate || code == rapidjson::kParseErrorStringUnicodeSurrogateInvalid) {
      // A lone surrogate escape decodes to no Unicode scalar value: the text is not valid UTF-8
      // once decoded (FRAME-04/05), the same finding as a raw surrogate byte sequence.
      e.kind = ParseErrorKind::InvalidUtf8;
      e.message = "lone UTF-16 surrogate escape (\\uD800-\\uDFFF without its pair) in string " +
                  std::string(h.surrogate ? "ending at offset " : "at offset ") + std::to_string(e.offset);
    } else if (h.bad_number) {
      e.kind = ParseErrorKind::Syntax;
      e.message = "unreadable number before offset " + std::to_string(e.offset);
    } else {
      e.kind = ParseErrorKind::Syntax;
      e.message = std::string(rapidjson::GetParseError_En(code));
      if (!e.message.empty() && e.message.back() == '.') e.message.pop_back();
      e.message += " at offset " + std::to_string(e.offset);
    }
    return unexpected(std::move(e));
  }
  if (is.Tell() != text.size()) {
    // RapidJSON's stream reports '\0' at end of input, so an embedded NUL byte stops it early.
    ParseError e;
    e.kind = ParseErrorKind::Syntax;
    e.offset = is.Tell();
    e.message = "unexpected NUL byte at offset " + std::to_string(e.offset);
    return unexpected(std::move(e));
  }
  if (h.multi_member_object) {
    Path::Root root;
    findDuplicates(out.doc, Path(root), out.duplicates);
    if (!out.duplicates.empty() && opts.reject_duplicates) {
      ParseError e;
      e.kind = ParseErrorKind::Duplicate;
      e.offset = 0;
      e.message = "duplicate member name: " + out.duplicates.front();
      return unexpected(std::move(e));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Path
// ---------------------------------------------------------------------------------------------

namespace {

bool isIdentifier(std::string_view k) {
  if (k.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(k[0])) return false;
  for (char c : k)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

void appendQuoted(std::string& out, std::string_view s) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  out.append(sb.GetString(), sb.GetSize());
}

}  // namespace

bool Path::report(std::string_view message) const {
  if (!root_->error_) {
    root_->error_path_ = str();
    root_->error_msg_ = std::string(message);
    root_->error_ = root_->error_path_ + ": " + root_->error_msg_;
  }
  return false;
}

std::string Path::str() const {
  std::vector<const Path*> chain;
  for (const Path* p = this; p && p->seg_ != Seg::Root; p = p->parent_) chain.push_back(p);
  std::string out = root_->name_;
  if (chain.empty()) return out.empty() ? "<root>" : out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Path* p = *it;
    if (p->seg_ == Seg::Index) {
      out += '[';
      out += std::to_string(p->index_);
      out += ']';
    } else if (isIdentifier(p->key_)) {
      if (!out.empty()) out += '.';
      out += p->key_;
    } else {
      out += '[';
      appendQuoted(out, p->key_);
      out += ']';
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Typed decoding
// ---------------------------------------------------------------------------------------------

const char* typeName(const Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return "boolean";
    case rapidjson::kNumberType: return v.IsDouble() ? "number" : "integer";
    case rapidjson::kStringType: return "string";
    case rapidjson::kArrayType: return "array";
    case rapidjson::kObjectType: return "object";
  }
  return "unknown";
}

namespace {
bool expected(const Value& v, const char* what, const Path& p) {
  return p.report(std::string("expected ") + what + ", found " + typeName(v));
}
bool outOfRange(const Value& v, const char* what, const Path& p) {
  return p.report(std::string("expected ") + what + ", found " + compact(v));
}
bool isInteger(const Value& v) { return v.IsNumber() && !v.IsDouble(); }
}  // namespace

bool fromJSON(const Value& v, bool& out, Path p) {
  if (!v.IsBool()) return expected(v, "boolean", p);
  out = v.GetBool();
  return true;
}
bool fromJSON(const Value& v, std::int64_t& out, Path p) {
  if (!isInteger(v)) return expected(v, "integer", p);
  if (!v.IsInt64()) return outOfRange(v, "64-bit signed integer", p);
  out = v.GetInt64();
  return true;
}
bool fromJSON(const Value& v, std::uint64_t& out, Path p) {
  if (!isInteger(v)) return expected(v, "integer", p);
  if (!v.IsUint64()) return outOfRange(v, "non-negative integer", p);
  out = v.GetUint64();
  return true;
}
bool fromJSON(const Value& v, std::uint32_t& out, Path p) {
  if (!isInteger(v)) return expected(v, "integer", p);
  if (!v.IsUint()) return outOfRange(v, "integer in [0, 4294967295]", p);
  out = v.GetUint();
  return true;
}
bool fromJSON(const Value& v, std::int32_t& out, Path p) {
  if (!isInteger(v)) return expected(v, "integer", p);
  if (!v.IsInt()) return outOfRange(v, "integer in [-2147483648, 2147483647]", p);
  out = v.GetInt();
  return true;
}
bool fromJSON(const Value& v, double& out, Path p) {
  if (!v.IsNumber()) return expected(v, "number", p);
  out = v.GetDouble();
  return true;
}
bool fromJSON(const Value& v, std::string& out, Path p) {
  if (!v.IsString()) return expected(v, "string", p);
  out.assign(v.GetString(), v.GetStringLength());
  return true;
}
bool fromJSON(const Value& v, Document& out, Path) {
  out.SetNull();
  deepCopy(out, v, out.GetAllocator());
  return true;
}

ObjectMapper::ObjectMapper(const Value& v, Path p) : v_(&v), path_(p), ok_(v.IsObject()) {
  if (!ok_) expected(v, "object", p);
}

const Value* ObjectMapper::find(std::string_view key) const { return member(*v_, key); }

bool ObjectMapper::closed() {
  if (!ok_) return false;
  for (auto& m : v_->GetObject()) {
    std::string_view name = nameView(m.name);
    if (std::find(known_.begin(), known_.end(), name) == known_.end())
      return path_.field(name).report("unknown member");
  }
  return true;
}

const Value* member(const Value& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  for (auto& m : obj.GetObject())
    if (m.name.GetStringLength() == key.size() &&
        std::memcmp(m.name.GetString(), key.data(), key.size()) == 0)
      return &m.value;
  return nullptr;
}

std::optional<std::string_view> stringMember(const Value& obj, std::string_view key) {
  const Value* m = member(obj, key);
  if (!m || !m->IsString()) return std::nullopt;
  return nameView(*m);
}

// ---------------------------------------------------------------------------------------------
// Writing and comparison
// ---------------------------------------------------------------------------------------------

std::string compact(const Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

namespace {

// Doubles with an integral value in this range are written as integers by canonical(), so that
// values equal() calls equal (1 and 1.0) give equal text. 2^53: every integer below is exact.
constexpr double kExactIntegerLimit = 9007199254740992.0;

void writeCanonical(const Value& v, rapidjson::Writer<rapidjson::StringBuffer>& w) {
  if (v.IsObject()) {
    std::vector<const Value::Member*> ms;
    ms.reserve(v.MemberCount());
    for (auto& m : v.GetObject()) ms.push_back(&m);
    std::stable_sort(ms.begin(), ms.end(), [](const Value::Member* a, const Value::Member* b) {
      return nameView(a->name) < nameView(b->name);
    });
    w.StartObject();
    for (auto* m : ms) {
      w.Key(m->name.GetString(), m->name.GetStringLength());
      writeCanonical(m->value, w);
    }
    w.EndObject();
  } else if (v.IsArray()) {
    w.StartArray();
    for (auto& e : v.GetArray()) writeCanonical(e, w);
    w.EndArray();
  } else if (v.IsDouble()) {
    double d = v.GetDouble();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < kExactIntegerLimit)
      w.Int64(static_cast<std::int64_t>(d));
    else
      w.Double(d);
  } else {
    v.Accept(w);
  }
}

// Exact comparison of an integer-typed value with a double.
bool intEqualsDouble(const Value& i, double d) {
  if (!std::isfinite(d) || d != std::trunc(d)) return false;
  // 2^63 and 2^64 are exactly representable as doubles.
  constexpr double k2p63 = 9223372036854775808.0, k2p64 = 18446744073709551616.0;
  if (i.IsInt64()) {
    if (d < -k2p63 || d >= k2p63) return false;
    return static_cast<std::int64_t>(d) == i.GetInt64();
  }
  if (d < 0 || d >= k2p64) return false;
  return static_cast<std::uint64_t>(d) == i.GetUint64();
}

bool numbersEqual(const Value& a, const Value& b) {
  bool ad = a.IsDouble(), bd = b.IsDouble();
  if (ad && bd) return a.GetDouble() == b.GetDouble();
  if (ad) return intEqualsDouble(b, a.GetDouble());
  if (bd) return intEqualsDouble(a, b.GetDouble());
  if (a.IsInt64() && b.IsInt64()) return a.GetInt64() == b.GetInt64();
  if (a.IsUint64() && b.IsUint64()) return a.GetUint64() == b.GetUint64();
  return false;  // one is negative, the other above INT64_MAX
}

// True when a later member of the same object repeats `it`'s name (so `it` does not win).
bool shadowed(Value::ConstMemberIterator it, Value::ConstMemberIterator end) {
  for (auto later = it + 1; later != end; ++later)
    if (sameName(later->name, it->name)) return true;
  return false;
}

// The winning (last) member of that name, or nullptr.
const Value* lastMember(const Value& obj, std::string_view key) {
  for (auto it = obj.MemberEnd(); it != obj.MemberBegin();) {
    --it;
    if (nameView(it->name) == key) return &it->value;
  }
  return nullptr;
}

// The members of `o` sorted by name, keeping only the winner (last in document order) of each
// repeated name: the stable sort keeps document order within a run of equal names.
std::vector<const Value::Member*> winnersByName(const Value& o) {
  std::vector<const Value::Member*> ms;
  ms.reserve(o.MemberCount());
  for (auto& m : o.GetObject()) ms.push_back(&m);
  std::stable_sort(ms.begin(), ms.end(), [](const Value::Member* x, const Value::Member* y) {
    return nameView(x->name) < nameView(y->name);
  });
  std::vector<const Value::Member*> out;
  out.reserve(ms.size());
  for (std::size_t i = 0; i < ms.size(); ++i)
    if (i + 1 == ms.size() || !sameName(ms[i]->name, ms[i + 1]->name)) out.push_back(ms[i]);
  return out;
}

}  // namespace

std::string canonical(const Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  writeCanonical(v, w);
  return std::string(sb.GetString(), sb.GetSize());
}

bool equal(const Value& a, const Value& b) {
  if (a.IsNumber() && b.IsNumber()) return numbersEqual(a, b);
  if (a.GetType() != b.GetType()) return false;
  switch (a.GetType()) {
    case rapidjson::kNullType:
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return true;
    case rapidjson::kStringType: return sameName(a, b);
    case rapidjson::kArrayType:
      if (a.Size() != b.Size()) return false;
      for (rapidjson::SizeType i = 0; i < a.Size(); ++i)
        if (!equal(a[i], b[i])) return false;
      return true;
    case rapidjson::kObjectType: {
      // A repeated member name is read last-wins (decodeMessage, R4), so objects compare by the
      // winning value of each distinct name on both sides. Looking names up first-wins made
      // equal(x, x) false for {"type":"","type":{"k":0}} (fuzz_profile_0_0_6).
      if (a.MemberCount() > kSmallObject * 4 || b.MemberCount() > kSmallObject * 4) {
        // Large objects: sort both member lists by name instead of a quadratic lookup.
        auto ma = winnersByName(a), mb = winnersByName(b);
        if (ma.size() != mb.size()) return false;
        for (std::size_t i = 0; i < ma.size(); ++i)
          if (!sameName(ma[i]->name, mb[i]->name) || !equal(ma[i]->value, mb[i]->value)) return false;
        return true;
      }
      std::size_t distinct_a = 0;
      for (auto it = a.MemberBegin(); it != a.MemberEnd(); ++it) {
        if (shadowed(it, a.MemberEnd())) continue;
        ++distinct_a;
        const Value* o = lastMember(b, nameView(it->name));
        if (!o || !equal(it->value, *o)) return false;
      }
      // Every winner of `a` has an equal winner in `b`; the name sets are equal iff `b` has no more.
      std::size_t distinct_b = 0;
      for (auto it = b.MemberBegin(); it != b.MemberEnd(); ++it)
        if (!shadowed(it, b.MemberEnd())) ++distinct_b;
      return distinct_a == distinct_b;
    }
    default: return false;
  }
}

Value str(std::string_view s, Allocator& a) {
  return Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}

void deepCopy(Value& out, const Value& in, Allocator& a) {
  switch (in.GetType()) {
    case rapidjson::kStringType:
      out.SetString(in.GetString(), in.GetStringLength(), a);
      break;
    case rapidjson::kArrayType:
      out.SetArray();
      out.Reserve(in.Size(), a);
      for (auto& e : in.GetArray()) {
        Value v;
        deepCopy(v, e, a);
        out.PushBack(v, a);
      }
      break;
    case rapidjson::kObjectType:
      out.SetObject();
      for (auto& m : in.GetObject()) {
        Value k(m.name.GetString(), m.name.GetStringLength(), a);
        Value v;
        deepCopy(v, m.value, a);
        out.AddMember(k, v, a);
      }
      break;
    default:  // null, booleans, numbers: nothing points outside the value
      out.CopyFrom(in, a);
  }
}

Document copy(const Value& v) {
  Document d;
  deepCopy(d, v, d.GetAllocator());
  return d;
}

}  // namespace conform::json
