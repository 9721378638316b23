// tests/tracecmds/record_command_test — `conform record` as an engine would run it: a transparent
// tap. Proves byte identity both ways (odd bytes included), stderr pass-through, exit code and
// signal propagation, signal forwarding, and that the trace describes the conversation.
#include <catch2/catch.hpp>

#include <poll.h>

#include <chrono>

#include "core/trace/trace.h"
#include "tests/tracecmds/proc.h"

using namespace tracecmds;
using conform::trace::Dir;
using conform::trace::Kind;

namespace {

struct TraceSummary {
  std::string role;
  std::vector<std::string> peer;
  std::string e2p, p2e;  // frame bytes re-joined with LF (CR / unterminated restored)
  std::size_t e2p_frames = 0, p2e_frames = 0;
  bool e2p_eof = false, p2e_eof = false;
  std::optional<int> exit_code, signal;
  std::vector<std::string> notes;
  std::string error;
};

TraceSummary summarize(const std::string& path) {
  TraceSummary s;
  auto r = conform::trace::TraceReader::open(path);
  auto h = r->header();
  if (!h) { s.error = h.error().str(); return s; }
  s.role = (*h)->role;
  s.peer = (*h)->peer;
  while (true) {
    auto ev = r->next();
    if (!ev) { s.error = ev.error().str(); return s; }
    if (!*ev) break;
    const auto& e = **ev;
    if (e.kind == Kind::Frame || e.kind == Kind::Text || e.kind == Kind::Binary) {
      std::string& dst = e.dir == Dir::EngineToPlugin ? s.e2p : s.p2e;
      dst += e.raw;
      if (e.had_cr) dst += '\r';
      if (!e.unterminated) dst += '\n';
      ++(e.dir == Dir::EngineToPlugin ? s.e2p_frames : s.p2e_frames);
    } else if (e.kind == Kind::Eof) {
      (e.dir == Dir::EngineToPlugin ? s.e2p_eof : s.p2e_eof) = true;
    } else if (e.kind == Kind::Exit) {
      s.exit_code = e.exit_code;
      s.signal = e.signal;
    } else if (e.kind == Kind::Note) {
      s.notes.emplace_back(e.text);
    }
  }
  return s;
}

// Bytes an engine would never send but a tap must still copy exactly.
std::string oddInput() {
  std::string in;
  in += "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"plugin/ping\",\"params\":{}}\n";
  in += "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/shutdown\",\"params\":{}}\r\n";  // CR LF (FRAME-08)
  in += "\n";                                                                   // empty line (FRAME-10)
  in += "\xff\xfe not utf-8\n";                                                  // FRAME-04
  in += "{\"a\":1,\"a\":2}\n";                                                   // duplicate member (FRAME-19)
  in += "{\"big\":\"" + std::string(300 * 1024, 'x') + "\"}\n";                  // crosses pipe buffers
  in += "{\"unterminated\":true}";                                               // no LF before EOF (FRAME-09)
  return in;
}

}  // namespace

TEST_CASE("record: both directions are copied byte for byte and the trace holds the same frames", "[record]") {
  TempDir dir;
  const std::string in = oddInput();
  Result r = run({conformBin(), "record", "--out", dir / "t.ndjson", "--", helper("tap_plugin"), "--cat"}, in, dir);
  INFO(r.err);
  REQUIRE(r.code() == 0);
  CHECK(r.out.size() == in.size());
  CHECK(r.out == in);  // the plugin echoes its stdin: equal output proves both directions
  TraceSummary s = summarize(dir / "t.ndjson");
  REQUIRE(s.error.empty());
  CHECK(s.role == "tap");
  CHECK(s.peer == std::vector<std::string>{helper("tap_plugin"), "--cat"});
  CHECK(s.e2p == in);
  CHECK(s.p2e == in);
  CHECK(s.e2p_frames == 7);
  CHECK(s.p2e_frames == 7);
  CHECK(s.e2p_eof);
  CHECK(s.p2e_eof);
  REQUIRE(s.exit_code);
  CHECK(*s.exit_code == 0);
}

TEST_CASE("record: a scripted plugin's answers pass through unchanged and stderr is not captured", "[record]") {
  TempDir dir;
  const std::string in = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"plugin/ping\",\"params\":{}}\n";
  Result r = run({conformBin(), "record", "--out", dir / "t.ndjson", "--", helper("tap_plugin")}, in, dir);
  REQUIRE(r.code() == 0);
  CHECK(r.out.rfind("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"len\":", 0) == 0);
  CHECK(r.err.find("tap_plugin: started") != std::string::npos);  // inherited stderr
  TraceSummary s = summarize(dir / "t.ndjson");
  CHECK(s.p2e == r.out);
  CHECK(readFile(dir / "t.ndjson").find("tap_plugin: started") == std::string::npos);
}

TEST_CASE("record: the child's exit code is conform's exit code", "[record]") {
  TempDir dir;
  for (int code : {0, 1, 7, 42}) {
    Result r = run({conformBin(), "record", "--out", dir / "t.ndjson", "--", helper("tap_plugin"), "--exit",
                    std::to_string(code)},
                   "", dir);
    CHECK(r.code() == code);
    TraceSummary s = summarize(dir / "t.ndjson");
    REQUIRE(s.exit_code);
    CHECK(*s.exit_code == code);
  }
}

TEST_CASE("record: a child killed by a signal makes conform die of the same signal", "[record]") {
  TempDir dir;
  for (int sig : {SIGTERM, SIGKILL, SIGSEGV, SIGABRT}) {
    INFO("signal " << sig);
    Result r = run({conformBin(), "record", "--out", dir / "t.ndjson", "--", helper("tap_plugin"), "--signal",
                    std::to_string(sig)},
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"plugin/ping\",\"params\":{}}\n", dir);
    CHECK(r.signal() == sig);
    TraceSummary s = summarize(dir / "t.ndjson");
    REQUIRE(s.error.empty());
    REQUIRE(s.signal);
    CHECK(*s.signal == sig);
  }
}

TEST_CASE("record: SIGTERM sent to conform is forwarded to the plugin and the trace is flushed", "[record]") {
  TempDir dir;
  int in[2], out[2];
  REQUIRE(::pipe(in) == 0);
  REQUIRE(::pipe(out) == 0);
  const std::string trace = dir / "t.ndjson";
  std::vector<std::string> argv = {conformBin(), "record", "--out", trace, "--", helper("tap_plugin"), "--ready"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[1]);
    ::close(out[0]);
    ::alarm(kWatchdogSeconds);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  // Wait (bounded) for the plugin's ready line: it proves the child runs before we signal.
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 1000) > 0) {
      char buf[256];
      ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
  }
  CHECK(got == "{\"ready\":true}\n");
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(in[1]);
  ::close(out[0]);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  TraceSummary s = summarize(trace);
  REQUIRE(s.error.empty());
  CHECK(s.p2e == "{\"ready\":true}\n");
  REQUIRE(s.signal);
  CHECK(*s.signal == SIGTERM);
  REQUIRE_FALSE(s.notes.empty());
  CHECK(s.notes.front().find("SIGTERM") != std::string::npos);
}

TEST_CASE("record: harness errors exit 2 with a message", "[record]") {
  TempDir dir;
  SECTION("the command cannot be started") {
    Result r = run({conformBin(), "record", "--out", dir / "t.ndjson", "--", dir / "no-such-plugin"}, "", dir);
    CHECK(r.code() == 2);
    CHECK(r.err.find("cannot start") != std::string::npos);
  }
  SECTION("the trace cannot be written") {
    Result r = run({conformBin(), "record", "--out", dir / "no/such/dir/t.ndjson", "--", helper("tap_plugin")}, "", dir);
    CHECK(r.code() == 2);
    CHECK(r.err.find("cannot write trace") != std::string::npos);
  }
  SECTION("--out is required") {
    Result r = run({conformBin(), "record", "--", helper("tap_plugin")}, "", dir);
    CHECK(r.code() == 2);
  }
}
