// Channel over in-memory pairs and over plain fds (fdChannel): the same FrameDecoder, limits and
// event semantics as child-process channels, without processes.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>

#include "core/wire/channel.h"

using namespace conform::wire;
using namespace std::chrono_literals;
using Kind = ChannelEvent::Kind;

namespace {

ChannelEvent expectEvent(Channel& ch, Kind kind) {
  auto ev = ch.poll();
  if (!ev) ev = ch.next(deadlineIn(5s));
  REQUIRE(ev.has_value());
  INFO("got kind " << static_cast<int>(ev->kind) << " text=" << ev->text);
  REQUIRE(ev->kind == kind);
  return std::move(*ev);
}

}  // namespace

TEST_CASE("channel: memoryPair round trip in both directions", "[channel][memory]") {
  Reactor r;
  auto [a, b] = memoryPair(r);
  REQUIRE(a->writeFrame(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping"})"));
  REQUIRE(a->write("{\"split\":"));
  REQUIRE(a->write("true}\n"));
  CHECK(expectEvent(*b, Kind::Frame).frame.bytes == R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping"})");
  CHECK(expectEvent(*b, Kind::Frame).frame.bytes == R"({"split":true})");
  CHECK_FALSE(b->poll());
  REQUIRE(b->writeFrame(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  CHECK(r.waitAny(deadlineIn(1s)) == a.get());
  CHECK(expectEvent(*a, Kind::Frame).frame.bytes == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK(a->pid() == -1);
  CHECK_FALSE(a->exitStatus());
  CHECK(r.waitAny(deadlineIn(20ms)) == nullptr);
}

TEST_CASE("FRAME-09 closeWrite on one side gives the unterminated fragment, then Eof, on the other",
          "[channel][memory]") {
  Reactor r;
  auto [a, b] = memoryPair(r);
  REQUIRE(a->write("{\"last\":1}"));
  a->closeWrite();
  CHECK_FALSE(a->write("{}\n"));
  auto f = expectEvent(*b, Kind::Frame);
  CHECK(f.frame.bytes == "{\"last\":1}");
  CHECK(f.frame.unterminated);
  expectEvent(*b, Kind::Eof);
  // Nothing can follow EOF: next() returns at once rather than at its deadline.
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(b->next(deadlineIn(5s)));
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
}

TEST_CASE("FRAME-06 memoryPair accepts a frame of exactly max_frame bytes and reports one more as Oversized",
          "[channel][memory]") {
  Reactor r;
  SECTION("the protocol limit, 4,194,304 bytes") {
    auto [a, b] = memoryPair(r);
    const std::string exact = "\"" + std::string(kMaxFrameBytes - 2, 'p') + "\"";
    REQUIRE(exact.size() == 4'194'304);
    REQUIRE(a->writeFrame(exact));
    CHECK(expectEvent(*b, Kind::Frame).frame.size == 4'194'304);
    REQUIRE(a->writeFrame(exact + " "));
    auto fe = expectEvent(*b, Kind::FrameError);
    CHECK(fe.frame.kind == FrameEvent::Kind::Oversized);
    REQUIRE(a->writeFrame("{}"));  // resync after the oversized frame
    CHECK(expectEvent(*b, Kind::Frame).frame.bytes == "{}");
  }
  SECTION("a custom limit") {
    auto [a, b] = memoryPair(r, 16);
    REQUIRE(a->writeFrame(std::string(16, 'x')));
    CHECK(expectEvent(*b, Kind::Frame).frame.bytes.size() == 16);
    REQUIRE(a->writeFrame(std::string(17, 'x')));
    CHECK(expectEvent(*b, Kind::FrameError).frame.kind == FrameEvent::Kind::Oversized);
  }
}

TEST_CASE("FRAME-08 memoryPair strips one CR before LF and remembers it", "[channel][memory]") {
  Reactor r;
  auto [a, b] = memoryPair(r);
  REQUIRE(a->write("{}\r\n"));
  auto f = expectEvent(*b, Kind::Frame);
  CHECK(f.frame.bytes == "{}");
  CHECK(f.frame.had_cr);
}

TEST_CASE("FRAME-05 invalid UTF-8 through a memoryPair is a FrameError", "[channel][memory]") {
  Reactor r;
  auto [a, b] = memoryPair(r);
  REQUIRE(a->write("\xFF\n"));
  auto fe = expectEvent(*b, Kind::FrameError);
  CHECK(fe.frame.kind == FrameEvent::Kind::InvalidUtf8);
}

TEST_CASE("channel: memoryPair stall holds bytes up to the write buffer limit, then refuses", "[channel][memory]") {
  Reactor r;
  auto [a, b] = memoryPair(r);
  b->stallReading(true);
  const std::string chunk(1u << 20, 'z');
  int accepted = 0;
  while (accepted < 1000 && a->write(chunk)) ++accepted;
  CHECK(accepted == 64);  // 64 MiB default max_write_buffer
  CHECK(a->pendingWriteBytes() == 64u << 20);
  CHECK(expectEvent(*a, Kind::WriteFailed).text.find("not reading") != std::string::npos);
  CHECK_FALSE(b->poll());
  b->stallReading(false);
  // 64 MiB without LF: one Oversized error, bytes discarded; then a frame gets through again.
  CHECK(a->pendingWriteBytes() == 0);
  CHECK(expectEvent(*b, Kind::FrameError).frame.kind == FrameEvent::Kind::Oversized);
  REQUIRE(a->write("\n{}\n"));
  CHECK(expectEvent(*b, Kind::Frame).frame.bytes == "{}");
}

TEST_CASE("channel: writing to a closed memory peer fails with WriteFailed", "[channel][memory]") {
  Reactor r;
  auto [a, b] = memoryPair(r);
  b->close();
  expectEvent(*a, Kind::Eof);  // close() closes both directions
  CHECK_FALSE(a->writeFrame("{}"));
  CHECK(expectEvent(*a, Kind::WriteFailed).text.find("EPIPE") != std::string::npos);
  b.reset();
  CHECK_FALSE(a->writeFrame("{}"));
}

TEST_CASE("channel: fdChannel reads frames from a pipe and sees Eof when the writer closes", "[channel][fd]") {
  Reactor r;
  int to_us[2], from_us[2];
  REQUIRE(::pipe(to_us) == 0);
  REQUIRE(::pipe(from_us) == 0);
  auto ch = fdChannel(r, to_us[0], from_us[1]);
  const std::string in = "{\"n\":1}\n{\"n\":2}\r\n{\"n\":3}";
  REQUIRE(::write(to_us[1], in.data(), in.size()) == static_cast<ssize_t>(in.size()));
  CHECK(expectEvent(*ch, Kind::Frame).frame.bytes == "{\"n\":1}");
  CHECK(expectEvent(*ch, Kind::Frame).frame.had_cr);
  ::close(to_us[1]);
  auto last = expectEvent(*ch, Kind::Frame);
  CHECK(last.frame.bytes == "{\"n\":3}");
  CHECK(last.frame.unterminated);
  expectEvent(*ch, Kind::Eof);
  REQUIRE(ch->writeFrame("{\"out\":true}"));
  REQUIRE(ch->flush(deadlineIn(5s)));
  char buf[64];
  const ssize_t n = ::read(from_us[0], buf, sizeof buf);
  CHECK(std::string(buf, static_cast<std::size_t>(std::max<ssize_t>(n, 0))) == "{\"out\":true}\n");
  ch->close();
  CHECK(::read(from_us[0], buf, sizeof buf) == 0);  // our write end was closed
  ::close(from_us[0]);
}

TEST_CASE("channel: fdChannel over a regular file (conform record < file) reads it all", "[channel][fd]") {
  Reactor r;
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  std::string content;
  for (int i = 0; i < 50000; ++i) content += "{\"i\":" + std::to_string(i) + "}\n";
  REQUIRE(std::fwrite(content.data(), 1, content.size(), f) == content.size());
  std::fflush(f);
  const int fd = ::dup(::fileno(f));
  ::lseek(fd, 0, SEEK_SET);
  std::fclose(f);
  auto ch = fdChannel(r, fd, -1);
  int frames = 0;
  const auto deadline = deadlineIn(20s);
  while (auto ev = ch->next(deadline)) {
    if (ev->kind == Kind::Eof) break;
    REQUIRE(ev->kind == Kind::Frame);
    REQUIRE(ev->frame.bytes == "{\"i\":" + std::to_string(frames) + "}");
    ++frames;
  }
  CHECK(frames == 50000);
  CHECK_FALSE(ch->write("x\n"));  // no write side
}
