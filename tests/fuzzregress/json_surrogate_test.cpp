// tests/fuzzregress/json_surrogate_test.cpp — lone surrogate escapes, found by fuzz_json_parse
// (compact() wrote text parse() refused) and fuzz_rpc (a decoded frame re-encoded to a frame that
// decodeMessage refuses under FRAME-04/05).
//
// RapidJSON 1.1.0 refuses a lone HIGH surrogate escape but decodes a lone LOW one ("\udc80") to
// the 3 bytes ED B2 80, which are not UTF-8; kParseValidateEncodingFlag checks the input bytes, not
// what escapes decode to. json::parse therefore accepts such a frame and hands invalid UTF-8 to
// every layer above, and anything conform writes back from it (compact, canonical, encode*,
// the reference engine/plugin echoing a string) violates FRAME-04/05.
// Fix (core/json/json.cpp, owner core/json): in the SAX handler's String() and Key(), refuse a
// decoded string containing 0xED followed by 0xA0..0xBF (the only invalid sequence the escape
// decoder can produce) and report it like the other encoding errors (ParseErrorKind::InvalidUtf8,
// FRAME-13 at the wire layer).
//
// [!shouldfail] cases pass while the bug exists and fail once it is fixed — then remove the tag
// and the set-aside in fuzz/fuzz_common.h (hasInvalidUtf8).
#include <catch2/catch.hpp>

#include <string>

#include "core/json/json.h"
#include "core/wire/rpc.h"

namespace json = conform::json;
namespace wire = conform::wire;

TEST_CASE("core/json surrogate escapes that hold today", "[json][fuzzregress]") {
  auto pair = json::parse(R"("\ud83d\ude00")");
  REQUIRE(pair.has_value());
  CHECK(std::string(pair->doc.GetString(), pair->doc.GetStringLength()) == "\xF0\x9F\x98\x80");
  CHECK_FALSE(json::parse(R"("\ud800")").has_value());
  CHECK_FALSE(json::parse(R"("\ud800x")").has_value());
}

TEST_CASE("core/json parse refuses a lone low surrogate escape", "[json][fuzzregress][!shouldfail]") {
  CHECK_FALSE(json::parse(R"("\udc80")").has_value());
  CHECK_FALSE(json::parse(R"({"\udde0":1})").has_value());
}

TEST_CASE("FRAME-13 decodeMessage refuses a frame with a lone low surrogate escape", "[wire][fuzzregress][!shouldfail]") {
  // Minimised from fuzz_rpc: the escape sits in a member name of params.
  const std::string frame = R"({"jsonrpc":"2.0","method":"plugin/event","params":{"\udc00seq":11}})";
  auto m = wire::decodeMessage(frame);
  CHECK_FALSE(m.has_value());
  if (m) {
    // What happens today: the re-encoded frame is refused as invalid UTF-8.
    auto again = wire::decodeMessage(wire::encodeNotification(m->method, *m->params));
    CHECK(again.has_value());
  }
}
