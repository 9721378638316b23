// Channel over real child processes (tests/helpers/*): survival guarantees of channel.h.
// Every wait is on an event with a deadline; the only bounded "nothing happens" waits are the
// stall checks, which must see no event.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/wire/channel.h"

using namespace conform::wire;
using namespace std::chrono_literals;
using Kind = ChannelEvent::Kind;

namespace {

std::string helper(const char* name) { return std::string(CONFORM_HELPER_DIR) + "/" + name; }

std::unique_ptr<Channel> spawnHelper(Reactor& r, const char* name, std::vector<std::string> args = {},
                                     SpawnOptions opt = {}) {
  opt.program = helper(name);
  opt.args = std::move(args);
  SpawnError err;
  auto ch = spawnProcess(r, opt, &err);
  INFO(err.message);
  REQUIRE(ch);
  return ch;
}

// Next event of one of `kinds` (others are collected into `skipped`), or fails the test.
ChannelEvent expectEvent(Channel& ch, Kind kind, std::chrono::milliseconds within = 10s) {
  auto ev = ch.next(deadlineIn(within));
  REQUIRE(ev.has_value());
  INFO("got kind " << static_cast<int>(ev->kind) << " text=" << ev->text << " frame=" << ev->frame.bytes.substr(0, 80));
  REQUIRE(ev->kind == kind);
  return std::move(*ev);
}

std::vector<ChannelEvent> collectUntilExited(Channel& ch, std::chrono::milliseconds within = 20s) {
  std::vector<ChannelEvent> out;
  const auto deadline = deadlineIn(within);
  while (auto ev = ch.next(deadline)) {
    const bool done = ev->kind == Kind::Exited;
    out.push_back(std::move(*ev));
    if (done) break;
  }
  REQUIRE(!out.empty());
  REQUIRE(out.back().kind == Kind::Exited);
  return out;
}

// True once `pid` (not necessarily our child) has died, waiting on its pidfd. A dead orphan may
// stay a zombie here (this container's init does not reap), which counts as dead.
bool waitDead(int pid, std::chrono::milliseconds within) {
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return errno == ESRCH;
  pollfd p{static_cast<int>(fd), POLLIN, 0};
  const int r = ::poll(&p, 1, static_cast<int>(within.count()));
  ::close(static_cast<int>(fd));
  return r == 1;
}

// Our child is reaped (no zombie) and, unless it had a grandchild, its process group is gone. (A
// killed grandchild is an orphan; it may linger as init's zombie here, so its group can still
// answer kill(-pgid, 0): those tests check the grandchild with waitDead instead.)
void requireNoTrace(int pid, bool group_gone = true) {
  int st = 0;
  CHECK(::waitpid(pid, &st, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  CHECK(::kill(pid, 0) == -1);
  if (group_gone) CHECK(::kill(-pid, 0) == -1);
}

std::string frameOf(int n) { return "{\"id\":" + std::to_string(n) + ",\"x\":\"abc\"}"; }

}  // namespace

TEST_CASE("channel: echo child round trip, then EOF and exit 0 after closeWrite", "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "echo");
  REQUIRE(ch->running());
  REQUIRE(ch->pid() > 0);
  for (int i = 0; i < 100; ++i) REQUIRE(ch->writeFrame(frameOf(i)));
  for (int i = 0; i < 100; ++i) {
    auto ev = expectEvent(*ch, Kind::Frame);
    CHECK(ev.frame.bytes == frameOf(i));
    CHECK_FALSE(ev.frame.unterminated);
  }
  ch->closeWrite();
  expectEvent(*ch, Kind::Eof);
  auto ex = expectEvent(*ch, Kind::Exited);
  CHECK(ex.status.success());
  CHECK(ex.status.str() == "exit 0");
  CHECK_FALSE(ch->running());
  REQUIRE(ch->exitStatus().has_value());
  const int pid = ch->pid();
  ch->close();
  requireNoTrace(pid);
  // Finished channel: next() answers at once instead of waiting for its deadline.
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(ch->next(deadlineIn(5s)).has_value());
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
}

TEST_CASE("FRAME-09 a child exiting mid-frame gives the fragment as an unterminated frame, then Eof, then Exited",
          "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "exit_midframe");
  auto a = expectEvent(*ch, Kind::Frame);
  CHECK(a.frame.bytes == "{\"a\":1}");
  CHECK_FALSE(a.frame.unterminated);
  auto b = expectEvent(*ch, Kind::Frame);
  CHECK(b.frame.bytes == "{\"partial\":");
  CHECK(b.frame.unterminated);
  expectEvent(*ch, Kind::Eof);
  auto ex = expectEvent(*ch, Kind::Exited);
  CHECK(ex.status.success());
}

TEST_CASE("channel: exit(11) and death by SIGSEGV are reported distinctly", "[channel][process]") {
  Reactor r;
  SECTION("exit 11") {
    auto ch = spawnHelper(r, "die", {"exit", "11"});
    auto ev = collectUntilExited(*ch);
    CHECK_FALSE(ev.back().status.signaled);
    CHECK(ev.back().status.code == 11);
    CHECK(ev.back().status.str() == "exit 11");
    CHECK_FALSE(ev.back().status.success());
  }
  SECTION("SIGSEGV") {
    auto ch = spawnHelper(r, "die", {"signal", "11"});
    auto ev = collectUntilExited(*ch);
    CHECK(ev.back().status.signaled);
    CHECK(ev.back().status.signal == SIGSEGV);
    CHECK(ev.back().status.str() == "killed by signal 11 (SIGSEGV)");
  }
}

TEST_CASE("channel: early exit — Eof and Exited arrive, later writes fail with WriteFailed (EPIPE), never SIGPIPE",
          "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "die", {"exit", "3"});
  auto ev = collectUntilExited(*ch);
  CHECK(ev.back().status.code == 3);
  bool saw_eof = false;
  for (auto& e : ev) saw_eof |= e.kind == Kind::Eof;
  CHECK(saw_eof);
  CHECK_FALSE(ch->writeFrame("{\"after\":\"exit\"}"));
  auto wf = expectEvent(*ch, Kind::WriteFailed);
  CHECK(wf.text.find("EPIPE") != std::string::npos);
  CHECK_FALSE(ch->writeFrame("{}"));  // stays failed
}

TEST_CASE("FRAME-02 stderr chatter is delivered as Stderr lines and never as frames", "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "stderr_chatter");
  auto ev = collectUntilExited(*ch);
  std::vector<std::string> frames, lines;
  for (auto& e : ev) {
    if (e.kind == Kind::Frame) frames.push_back(e.frame.bytes);
    if (e.kind == Kind::Stderr) lines.push_back(e.text);
  }
  REQUIRE(frames.size() == 1);
  CHECK(frames[0] == R"({"jsonrpc":"2.0","method":"real/frame"})");
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "starting up");
  CHECK(lines[1] == R"({"jsonrpc":"2.0","method":"fake/frame"})");
  CHECK(lines[2] == "with CR");
  CHECK(lines[3].substr(0, 64 * 1024) == std::string(64 * 1024, 'L'));  // capped at 64 KiB …
  CHECK(lines[3].find("36864 more bytes dropped") != std::string::npos);  // … and the drop noted
  CHECK(lines[4] == "no newline at the end");
  CHECK(ev.back().status.success());
}

TEST_CASE("channel: a child that never reads stdin makes writes fail at max_write_buffer, never block",
          "[channel][process]") {
  Reactor r;
  SpawnOptions opt;
  opt.max_write_buffer = 1u << 20;
  auto ch = spawnHelper(r, "noread", {}, opt);
  expectEvent(*ch, Kind::Frame);  // ready
  const std::string chunk(64 * 1024, 'w');
  std::size_t accepted = 0;
  const auto t0 = std::chrono::steady_clock::now();
  int i = 0;
  for (; i < 10000 && ch->write(chunk); ++i) accepted += chunk.size();
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  CHECK(i < 10000);                                   // a write was refused …
  CHECK(accepted <= opt.max_write_buffer + (16u << 20));  // … after at most limit + pipe capacity
  CHECK(ch->pendingWriteBytes() <= opt.max_write_buffer);
  auto wf = expectEvent(*ch, Kind::WriteFailed);
  CHECK(wf.text.find("not reading") != std::string::npos);
  CHECK_FALSE(ch->flush(deadlineIn(50ms)));
  const int pid = ch->pid();
  ch->close();
  auto ex = ch->exitStatus();
  REQUIRE(ex.has_value());
  CHECK(ex->signaled);
  CHECK(ex->signal == SIGKILL);
  requireNoTrace(pid);
}

TEST_CASE("channel: a 200 MB stdout flood is read completely and in order", "[channel][process][flood]") {
  Reactor r;
  auto ch = spawnHelper(r, "flood", {std::to_string(200ull << 20)});
  std::uint64_t frames = 0, bytes = 0;
  bool eof = false;
  const auto deadline = deadlineIn(100s);
  while (auto ev = ch->next(deadline)) {
    if (ev->kind == Kind::Frame) {
      ++frames;
      bytes += ev->frame.bytes.size();
      if (ev->frame.bytes.size() != 1023) FAIL("frame " << frames << " has " << ev->frame.bytes.size() << " bytes");
    } else if (ev->kind == Kind::Eof) {
      eof = true;
    } else if (ev->kind == Kind::Exited) {
      CHECK(ev->status.success());
      break;
    } else {
      FAIL("unexpected event kind " << static_cast<int>(ev->kind));
    }
  }
  CHECK(eof);
  CHECK(frames == 200u * 1024u);
  CHECK(bytes == 200ull * 1024 * 1023);
}

TEST_CASE("channel: close() in the middle of a flood returns promptly and reaps", "[channel][process][flood]") {
  Reactor r;
  auto ch = spawnHelper(r, "flood", {std::to_string(1ull << 40)});
  for (int i = 0; i < 1000; ++i) expectEvent(*ch, Kind::Frame);
  const int pid = ch->pid();
  const auto t0 = std::chrono::steady_clock::now();
  ch->close();
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  REQUIRE(ch->exitStatus().has_value());
  CHECK(ch->exitStatus()->signal == SIGKILL);
  requireNoTrace(pid);
}

TEST_CASE("channel: stallReading stops delivery (the child blocks) and resuming delivers everything",
          "[channel][process][flood]") {
  Reactor r;
  const std::uint64_t total = 8u << 20;  // far more than a pipe holds
  auto ch = spawnHelper(r, "flood", {std::to_string(total)});
  expectEvent(*ch, Kind::Frame);
  ch->stallReading(true);
  // Drain what was already decoded, then nothing more may arrive while stalled.
  std::uint64_t frames = 1;
  while (ch->poll()) ++frames;
  while (auto ev = ch->next(deadlineIn(300ms))) {
    REQUIRE(ev->kind == Kind::Frame);
    ++frames;
  }
  CHECK(frames < total / 1024);
  CHECK(ch->running());  // blocked on its full pipe, not finished
  ch->stallReading(false);
  auto rest = collectUntilExited(*ch);
  for (auto& e : rest) frames += e.kind == Kind::Frame;
  CHECK(frames == total / 1024);
}

TEST_CASE("FRAME-06 a flood without LF is one Oversized FrameError, then Eof", "[channel][process][flood]") {
  Reactor r;
  auto ch = spawnHelper(r, "flood", {std::to_string(16u << 20), "nolf"});
  auto fe = expectEvent(*ch, Kind::FrameError);
  CHECK(fe.frame.kind == FrameEvent::Kind::Oversized);
  CHECK(fe.frame.bytes.size() <= FrameDecoder::kOversizedKeep);
  auto rest = collectUntilExited(*ch);
  bool eof = false;
  for (auto& e : rest) {
    CHECK(e.kind != Kind::Frame);
    eof |= e.kind == Kind::Eof;
  }
  CHECK(eof);
}

TEST_CASE("FRAME-04 invalid UTF-8 from a child is a FrameError distinct from frames", "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "flood", {"4096", "badutf8"});
  for (int i = 0; i < 4; ++i) {
    auto fe = expectEvent(*ch, Kind::FrameError);
    CHECK(fe.frame.kind == FrameEvent::Kind::InvalidUtf8);
    CHECK(fe.frame.utf8_error_at == 9);
  }
}

TEST_CASE("channel: graceful close of a child ignoring SIGTERM escalates to SIGKILL after the grace",
          "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "ignore_term");
  expectEvent(*ch, Kind::Frame);  // SIGTERM is ignored from now on
  const int pid = ch->pid();
  const auto t0 = std::chrono::steady_clock::now();
  ch->close(true, 300ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= 300ms);
  CHECK(took < 300ms + 5s);
  REQUIRE(ch->exitStatus().has_value());
  CHECK(ch->exitStatus()->signaled);
  CHECK(ch->exitStatus()->signal == SIGKILL);
  requireNoTrace(pid);
}

TEST_CASE("channel: graceful close of a child that exits on SIGTERM needs no SIGKILL", "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "ignore_term", {"exit"});
  expectEvent(*ch, Kind::Frame);  // handler installed
  const auto t0 = std::chrono::steady_clock::now();
  ch->close(true, 5s);
  CHECK(std::chrono::steady_clock::now() - t0 < 4s);
  REQUIRE(ch->exitStatus().has_value());
  CHECK(ch->exitStatus()->str() == "exit 7");
}

TEST_CASE("channel: signal() reaches the child's process group", "[channel][process]") {
  Reactor r;
  auto ch = spawnHelper(r, "ignore_term", {"exit"});
  expectEvent(*ch, Kind::Frame);
  ch->signal(SIGTERM);
  auto ev = collectUntilExited(*ch);
  CHECK(ev.back().status.code == 7);
}

TEST_CASE("LIFE-09 a grandchild holding stdout open neither hangs close() nor survives it", "[channel][process]") {
  Reactor r;
  SECTION("the child exits, the orphan keeps the pipe") {
    auto ch = spawnHelper(r, "grandchild", {"exit"});
    auto f = expectEvent(*ch, Kind::Frame);
    const int gc = std::atoi(f.frame.bytes.c_str() + std::string("{\"grandchild\":").size());
    REQUIRE(gc > 0);
    auto ex = expectEvent(*ch, Kind::Exited);  // no Eof can come first: the orphan holds stdout
    CHECK(ex.status.success());
    const int pid = ch->pid();
    const auto t0 = std::chrono::steady_clock::now();
    ch->close();
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);
    CHECK(waitDead(gc, 5000ms));
    requireNoTrace(pid, false);
  }
  SECTION("both stay until close") {
    auto ch = spawnHelper(r, "grandchild", {"stay"});
    auto f = expectEvent(*ch, Kind::Frame);
    const int gc = std::atoi(f.frame.bytes.c_str() + std::string("{\"grandchild\":").size());
    const int pid = ch->pid();
    ch.reset();  // the destructor kills and reaps too
    CHECK(waitDead(gc, 5000ms));
    requireNoTrace(pid, false);
  }
}

TEST_CASE("channel: spawning a program that does not exist is a SpawnError with a clear message",
          "[channel][process]") {
  Reactor r;
  SpawnError err;
  SpawnOptions opt;
  SECTION("a path") {
    opt.program = "./no-such-plugin-here";
    CHECK(spawnProcess(r, opt, &err) == nullptr);
    CHECK(err.message == "cannot start ./no-such-plugin-here: No such file or directory");
  }
  SECTION("a bare name searched in PATH") {
    opt.program = "conform-no-such-program-xyz";
    CHECK(spawnProcess(r, opt, &err) == nullptr);
    CHECK(err.message == "cannot start conform-no-such-program-xyz: No such file or directory");
  }
  SECTION("a missing working directory") {
    opt.program = helper("echo");
    opt.cwd = "/no/such/dir";
    CHECK(spawnProcess(r, opt, &err) == nullptr);
    CHECK(err.message.find("working directory /no/such/dir") != std::string::npos);
  }
  SECTION("an empty program") {
    CHECK(spawnProcess(r, opt, &err) == nullptr);
    CHECK_FALSE(err.message.empty());
  }
}

TEST_CASE("LIFE-06 with SpawnOptions::env the child's environment is exactly that — cwd applies",
          "[channel][process]") {
  Reactor r;
  ::setenv("CONFORM_CHANNEL_TEST_MARK", "inherited", 1);
  SpawnOptions opt;
  std::string expect_cwd = "/";
  SECTION("env set: cleared") {
    opt.env = std::map<std::string, std::string>{{"FOO", "bar"}, {"EMPTY", ""}};
    opt.cwd = "/tmp";
    expect_cwd = "/tmp";
  }
  SECTION("env unset: inherited") {}
  auto ch = spawnHelper(r, "printenv", {}, opt);
  auto ev = collectUntilExited(*ch);
  std::vector<std::string> env;
  std::string cwd;
  bool sigpipe_default = false, sigmask_empty = false, own_group = false;
  for (auto& e : ev) {
    if (e.kind != Kind::Frame) continue;
    const std::string& b = e.frame.bytes;
    if (b.rfind("{\"env\":\"", 0) == 0) env.push_back(b.substr(8, b.size() - 10));
    if (b.rfind("{\"cwd\":\"", 0) == 0) cwd = b.substr(8, b.size() - 10);
    sigpipe_default |= b == "{\"sigpipe_default\":true}";
    sigmask_empty |= b == "{\"sigmask_empty\":true}";
    own_group |= b == "{\"pgid_is_pid\":true}";
  }
  // conform ignores SIGPIPE; children must get the default back, an empty mask, their own group.
  CHECK(sigpipe_default);
  CHECK(sigmask_empty);
  CHECK(own_group);
  if (opt.env) {
    CHECK(env == std::vector<std::string>{"EMPTY=", "FOO=bar"});
    CHECK(cwd == expect_cwd);
  } else {
    CHECK(std::find(env.begin(), env.end(), "CONFORM_CHANNEL_TEST_MARK=inherited") != env.end());
  }
}

TEST_CASE("channel: waitAny returns whichever child has an event", "[channel][process]") {
  Reactor r;
  auto a = spawnHelper(r, "echo");
  auto b = spawnHelper(r, "echo");
  REQUIRE(b->writeFrame("{\"to\":\"b\"}"));
  Channel* got = r.waitAny(deadlineIn(10s));
  REQUIRE(got == b.get());
  auto ev = got->poll();
  REQUIRE(ev);
  CHECK(ev->frame.bytes == "{\"to\":\"b\"}");
  CHECK(r.waitAny(deadlineIn(50ms)) == nullptr);
  REQUIRE(a->writeFrame("{\"to\":\"a\"}"));
  CHECK(r.waitAny(deadlineIn(10s)) == a.get());
}

TEST_CASE("channel: the Reactor may die before its channels without hanging or leaking the child",
          "[channel][process]") {
  auto r = std::make_unique<Reactor>();
  auto ch = spawnHelper(*r, "noread");
  const int pid = ch->pid();
  r.reset();
  CHECK_FALSE(ch->running());
  CHECK_FALSE(ch->write("x\n"));
  std::optional<ChannelEvent> ev;
  while ((ev = ch->poll()) && ev->kind != Kind::Exited) {
  }
  REQUIRE(ev.has_value());
  CHECK(ev->status.signal == SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(ch->next(deadlineIn(5s)).has_value());
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  ch.reset();
  requireNoTrace(pid);
}
