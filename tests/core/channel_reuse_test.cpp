// One Reactor reused across many short-lived children (report: "a dead plugin's stderr text
// showed up as stdout frames of the next session"). Every child tags its output with its round, so
// a byte that crossed channels, or crossed from stderr to stdout inside one channel, is caught.
// Every wait is on an event with a deadline.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "core/wire/channel.h"

using namespace conform::wire;
using namespace std::chrono_literals;
using Kind = ChannelEvent::Kind;

namespace {

// A child that interleaves stderr lines and stdout frames (separate write(2)s, so stdout and
// stderr become readable in the same epoll round) and then dies, optionally by SIGKILL.
std::unique_ptr<Channel> spawnTagged(Reactor& r, int tag, int lines, bool kill_self) {
  SpawnOptions opt;
  opt.program = "/bin/sh";
  const std::string t = std::to_string(tag);
  opt.args = {"-c", "i=0; while [ $i -lt " + std::to_string(lines) + " ]; do "
                    "echo \"{\\\"s\\\":" + t + ",\\\"i\\\":$i}\"; "
                    "echo \"err " + t + " $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" >&2; "
                    "i=$((i+1)); done" + (kill_self ? "; kill -9 $$" : "")};
  SpawnError err;
  auto ch = spawnProcess(r, opt, &err);
  INFO(err.message);
  REQUIRE(ch);
  return ch;
}

struct Seen {
  int frames = 0, stderr_lines = 0;
  bool exited = false;
};

// Checks one event against the tag of the channel it came from.
void check(const ChannelEvent& ev, int tag, Seen& seen) {
  const std::string t = std::to_string(tag);
  switch (ev.kind) {
    case Kind::Frame: {
      const std::string want = "{\"s\":" + t + ",\"i\":" + std::to_string(seen.frames) + "}";
      INFO("round " << tag << " frame: " << ev.frame.bytes.substr(0, 120));
      REQUIRE(ev.frame.bytes == want);  // in order, own channel, never stderr text
      ++seen.frames;
      break;
    }
    case Kind::Stderr: {
      INFO("round " << tag << " stderr: " << ev.text.substr(0, 120));
      REQUIRE(ev.text.rfind("err " + t + " " + std::to_string(seen.stderr_lines) + " ", 0) == 0);
      ++seen.stderr_lines;
      break;
    }
    case Kind::Eof: break;
    case Kind::Exited: seen.exited = true; break;
    default: FAIL("round " << tag << " unexpected event kind " << static_cast<int>(ev.kind) << ": " << ev.text);
  }
}

void runToExit(Channel& ch, int tag, Seen& seen) {
  const auto deadline = deadlineIn(20s);
  while (!seen.exited) {
    auto ev = ch.next(deadline);
    REQUIRE(ev.has_value());
    check(*ev, tag, seen);
  }
}

}  // namespace

TEST_CASE("channel reuse: sequential children on one reactor never see each other's bytes") {
  Reactor r;
  constexpr int kLines = 40;
  for (int round = 0; round < 200; ++round) {
    auto ch = spawnTagged(r, round, kLines, round % 3 == 2);
    Seen seen;
    runToExit(*ch, round, seen);
    REQUIRE(seen.frames == kLines);
    REQUIRE(seen.stderr_lines == kLines);
    ch->close();
    REQUIRE_FALSE(ch->poll().has_value());
    REQUIRE_FALSE(ch->next(deadlineIn(0ms)).has_value());  // nothing after close
  }
}

TEST_CASE("channel reuse: close before Exited, with reads pending, then the next child") {
  Reactor r;
  constexpr int kLines = 40;
  for (int round = 0; round < 200; ++round) {
    auto ch = spawnTagged(r, round, kLines, false);
    Seen seen;
    // Take a few events (reads are armed and maybe completed but not delivered), then close.
    const auto deadline = deadlineIn(10s);
    for (int k = 0; k < round % 5 && !seen.exited; ++k) {
      auto ev = ch->next(deadline);
      REQUIRE(ev.has_value());
      check(*ev, round, seen);
    }
    ch->close();
    // What was queued before close may still be taken; all of it belongs to this round.
    while (auto ev = ch->poll()) check(*ev, round, seen);
    r.pollOnce();  // run the completions the close left queued: they must not deliver anything
    REQUIRE_FALSE(ch->poll().has_value());
  }
}

TEST_CASE("channel reuse: two live channels interleaved on one reactor") {
  Reactor r;
  constexpr int kLines = 60;
  for (int round = 0; round < 60; ++round) {
    const int ta = 2 * round, tb = 2 * round + 1;
    auto a = spawnTagged(r, ta, kLines, round % 2 == 0);
    auto b = spawnTagged(r, tb, kLines, round % 2 == 1);
    Seen sa, sb;
    const auto deadline = deadlineIn(20s);
    while (!sa.exited || !sb.exited) {
      Channel* c = r.waitAny(deadline);
      REQUIRE(c != nullptr);
      auto ev = c->poll();
      REQUIRE(ev.has_value());
      if (c == a.get()) check(*ev, ta, sa);
      else if (c == b.get()) check(*ev, tb, sb);
      else FAIL("event from an unknown channel");
    }
    REQUIRE(sa.frames == kLines);
    REQUIRE(sb.frames == kLines);
    REQUIRE(sa.stderr_lines == kLines);
    REQUIRE(sb.stderr_lines == kLines);
    a->close();
    b->close();
    REQUIRE_FALSE(a->poll().has_value());
    REQUIRE_FALSE(b->poll().has_value());
  }
}
