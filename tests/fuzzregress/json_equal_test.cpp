// tests/fuzzregress/json_equal_test.cpp — json::equal on repeated member names, found by
// fuzz_profile_0_0_6: a message_end content part {"type":"","type":{"k":0}} decoded (parts are kept
// opaque), wrote back unchanged, and the re-read struct did not compare equal to itself.
//
// equal() looked each member of `a` up by name in `b`, which found the FIRST member of that name,
// so equal(x, x) was false as soon as a repeated name carried different values. It now compares the
// value that wins (the last, as decodeMessage and R4 read it) for each distinct name on both sides.
#include <catch2/catch.hpp>

#include <string>

#include "core/json/json.h"

namespace json = conform::json;

namespace {
bool eq(const std::string& a, const std::string& b) {
  auto pa = json::parse(a), pb = json::parse(b);
  REQUIRE(pa.has_value());
  REQUIRE(pb.has_value());
  return json::equal(pa->doc, pb->doc);
}
// An object with `n` distinct members k0..k{n-1} (value i), then `tail` appended verbatim.
std::string wide(int n, const std::string& tail = "") {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  return s + tail + "}";
}
}  // namespace

TEST_CASE("core/json equal is reflexive on objects with repeated member names", "[json][fuzzregress]") {
  auto p = json::parse(R"({"type":"","type":{"k":0}})");
  REQUIRE(p.has_value());
  CHECK(json::equal(p->doc, p->doc));
  auto copy = json::copy(p->doc);
  CHECK(json::equal(p->doc, copy));
  CHECK(json::equal(copy, p->doc));
}

TEST_CASE("core/json equal on repeated member names with equal values", "[json][fuzzregress]") {
  auto p = json::parse(R"({"a":1,"a":1})");
  REQUIRE(p.has_value());
  CHECK(json::equal(p->doc, p->doc));
}

TEST_CASE("core/json equal compares the last value of a repeated member name", "[json][fuzzregress]") {
  CHECK(eq(R"({"a":1,"a":2})", R"({"a":2})"));
  CHECK(eq(R"({"a":2})", R"({"a":1,"a":2})"));
  CHECK(eq(R"({"a":1,"b":0,"a":2})", R"({"b":0,"a":3,"a":2})"));
  CHECK_FALSE(eq(R"({"a":2,"a":1})", R"({"a":2})"));
  CHECK_FALSE(eq(R"({"a":1,"a":2})", R"({"a":2,"b":0})"));  // a name only one side has
  CHECK_FALSE(eq(R"({"a":2,"b":0})", R"({"a":1,"a":2})"));
  CHECK_FALSE(eq(R"({"a":1,"a":2})", R"({"a":1,"b":2})"));
}

TEST_CASE("core/json equal on large objects with repeated member names", "[json][fuzzregress]") {
  // Above 32 members equal() sorts instead of looking up: same rule.
  CHECK(eq(wide(40, R"(,"k3":"x","k3":3)"), wide(40)));
  CHECK(eq(wide(40), wide(40, R"(,"k3":"x","k3":3)")));
  CHECK_FALSE(eq(wide(40, R"(,"k3":"x")"), wide(40)));
  CHECK_FALSE(eq(wide(40, R"(,"extra":1)"), wide(40, R"(,"k0":0)")));
  auto p = json::parse(wide(40, R"(,"k1":{"k":0},"k1":"")"));
  REQUIRE(p.has_value());
  CHECK(json::equal(p->doc, p->doc));
}
