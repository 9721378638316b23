// Tests of json::parse() hardening: every RapidJSON pitfall listed in DEPENDENCIES.md must give a
// clean error value (never a crash, hang or silent acceptance), and conforming input must pass.
#include <catch2/catch.hpp>

#include <string>

#include "core/json/json.h"

using namespace conform;
using json::ParseErrorKind;

namespace {
ParseErrorKind kindOf(std::string_view text, const json::ParseOptions& o = {}) {
  auto r = json::parse(text, o);
  REQUIRE_FALSE(r);
  return r.error().kind;
}
}  // namespace

TEST_CASE("parse accepts any single JSON value with surrounding whitespace", "[json][parse]") {
  for (const char* ok : {"{}", "[]", " 1 ", "\"x\"", "null", "true", "\n{\"a\":[1,2,{\"b\":null}]}\r\n",
                         "-0", "1e-400", "12345678901234567890"}) {
    INFO(ok);
    auto r = json::parse(ok);
    REQUIRE(r);
    CHECK(r->duplicates.empty());
  }
}

TEST_CASE("FRAME-10 an empty or whitespace-only text is a syntax error", "[json][parse]") {
  CHECK(kindOf("") == ParseErrorKind::Syntax);
  CHECK(kindOf("   \n\t ") == ParseErrorKind::Syntax);
}

TEST_CASE("FRAME-13 unparseable JSON is a syntax error with an offset", "[json][parse]") {
  CHECK(kindOf("{") == ParseErrorKind::Syntax);
  CHECK(kindOf("[1,]") == ParseErrorKind::Syntax);
  CHECK(kindOf("NaN") == ParseErrorKind::Syntax);
  CHECK(kindOf("Infinity") == ParseErrorKind::Syntax);
  auto r = json::parse("{\"a\" 1}");
  REQUIRE_FALSE(r);
  CHECK(r.error().offset == 5);
  CHECK_THAT(r.error().message, Catch::Contains("offset 5"));
}

TEST_CASE("FRAME-13 trailing garbage after one value is a syntax error ({}{})", "[json][parse]") {
  CHECK(kindOf("{}{}") == ParseErrorKind::Syntax);
  CHECK(kindOf("{} x") == ParseErrorKind::Syntax);
  CHECK(kindOf("1 2") == ParseErrorKind::Syntax);
}

TEST_CASE("parse refuses an embedded NUL byte instead of treating it as end of input", "[json][parse]") {
  using namespace std::string_literals;
  auto r = json::parse("{}\0{\"x\":1}"s);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ParseErrorKind::Syntax);
  CHECK(r.error().offset == 2);
  CHECK(kindOf("\"a\0b\""s) == ParseErrorKind::Syntax);
}

TEST_CASE("FRAME-04 invalid UTF-8 inside a string is InvalidUtf8", "[json][parse]") {
  CHECK(kindOf("\"\xff\"") == ParseErrorKind::InvalidUtf8);
  CHECK(kindOf("{\"k\":\"\xc3\"}") == ParseErrorKind::InvalidUtf8);      // truncated sequence
  CHECK(kindOf("\"\xc0\xaf\"") == ParseErrorKind::InvalidUtf8);          // overlong '/'
  CHECK(kindOf("\"\xed\xa0\x80\"") == ParseErrorKind::InvalidUtf8);      // UTF-16 surrogate
  CHECK(kindOf("{\"\xfe\":1}") == ParseErrorKind::InvalidUtf8);          // in a member name
  CHECK(kindOf("\xff") != ParseErrorKind::TooDeep);                      // outside a string: error
  REQUIRE(json::parse("\"h\xc3\xa9llo \xf0\x9f\x8d\xaa\""));             // é and 🍪 are fine
}

TEST_CASE("FRAME-14 a UTF-8 byte-order mark makes the text unparseable", "[json][parse]") {
  auto r = json::parse("\xef\xbb\xbf{}");
  REQUIRE_FALSE(r);
}

TEST_CASE("numbers: 0. + 360 zeros + 1 parses without crashing (no full-precision flag)", "[json][parse]") {
  std::string n = "0." + std::string(360, '0') + "1";
  auto r = json::parse(n);
  REQUIRE(r);
  CHECK(r->doc.IsNumber());
  auto r2 = json::parse("[" + n + "," + n + "]");
  REQUIRE(r2);
}

TEST_CASE("numbers overflowing double (1.8e308, 35E307, -1e400) are NonFinite", "[json][parse]") {
  CHECK(kindOf("1.8e308") == ParseErrorKind::NonFinite);
  CHECK(kindOf("35E307") == ParseErrorKind::NonFinite);
  CHECK(kindOf("{\"a\":[1,-1e400]}") == ParseErrorKind::NonFinite);
  REQUIRE(json::parse("1.7e308"));
}

TEST_CASE("nesting beyond max_depth is TooDeep, exactly max_depth passes", "[json][parse]") {
  json::ParseOptions o;
  o.max_depth = 4;
  REQUIRE(json::parse("[[[[1]]]]", o));
  REQUIRE(json::parse("{\"a\":{\"b\":[{\"c\":1}]}}", o));
  CHECK(kindOf("[[[[[1]]]]]", o) == ParseErrorKind::TooDeep);
  CHECK(kindOf("{\"a\":{\"b\":[{\"c\":[]}]}}", o) == ParseErrorKind::TooDeep);
  // Brackets inside strings do not count.
  REQUIRE(json::parse("[\"[[[[[[[[[[{{{{{{\"]", o));
  auto r = json::parse(std::string(512, '[') + std::string(512, ']'));
  REQUIRE(r);
}

TEST_CASE("10^6 levels of nesting are refused without a stack overflow", "[json][parse]") {
  std::string deep(1000000, '[');
  auto r = json::parse(deep);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ParseErrorKind::TooDeep);
  CHECK(r.error().offset <= json::kDefaultMaxDepth + 1);
  std::string objs;
  for (int i = 0; i < 200000; ++i) objs += "{\"a\":";
  CHECK(kindOf(objs) == ParseErrorKind::TooDeep);
}

TEST_CASE("FRAME-19 duplicate member names are reported with their paths", "[json][parse]") {
  auto r = json::parse(R"({"a":1,"b":{"x":1,"x":2,"x":3},"c":[{"k":1,"k":2}],"a":2})");
  REQUIRE(r);
  REQUIRE(r->duplicates.size() == 3);
  CHECK(r->duplicates[0] == "a");
  CHECK(r->duplicates[1] == "b.x");
  CHECK(r->duplicates[2] == "c[0].k");

  // Large object (sorted path) and a non-identifier key.
  std::string big = "{";
  for (int i = 0; i < 40; ++i) big += "\"m" + std::to_string(i) + "\":1,";
  big += "\"m7\":2,\"x-y\":1,\"x-y\":2}";
  auto r2 = json::parse("{\"p\":" + big + "}");
  REQUIRE(r2);
  REQUIRE(r2->duplicates.size() == 2);
  CHECK(r2->duplicates[0] == "p.m7");
  CHECK(r2->duplicates[1] == "p[\"x-y\"]");

  json::ParseOptions strict;
  strict.reject_duplicates = true;
  auto r3 = json::parse(R"({"a":{"b":1,"b":1}})", strict);
  REQUIRE_FALSE(r3);
  CHECK(r3.error().kind == ParseErrorKind::Duplicate);
  CHECK_THAT(r3.error().message, Catch::Contains("a.b"));
  REQUIRE(json::parse(R"({"a":{"b":1,"c":1}})", strict));
}

TEST_CASE("toString names every parse error kind", "[json][parse]") {
  CHECK(std::string(json::toString(ParseErrorKind::TooDeep)) == "too-deep");
  CHECK(std::string(json::toString(ParseErrorKind::InvalidUtf8)) == "invalid-utf8");
}

TEST_CASE("parse with utf8_prevalidated gives the same document for valid text", "[json]") {
  conform::json::ParseOptions fast;
  fast.utf8_prevalidated = true;
  std::string text = R"({"jsonrpc":"2.0","method":"plugin/event","params":{"s":"h\u00e9llo ✓","n":[1,2.5,-3]}})";
  auto a = conform::json::parse(text);
  auto b = conform::json::parse(text, fast);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(conform::json::canonical(a->doc) == conform::json::canonical(b->doc));
  // Everything except the UTF-8 check still applies.
  CHECK_FALSE(conform::json::parse("{}{}", fast));
  CHECK_FALSE(conform::json::parse("1e400", fast));
}
