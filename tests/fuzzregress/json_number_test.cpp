// tests/fuzzregress/json_number_test.cpp — core/json number round trips, found by fuzz_json_parse.
//
// RapidJSON's default number reader is not correctly rounded (kParseFullPrecisionFlag is not an
// option: it segfaults, DEPENDENCIES.md), so a double written by canonical() read back a few ulps
// away, and writing that again gave different text. json::parse now re-reads every double whose
// default conversion may be inexact with std::from_chars (correctly rounded), and the writer's
// Grisu2 output round-trips, so parse(canonical(v)) == v bit for bit and canonical text is a fixed
// point of parse + canonical — what golden files and replay normalisation rely on.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/json/json.h"

namespace json = conform::json;

namespace {

std::string recanonical(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p.has_value());
  return json::canonical(p->doc);
}

double readDouble(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p.has_value());
  REQUIRE(p->doc.IsNumber());
  return p->doc.GetDouble();
}

std::uint64_t bits(double d) { return std::bit_cast<std::uint64_t>(d); }

}  // namespace

TEST_CASE("core/json canonical text of a number is a fixed point of parse + canonical", "[json][fuzzregress]") {
  // Minimised from a fuzz_json_parse crash: each trip used to move the value (…023 → …022 → …020
  // in the last mantissa digits), so the text changed twice before it settled.
  const std::string once = recanonical("-92233720368547754073709551615368547754073709551615");
  CHECK(recanonical(once) == once);
  const std::string big = recanonical("184467440737095516616");
  CHECK(recanonical(big) == big);
}

TEST_CASE("core/json a canonical number reads back bit for bit", "[json][fuzzregress]") {
  for (const char* text : {"-92233720368547754073709551615368547754073709551615", "184467440737095516616",
                           "0.1", "1e-320", "1.7976931348623157e308", "123456789012345678901234567890",
                           "2.2250738585072011e-308", "4.9406564584124654e-324", "0.30000000000000004",
                           "1.2345678901234567e-200", "9.999999999999999e22", "-7.0e-10", "3.14159e250"}) {
    INFO(text);
    const double a = readDouble(text);
    CHECK(bits(readDouble(recanonical(text))) == bits(a));
  }
}

TEST_CASE("core/json parse reads decimal numbers correctly rounded", "[json][fuzzregress]") {
  CHECK(bits(readDouble("0.1")) == bits(0.1));
  CHECK(bits(readDouble("2.2250738585072011e-308")) == bits(2.2250738585072011e-308));
  // 1 + 2^-53 exactly is a tie between 1 and the next double: ties round to even (1.0); one more
  // digit above the tie rounds up. A 55-digit significand: beyond RapidJSON's 17-digit window.
  CHECK(readDouble("1.00000000000000011102230246251565404236316680908203125") == 1.0);
  CHECK(readDouble("1.00000000000000011102230246251565404236316680908203126") ==
        std::nextafter(1.0, 2.0));
  // Integers beyond 64 bits become doubles, correctly rounded too (2^64 + 1 → 2^64).
  CHECK(readDouble("18446744073709551617") == 18446744073709551616.0);
  // Integers within 64 bits stay exact integers.
  auto i = json::parse("[9007199254740993,-9223372036854775808,18446744073709551615,-0]");
  REQUIRE(i.has_value());
  CHECK(i->doc[0].GetUint64() == 9007199254740993u);
  CHECK(i->doc[1].GetInt64() == std::numeric_limits<std::int64_t>::min());
  CHECK(i->doc[2].GetUint64() == std::numeric_limits<std::uint64_t>::max());
  CHECK((i->doc[3].IsInt() && i->doc[3].GetInt() == 0));
}

TEST_CASE("core/json long numbers, underflow and overflow", "[json][fuzzregress]") {
  // `0.` + 360 zeros + a digit crashes RapidJSON's full-precision reader; here it underflows to 0.
  CHECK(readDouble("0." + std::string(360, '0') + "1") == 0.0);
  CHECK(std::signbit(readDouble("-1e-400")));
  CHECK(readDouble("1e-400") == 0.0);
  CHECK(readDouble("5e-324") == std::numeric_limits<double>::denorm_min());
  // A 10000-digit significand reads correctly rounded.
  CHECK(readDouble("0." + std::string(10000, '3')) == 1.0 / 3.0);
  for (const char* text : {"1.8e308", "35E307", "1.7976931348623159e308", "-1e400"}) {
    INFO(text);
    auto p = json::parse(text);
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().kind == json::ParseErrorKind::NonFinite);
  }
}
