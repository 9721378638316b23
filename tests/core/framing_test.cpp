// Tests of core/wire/framing: FRAME-* rules at the byte level. Transcript style: feed bytes, log
// each event as one line, compare with the expected log. Every stream is also fed one byte at a
// time and in odd-sized chunks, and must give the identical transcript.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/wire/framing.h"

using conform::wire::FrameDecoder;
using conform::wire::FrameEvent;
using conform::wire::firstInvalidUtf8;
using conform::wire::kMaxFrameBytes;
using conform::wire::npos;

namespace {

std::string render(const FrameEvent& e) {
  std::string s;
  switch (e.kind) {
    case FrameEvent::Kind::Frame: s = "frame"; break;
    case FrameEvent::Kind::Oversized: s = "oversized"; break;
    case FrameEvent::Kind::InvalidUtf8: s = "utf8"; break;
    case FrameEvent::Kind::Eof: s = "eof"; break;
  }
  s += " @" + std::to_string(e.offset);
  if (e.kind != FrameEvent::Kind::Eof) s += " size=" + std::to_string(e.size);
  if (e.had_cr) s += " cr";
  if (e.unterminated) s += " unterminated";
  if (e.kind == FrameEvent::Kind::InvalidUtf8) s += " bad@" + std::to_string(e.utf8_error_at);
  if (e.bytes.size() <= 40)
    s += " [" + e.bytes + "]";
  else
    s += " [" + e.bytes.substr(0, 8) + "…" + std::to_string(e.bytes.size()) + "B]";
  return s;
}

std::string drain(FrameDecoder& d) {
  std::string log;
  while (auto e = d.next()) log += render(*e) + "\n";
  return log;
}

// Feeds `input` in chunks of `chunk` bytes (0 = all at once), then EOF when `eof`.
std::string run(std::string_view input, std::size_t chunk, bool eof = true,
                std::size_t max = kMaxFrameBytes) {
  FrameDecoder d(max);
  std::string log;
  if (chunk == 0) {
    d.feed(input);
  } else {
    for (std::size_t i = 0; i < input.size(); i += chunk) {
      d.feed(input.substr(i, chunk));
      log += drain(d);  // draining mid-stream must not change anything
    }
  }
  if (eof) d.feedEof();
  return log + drain(d);
}

// The transcript, checked to be independent of how the bytes are split.
std::string transcript(std::string_view input, bool eof = true, std::size_t max = kMaxFrameBytes) {
  const std::string whole = run(input, 0, eof, max);
  if (input.size() <= 100'000) CHECK(run(input, 1, eof, max) == whole);
  CHECK(run(input, 3, eof, max) == whole);
  CHECK(run(input, 4096, eof, max) == whole);
  return whole;
}

}  // namespace

TEST_CASE("FRAME-01 one frame a line, many frames in one read", "[frame]") {
  CHECK(transcript("{\"a\":1}\n{}\n[]\n") ==
        "frame @0 size=7 [{\"a\":1}]\n"
        "frame @8 size=2 [{}]\n"
        "frame @11 size=2 [[]]\n"
        "eof @14 []\n");
}

TEST_CASE("FRAME-01 no event before the LF arrives", "[frame]") {
  FrameDecoder d;
  d.feed("{\"a\":");
  CHECK_FALSE(d.next());
  d.feed("1}");
  CHECK_FALSE(d.next());
  d.feed("\n");
  auto e = d.next();
  REQUIRE(e);
  CHECK(e->kind == FrameEvent::Kind::Frame);
  CHECK(e->bytes == "{\"a\":1}");
  CHECK_FALSE(d.next());
  CHECK_FALSE(d.eof());
  CHECK(d.bytesSeen() == 8);
}

TEST_CASE("FRAME-08 one CR before the LF is stripped and flagged — other CRs stay", "[frame]") {
  CHECK(transcript("{}\r\n{}\r\r\n\r{}\n") ==
        "frame @0 size=3 cr [{}]\n"
        "frame @4 size=4 cr [{}\r]\n"
        "frame @9 size=3 [\r{}]\n"
        "eof @13 []\n");
}

TEST_CASE("FRAME-09 an unterminated last fragment is delivered, then EOF", "[frame]") {
  CHECK(transcript("{}\n{\"method\":\"plugin/shutdown\"}") ==
        "frame @0 size=2 [{}]\n"
        "frame @3 size=28 unterminated [{\"method\":\"plugin/shutdown\"}]\n"
        "eof @31 []\n");
  // A trailing CR at EOF is stripped like before an LF.
  CHECK(transcript("{}\r") == "frame @0 size=3 cr unterminated [{}]\n" "eof @3 []\n");
}

TEST_CASE("FRAME-09 nothing after the last LF gives no extra frame", "[frame]") {
  CHECK(transcript("{}\n") == "frame @0 size=2 [{}]\neof @3 []\n");
  CHECK(transcript("") == "eof @0 []\n");
}

TEST_CASE("FRAME-09 without EOF an unterminated fragment stays pending", "[frame]") {
  CHECK(transcript("{}\n{", /*eof=*/false) == "frame @0 size=2 [{}]\n");
}

TEST_CASE("FRAME-10 an empty line is delivered as an empty frame", "[frame]") {
  CHECK(transcript("\n\r\n{}\n") ==
        "frame @0 size=0 []\n"
        "frame @1 size=1 cr []\n"
        "frame @3 size=2 [{}]\n"
        "eof @6 []\n");
}

TEST_CASE("FRAME-06 a frame of exactly 4,194,304 bytes is accepted", "[frame]") {
  std::string f(kMaxFrameBytes, 'x');
  FrameDecoder d;
  d.feed(f + "\n");
  auto e = d.next();
  REQUIRE(e);
  CHECK(e->kind == FrameEvent::Kind::Frame);
  CHECK(e->bytes.size() == kMaxFrameBytes);
  CHECK(e->size == kMaxFrameBytes);
}

TEST_CASE("FRAME-06 a trailing CR counts toward the limit", "[frame]") {
  // limit-1 bytes + CR = exactly the limit: accepted.
  std::string ok(kMaxFrameBytes - 1, 'x');
  CHECK(transcript(ok + "\r\n") ==
        "frame @0 size=4194304 cr [xxxxxxxx…4194303B]\n"
        "eof @4194305 []\n");
  // limit bytes + CR: oversized although the stripped frame would fit.
  std::string bad(kMaxFrameBytes, 'x');
  const std::string log = transcript(bad + "\r\n{}\n");
  CHECK(log ==
        "oversized @0 size=4194305 [xxxxxxxx…256B]\n"
        "frame @4194306 size=2 [{}]\n"
        "eof @4194309 []\n");
}

TEST_CASE("FRAME-06 a frame of 4,194,305 bytes is rejected, then the decoder resyncs", "[frame]") {
  std::string f(kMaxFrameBytes + 1, 'y');
  CHECK(transcript("{}\n" + f + "\n{\"b\":2}\n") ==
        "frame @0 size=2 [{}]\n"
        "oversized @3 size=4194305 [yyyyyyyy…256B]\n"
        "frame @4194309 size=7 [{\"b\":2}]\n"
        "eof @4194317 []\n");
}

TEST_CASE("FRAME-07 oversized is reported as soon as the limit is passed, without an LF", "[frame]") {
  FrameDecoder d;
  d.feed(std::string(kMaxFrameBytes, 'z'));
  CHECK_FALSE(d.next());  // exactly the limit so far: could still be a valid frame
  d.feed("z");
  auto e = d.next();
  REQUIRE(e);
  CHECK(e->kind == FrameEvent::Kind::Oversized);
  CHECK(e->bytes == std::string(FrameDecoder::kOversizedKeep, 'z'));
  // A flood keeps going: nothing more is reported or buffered until the LF.
  for (int i = 0; i < 8; ++i) d.feed(std::string(1 << 20, 'z'));
  CHECK_FALSE(d.next());
  d.feedEof();
  auto eof = d.next();
  REQUIRE(eof);
  CHECK(eof->kind == FrameEvent::Kind::Eof);
  CHECK(d.bytesSeen() == kMaxFrameBytes + 1 + 8 * (1u << 20));
}

TEST_CASE("FRAME-06 a small limit behaves the same at its boundary", "[frame]") {
  CHECK(transcript("1234\n12345\n123456\n12\n", true, 5) ==
        "frame @0 size=4 [1234]\n"
        "frame @5 size=5 [12345]\n"
        "oversized @11 size=6 [123456]\n"
        "frame @18 size=2 [12]\n"
        "eof @21 []\n");
  // Oversized unterminated fragment at EOF: reported once, no last frame.
  CHECK(transcript("12345678", true, 5) == "oversized @0 size=6 [123456]\neof @8 []\n");
}

TEST_CASE("FRAME-04 invalid UTF-8 is its own event, and the stream continues", "[frame]") {
  CHECK(transcript("\xff\n{\"a\":\"\xc3\xa9\"}\n{\"x\":\"\xc3\"}\n") ==
        "utf8 @0 size=1 bad@0 [\xff]\n"
        "frame @2 size=10 [{\"a\":\"\xc3\xa9\"}]\n"
        "utf8 @13 size=9 bad@6 [{\"x\":\"\xc3\"}]\n"
        "eof @23 []\n");
}

TEST_CASE("FRAME-05 invalid UTF-8 in an unterminated last fragment is reported", "[frame]") {
  CHECK(transcript("{}\n\xed\xa0\x80") ==
        "frame @0 size=2 [{}]\n"
        "utf8 @3 size=3 unterminated bad@0 [\xed\xa0\x80]\n"
        "eof @6 []\n");
}

TEST_CASE("FRAME-14 a UTF-8 BOM is valid UTF-8 and reaches the JSON layer untouched", "[frame]") {
  CHECK(transcript("\xef\xbb\xbf{}\n") == "frame @0 size=5 [\xef\xbb\xbf{}]\n" "eof @6 []\n");
}

TEST_CASE("FRAME-04 firstInvalidUtf8 follows RFC 3629 exactly", "[frame][utf8]") {
  struct Case {
    std::string s;
    std::size_t bad;
  };
  const std::vector<Case> cases = {
      {"", npos},
      {"plain ascii text longer than eight bytes", npos},
      {"\x7f", npos},
      {"\xc2\x80", npos},                  // U+0080
      {"\xdf\xbf", npos},                  // U+07FF
      {"\xe0\xa0\x80", npos},              // U+0800
      {"\xed\x9f\xbf", npos},              // U+D7FF
      {"\xee\x80\x80", npos},              // U+E000
      {"\xef\xbf\xbf", npos},              // U+FFFF
      {"\xf0\x90\x80\x80", npos},          // U+10000
      {"\xf4\x8f\xbf\xbf", npos},          // U+10FFFF
      {"\x80", 0},                         // lone continuation
      {"\xbf", 0},
      {"\xc0\x80", 0},                     // overlong NUL
      {"\xc1\xbf", 0},                     // overlong
      {"\xe0\x80\x80", 0},                 // overlong 3-byte
      {"\xe0\x9f\xbf", 0},                 // overlong U+07FF
      {"\xf0\x80\x80\x80", 0},             // overlong 4-byte
      {"\xf0\x8f\xbf\xbf", 0},             // overlong U+FFFF
      {"\xed\xa0\x80", 0},                 // U+D800 surrogate
      {"\xed\xbf\xbf", 0},                 // U+DFFF surrogate
      {"\xf4\x90\x80\x80", 0},             // U+110000
      {"\xf5\x80\x80\x80", 0},
      {"\xff", 0},
      {"\xfe", 0},
      {"\xc3", 0},                         // truncated 2-byte
      {"\xe2\x82", 0},                     // truncated 3-byte
      {"\xf0\x9f\x98", 0},                 // truncated 4-byte
      {"\xc3\x41", 0},                     // bad continuation
      {"\xe2\x28\xa1", 0},
      {"\xf0\x9f\x98\x41", 0},
      {"abcdefghij\xc3\xa9xyz\xff", 15},   // after the ASCII fast path and a valid sequence
      {"abcdefgh\x80", 8},
      {"\xf0\x9f\x98\x80 ok \xe2\x82\xac", npos},
  };
  for (const auto& c : cases) {
    INFO("input bytes: " << c.s.size());
    CHECK(firstInvalidUtf8(c.s) == c.bad);
  }
}

TEST_CASE("FRAME-04 every two-byte sequence is classified as RFC 3629 says", "[frame][utf8]") {
  int wrong = 0, valid_count = 0;
  for (int a = 0x80; a < 0x100; ++a)
    for (int b = 0; b < 0x100; ++b) {
      const std::string s{static_cast<char>(a), static_cast<char>(b)};
      const bool valid = a >= 0xC2 && a <= 0xDF && b >= 0x80 && b <= 0xBF;
      valid_count += valid;
      if ((firstInvalidUtf8(s) == npos) != valid) ++wrong;
    }
  CHECK(wrong == 0);
  CHECK(valid_count == 30 * 64);
}

TEST_CASE("FRAME-03 encodeFrame appends exactly one LF and no CR", "[frame]") {
  CHECK(conform::wire::encodeFrame("{}") == "{}\n");
  CHECK(conform::wire::encodeFrame("") == "\n");
}

TEST_CASE("FRAME-09 feeding after EOF is ignored and EOF is reported once", "[frame]") {
  FrameDecoder d;
  d.feed("{}");
  d.feedEof();
  d.feedEof();
  d.feed("{}\n");
  CHECK(drain(d) == "frame @0 size=2 unterminated [{}]\neof @2 []\n");
  CHECK(d.eof());
}
