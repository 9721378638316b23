// tests/fuzzregress/json_surrogate_test.cpp — lone surrogate escapes, found by fuzz_json_parse
// (compact() wrote text parse() refused) and fuzz_rpc (a decoded frame re-encoded to a frame that
// decodeMessage refused under FRAME-04/05).
//
// RapidJSON 1.1.0 refuses a lone HIGH surrogate escape but decodes a lone LOW one ("\udc80") to
// the 3 bytes ED B2 80, which are not UTF-8; kParseValidateEncodingFlag checks the input bytes, not
// what escapes decode to. json::parse now refuses both as ParseErrorKind::InvalidUtf8 (the frame is
// not UTF-8 text once decoded), so no layer above ever holds such a string and nothing conform
// writes back from a parsed value can break FRAME-04/05.
#include <catch2/catch.hpp>

#include <string>

#include "core/json/json.h"
#include "core/wire/rpc.h"

namespace json = conform::json;
namespace wire = conform::wire;

namespace {
json::ParseErrorKind kindOf(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE_FALSE(p.has_value());
  return p.error().kind;
}
}  // namespace

TEST_CASE("core/json surrogate pairs decode to one code point", "[json][fuzzregress]") {
  auto pair = json::parse(R"("\ud83d\ude00")");
  REQUIRE(pair.has_value());
  CHECK(std::string(pair->doc.GetString(), pair->doc.GetStringLength()) == "\xF0\x9F\x98\x80");
  auto upper = json::parse(R"({"\uD83D\uDE00":"\uDBFF\uDFFF"})");
  REQUIRE(upper.has_value());
  CHECK(json::compact(upper->doc) == "{\"\xF0\x9F\x98\x80\":\"\xF4\x8F\xBF\xBF\"}");
  // U+D7FF and U+E000 border the surrogate block: ordinary characters (ED 9F BF, EE 80 80).
  auto border = json::parse(R"("\ud7ff\ue000")");
  REQUIRE(border.has_value());
  CHECK(std::string(border->doc.GetString(), border->doc.GetStringLength()) == "\xED\x9F\xBF\xEE\x80\x80");
}

TEST_CASE("FRAME-04 core/json parse refuses a lone high surrogate escape as invalid UTF-8", "[json][fuzzregress]") {
  CHECK(kindOf(R"("\ud800")") == json::ParseErrorKind::InvalidUtf8);
  CHECK(kindOf(R"("\ud800x")") == json::ParseErrorKind::InvalidUtf8);
  CHECK(kindOf(R"("\udbff\u0041")") == json::ParseErrorKind::InvalidUtf8);  // followed by a non-low escape
  CHECK(kindOf(R"("\ud800\ud800")") == json::ParseErrorKind::InvalidUtf8);
}

TEST_CASE("FRAME-04 core/json parse refuses a lone low surrogate escape as invalid UTF-8", "[json][fuzzregress]") {
  CHECK(kindOf(R"("\udc80")") == json::ParseErrorKind::InvalidUtf8);
  CHECK(kindOf(R"({"\udde0":1})") == json::ParseErrorKind::InvalidUtf8);     // in a member name
  CHECK(kindOf(R"(["ok","x\uDFFFy"])") == json::ParseErrorKind::InvalidUtf8);  // upper case, mid-string
  CHECK(kindOf(R"("\ude00\ud83d")") == json::ParseErrorKind::InvalidUtf8);   // a pair in the wrong order
  auto p = json::parse(R"("\udc80")");
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().message.find("surrogate") != std::string::npos);
  // Also when the caller has validated the raw bytes already (FrameDecoder frames).
  json::ParseOptions pre;
  pre.utf8_prevalidated = true;
  auto q = json::parse(R"({"a":"\udc80"})", pre);
  REQUIRE_FALSE(q.has_value());
  CHECK(q.error().kind == json::ParseErrorKind::InvalidUtf8);
}

TEST_CASE("FRAME-04 decodeMessage refuses a frame with a lone low surrogate escape", "[wire][fuzzregress]") {
  // Minimised from fuzz_rpc: the escape sits in a member name of params.
  const std::string frame = R"({"jsonrpc":"2.0","method":"plugin/event","params":{"\udc00seq":11}})";
  auto m = wire::decodeMessage(frame);
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().kind == wire::EnvelopeErrorKind::InvalidUtf8);
  wire::DecodeOptions from_engine;
  from_engine.direction = wire::Direction::EngineToPlugin;
  auto e = wire::decodeMessage(frame, from_engine);
  REQUIRE_FALSE(e.has_value());
  CHECK(std::string(e.error().rule) == "FRAME-05");
}
