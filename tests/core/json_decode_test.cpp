// Tests of Path rendering, fromJSON overloads and the ObjectMapper presence rules of PROTOCOL §0.3
// (req, req/null, opt, opt=V, closed objects), plus writing (compact/canonical) and equal().
#include <catch2/catch.hpp>

#include "core/json/json.h"

using namespace conform;
using json::Path;

namespace {
json::Document doc(std::string_view text) {
  auto r = json::parse(text);
  REQUIRE(r);
  return std::move(r->doc);
}

struct Caps {
  bool tools = false;
  std::optional<std::string> reason;     // opt
  std::optional<std::int64_t> deadline;  // req/null
  std::uint32_t retries = 3;             // opt=3
  std::vector<std::string> names;        // req
};
bool fromJSON(const json::Value& v, Caps& c, Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("tools", c.tools) && o.mapOptional("reason", c.reason) &&
         o.mapNullable("deadline", c.deadline) && o.mapDefault("retries", c.retries) &&
         o.map("names", c.names) && o.closed();
}
struct Outer {
  Caps capabilities;
};
bool fromJSON(const json::Value& v, Outer& r, Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("capabilities", r.capabilities) && o.closed();
}

std::string decodeError(std::string_view text) {
  auto d = doc(text);
  auto r = json::decode<Outer>(d, "params");
  REQUIRE_FALSE(r);
  return r.error();
}
}  // namespace

TEST_CASE("Path renders fields, indices, quoted keys and the root", "[json][path]") {
  Path::Root root;
  Path p(root);
  CHECK(p.str() == "<root>");
  CHECK(p.field("a").field("b").str() == "a.b");
  CHECK(p.field("tools").index(2).field("name").str() == "tools[2].name");
  CHECK(p.index(0).str() == "[0]");
  CHECK(p.field("headers").field("x-api-key").str() == "headers[\"x-api-key\"]");
  CHECK(p.field("").str() == "[\"\"]");
  Path::Root named("params");
  CHECK(Path(named).str() == "params");
  CHECK(Path(named).field("x").str() == "params.x");
  CHECK(Path(named).index(1).str() == "params[1]");
  // Only the first error is kept.
  CHECK_FALSE(p.field("a").report("first"));
  CHECK_FALSE(p.field("b").report("second"));
  CHECK(root.error() == "a: first");
  CHECK(root.errorPath() == "a");
  CHECK(root.errorMessage() == "first");
}

TEST_CASE("decode: a conforming object fills every field, defaults kept", "[json][decode]") {
  auto d = doc(R"({"capabilities":{"tools":true,"deadline":null,"names":["a","b"]}})");
  auto r = json::decode<Outer>(d, "params");
  REQUIRE(r);
  CHECK(r->capabilities.tools);
  CHECK_FALSE(r->capabilities.reason);
  CHECK_FALSE(r->capabilities.deadline);
  CHECK(r->capabilities.retries == 3);
  CHECK(r->capabilities.names == std::vector<std::string>{"a", "b"});
  auto d2 = doc(R"({"capabilities":{"tools":false,"reason":"x","deadline":5,"retries":7,"names":[]}})");
  auto r2 = json::decode<Outer>(d2, "params");
  REQUIRE(r2);
  CHECK(r2->capabilities.reason == "x");
  CHECK(r2->capabilities.deadline == 5);
  CHECK(r2->capabilities.retries == 7);
}

TEST_CASE("decode: wrong types name the path and both types", "[json][decode]") {
  CHECK(decodeError(R"({"capabilities":{"tools":"yes","deadline":null,"names":[]}})") ==
        "params.capabilities.tools: expected boolean, found string");
  CHECK(decodeError(R"({"capabilities":{"tools":true,"deadline":null,"names":["a",3]}})") ==
        "params.capabilities.names[1]: expected string, found integer");
  CHECK(decodeError(R"({"capabilities":[]})") == "params.capabilities: expected object, found array");
  CHECK(decodeError(R"({"capabilities":{"tools":true,"deadline":1.5,"names":[]}})") ==
        "params.capabilities.deadline: expected integer, found number");
}

TEST_CASE("decode: presence rules req, req/null, opt, opt=V and closed objects", "[json][decode]") {
  // req: missing, null
  CHECK(decodeError(R"({"capabilities":{"deadline":null,"names":[]}})") ==
        "params.capabilities.tools: required member is missing");
  CHECK(decodeError(R"({"capabilities":{"tools":null,"deadline":null,"names":[]}})") ==
        "params.capabilities.tools: required member is null");
  // req/null: must be present
  CHECK(decodeError(R"({"capabilities":{"tools":true,"names":[]}})") ==
        "params.capabilities.deadline: required member is missing (it may be null)");
  // opt: null equals absent (covered above); wrong type still fails
  CHECK(decodeError(R"({"capabilities":{"tools":true,"reason":1,"deadline":null,"names":[]}})") ==
        "params.capabilities.reason: expected string, found integer");
  // opt=V: null is an error
  CHECK(decodeError(R"({"capabilities":{"tools":true,"retries":null,"deadline":null,"names":[]}})") ==
        "params.capabilities.retries: member may be omitted but must not be null");
  // closed: first unknown member named
  CHECK(decodeError(R"({"capabilities":{"tools":true,"deadline":null,"names":[],"x":1,"y":2}})") ==
        "params.capabilities.x: unknown member");
  CHECK(decodeError(R"({"capabilities":{"tools":true,"deadline":null,"names":[]},"z-z":0})") ==
        "params[\"z-z\"]: unknown member");
}

TEST_CASE("fromJSON integer ranges are exact", "[json][decode]") {
  auto d = doc(R"([-1, 4294967296, 2147483648, 18446744073709551615, 1.0, 9223372036854775808])");
  Path::Root root;
  std::uint32_t u32;
  std::int32_t i32;
  std::uint64_t u64;
  std::int64_t i64;
  double dbl;
  CHECK_FALSE(json::fromJSON(d[0], u32, Path(root)));
  CHECK(root.error() == "<root>: expected integer in [0, 4294967295], found -1");
  Path::Root r2;
  CHECK_FALSE(json::fromJSON(d[1], u32, Path(r2)));
  CHECK(json::fromJSON(d[1], i64, Path(r2)));
  CHECK(i64 == 4294967296);
  CHECK_FALSE(json::fromJSON(d[2], i32, Path(r2)));
  CHECK(json::fromJSON(d[3], u64, Path(r2)));
  CHECK(u64 == 18446744073709551615ull);
  CHECK_FALSE(json::fromJSON(d[3], i64, Path(r2)));
  CHECK_FALSE(json::fromJSON(d[0], u64, Path(r2)));
  CHECK_FALSE(json::fromJSON(d[4], i64, Path(r2)));  // 1.0 is not an integer
  CHECK(json::fromJSON(d[4], dbl, Path(r2)));
  CHECK(json::fromJSON(d[5], u64, Path(r2)));
  CHECK_FALSE(json::fromJSON(d[5], i64, Path(r2)));
  std::map<std::string, std::int32_t> m;
  auto d3 = doc(R"({"a":1,"b":"x"})");
  Path::Root r3;
  CHECK_FALSE(json::fromJSON(d3, m, Path(r3)));
  CHECK(r3.error() == "b: expected integer, found string");
  json::Document any;
  CHECK(json::fromJSON(d3, any, Path(r3)));
  CHECK(json::compact(any) == R"({"a":1,"b":"x"})");
}

TEST_CASE("member helpers never assert on the wrong type", "[json]") {
  auto d = doc(R"({"a":"s","b":1})");
  CHECK(json::member(d, "a"));
  CHECK_FALSE(json::member(d, "zz"));
  CHECK_FALSE(json::member(d["a"], "a"));
  CHECK(json::stringMember(d, "a") == "s");
  CHECK_FALSE(json::stringMember(d, "b"));
  CHECK(json::typeName(d["b"]) == std::string("integer"));
}

TEST_CASE("compact keeps order — canonical sorts keys recursively and normalises 1.0", "[json][write]") {
  auto d = doc(R"({"b":[{"z":1,"a":2.0}],"a":"\u00e9","A":null})");
  CHECK(json::compact(d) == "{\"b\":[{\"z\":1,\"a\":2.0}],\"a\":\"\xc3\xa9\",\"A\":null}");
  CHECK(json::canonical(d) == "{\"A\":null,\"a\":\"\xc3\xa9\",\"b\":[{\"a\":2,\"z\":1}]}");
  auto e = doc(R"({"A":null,"b":[{"a":2,"z":1}],"a":"é"})");
  CHECK(json::canonical(d) == json::canonical(e));
  CHECK(json::canonical(doc("0.5")) == "0.5");
}

TEST_CASE("equal compares numbers by value and ignores member order", "[json][write]") {
  CHECK(json::equal(doc("1"), doc("1.0")));
  CHECK(json::equal(doc("-3"), doc("-3.0")));
  CHECK_FALSE(json::equal(doc("1"), doc("1.5")));
  CHECK_FALSE(json::equal(doc("1"), doc("\"1\"")));
  CHECK(json::equal(doc("18446744073709551615"), doc("18446744073709551615")));
  CHECK_FALSE(json::equal(doc("18446744073709551615"), doc("-1")));
  CHECK_FALSE(json::equal(doc("9007199254740993"), doc("9007199254740992.0")));  // exact, not via double
  CHECK(json::equal(doc("9223372036854775808"), doc("9223372036854775808.0")));
  CHECK(json::equal(doc(R"({"a":1,"b":[true,null]})"), doc(R"({"b":[true,null],"a":1.0})")));
  CHECK_FALSE(json::equal(doc(R"({"a":1})"), doc(R"({"a":1,"b":2})")));
  CHECK_FALSE(json::equal(doc("[1,2]"), doc("[2,1]")));
  std::string a = "{", b = "{";
  for (int i = 0; i < 50; ++i) {
    a += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":" + std::to_string(i);
    b += (i ? "," : "") + std::string("\"k") + std::to_string(49 - i) + "\":" + std::to_string(49 - i);
  }
  CHECK(json::equal(doc(a + "}"), doc(b + "}")));
  CHECK_FALSE(json::equal(doc(a + "}"), doc(b.substr(0, b.size() - 1) + "7}")));
  auto c = json::copy(doc(a + "}"));
  CHECK(json::equal(c, doc(b + "}")));
}
