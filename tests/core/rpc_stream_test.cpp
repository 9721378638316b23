// Transcript tests across both wire layers: raw bytes → FrameDecoder → decodeMessage, one line
// per event, the way a receiver sees a peer's stdout (PROTOCOL §2 + §3).
#include <catch2/catch.hpp>

#include <string>

#include "core/wire/framing.h"
#include "core/wire/rpc.h"

using namespace conform::wire;

namespace {

std::string receive(std::string_view bytes, std::size_t chunk) {
  FrameDecoder dec;
  std::string log;
  auto drain = [&] {
    while (auto ev = dec.next()) {
      switch (ev->kind) {
        case FrameEvent::Kind::Frame: {
          auto m = decodeMessage(ev->bytes);
          if (!m) {
            log += "fatal " + m.error().str() + "\n";
          } else {
            log += std::string(toString(m->kind));
            if (!m->isNotification()) log += " " + m->id.render();
            if (!m->method.empty()) log += " " + std::string(m->method);
            if (ev->had_cr) log += " (cr)";
            if (ev->unterminated) log += " (unterminated)";
            log += "\n";
          }
          break;
        }
        case FrameEvent::Kind::InvalidUtf8:
          log += "fatal FRAME-04: invalid UTF-8 at byte " + std::to_string(ev->utf8_error_at) + "\n";
          break;
        case FrameEvent::Kind::Oversized: log += "fatal FRAME-06: oversized\n"; break;
        case FrameEvent::Kind::Eof: log += "eof\n"; break;
      }
    }
  };
  for (std::size_t i = 0; i < bytes.size(); i += chunk) {
    dec.feed(bytes.substr(i, chunk));
    drain();
  }
  dec.feedEof();
  drain();
  return log;
}

}  // namespace

TEST_CASE("FRAME-08 CRLF-terminated frames decode normally, split anywhere", "[rpc][frame][stream]") {
  const std::string bytes =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/emit\",\"params\":{}}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"method\":\"plugin/producer/register\",\"params\":{}}\r\n"
      "[]\n"
      "\n"
      "\xff\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/shutdown\",\"params\":{}}";
  const std::string expected =
      "success 1 (cr)\n"
      "notification plugin/emit\n"
      "request \"r-1\" plugin/producer/register (cr)\n"
      "fatal FRAME-11: frame is an array (JSON-RPC batches are not supported), not an object\n"
      "fatal FRAME-10: empty frame (an empty line is malformed JSON)\n"
      "fatal FRAME-04: invalid UTF-8 at byte 0\n"
      "notification plugin/shutdown (unterminated)\n"
      "eof\n";
  CHECK(receive(bytes, bytes.size()) == expected);
  CHECK(receive(bytes, 1) == expected);
  CHECK(receive(bytes, 7) == expected);
}

TEST_CASE("FRAME-06 a padded notification of exactly the limit is accepted, one byte more is not",
          "[rpc][frame][stream]") {
  const std::string head = R"({"jsonrpc":"2.0","method":"plugin/future_notice","params":{"pad":")";
  const std::string tail = R"("}})";
  std::string at_limit = head + std::string(kMaxFrameBytes - head.size() - tail.size(), 'p') + tail;
  REQUIRE(at_limit.size() == kMaxFrameBytes);
  CHECK(receive(at_limit + "\n", 1 << 16) == "notification plugin/future_notice\neof\n");
  std::string over = head + std::string(kMaxFrameBytes - head.size() - tail.size() + 1, 'p') + tail;
  CHECK(receive(over + "\n", 1 << 16) == "fatal FRAME-06: oversized\neof\n");
}
