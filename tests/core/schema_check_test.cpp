// Tests of checkSchemaDocument (INIT-21 / SDK-03 meta-validation of tool `parameters`), the
// hand-written uuid / date-time format checks, and that every public 0.0.4 reference schema in
// ../shared/reference compiles (they are read at test time, never copied into the project).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json/schema.h"

using namespace conform;

namespace {
json::Document doc(std::string_view text) {
  auto r = json::parse(text);
  REQUIRE(r);
  return std::move(r->doc);
}
std::string check(std::string_view schema) {
  auto v = json::checkSchemaDocument(doc(schema));
  return v ? v->str() : std::string("(ok)");
}
}  // namespace

TEST_CASE("INIT-21 a well-formed tool parameters schema passes meta-validation", "[schema][check]") {
  CHECK(check(R"({
    "type": "object",
    "properties": {
      "path": {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]+$", "description": "file"},
      "mode": {"enum": ["r", "w"], "default": "r"},
      "limit": {"type": ["integer", "null"], "minimum": 0, "maximum": 1e6, "multipleOf": 1},
      "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 8},
      "meta": {"$ref": "#/$defs/Meta"}
    },
    "required": ["path"],
    "additionalProperties": false,
    "$defs": {"Meta": {"type": "object", "patternProperties": {"^x-": true}, "minProperties": 0}},
    "x-custom-keyword": {"anything": [1, 2]}
  })") == "(ok)");
  CHECK(check("true") == "(ok)");
  CHECK(check("false") == "(ok)");
  CHECK(check("{}") == "(ok)");
}

TEST_CASE("INIT-21 each malformed keyword is named with its path", "[schema][check]") {
  CHECK(check("[]") == "<root>: expected a schema (object or boolean), found array");
  CHECK(check(R"({"type":"strnig"})") == "type: unknown type name \"strnig\"");
  CHECK(check(R"({"type":["string","string"]})") == "type[1]: duplicate entry \"string\"");
  CHECK(check(R"({"required":"a"})") == "required: expected array of strings, found string");
  CHECK(check(R"({"required":["a","a"]})") == "required[1]: duplicate entry \"a\"");
  CHECK(check(R"({"required":[1]})") == "required[0]: expected string, found integer");
  CHECK(check(R"({"properties":{"a":{"type":"string"},"b":1}})") ==
        "properties.b: expected a schema (object or boolean), found integer");
  CHECK(check(R"({"properties":[]})") == "properties: expected object, found array");
  CHECK(check(R"({"items":{"properties":{"x":{"minLength":-1}}}})") ==
        "items.properties.x.minLength: expected a non-negative integer, found -1");
  CHECK(check(R"({"maxItems":1.5})") == "maxItems: expected a non-negative integer, found 1.5");
  CHECK(check(R"({"anyOf":[]})") == "anyOf: expected a non-empty array of schemas");
  CHECK(check(R"({"oneOf":[{}, 3]})") == "oneOf[1]: expected a schema (object or boolean), found integer");
  CHECK(check(R"({"multipleOf":0})") == "multipleOf: expected a number greater than 0");
  CHECK(check(R"({"uniqueItems":"yes"})") == "uniqueItems: expected boolean, found string");
  CHECK(check(R"({"enum":{}})") == "enum: expected array, found object");
  CHECK(check(R"({"description":5})") == "description: expected string, found integer");
  CHECK_THAT(check(R"({"pattern":"[a-"})"), Catch::StartsWith("pattern: invalid regular expression"));
  CHECK_THAT(check(R"({"patternProperties":{"(":{}}})"), Catch::StartsWith("patternProperties[\"(\"]: invalid"));
  CHECK(check(R"({"$ref":"#/$defs/Nope"})") == "[\"$ref\"]: reference #/$defs/Nope does not resolve within the document");
  CHECK(check(R"({"dependentRequired":{"a":["b","b"]}})") == "dependentRequired.a[1]: duplicate entry \"b\"");
  // Values of const/default/examples are data, not schemas.
  CHECK(check(R"({"const":{"type":"nonsense"},"default":[1],"examples":[{"pattern":"("}]})") == "(ok)");
}

TEST_CASE("$ref resolution handles JSON pointer escapes and percent-encoding", "[schema][check]") {
  CHECK(check(R"({"$defs":{"a/b":{"type":"string"},"c~d":true,"%":true},
                  "properties":{"x":{"$ref":"#/$defs/a~1b"},"y":{"$ref":"#/$defs/c~0d"},
                                "z":{"$ref":"#/$defs/%25"},"w":{"$ref":"#"},
                                "v":{"$ref":"#/properties/x"}}})") == "(ok)");
  auto s = json::Schema::compile(doc(R"({"$defs":{"a/b":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a~1b"}}})"));
  REQUIRE(s);
  CHECK(s->accepts(doc(R"({"x":"s"})")));
  CHECK_FALSE(s->accepts(doc(R"({"x":1})")));
}

TEST_CASE("format uuid: 8-4-4-4-12 hex digits", "[schema][format]") {
  CHECK(json::isUuid("0b7e4a3c-1f2d-4e5a-9b8c-7d6e5f4a3b2c"));
  CHECK(json::isUuid("0B7E4A3C-1F2D-4E5A-9B8C-7D6E5F4A3B2C"));
  CHECK(json::isUuid("00000000-0000-0000-0000-000000000000"));
  CHECK_FALSE(json::isUuid("0b7e4a3c-1f2d-4e5a-9b8c-7d6e5f4a3b2"));
  CHECK_FALSE(json::isUuid("0b7e4a3c-1f2d-4e5a-9b8c-7d6e5f4a3b2cc"));
  CHECK_FALSE(json::isUuid("0b7e4a3c_1f2d-4e5a-9b8c-7d6e5f4a3b2c"));
  CHECK_FALSE(json::isUuid("gb7e4a3c-1f2d-4e5a-9b8c-7d6e5f4a3b2c"));
  CHECK_FALSE(json::isUuid("{0b7e4a3c-1f2d-4e5a-9b8c-7d6e5f4a3b2}"));
  CHECK_FALSE(json::isUuid(""));
}

TEST_CASE("format date-time: RFC 3339", "[schema][format]") {
  for (const char* ok : {"2024-01-02T03:04:05Z", "2024-01-02t03:04:05z", "2024-01-02T03:04:05.678Z",
                         "2024-01-02T03:04:05.123456789+05:30", "2024-02-29T00:00:00-00:00",
                         "2000-02-29T23:59:59Z", "1998-12-31T23:59:60Z", "1998-12-31T15:59:60-08:00"}) {
    INFO(ok);
    CHECK(json::isDateTime(ok));
  }
  for (const char* bad : {"2024-01-02", "2024-01-02T03:04:05", "2024-01-02 03:04:05Z", "2023-02-29T00:00:00Z",
                          "1900-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-04-31T00:00:00Z",
                          "2024-01-02T24:00:00Z", "2024-01-02T03:60:00Z", "2024-01-02T03:04:05.Z",
                          "2024-01-02T03:04:05+0530", "2024-01-02T03:04:05+24:00", "2024-01-02T12:00:60Z",
                          "2024-01-02T03:04:05Zjunk", "24-01-02T03:04:05Z", ""}) {
    INFO(bad);
    CHECK_FALSE(json::isDateTime(bad));
  }
}

TEST_CASE("every public 0.0.4 reference schema compiles and passes the document check", "[schema][check]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(CONFORM_SHARED_DIR) / "reference";
  if (!fs::exists(dir)) {
    WARN("skipped: " << dir << " is not beside this checkout (the public schemas are read, never copied)");
    return;
  }
  int n = 0;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    INFO(e.path());
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    auto d = json::parse(ss.str());
    REQUIRE(d);
    CHECK_FALSE(json::checkSchemaDocument(d->doc));
    auto s = json::Schema::compile(d->doc);
    if (!s) FAIL_CHECK(s.error());
    ++n;
  }
  CHECK(n > 10);
}
