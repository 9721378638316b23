// harness/runner/fuzz_engine — `conform fuzz --role plugin -- ENGINE…`: conform plays the PLUGIN and
// fuzzes a live engine (docs/fuzzing-live.md "Fuzzing an engine").
//
// How the engine is driven: exactly as `conform check-engine` does it (harness/runner/engine_check.cpp,
// docs/check-engine.md — the adapter contract): the engine is started with `--config FILE --driver
// stdio --virtual-clock`; FILE registers one plugin, `conform probe --connect SOCKET`, a byte relay
// whose other end is our Unix socket. We therefore hold both sides the engine talks to: the driver
// (its stdin/stdout: sessions, events, tool calls, runs with hook chains, pings, the virtual clock)
// and the plugin connection.
//
// Stimuli, one batch at a time (EngineStep): driver actions, clock advances, plugin→engine frames
// (emits with the grant the engine handed out last, emits with made-up or spent tokens, requests
// of unknown methods, unknown notifications, responses to no request, CR LF, invalid UTF-8, broken
// JSON, a line over 4 MiB), and changes of how the plugin answers the engine's requests (valid,
// error, malformed, silent, twice). Placeholders ($SESSION, $TOKEN, $INVOCATION, $ID) are bound
// at send time to what the engine said last, so a step sequence replays on a fresh engine (the
// engine runs on its virtual clock: time only moves when a step moves it).
//
// Judging (the same monitors as `lint` and `check-engine`, fed incrementally; only findings bound to
// the ENGINE count — our mutated frames break plugin rules on purpose):
//   * the engine process ends by itself (signal or exit) — crash / exit;
//   * a driver request unanswered within 5 s (the adapter answers at once, docs/driver-protocol.md)
//     or a plugin request unanswered within --deadline-ms while the connection is up — hang, RPC-08;
//   * any engine-bound monitor finding (MUST or SHOULD) — rule.
// A possibly-fatal step (`may_end`) may legitimately end the plugin connection (FRAME-13, RPC-01,
// FRAME-06/07); the session then ends without a finding and a fresh engine is started.
//
// Minimisation: ddmin (fuzz_impl.h) over the steps, each trial a fresh engine; the minimised steps are
// then run once more on a fresh engine (`reproduced` in summary.json says whether the problem showed
// again). The reproducer is a role-plugin trace (header role "plugin", clock "virtual") whose
// driver calls are trace notes in check-engine's form (`driver → {…}` / `driver ← {…}`), the
// engine configuration a note `engine config: {…}` — what `conform replay --role plugin` needs to
// drive the engine again — and steps.txt, the steps in words.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "core/protocol/common.h"
#include "core/protocol/methods.h"
#include "core/trace/trace.h"
#include "core/wire/channel.h"
#include "core/wire/framing.h"
#include "core/wire/rpc.h"
#include "harness/rules/monitor.h"
#include "harness/runner/engine_check.h"
#include "harness/runner/fuzz.h"
#include "harness/runner/fuzz_impl.h"
#include "harness/runner/trace_commands.h"
#include "mock_plugin/sdk.h"

namespace conform::runner {
namespace fuzz {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

// The engine starts its plugin eagerly (§16.3); check-engine's bound.
constexpr milliseconds kConnectWithin{10'000};
// INIT-18: startup_timeout_ms default 10,000 — the handshake.
constexpr milliseconds kHandshakeWithin{10'000};
// docs/driver-protocol.md: a driver request without `wait` is answered at once.
constexpr milliseconds kDriverWithin{5'000};
// SHUT-07: grace (1,000 ms configured below) + 6 s, then the engine is killed without a finding.
constexpr milliseconds kExitWithin{7'000};
// Short engine timeouts (LIFE-07: any value > 0) so that timeouts are reached by few clock steps.
constexpr int kToolTimeoutMs = 3000, kInterceptionMs = 1000, kGraceMs = 1000;
// FRAME-06: 4 MiB is the frame limit; one byte more.
constexpr std::size_t kOversized = 4u * 1024 * 1024 + 1;
constexpr std::size_t kMaxBatch = 10;
constexpr std::size_t kMaxSessionSteps = 5'000;
constexpr std::size_t kMaxTraceBytes = 32u << 20;

const std::uint8_t kEngineSide = reports::kBindsEngine;

std::string quote(std::string_view s) {
  json::Document d;
  d.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), d.GetAllocator());
  return json::compact(d);
}

std::string selfExe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

void replaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

}  // namespace

// One stimulus of `conform fuzz --role plugin`.
struct EngineStep {
  enum class Kind : std::uint8_t { Start, Driver, Frame, Mode };
  Kind kind = Kind::Start;
  std::string method;  // Driver
  std::string text;    // Driver: params; Frame: the bytes written (LF included when there is one)
  int mode = 0;        // Mode: 0 valid, 1 error, 2 malformed result, 3 silent, 4 twice
  bool may_end = false;
  bool request = false;  // Frame: a plugin request, an answer is owed (RPC-08); its id is $ID
  std::string label;
};

namespace {

const char* kModeNames[] = {"valid answers", "error answers", "malformed results", "no answers", "every answer twice"};

class EngineGen {
 public:
  EngineGen() = default;
  std::vector<EngineStep> batch(Rng& rng, std::size_t max_len) {
    std::vector<EngineStep> out;
    const std::size_t n = 1 + rng() % max_len;
    for (std::size_t i = 0; i < n; ++i) out.push_back(one(rng));
    return out;
  }
  static EngineStep driver(std::string method, std::string params) {
    EngineStep s;
    s.kind = EngineStep::Kind::Driver;
    s.label = "driver " + method + " " + params;
    s.method = std::move(method);
    s.text = std::move(params);
    return s;
  }

 private:
  static EngineStep frame(std::string bytes, std::string label, bool may_end = false, bool request = false) {
    EngineStep s;
    s.kind = EngineStep::Kind::Frame;
    s.text = std::move(bytes);
    s.label = std::move(label);
    s.may_end = may_end;
    s.request = request;
    return s;
  }
  EngineStep one(Rng& rng) {
    const int r = static_cast<int>(rng() % 100);
    auto pick = [&](std::initializer_list<const char*> l) { return *(l.begin() + rng() % l.size()); };
    if (r < 30) {
      switch (rng() % 12) {
        case 0: return driver("session.create", "{}");
        case 1: case 2:
          return driver("event.produce", fmt::format(R"({{"session_id":"$SESSION","class":"{}","count":{}}})",
                                                     pick({"chunk", "ordinary", "terminal"}), 1 + rng() % 3));
        case 3: case 4:
          return driver("tool.call", fmt::format(R"({{"session_id":"$SESSION","tool":"{}","arguments":{}}})", pick({"echo", "echo", "nope"}),
                                                 pick({R"({"path":"src/a.rs"})", "{}", R"({"path":7})"})));
        case 5: return driver("plugin.ping", fmt::format(R"({{"plugin":"{}"}})", kProbeName));
        case 6: case 7:
          return driver("run.start", fmt::format(R"({{"session_id":"$SESSION","input":"hello"{}}})",
                                                 pick({"", R"(,"turns":[{"tool_calls":[{"tool":"echo","arguments":{"path":"p"}}]},{"text":"done"}])",
                                                       R"(,"turns":[{"status":500},{"text":"fallback"}])"})));
        case 8: return driver(pick({"compact", "fork", "revert"}), R"({"session_id":"$SESSION","through_seq":1})");
        case 9: return driver("tool.cancel", R"({"invocation_id":"$INVOCATION"})");
        case 10: return driver("diagnostics.flush", "{}");
        default: return driver("run.steer", R"({"session_id":"$SESSION","text":"steer"})");
      }
    }
    if (r < 45) return driver("clock.advance", fmt::format(R"({{"ms":{}}})", pick({"10", "100", "500", "999", "1000", "1001", "2000", "3001", "5000"})));
    if (r < 55) {
      EngineStep s;
      s.kind = EngineStep::Kind::Mode;
      const int w = static_cast<int>(rng() % 10);
      s.mode = w < 5 ? 0 : w - 4 > 4 ? 4 : w - 4;
      s.label = std::string("answer the engine's requests with ") + kModeNames[s.mode];
      return s;
    }
    const std::string payload = pick({"{}", R"({"n":1})", R"({"deep":[[[[1]]]]})"});
    if (r < 72) {
      const char* name = pick({"n", "status", "x.y"});
      switch (rng() % 6) {
        case 0: case 1: case 2:
          return frame(fmt::format(R"({{"jsonrpc":"2.0","method":"plugin/emit","params":{{"session_id":"$SESSION_OF_TOKEN","context_id":"$TOKEN","name":"{}","payload":{}}}}})" "\n", name, payload),
                       "emit with the last grant");
        case 3:
          return frame(fmt::format(R"({{"jsonrpc":"2.0","method":"plugin/emit","params":{{"session_id":"$SESSION","context_id":"00000000-0000-4000-8000-000000000000","name":"{}","payload":{}}}}})" "\n", name, payload),
                       "emit with a made-up token");
        case 4:
          return frame(fmt::format(R"({{"jsonrpc":"2.0","method":"plugin/emit","params":{{"session_id":"$SESSION","context_id":"$TOKEN","name":"{}","payload":{}}}}})" "\r\n", name, payload),
                       "emit with the last grant, CR LF, maybe the wrong session");
        default:
          return frame(R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":"$SESSION_OF_TOKEN","context_id":"$TOKEN"}})" "\n",
                       "emit without name and payload (RPC-12)", true);
      }
    }
    if (r < 84) {
      switch (rng() % 5) {
        case 0: case 1:
          return frame(fmt::format(R"({{"jsonrpc":"2.0","id":$ID,"method":"{}","params":{{}}}})" "\n", pick({"plugin/no_such", "plugin/ping", "plugin/tools/call"})),
                       "a request the engine does not serve (RPC-13: -32601)", false, true);
        case 2:
          return frame(R"({"jsonrpc":"2.0","id":$ID,"method":"plugin/producer/register","params":{"session_id":"$SESSION"}})" "\n",
                       "producer/register (served or -32601, PROD-02)", false, true);
        case 3: return frame(R"({"jsonrpc":"2.0","method":"plugin/no_such_notification","params":{}})" "\n", "an unknown notification (RPC-14: ignored)");
        default: return frame(R"({"jsonrpc":"2.0","id":987654,"result":{}})" "\n", "a response to no request (RPC-09: ignored)");
      }
    }
    switch (rng() % 8) {
      case 0: return frame("{\"jsonrpc\":\"2.0\",\"method\":\n", "truncated JSON (FRAME-13)", true);
      case 1: return frame("{\"jsonrpc\":\"2.0\",\"method\":\"plugin/emit\",\"params\":{\"name\":\"\xff\xfe\"}}\n", "invalid UTF-8 (FRAME-04)", true);
      case 2: return frame(R"({"jsonrpc":"1.0","method":"plugin/emit","params":{}})" "\n", "jsonrpc 1.0 (RPC-01)", true);
      case 3: return frame("[]\n", "a batch array (FRAME-11)", true);
      case 4: return frame("\n", "an empty line (FRAME-10)", true);
      case 5: return frame(std::string("{\"x\":\"") + std::string(kOversized, 'a') + "\"}\n", "a line over 4 MiB (FRAME-06/07)", true);
      // Duplicate members with equal values only: which duplicate a receiver keeps is R4's [impl]
      // choice (FRAME-19, F11 "fuzzers MUST NOT rely on this"); with "name":"n","name":"m" the
      // engine echoed "m" (last wins, as R4) while the EMIT monitor expected "n" — reported.
      case 6: return frame(R"({"jsonrpc":"2.0","jsonrpc":"2.0","method":"plugin/no_such_notification","params":{"a":1,"a":1}})" "\n",
                           "duplicate member names with equal values (FRAME-19)", true);
      default: return frame(R"({"jsonrpc":"2.0","id":$ID,"method":"plugin/no_such","params":[]})" "\n", "params as an array", true, true);
    }
  }
};

// One engine process, its probe connection and the trace of the session.
class EngineRun {
 public:
  EngineRun(const FuzzOptions& o, const protocol::Profile& p) : opt_(o), profile_(p) {}
  ~EngineRun() { stop(); }

  struct Start {
    std::string harness_error;
    std::optional<Problem> problem;
  };
  Start start() {
    stop();
    Start r;
    reset();
    trace::TraceHeader hdr;
    hdr.role = "plugin";
    hdr.peer = opt_.command;
    hdr.profile = std::string(profile_.version());
    hdr.clock = "virtual";
    hdr.extra.AddMember("name", json::str("conform fuzz --role plugin", hdr.extra.GetAllocator()), hdr.extra.GetAllocator());
    {
      std::ostringstream h;
      trace::TraceWriter hw(h, clock::RealClock::instance(), std::move(hdr));
      hw.flush();
      header_line_ = h.str();
    }
    trace_ = header_line_;
    tw_ = std::make_unique<trace::TraceWriter>(chunk_, clock::RealClock::instance(), trace::TraceWriter::NoHeader{},
                                               trace::WriterOptions{trace::FlushPolicy::Buffered, false});
    vt0_ = vclk_.now();
    mon_ = std::make_unique<rules::MonitorSet>(&profile_);
    if (!setup(r.harness_error)) return r;
    ++sessions_;
    // The handshake: the engine's plugin/initialize, answered with our declaration.
    const auto until = Clock::now() + kHandshakeWithin;
    while (!initialized_ && !ended() && Clock::now() < until) waitSome(until);
    if (!initialized_) {
      r.problem = Problem{Problem::Kind::Hang, "INIT-18", "the engine never completed the handshake with its plugin", {}, lines_};
      if (engine_exit_) r.problem = exitProblem();
      return r;
    }
    return r;
  }

  std::optional<Problem> run(const std::vector<EngineStep>& steps) {
    bool may_end = false;
    for (const auto& s : steps) {
      if (ended()) break;
      may_end = may_end || s.may_end;
      send(s);
      // Driver answers before the next step: later steps use their results ($SESSION…).
      waitDriver();
      if (engine_exit_ && !exit_expected_) break;
    }
    // The probe: a driver request always answered (liveness), then every owed plugin answer.
    if (!ended()) {
      send(EngineGen::driver("plugin.status", fmt::format(R"({{"plugin":"{}"}})", kProbeName)));
      waitDriver();
    }
    const auto until = Clock::now() + milliseconds(opt_.deadline_ms);
    while (!ended() && !plugin_pending_.empty() && Clock::now() < until) waitSome(until);
    drain();
    return judge(may_end || may_end_pending_);
  }

  bool ended() const { return (engine_exit_.has_value()) || plugin_eof_; }
  bool alive() const { return engine_ != nullptr && !ended(); }
  std::size_t stepsSent() const { return sent_.size(); }
  const std::vector<EngineStep>& sent() const { return sent_; }
  const RunStats& stats() const { return stats_; }

  void stop() {
    if (!engine_) return;
    if (!engine_exit_) {
      mode_ = 0;
      exit_expected_ = true;
      std::string frame = fmt::format(R"({{"jsonrpc":"2.0","id":{},"method":"engine.shutdown","params":{{}}}})", next_driver_id_++);
      note("driver → " + frame);
      engine_->writeFrame(frame);
      engine_->closeWrite();
      const auto until = Clock::now() + kExitWithin;
      while (!engine_exit_ && Clock::now() < until) waitSome(until);
      if (!engine_exit_) note("the engine did not exit after engine.shutdown and driver EOF: killed");
    }
    flushChunk(false);
    engine_->close(false);
    engine_.reset();
    if (plugin_) plugin_->close(false);
    plugin_.reset();
    if (sock_fd_ >= 0) ::close(sock_fd_);
    sock_fd_ = -1;
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      dir_.clear();
    }
    reactor_.reset();
  }

  std::string traceText() const { return trace_; }

 private:
  // Trace time is the ENGINE's time: it runs on its virtual clock, which moves only with
  // clock.advance, so the monitors' timing rules (EMIT-10 grant expiry, QUOTA windows, PING-03)
  // judge what the engine saw, not how long our pipes took.
  std::int64_t t() const { return std::chrono::duration_cast<std::chrono::microseconds>(vclk_.now() - vt0_).count(); }
  void note(std::string_view s) {
    if (tw_) tw_->note(s, t());
  }

  void reset() {
    engine_exit_.reset();
    plugin_eof_ = initialized_ = exit_expected_ = may_end_pending_ = false;
    mode_ = 0;
    sent_.clear();
    plugin_pending_.clear();
    driver_pending_.clear();
    sessions_seen_.clear();
    token_.clear();
    token_session_.clear();
    invocation_.clear();
    next_plugin_id_ = 1;
    next_driver_id_ = 1;
    chunk_.str("");
    chunk_.clear();
    lines_ = 1;
    mon_seen_ = 0;
    trace_truncated_ = false;
  }

  bool setup(std::string& err) {
    const std::string probe = opt_.probe.empty() ? selfExe() : opt_.probe;
    if (probe.empty()) {
      err = "cannot find the conform executable for the probe (/proc/self/exe)";
      return false;
    }
    char tmpl[] = "/tmp/conform-fz-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      err = fmt::format("cannot create a temp folder: {}", std::strerror(errno));
      return false;
    }
    dir_ = tmpl;
    const std::string sock = dir_ + "/probe.sock", cfg_path = dir_ + "/engine.json";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, sock.data(), std::min(sock.size(), sizeof(addr.sun_path) - 1));
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 4) != 0) {
      err = fmt::format("cannot listen on {}: {}", sock, std::strerror(errno));
      return false;
    }
    const std::string cfg = fmt::format(
        R"({{"protocol_version":{},"plugins":{{"{}":{{"command":{},"args":["probe","--connect",{}],"tool_timeout_ms":{},"interception_timeout_ms":{},"shutdown_grace_ms":{}}}}},"permissions":{{"plugin":{{"*":"allow"}}}}}})",
        quote(profile_.version()), kProbeName, quote(probe), quote(sock), kToolTimeoutMs, kInterceptionMs, kGraceMs);
    {
      std::ofstream f(cfg_path, std::ios::binary);
      f << cfg << "\n";
      if (!f) {
        err = "cannot write " + cfg_path;
        return false;
      }
    }
    note("engine config: " + cfg);
    reactor_ = std::make_unique<wire::Reactor>();
    wire::SpawnOptions so;
    so.program = opt_.command.front();
    so.args.assign(opt_.command.begin() + 1, opt_.command.end());
    for (const char* a : {"--config", cfg_path.c_str(), "--driver", "stdio", "--virtual-clock"}) so.args.emplace_back(a);
    wire::SpawnError se;
    engine_ = wire::spawnProcess(*reactor_, so, &se);
    if (!engine_) {
      err = se.message;
      return false;
    }
    const auto until = Clock::now() + kConnectWithin;
    while (Clock::now() < until) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        sock_fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        int wfd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        plugin_ = wire::fdChannel(*reactor_, fd, wfd);
        note("the engine started the probe; connected");
        return true;
      }
      drain();
      if (engine_exit_) {
        err = fmt::format("the engine ended ({}) before starting its plugin (adapter contract: docs/check-engine.md)", engine_exit_->str());
        return false;
      }
      reactor_->waitAny(std::min(until, Clock::now() + milliseconds(20)));
    }
    err = "the engine did not start its plugin within 10 s (adapter contract: docs/check-engine.md)";
    return false;
  }

  void waitSome(Clock::time_point until) {
    drain();
    if (reactor_) reactor_->waitAny(std::min(until, Clock::now() + milliseconds(20)));
    drain();
  }

  // Pumps until no frame arrived from the engine for kQuiet (at most kQuietMax).
  void quiet() {
    constexpr milliseconds kQuiet{30}, kQuietMax{500};
    const auto give_up = Clock::now() + kQuietMax;
    std::uint64_t seen = stats_.frames_received;
    auto calm_until = Clock::now() + kQuiet;
    while (!ended() && Clock::now() < give_up && Clock::now() < calm_until) {
      waitSome(calm_until);
      if (stats_.frames_received != seen) {
        seen = stats_.frames_received;
        calm_until = Clock::now() + kQuiet;
      }
    }
  }

  void waitDriver() {
    const auto until = Clock::now() + kDriverWithin;
    while (!driver_pending_.empty() && !engine_exit_ && Clock::now() < until) waitSome(until);
  }

  // ---- output ----------------------------------------------------------------------------------
  void writePlugin(const std::string& bytes, std::string_view label = {}) {
    if (!plugin_ || plugin_eof_) return;
    // Trace one event per line, as check-engine's conversation does (unterminated tail kept).
    std::size_t start = 0;
    while (start < bytes.size()) {
      const std::size_t lf = bytes.find('\n', start);
      const bool term = lf != std::string::npos;
      std::string_view line(bytes.data() + start, (term ? lf : bytes.size()) - start);
      const bool cr = !line.empty() && line.back() == '\r';
      if (cr) line.remove_suffix(1);
      tw_->frame(trace::Dir::PluginToEngine, line, cr, t(), trace::FrameHint::Unknown, !term);
      start = term ? lf + 1 : bytes.size();
    }
    if (!label.empty()) note(label);
    stats_.bytes_sent += bytes.size();
    ++stats_.frames_sent;
    plugin_->write(bytes);
    plugin_->flush(wire::deadlineIn(milliseconds(200)));
  }

  void send(const EngineStep& s0) {
    EngineStep s = s0;
    sent_.push_back(s0);
    auto bind = [&](std::string& text) {
      replaceAll(text, "$SESSION_OF_TOKEN", token_session_.empty() ? "no-session" : token_session_);
      replaceAll(text, "$SESSION", sessions_seen_.empty() ? "no-session" : sessions_seen_.back());
      replaceAll(text, "$TOKEN", token_.empty() ? "no-token" : token_);
      replaceAll(text, "$INVOCATION", invocation_.empty() ? "no-invocation" : invocation_);
    };
    switch (s.kind) {
      case EngineStep::Kind::Start: return;
      case EngineStep::Kind::Mode:
        mode_ = s.mode;
        note(s.label);
        return;
      case EngineStep::Kind::Driver: {
        bind(s.text);
        std::int64_t advance_ms = -1;
        if (s.method == "clock.advance") {
          // Frames the engine wrote before this step must be stamped before the jump: wait until
          // the probe's relay has been quiet for a moment (bounded).
          quiet();
          if (auto pj = json::parse(s.text); pj && json::member(pj->doc, "ms") && json::member(pj->doc, "ms")->IsInt64())
            advance_ms = json::member(pj->doc, "ms")->GetInt64();
        }
        const std::int64_t id = next_driver_id_++;
        const std::string frame = fmt::format(R"({{"jsonrpc":"2.0","id":{},"method":{},"params":{}}})", id, quote(s.method), s.text);
        // run.steer, compact, fork and revert are answered when their hook chains finish, which on
        // the virtual clock may need a clock.advance (docs/driver-protocol.md): not owed at once.
        const bool deferred = s.method == "run.steer" || s.method == "compact" || s.method == "fork" || s.method == "revert";
        if (!deferred) driver_pending_[id] = s.method;
        if (s.method == "engine.shutdown") exit_expected_ = true;
        note("driver → " + frame);
        if (engine_) engine_->writeFrame(frame);
        if (advance_ms > 0) vclk_.advance(milliseconds(advance_ms));
        return;
      }
      case EngineStep::Kind::Frame: {
        bind(s.text);
        if (s.request) {
          const std::string id = std::to_string(1000 + next_plugin_id_++);
          replaceAll(s.text, "$ID", id);
          if (!s.may_end) plugin_pending_.insert(id);
        }
        if (s.may_end) {
          may_end_pending_ = true;
          // The engine's answers to earlier frames must be read (and traced) before the fatal
          // frame, or a monitor sees them after it ("kept processing frames after a fatal frame").
          quiet();
        }
        writePlugin(s.text, s.label);
        return;
      }
    }
  }

  // ---- input -----------------------------------------------------------------------------------
  void drain() {
    if (engine_) {
      while (auto ev = engine_->poll()) {
        using K = wire::ChannelEvent::Kind;
        switch (ev->kind) {
          case K::Frame: onDriverFrame(ev->frame.bytes); break;
          case K::FrameError: note("driver: undecodable frame"); break;
          case K::Stderr: note("engine stderr: " + ev->text); break;
          case K::Eof: note("driver: the engine closed its stdout"); break;
          case K::Exited:
            engine_exit_ = ev->status;
            note("the engine ended: " + ev->status.str());
            break;
          case K::WriteFailed: note("driver: write failed: " + ev->text); break;
        }
      }
    }
    if (plugin_) {
      while (auto ev = plugin_->poll()) {
        using K = wire::ChannelEvent::Kind;
        switch (ev->kind) {
          case K::Frame:
          case K::FrameError:
            tw_->frameEvent(trace::Dir::EngineToPlugin, ev->frame, t());
            ++stats_.frames_received;
            if (ev->kind == K::Frame && ev->frame.kind == wire::FrameEvent::Kind::Frame) onPluginFrame(ev->frame.bytes);
            break;
          case K::Eof:
            // The engine closed the plugin's stdin (SHUT-02 or after a fatal frame): we exit, as a
            // conforming plugin does (SHUT-08) — the probe closes its stdout.
            tw_->eof(trace::Dir::EngineToPlugin, t());
            plugin_eof_ = true;
            if (sock_fd_ >= 0) ::shutdown(sock_fd_, SHUT_WR);
            tw_->eof(trace::Dir::PluginToEngine, t());
            break;
          case K::WriteFailed: note("probe: write failed: " + ev->text); break;
          default: break;
        }
      }
    }
  }

  void onDriverFrame(const std::string& bytes) {
    auto p = json::parse(bytes);
    const json::Value* id = p ? json::member(p->doc, "id") : nullptr;
    if (!id || !id->IsInt64()) {
      note("driver: unexpected frame " + bytes.substr(0, 200));
      return;
    }
    note("driver ← " + bytes.substr(0, 300));
    auto it = driver_pending_.find(id->GetInt64());
    if (it == driver_pending_.end()) return;
    const std::string method = it->second;
    driver_pending_.erase(it);
    const json::Value* r = json::member(p->doc, "result");
    if (!r || !r->IsObject()) return;
    if (method == "session.create")
      if (auto s = json::stringMember(*r, "session_id")) sessions_seen_.emplace_back(*s);
    if (method == "tool.call")
      if (auto s = json::stringMember(*r, "invocation_id")) invocation_ = std::string(*s);
  }

  std::string validResult(std::string_view method) const {
    if (method == protocol::method::kToolsCall) return R"({"output":{"kind":"single","text":"ok"},"is_error":false})";
    if (auto hook = protocol::hookOfMethod(method)) return json::compact(plugin::hooks::passThrough(*hook));
    return "{}";
  }

  std::string handshake() const {
    std::string hooks;
    for (auto h : protocol::allHooks()) hooks += (hooks.empty() ? "" : ",") + quote(protocol::toString(h));
    const bool v004 = profile_.id() == protocol::Profile::Id::V004;
    return fmt::format(
        R"({{"protocol_version":{},"name":"{}","version":"0.1.0","capabilities":{{"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":true,"publish_bus":true,"publish_session_events":false{},"intercept":[{}]}},"tools":[{{"name":"echo","description":"conform fuzz tool","parameters":{{"type":"object","properties":{{"path":{{"type":"string"}}}}}},"permission_name":"echo","primary_resource_param":"path"}}]}})",
        quote(profile_.version()), kProbeName, v004 ? "" : R"(,"producer_messaging":false)", hooks);
  }

  void onPluginFrame(const std::string& bytes) {
    auto m = wire::decodeMessage(bytes);
    if (!m) return;
    if (m->params && m->params->IsObject()) {
      if (auto tok = json::stringMember(*m->params, "context_id")) {
        token_ = std::string(*tok);
        token_session_ = std::string(json::stringMember(*m->params, "session_id").value_or(""));
      }
    }
    if (m->isResponse()) {
      plugin_pending_.erase(m->id.render());
      return;
    }
    if (!m->isRequest()) return;
    const std::string method(m->method);
    if (method == protocol::method::kInitialize) {
      writePlugin(wire::encodeResultRaw(m->id, handshake()) + "\n");
      initialized_ = true;
      return;
    }
    if (method == protocol::method::kShutdown) {
      writePlugin(wire::encodeResultRaw(m->id, "{}") + "\n");
      return;
    }
    switch (mode_) {
      case 1: writePlugin(wire::encodeError(m->id, -32000, "conform fuzz: error answer") + "\n"); break;
      case 2: writePlugin(wire::encodeResultRaw(m->id, R"({"conform_fuzz":[1,2,3]})") + "\n"); break;
      case 3: break;  // silent: the engine's own timeout decides (TOOL-29, HOOK-06, PING-03)
      case 4: {
        const std::string f = wire::encodeResultRaw(m->id, validResult(method)) + "\n";
        writePlugin(f);
        writePlugin(f);
        break;
      }
      default: writePlugin(wire::encodeResultRaw(m->id, validResult(method)) + "\n"); break;
    }
  }

  // ---- judging ---------------------------------------------------------------------------------
  std::vector<reports::Finding> flushChunk(bool judge) {
    if (!tw_) return {};
    tw_->flush();
    std::string text = chunk_.str();
    chunk_.str("");
    chunk_.clear();
    std::vector<reports::Finding> out;
    if (text.empty()) return out;
    const std::uint64_t base = lines_;
    if (judge && mon_) {
      auto reader = trace::TraceReader::fromString(header_line_ + text);
      while (true) {
        auto ev = reader->next();
        if (!ev || !*ev) break;
        mon_->feed(**ev);
      }
      auto& all = mon_->findings();
      for (; mon_seen_ < all.size(); ++mon_seen_) {
        reports::Finding f = all[mon_seen_];
        if (!(f.binds & kEngineSide) || (f.binds & (reports::kBindsPlugin | reports::kBindsSdk))) continue;
        if (f.verdict != reports::Verdict::Fail && f.verdict != reports::Verdict::NonStrict) continue;
        for (auto& e : f.evidence)
          if (e.line > 1) e.line = base + (e.line - 1);
        out.push_back(std::move(f));
      }
    }
    if (trace_.size() + text.size() <= kMaxTraceBytes) trace_ += text;
    else trace_truncated_ = true;
    lines_ += static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n'));
    return out;
  }

  Problem exitProblem() const {
    Problem p;
    p.kind = engine_exit_->signaled ? Problem::Kind::Crash : Problem::Kind::Exit;
    p.rule = "RPC-08";
    p.message = fmt::format("the engine ended ({}) while the driver and its plugin were owed answers", engine_exit_->str());
    p.trace_line = lines_;
    return p;
  }

  std::optional<Problem> judge(bool may_end) {
    auto findings = flushChunk(true);
    if (engine_exit_ && !exit_expected_) return exitProblem();
    if (!findings.empty()) {
      Problem r;
      r.kind = Problem::Kind::Rule;
      r.rule = findings.front().rule_id;
      r.message = findings.front().message;
      r.trace_line = findings.front().evidence.empty() ? lines_ : findings.front().evidence.front().line;
      r.findings = std::move(findings);
      return r;
    }
    if (!driver_pending_.empty() && !engine_exit_) {
      tw_->timeout(fmt::format("driver answer to {}", driver_pending_.begin()->second), t());
      flushChunk(false);
      return Problem{Problem::Kind::Hang, "RPC-08",
                     fmt::format("the driver did not answer {} within {} ms", driver_pending_.begin()->second, kDriverWithin.count()), {}, lines_};
    }
    if (!plugin_pending_.empty() && !ended() && !may_end) {
      const std::string id = *plugin_pending_.begin();
      tw_->timeout(fmt::format("response to id {}", id), t());
      flushChunk(false);
      return Problem{Problem::Kind::Hang, "RPC-08", fmt::format("the engine did not answer the plugin's request id {} within {} ms", id, opt_.deadline_ms), {}, lines_};
    }
    return std::nullopt;
  }

  const FuzzOptions& opt_;
  const protocol::Profile& profile_;
  std::unique_ptr<wire::Reactor> reactor_;
  std::unique_ptr<wire::Channel> engine_, plugin_;
  std::optional<wire::ExitStatus> engine_exit_;
  int listen_fd_ = -1, sock_fd_ = -1;
  std::string dir_;
  bool plugin_eof_ = false, initialized_ = false, exit_expected_ = false, may_end_pending_ = false;
  int mode_ = 0;
  std::vector<EngineStep> sent_;
  std::set<std::string> plugin_pending_;
  std::map<std::int64_t, std::string> driver_pending_;
  std::vector<std::string> sessions_seen_;
  std::string token_, token_session_, invocation_;
  std::int64_t next_plugin_id_ = 1, next_driver_id_ = 1;
  std::string header_line_, trace_;
  bool trace_truncated_ = false;
  std::ostringstream chunk_;
  std::unique_ptr<trace::TraceWriter> tw_;
  std::unique_ptr<rules::MonitorSet> mon_;
  std::size_t mon_seen_ = 0;
  std::uint64_t lines_ = 1;
  clock::VirtualClock vclk_;
  clock::TimePoint vt0_{};
  RunStats stats_;
  std::uint64_t sessions_ = 0;

 public:
  std::uint64_t sessions() const { return sessions_; }
};

bool sameProblem(const Problem& want, const Problem& got) {
  if (want.kind != got.kind) return false;
  if (want.kind != Problem::Kind::Rule) return want.rule == got.rule;
  for (const auto& f : got.findings)
    if (f.rule_id == want.rule) return true;
  return false;
}

struct Trial {
  std::optional<Problem> problem;
  std::string trace, harness_error;
};

Trial runEngineTrial(const FuzzOptions& o, const protocol::Profile& p, const std::vector<EngineStep>& steps) {
  Trial tr;
  EngineRun run(o, p);
  auto st = run.start();
  if (!st.harness_error.empty()) {
    tr.harness_error = st.harness_error;
    return tr;
  }
  tr.problem = st.problem;
  if (!tr.problem) tr.problem = run.run(steps);
  run.stop();
  tr.trace = run.traceText();
  return tr;
}

std::string stepsText(const std::vector<EngineStep>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    std::string label = steps[i].kind == EngineStep::Kind::Start ? "start the engine, handshake" : steps[i].label;
    if (label.size() > 200) label = label.substr(0, 200) + "…";
    out += fmt::format("{:>4}  {}{}\n", i, label, steps[i].may_end ? "  [may end the connection]" : "");
  }
  return out;
}

}  // namespace
}  // namespace fuzz

int runFuzzEngine(const FuzzOptions& opt, const protocol::Profile& profile, std::ostream& out, std::ostream& err) {
  using namespace fuzz;
  const std::uint64_t seed = opt.seed ? *opt.seed : std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32);
  Rng rng(seed);
  out << fmt::format("conform fuzz: seed {} (rerun with --seed {}); role plugin: fuzzing the engine {}\n", seed, seed, opt.command.front());
  out.flush();
  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec) {
    err << fmt::format("conform fuzz: cannot create {}: {}\n", opt.out, ec.message());
    return kExitHarness;
  }
  EngineGen gen;
  EngineRun run(opt, profile);
  std::vector<Found> found;
  std::uint64_t batches = 0, frames_sent = 0, frames_received = 0, sessions = 0;
  const auto started = Clock::now();
  const auto end = started + std::chrono::seconds(opt.seconds);
  auto last_progress = started;
  const EngineStep start_step;

  auto onProblem = [&](const Problem& p, const std::vector<EngineStep>& session) {
    const std::string sig = p.signature();
    for (const auto& f : found)
      if (f.problem.signature() == sig) return;
    Found f;
    f.problem = p;
    f.found_after_s = std::chrono::duration<double>(Clock::now() - started).count();
    f.dir = (fs::path(opt.out) / fmt::format("finding-{}", found.size() + 1)).string();
    f.steps_before = session.size();
    out << fmt::format("conform fuzz: FINDING after {:.1f} s: {} {}: {}\n", f.found_after_s, toString(p.kind), p.rule, p.message);
    out.flush();
    fs::create_directories(f.dir, ec);
    writeFile(f.dir + "/session.ndjson", run.traceText());
    const auto deadline = Clock::now() + std::chrono::seconds(opt.minimize_seconds);
    auto reproduces = [&](const std::vector<EngineStep>& steps) {
      auto tr = runEngineTrial(opt, profile, steps);
      return tr.problem && sameProblem(p, *tr.problem);
    };
    std::vector<EngineStep> best = session;
    ++f.trials;
    if (reproduces(best)) {
      f.reproduced = true;
      best = ddmin(best, reproduces, deadline, &f.trials);
    }
    f.steps_after = best.size();
    // The re-run: the minimised steps on a fresh engine must show the same problem again.
    auto tr = runEngineTrial(opt, profile, best);
    ++f.trials;
    f.reproduced = f.reproduced && tr.problem && sameProblem(p, *tr.problem);
    if (tr.problem && sameProblem(p, *tr.problem)) f.problem = *tr.problem;
    f.reproducer = f.dir + "/repro.ndjson";
    writeFile(f.reproducer, tr.trace);
    writeFile(f.dir + "/steps.txt", stepsText(best));
    out << fmt::format("conform fuzz:   minimised {} → {} step(s) in {} trial(s); re-run on a fresh engine: {}; reproducer {}\n",
                       f.steps_before, f.steps_after, f.trials, f.reproduced ? "reproduces" : "NOT reproduced", f.reproducer);
    out.flush();
    found.push_back(std::move(f));
  };

  while (Clock::now() < end && (opt.runs == 0 || batches < opt.runs) && (opt.max_findings == 0 || found.size() < opt.max_findings)) {
    if (!run.alive()) {
      run.stop();
      auto st = run.start();
      if (!st.harness_error.empty()) {
        err << fmt::format("conform fuzz: {}\n", st.harness_error);
        return kExitHarness;
      }
      if (st.problem) {
        onProblem(*st.problem, {start_step});
        run.stop();
        break;  // the handshake itself fails: nothing else can be fuzzed
      }
      // Every session starts with a session (most actions need one).
      std::vector<EngineStep> first{start_step, EngineGen::driver("session.create", "{}")};
      if (auto p = run.run({first[1]})) {
        onProblem(*p, first);
        run.stop();
        continue;
      }
    }
    auto batch = gen.batch(rng, kMaxBatch);
    ++batches;
    const std::size_t before = run.stepsSent();
    (void)before;
    auto p = run.run(batch);
    if (p) {
      std::vector<EngineStep> session{start_step};
      session.insert(session.end(), run.sent().begin(), run.sent().end());
      onProblem(*p, session);
      run.stop();
    } else if (run.stepsSent() > kMaxSessionSteps) {
      run.stop();
    }
    frames_sent = run.stats().frames_sent;
    frames_received = run.stats().frames_received;
    sessions = run.sessions();
    if (!opt.quiet && Clock::now() - last_progress >= std::chrono::seconds(10)) {
      last_progress = Clock::now();
      out << fmt::format("conform fuzz: {:.0f} s: {} batches, {} frames sent, {} engine session(s), {} finding(s)\n",
                         std::chrono::duration<double>(last_progress - started).count(), batches, frames_sent, sessions, found.size());
      out.flush();
    }
  }
  run.stop();
  frames_sent = run.stats().frames_sent;
  frames_received = run.stats().frames_received;
  sessions = run.sessions();
  const double secs = std::chrono::duration<double>(Clock::now() - started).count();
  out << fmt::format("conform fuzz: {} batch(es), {} frame(s) sent, {} received, {} engine session(s) in {:.1f} s ({:.0f} msgs/s); {} finding(s)\n",
                     batches, frames_sent, frames_received, sessions, secs, secs > 0 ? frames_sent / secs : 0.0, found.size());

  fuzz::CampaignFigures fig;
  fig.command = opt.command;
  fig.role = "plugin";
  fig.profile = std::string(profile.version());
  fig.seed = seed;
  fig.seconds = secs;
  fig.batches = batches;
  fig.frames_sent = frames_sent;
  fig.frames_received = frames_received;
  fig.sessions = sessions;
  if (!fuzz::writeSummary(opt.out, fig, found, err)) return kExitHarness;
  return found.empty() ? kExitPass : kExitFindings;
}

}  // namespace conform::runner
