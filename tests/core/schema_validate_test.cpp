// Tests of json::Schema: the draft 2020-12 features the protocol schemas and tool `parameters`
// schemas rely on, each proven both ways (conforming instance passes, each fault is caught with a
// path), plus the std::regex pitfalls of DEPENDENCIES.md that PCRE2 must avoid.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "core/json/schema.h"

using namespace conform;

namespace {
json::Document doc(std::string_view text) {
  auto r = json::parse(text);
  REQUIRE(r);
  return std::move(r->doc);
}
json::Schema compile(std::string_view text) {
  auto s = json::Schema::compile(text);
  if (!s) FAIL(s.error());
  return *s;
}
std::string violation(const json::Schema& s, std::string_view instance) {
  auto v = s.validate(doc(instance));
  return v ? v->str() : std::string("(valid)");
}
}  // namespace

TEST_CASE("schema: $defs references, required, additionalProperties:false", "[schema]") {
  auto s = compile(R"({
    "$defs": {
      "Caps": {"type": "object", "properties": {"ping": {"type": "boolean"}},
               "required": ["ping"], "additionalProperties": false}
    },
    "type": "object",
    "properties": {"capabilities": {"$ref": "#/$defs/Caps"}, "name": {"type": "string", "minLength": 1}},
    "required": ["capabilities"]
  })");
  CHECK(violation(s, R"({"capabilities":{"ping":true},"name":"x"})") == "(valid)");
  CHECK(violation(s, R"({"capabilities":{"ping":"yes"}})") ==
        "capabilities.ping: value of type string not allowed by 'type'");
  CHECK(violation(s, R"({"capabilities":{"ping":true,"pong":1}})") ==
        "capabilities.pong: unknown member \"pong\" (additionalProperties is false)");
  CHECK(violation(s, R"({"capabilities":{}})") == "capabilities: required member \"ping\" is missing");
  CHECK(violation(s, R"({})") == "<root>: required member \"capabilities\" is missing");
  CHECK(violation(s, R"({"capabilities":{"ping":true},"name":""})").rfind("name: ", 0) == 0);
  CHECK_FALSE(s.validateAll(doc(R"({"capabilities":{"ping":1,"x":2},"name":""})")).empty());
}

TEST_CASE("schema: const, enum, false schemas and oneOf/anyOf", "[schema]") {
  auto s = compile(R"({
    "type": "object",
    "properties": {
      "jsonrpc": {"const": "2.0"},
      "level": {"enum": ["info", "warn"]},
      "never": false,
      "id": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]},
      "x": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "integer"}, "maxItems": 2}]}
    }
  })");
  CHECK(violation(s, R"({"jsonrpc":"2.0","level":"warn","id":3,"x":[1,2]})") == "(valid)");
  CHECK(violation(s, R"({"id":"a","x":null})") == "(valid)");
  CHECK(violation(s, R"({"jsonrpc":"1.0"})").rfind("jsonrpc: ", 0) == 0);
  CHECK(violation(s, R"({"level":"debug"})") == "level: value \"debug\" is not one of the allowed values");
  CHECK(violation(s, R"({"never":null})") == "never: value not allowed by the schema");
  CHECK(violation(s, R"({"id":-1})").rfind("id", 0) == 0);
  CHECK(violation(s, R"({"id":1.5})").rfind("id", 0) == 0);
  CHECK(violation(s, R"({"x":[1,2,3]})").rfind("x", 0) == 0);
  CHECK(violation(s, R"({"x":[1,"a"]})").rfind("x", 0) == 0);
  auto f = compile("false");
  CHECK(violation(f, "1") != "(valid)");
  auto t = compile("true");
  CHECK(violation(t, R"({"a":[1]})") == "(valid)");
}

TEST_CASE("schema: $ref with sibling keywords applies both (2020-12)", "[schema]") {
  auto s = compile(R"({"$defs":{"S":{"type":"string"}},
                       "properties":{"a":{"$ref":"#/$defs/S","maxLength":3}}})");
  CHECK(violation(s, R"({"a":"abc"})") == "(valid)");
  CHECK(violation(s, R"({"a":"abcd"})").rfind("a: ", 0) == 0);
  CHECK(violation(s, R"({"a":1})").rfind("a: ", 0) == 0);
}

TEST_CASE("schema: prefixItems and items follow 2020-12 meaning", "[schema]") {
  auto s = compile(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})");
  CHECK(violation(s, R"(["a",1])") == "(valid)");
  CHECK(violation(s, R"(["a"])") == "(valid)");
  CHECK(violation(s, R"([1,1])").rfind("[0]: ", 0) == 0);
  CHECK(violation(s, R"(["a",1,2])") != "(valid)");
}

TEST_CASE("schema: paths tell array indices from numeric member names", "[schema]") {
  auto s = compile(R"({"properties":{"list":{"items":{"type":"string"}},
                                      "map":{"additionalProperties":{"type":"string"}}}})");
  CHECK(violation(s, R"({"list":["a",2]})") == "list[1]: value of type integer not allowed by 'type'");
  CHECK(violation(s, R"({"map":{"0":"a","1":2}})") == "map[\"1\"]: value of type integer not allowed by 'type'");
}

TEST_CASE("schema: pattern uses PCRE2 with Unicode properties", "[schema]") {
  auto s = compile(R"({"type":"string","pattern":"^\\p{L}+$"})");
  CHECK(violation(s, "\"abc\"") == "(valid)");
  CHECK(violation(s, "\"h\\u00e9llo\"") == "(valid)");
  CHECK(violation(s, "\"\\u65e5\\u672c\"") == "(valid)");
  CHECK(violation(s, "\"ab1\"") == "<root>: does not match pattern ^\\p{L}+$");
  CHECK(violation(s, "\"p\"") == "(valid)");
  // Unanchored search, as in ECMA-262.
  auto t = compile(R"({"pattern":"b"})");
  CHECK(violation(t, "\"abc\"") == "(valid)");
  CHECK(violation(t, "\"xyz\"") != "(valid)");
  CHECK(violation(t, "12") == "(valid)");  // pattern only constrains strings
  // `$` does not match before a final newline (ECMA-262).
  auto u = compile(R"({"pattern":"^a$"})");
  CHECK(violation(u, "\"a\\n\"") != "(valid)");
}

TEST_CASE("schema: a 200k-character subject does not overflow the stack", "[schema]") {
  auto s = compile(R"({"type":"string","pattern":"^(a|b)*$"})");
  std::string big = "\"" + std::string(200000, 'a') + "\"";
  CHECK(violation(s, big) == "(valid)");
  std::string bad = "\"" + std::string(200000, 'a') + "c\"";
  CHECK(violation(s, bad) != "(valid)");
  // Catastrophic backtracking hits the match limit and counts as a failure, quickly.
  auto evil = compile(R"({"pattern":"^(a+)+$"})");
  CHECK(violation(evil, "\"" + std::string(40, 'a') + "!\"") != "(valid)");
}

TEST_CASE("schema: pattern text inside const/enum/properties keys is not rewritten", "[schema]") {
  auto s = compile(R"({"properties":{"pattern":{"const":{"pattern":"x","format":"uuid"}},
                                      "format":{"enum":["pattern"]}}})");
  CHECK(violation(s, R"({"pattern":{"pattern":"x","format":"uuid"},"format":"pattern"})") == "(valid)");
  CHECK(violation(s, R"({"pattern":{"pattern":"y","format":"uuid"}})") != "(valid)");
  CHECK(violation(s, R"({"format":"x"})") != "(valid)");
}

TEST_CASE("schema: format uuid and date-time are checked, unknown formats ignored", "[schema]") {
  auto s = compile(R"({"properties":{"id":{"type":"string","format":"uuid"},
                                      "at":{"type":"string","format":"date-time"},
                                      "mail":{"type":"string","format":"email"}}})");
  CHECK(violation(s, R"({"id":"0b7e4a3c-1f2d-4e5a-9b8c-7d6e5f4a3b2c","at":"2024-02-29T23:59:59.5+01:00","mail":"?"})") ==
        "(valid)");
  CHECK(violation(s, R"({"id":"0b7e4a3c1f2d4e5a9b8c7d6e5f4a3b2c"})") == "id: not a valid uuid");
  CHECK(violation(s, R"({"at":"2023-02-29T00:00:00Z"})") == "at: not a valid date-time (RFC 3339)");
}

TEST_CASE("schema: patternProperties work and refuse huge member names", "[schema]") {
  auto s = compile(R"({"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false})");
  CHECK(violation(s, R"({"x-a":"1"})") == "(valid)");
  CHECK(violation(s, R"({"x-a":1})") == "[\"x-a\"]: value of type integer not allowed by 'type'");
  CHECK(violation(s, R"({"y":"1"})") != "(valid)");
  std::string huge = "{\"x-" + std::string(json::kMaxPatternSubjectBytes, 'a') + "\":\"1\"}";
  auto v = s.validate(doc(huge));
  REQUIRE(v);
  CHECK_THAT(v->message, Catch::Contains("longer than"));
  auto bad = json::Schema::compile(doc(R"({"patternProperties":{"^\\p{L}$":{}}})"));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error(), Catch::Contains("patternProperties"));
}

TEST_CASE("schema: bad schemas are compile errors, never exceptions or crashes", "[schema]") {
  for (const char* bad : {
           R"({"type":"strnig"})", R"({"pattern":"("})", R"({"$ref":"#/$defs/Missing"})",
           R"({"$ref":"http://example.com/s.json"})", R"({"required":"a"})", R"({"properties":{"a":1}})",
           R"({"minLength":-1})", R"({"allOf":[]})", R"(42)", R"({"$ref":"#"})",
           R"({"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"allOf":[{"$ref":"#/$defs/A"}]}},"$ref":"#/$defs/A"})",
           R"({"enum":3})", "{not json"}) {
    INFO(bad);
    auto s = json::Schema::compile(std::string_view(bad));
    CHECK_FALSE(s);
    if (!s) CHECK_THAT(s.error(), Catch::Contains("schema"));
  }
  // Recursion through the instance is fine.
  auto tree = compile(R"({"$defs":{"N":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/N"}}}}},
                          "$ref":"#/$defs/N"})");
  CHECK(violation(tree, R"({"kids":[{"kids":[]},{"kids":[{}]}]})") == "(valid)");
  CHECK(violation(tree, R"({"kids":[{"kids":[1]}]})") == "kids[0].kids[0]: value of type integer not allowed by 'type'");
}

TEST_CASE("schema: a default Schema accepts everything — copies share state across threads", "[schema]") {
  json::Schema any;
  CHECK(any.accepts(doc("[1]")));
  CHECK(any.source().IsNull());
  auto s = compile(R"({"type":"object","properties":{"s":{"pattern":"^a+$"}}})");
  auto good = doc(R"({"s":"aaa"})"), bad = doc(R"({"s":"b"})");
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, copy = s] {
      for (int i = 0; i < 200; ++i)
        if (!copy.accepts(good) || copy.accepts(bad)) ++wrong;
    });
  for (auto& t : ts) t.join();
  CHECK(wrong == 0);
  CHECK(s.source().IsObject());
}
