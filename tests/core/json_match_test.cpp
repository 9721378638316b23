// Tests of matchSubset / resolveCapture / substitute: the semantics documented in json.h.
#include <catch2/catch.hpp>

#include "core/json/json.h"

using namespace conform;

namespace {
json::Document doc(std::string_view text) {
  auto r = json::parse(text);
  REQUIRE(r);
  return std::move(r->doc);
}
std::optional<json::Mismatch> m(std::string_view pat, std::string_view sub, json::Captures& caps) {
  return json::matchSubset(doc(pat), doc(sub), caps);
}
std::optional<json::Mismatch> m(std::string_view pat, std::string_view sub) {
  json::Captures caps;
  return m(pat, sub, caps);
}
}  // namespace

TEST_CASE("matchSubset: objects are subsets, arrays exact, numbers by value", "[json][match]") {
  CHECK_FALSE(m(R"({"a":1})", R"({"a":1.0,"b":2})"));
  CHECK_FALSE(m(R"({"p":{"x":[1,{"y":"z"}]}})", R"({"p":{"x":[1,{"y":"z","w":0}],"q":1}})"));
  auto mm = m(R"({"params":{"bus":"published"}})", R"({"params":{"bus":"dropped"}})");
  REQUIRE(mm);
  CHECK(mm->path == "params.bus");
  CHECK(mm->str() == "params.bus: expected \"published\", found \"dropped\"");
  mm = m(R"({"a":[1,2]})", R"({"a":[1,2,3]})");
  REQUIRE(mm);
  CHECK(mm->path == "a");
  mm = m(R"({"a":[1,2]})", R"({"a":[1,3]})");
  REQUIRE(mm);
  CHECK(mm->path == "a[1]");
  mm = m(R"({"a":1})", R"({"b":1})");
  REQUIRE(mm);
  CHECK(mm->actual == "(absent)");
  CHECK(mm->str() == "a: expected 1, found (absent)");
  CHECK(m(R"({"a":null})", R"({"a":false})"));
  CHECK(m(R"({"a":1})", R"([1])"));
  CHECK(m("\"x\"", "\"y\""));
  CHECK_FALSE(m("[]", "[]"));
  CHECK(m("{}", "[]"));
}

TEST_CASE("matchSubset: $* matches any present value, $? requires absence", "[json][match]") {
  CHECK_FALSE(m(R"({"a":"$*"})", R"({"a":null})"));
  CHECK_FALSE(m(R"({"a":"$*"})", R"({"a":{"deep":[1]}})"));
  auto mm = m(R"({"a":"$*"})", R"({})");
  REQUIRE(mm);
  CHECK(mm->actual == "(absent)");
  CHECK_FALSE(m(R"({"error":"$?"})", R"({"result":1})"));
  mm = m(R"({"error":"$?"})", R"({"error":{"code":1}})");
  REQUIRE(mm);
  CHECK(mm->path == "error");
  CHECK(mm->expected == "(absent)");
  CHECK(mm->actual == R"({"code":1})");
}

TEST_CASE("matchSubset: captures bind, compare, and reach into members", "[json][match]") {
  json::Captures caps;
  CHECK_FALSE(m(R"({"id":"$req","result":{"session":"$s"}})", R"({"id":7,"result":{"session":{"id":"abc","n":[4,5]}}})", caps));
  REQUIRE(caps.count("req"));
  CHECK(json::compact(caps.at("req")) == "7");
  CHECK_FALSE(m(R"({"id":"$req"})", R"({"id":7.0})", caps));
  auto mm = m(R"({"id":"$req"})", R"({"id":8})", caps);
  REQUIRE(mm);
  CHECK(mm->str() == "id: expected 7 ($req), found 8");
  CHECK_FALSE(m(R"({"sid":"$s.id","n":"$s.n.1"})", R"({"sid":"abc","n":5})", caps));
  CHECK(m(R"({"sid":"$s.id"})", R"({"sid":"abd"})", caps));
  // Dotted reference to an unbound name cannot bind.
  mm = m(R"({"x":"$nope.a"})", R"({"x":1})", caps);
  REQUIRE(mm);
  CHECK_THAT(mm->expected, Catch::Contains("unbound"));

  CHECK(json::resolveCapture(caps, "$s.id"));
  CHECK(json::compact(*json::resolveCapture(caps, "s.n.0")) == "4");
  CHECK_FALSE(json::resolveCapture(caps, "$s.n.9"));
  CHECK_FALSE(json::resolveCapture(caps, "$unknown"));
}

TEST_CASE("matchSubset: a capture bound earlier in the same pattern constrains later parts", "[json][match]") {
  json::Captures caps;
  CHECK_FALSE(m(R"({"a":"$x","b":"$x"})", R"({"a":1,"b":1})", caps));
  json::Captures caps2;
  auto mm = m(R"({"a":"$x","b":"$x"})", R"({"a":1,"b":2})", caps2);
  REQUIRE(mm);
  CHECK(mm->path == "b");
  // On failure nothing is added.
  CHECK(caps2.empty());
  CHECK(caps.count("x"));
}

TEST_CASE("matchSubset: $$ escapes a literal dollar string — odd $ strings are literals", "[json][match]") {
  CHECK_FALSE(m(R"({"a":"$$x"})", R"({"a":"$x"})"));
  CHECK(m(R"({"a":"$$x"})", R"({"a":"$$x"})"));
  CHECK_FALSE(m(R"({"a":"$$*"})", R"({"a":"$*"})"));
  CHECK(m(R"({"a":"$$*"})", R"({"a":1})"));
  CHECK_FALSE(m(R"({"a":"$ x"})", R"({"a":"$ x"})"));
  CHECK_FALSE(m(R"({"a":"$"})", R"({"a":"$"})"));
}

TEST_CASE("substitute replaces bound references and refuses unbound ones", "[json][match]") {
  json::Captures caps;
  caps.emplace("s", doc(R"({"id":"abc","list":[1,2]})"));
  caps.emplace("n", doc("42"));
  auto r = json::substitute(doc(R"({"session":"$s.id","n":["$n","$$n","$*"],"all":"$s"})"), caps);
  REQUIRE(r);
  CHECK(json::compact(*r) == R"({"session":"abc","n":[42,"$n","$*"],"all":{"id":"abc","list":[1,2]}})");
  auto bad = json::substitute(doc(R"({"a":[1,"$missing"]})"), caps);
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == "a[1]: unbound capture $missing");
}
