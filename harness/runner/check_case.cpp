// harness/runner/check_case — one case in role engine: setup, the engine's Host and Observer, the
// I/O pump, and the verdict (expectations + monitors). The step interpreter is check_steps.cpp.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/rules/lint.h"
#include "harness/runner/check_case_impl.h"
#include "mock_engine/io_shell.h"
#include "reports/rule_catalog.h"

namespace conform::runner {

// The engine waits this much beyond the plugin's startup timeout for the handshake outcome (the
// engine's own timer decides; this is only a backstop against a harness bug).
constexpr std::chrono::milliseconds kHandshakeSlack{1000};
// After the steps the engine shuts down (SHUT-01…03) and we wait this much beyond its grace.
constexpr std::chrono::milliseconds kShutdownSlack{1500};
// The reference engine kills a plugin the moment its stdout reaches EOF (FRAME-17). A conforming
// SDK closes stdout on its way to exit 0, so an immediate SIGKILL would race with — and hide — the
// plugin's own exit status, which is what role engine tests (FRAME-18, SHUT-08/09). The host gives
// the process this long to exit by itself before carrying the kill out.
constexpr std::chrono::milliseconds kKillDelay{250};

std::string defaultPluginName(const std::vector<std::string>& argv) {
  if (argv.empty()) return "plugin";
  std::string s = argv[0];
  auto slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  return s.empty() ? "plugin" : s;
}

std::string caseRule(const dsl::Case& c) { return c.rules.empty() ? c.id : c.rules.front(); }

namespace detail {

CaseRunner::CaseRunner(const dsl::Case& c, const Target& t) : case_(c), target_(t), rule_(caseRule(c)) {}

CaseRunner::~CaseRunner() {
  for (auto& [id, ch] : chans_) ch->close(false);  // kill and reap, bounded (core/wire)
  if (!tmp_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_dir_, ec);  // best effort: a leftover temp dir is harmless
  }
}

namespace {
// `config env "NAME=VALUE"`: `{tmp}` in VALUE names the case's private temp directory, made on
// first use (mkdtemp under $TMPDIR or /tmp) and removed when the case ends.
Expected<std::string, std::string> expandTmp(std::string value, std::string& tmp_dir) {
  static const std::string kTmp = "{tmp}";
  for (auto pos = value.find(kTmp); pos != std::string::npos; pos = value.find(kTmp, pos)) {
    if (tmp_dir.empty()) {
      const char* base = std::getenv("TMPDIR");
      std::string templ = std::string(base && *base ? base : "/tmp") + "/conform-case-XXXXXX";
      if (!::mkdtemp(templ.data())) return unexpected("cannot create a temporary directory from " + templ);
      tmp_dir = templ;
    }
    value.replace(pos, kTmp.size(), tmp_dir);
    pos += tmp_dir.size();
  }
  return value;
}
}  // namespace

bool CaseRunner::configure(std::string& error) {
  cfg_.protocol_version = target_.profile;
  engine::PluginConfig p;
  p.name = target_.name.empty() ? defaultPluginName(target_.argv) : target_.name;
  p.command = target_.argv.at(0);
  p.args.assign(target_.argv.begin() + 1, target_.argv.end());
  for (const auto& kv : case_.config) {
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    auto ms = [&](std::uint64_t& dst) {
      std::uint64_t n = 0;
      auto r = std::from_chars(v.data(), v.data() + v.size(), n);
      if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n == 0) {
        error = fmt::format("{}: config {}: expected a positive number of milliseconds, found `{}`", case_.loc.str(), k, v);
        return false;
      }
      dst = n;
      return true;
    };
    if (k == "engine_version") cfg_.engine_version = v;
    else if (k == "startup_timeout_ms") { if (!ms(p.startup_timeout_ms)) return false; }
    else if (k == "shutdown_grace_ms") { if (!ms(p.shutdown_grace_ms)) return false; }
    else if (k == "interception_timeout_ms") { if (!ms(p.interception_timeout_ms)) return false; }
    else if (k == "tool_timeout_ms") { if (!ms(p.tool_timeout_ms)) return false; }
    else if (k == "producer_messaging") { p.producer_messaging = v == "true"; cfg_.producer_handler = v == "true"; }
    else if (k == "env") {
      // LIFE-06: the plugin's environment is exactly the configured variables.
      auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        error = fmt::format("{}: config env: expected \"NAME=VALUE\", found `{}`", case_.loc.str(), v);
        return false;
      }
      auto value = expandTmp(v.substr(eq + 1), tmp_dir_);
      if (!value) {
        error = fmt::format("{}: config env: {}", case_.loc.str(), value.error());
        return false;
      }
      p.env[v.substr(0, eq)] = *value;
    } else {
      error = fmt::format("{}: unknown config key `{}` (engine_version, startup_timeout_ms, shutdown_grace_ms, "
                          "interception_timeout_ms, tool_timeout_ms, producer_messaging, env)",
                          case_.loc.str(), k);
      return false;
    }
  }
  cfg_.plugins.push_back(std::move(p));
  return true;
}

// ---- engine::Host ----------------------------------------------------------------------------

bool CaseRunner::spawn(engine::ConnId conn, const engine::PluginConfig& cfg, std::string& error) {
  wire::SpawnOptions o;
  o.program = cfg.command;
  o.args = cfg.args;
  o.env = cfg.env;  // LIFE-06: exactly the configured variables
  o.cwd = cfg.cwd;
  wire::SpawnError err;
  auto ch = wire::spawnProcess(reactor_, o, &err);
  if (!ch) {
    error = err.message;
    return false;
  }
  chans_[conn] = std::move(ch);
  conn_ = conn;
  stdin_closed_ = false;
  if (tw_) tw_->note(fmt::format("spawn {} (connection {})", cfg.command, conn));
  return true;
}

void CaseRunner::write(engine::ConnId conn, std::string_view bytes) {
  auto it = chans_.find(conn);
  if (it == chans_.end()) return;
  if (drop_next_reply_ && !injecting_) {
    // fault drop-reply: the engine's next response to a plugin request is never written.
    auto m = json::parse(bytes.substr(0, bytes.size() ? bytes.size() - 1 : 0));
    if (m && m->doc.IsObject() && !json::member(m->doc, "method")) {
      drop_next_reply_ = false;
      dropped_write_ = true;  // the engine reports it to onFrame() next: the trace must not show it
      if (tw_) tw_->note("fault drop-reply: dropped the engine's response " + std::string(bytes.substr(0, 200)));
      return;
    }
  }
  (void)it->second->write(bytes);
}

bool CaseRunner::writable(engine::ConnId conn) {
  auto it = chans_.find(conn);
  return it != chans_.end() && it->second->pendingWriteBytes() < engine::kChannelBacklogBytes;
}

void CaseRunner::closeStdin(engine::ConnId conn) {
  auto it = chans_.find(conn);
  if (it == chans_.end()) return;
  it->second->closeWrite(false);
  if (conn == conn_) stdin_closed_ = true;
  if (tw_) tw_->eof(trace::Dir::EngineToPlugin);
}

void CaseRunner::kill(engine::ConnId conn) {
  auto it = chans_.find(conn);
  if (it == chans_.end()) return;
  if (!it->second->running()) return;
  if (!pending_kill_.count(conn)) pending_kill_[conn] = wire::deadlineIn(kKillDelay);  // see kKillDelay
}

void CaseRunner::killDue() {
  auto now = std::chrono::steady_clock::now();
  for (auto it = pending_kill_.begin(); it != pending_kill_.end();) {
    auto ch = chans_.find(it->first);
    if (ch == chans_.end() || (it->second <= now) || !ch->second->running()) {
      if (ch != chans_.end() && ch->second->running()) {
        ch->second->close(false);  // process group SIGKILL + bounded reap; Exited is queued
        if (tw_ && it->first == conn_) tw_->note("engine killed the plugin process group");
      }
      it = pending_kill_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- engine::Observer ------------------------------------------------------------------------

void CaseRunner::onFrame(const std::string&, engine::ConnId, engine::Direction d, std::string_view frame,
                         clock::TimePoint) {
  // Plugin frames are traced from the channel (with CR/unterminated flags); injected bytes by inject().
  // A response `fault drop-reply` kept from the plugin is not traced either: the monitors judge what
  // the plugin received (the engine reports each frame right after Host::write, engine.cpp).
  if (d == engine::Direction::ToPlugin && dropped_write_) {
    dropped_write_ = false;
    return;
  }
  if (d != engine::Direction::ToPlugin || injecting_ || !tw_) return;
  tw_->frame(trace::Dir::EngineToPlugin, frame);
}

void CaseRunner::onLifecycle(const std::string&, engine::ConnId, std::string_view kind, std::string_view detail,
                             clock::TimePoint) {
  if (!tw_) return;
  if (kind == "state" || kind == "spawn_failed" || kind == "frame_error")
    tw_->note(fmt::format("engine {}: {}", kind, detail));
}

// ---- plumbing ---------------------------------------------------------------------------------

wire::Channel* CaseRunner::channel() {
  auto it = chans_.find(conn_);
  return it == chans_.end() ? nullptr : it->second.get();
}

void CaseRunner::send(std::string_view bytes) {
  conv_.traceBytes(trace::Dir::EngineToPlugin, bytes);
  injecting_ = true;
  bool ok = eng_->injectBytes(cfg_.plugins[0].name, bytes);
  injecting_ = false;
  if (!ok) {
    // No live connection in the engine's view (e.g. after a fault): write to the channel directly.
    if (auto* ch = channel(); ch && !stdin_closed_) (void)ch->write(bytes);
    else if (tw_) tw_->note("write skipped: the plugin's stdin is closed");
  }
}

void CaseRunner::dispatch() {
  killDue();
  for (auto& [conn, ch] : chans_) {
    while (auto ev = ch->poll()) {
      using K = wire::ChannelEvent::Kind;
      switch (ev->kind) {
        case K::Frame:
        case K::FrameError: {
          if (conn == conn_) {
            if (tw_) tw_->frameEvent(trace::Dir::PluginToEngine, ev->frame);
            conv_.pushFrame(ev->frame.bytes, ev->frame.kind == wire::FrameEvent::Kind::Frame);
          }
          eng_->onFrameEvent(conn, ev->frame);
          break;
        }
        case K::Stderr:
          if (tw_ && conn == conn_) tw_->stderrLine(ev->text);
          eng_->onStderr(conn, ev->text);
          break;
        case K::Eof:
          if (conn == conn_) {
            if (tw_) tw_->eof(trace::Dir::PluginToEngine);
            conv_.pushEof();
          }
          eng_->onStdoutEof(conn);
          break;
        case K::Exited:
          if (!exit_reported_[conn]) {
            exit_reported_[conn] = true;
            if (conn == conn_) {
              if (tw_) {
                if (ev->status.signaled) tw_->exitSignal(ev->status.signal);
                else tw_->exitCode(ev->status.code);
              }
              conv_.pushExit(ev->status);
            }
            eng_->onExited(conn, ev->status.str());
          }
          break;
        case K::WriteFailed:
          if (tw_ && conn == conn_) tw_->note("write failed: " + ev->text);
          break;
      }
    }
    if (writable(conn)) eng_->onWritable(conn);
  }
  eng_->tick();
}

bool CaseRunner::pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) {
  while (true) {
    dispatch();
    if (pred()) return true;
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    auto wake = deadline;
    // The engine's next timer, converted from offset-clock time to real time.
    auto next = eng_->nextDeadline();
    if (next != clock::TimePoint::max()) {
      auto real = wire::SteadyTime(std::chrono::duration_cast<wire::SteadyTime::duration>(
          (next - clk_.offset()).time_since_epoch()));
      if (real < wake) wake = std::max(real, now);
    }
    for (const auto& [c, at] : pending_kill_)
      if (at < wake) wake = std::max(at, now);
    reactor_.waitAny(wake);
  }
}

void CaseRunner::pumpFor(std::chrono::milliseconds d) {
  pumpUntil(wire::deadlineIn(d), [] { return false; });
}

std::optional<std::string> CaseRunner::notApplicable() const {
  auto st = eng_->status(cfg_.plugins[0].name);
  if (!st) return std::nullopt;
  const auto& cap = st->capabilities;
  for (const dsl::Need& n : case_.needs) {
    // `has`: the handshake has it; `what`: how the reason names it. `needs no …` inverts the test.
    bool has = false;
    std::string what;
    switch (n.kind) {
      case dsl::Need::Kind::Tool:
        // `needs tool` is any tool; `needs tool NAME` that very tool (the SDK fixture's tools).
        has = n.name.empty() ? !st->tools.empty()
                             : std::find(st->tools.begin(), st->tools.end(), n.name) != st->tools.end();
        what = n.name.empty() ? "a tool" : "the tool " + n.name;
        break;
      case dsl::Need::Kind::Hook:
        has = std::find(cap.intercept.begin(), cap.intercept.end(), n.name) != cap.intercept.end();
        what = "the hook " + n.name;
        break;
      case dsl::Need::Kind::Capability: {
        const std::map<std::string, bool> known = {
            {"tools", cap.tools}, {"resources", cap.resources}, {"subscribe_events", cap.subscribe_events},
            {"subscribe_bus", cap.subscribe_bus}, {"publish_bus", cap.publish_bus},
            {"publish_session_events", cap.publish_session_events}, {"producer_messaging", cap.producer_messaging},
            {"producer", st->producer_enabled}};
        auto it = known.find(n.name);
        if (it == known.end()) return std::nullopt;  // reported as an error by run()
        has = it->second;
        what = n.name;
        break;
      }
    }
    if (!has && !n.negated) return fmt::format("the handshake does not declare {}", what);
    if (has && n.negated) return fmt::format("the handshake declares {} (the case needs its absence)", what);
  }
  return std::nullopt;
}

void CaseRunner::finish() {
  if (!eng_) return;
  // Engine shutdown (SHUT-01…03): conform plays a conforming engine to the end of the case.
  eng_->shutdown();
  auto grace = std::chrono::milliseconds(cfg_.plugins[0].shutdown_grace_ms);
  pumpUntil(wire::deadlineIn(grace + kShutdownSlack), [&] { return eng_->shutdownComplete(); });
  for (auto& [id, ch] : chans_) ch->close(false);
  dispatch();
}

CaseRun CaseRunner::run() {
  CaseRun out;
  out.result = reports::newCase(case_.id, case_.title, case_.rules);
  auto t0 = std::chrono::steady_clock::now();
  trace::TraceHeader hdr;
  hdr.profile = target_.profile;
  hdr.role = "engine";
  hdr.peer = target_.argv;
  tw_ = std::make_unique<trace::TraceWriter>(trace_text_, clock::RealClock::instance(), std::move(hdr),
                                             trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  tw_->caseBegin(case_.id);
  conv_.tw = tw_.get();
  std::string err;
  std::optional<StepFailure> failure;
  std::string error;
  for (const dsl::Need& n : case_.needs)
    if (n.kind == dsl::Need::Kind::Capability &&
        !std::set<std::string>{"tools", "resources", "subscribe_events", "subscribe_bus", "publish_bus",
                               "publish_session_events", "producer_messaging", "producer"}.count(n.name))
      err = fmt::format("{}: unknown capability `{}` in `needs`", n.loc.str(), n.name);
  if (err.empty() && target_.argv.empty()) err = "no command to test (give it after --)";
  if (err.empty() && configure(err)) {
    eng_ = std::make_unique<engine::Engine>(cfg_, *this, clk_);
    runtime_ = std::make_unique<engine::Runtime>(*eng_);  // installs the engine's tool hook gate
    if (cfg_.producer_handler) producers_ = std::make_unique<engine::ProducerService>(*eng_, std::nullopt);
    eng_->setObserver(this);
    eng_->start();
    const std::string& name = cfg_.plugins[0].name;
    auto settled = [&] {
      auto st = eng_->status(name);
      return st && st->state != engine::PluginState::Connecting;
    };
    pumpUntil(wire::deadlineIn(std::chrono::milliseconds(cfg_.plugins[0].startup_timeout_ms) + kHandshakeSlack), settled);
    auto st = eng_->status(name);
    bool connected = st && st->state == engine::PluginState::Connected;
    if (!connected && !case_.judges_handshake) {
      out.result.verdict = reports::Verdict::Untested;
      out.result.skip_reason = fmt::format("the handshake did not complete: {}{}",
                                           st ? engine::toString(st->state) : "no status",
                                           st && st->reason ? " (" + *st->reason + ")" : "");
    } else if (auto na = connected ? notApplicable() : std::nullopt) {
      out.result.verdict = reports::Verdict::NotApplicable;
      out.result.skip_reason = *na;
    } else {
      // The steps start with an empty inbox: the handshake belongs to the engine, unless the case
      // judges it (then its frames stay visible to `expect frame …`).
      if (!case_.judges_handshake)
        for (Inbound& in : conv_.inbox) in.consumed = true;
      Interpreter interp(*this, conv_);
      interp.execAll(case_.steps);
      failure = interp.failure();
      error = interp.error();
    }
    finish();
  }
  if (!err.empty()) error = err;
  tw_->caseEnd(case_.id);
  tw_->flush();
  conv_.tw = nullptr;
  tw_.reset();
  out.trace = trace_text_.str();
  finishVerdict(out, rule_, failure, std::move(error), target_.profile, reports::kBindsPlugin | reports::kBindsSdk);
  out.result.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// ---- Peer (role engine) ------------------------------------------------------------------------

std::optional<Peer::State> CaseRunner::state() {
  auto st = eng_->status(cfg_.plugins[0].name);
  if (!st) return std::nullopt;
  return State{engine::toString(st->state), st->reason.value_or("")};
}

std::vector<std::string> CaseRunner::items(bool tools) {
  auto st = eng_->status(cfg_.plugins[0].name);
  if (!st) return {};
  return tools ? st->tools : st->capabilities.intercept;
}

Peer::Outcome CaseRunner::advance(dsl::Millis d) {
  clk_.advance(d);
  if (tw_) tw_->note(fmt::format("advance {} (engine clock)", dsl::formatDuration(d)));
  dispatch();
  return Outcome::ok();
}

Peer::Outcome CaseRunner::fault(dsl::FaultKind k, dsl::Millis d) {
  wire::Channel* ch = channel();
  if (!ch) return Outcome::error("no plugin process");
  if (tw_) tw_->note(fmt::format("fault {}", toString(k)));
  switch (k) {
    case dsl::FaultKind::CloseStdin:
      ch->closeWrite(false);
      stdin_closed_ = true;
      if (tw_) tw_->eof(trace::Dir::EngineToPlugin);
      return Outcome::ok();
    case dsl::FaultKind::Kill:
      ch->close(false);
      dispatch();
      return Outcome::ok();
    case dsl::FaultKind::StallReading:
      ch->stallReading(true);
      pumpFor(d);
      ch->stallReading(false);
      return Outcome::ok();
    case dsl::FaultKind::DropReply:
      drop_next_reply_ = true;
      return Outcome::ok();
    case dsl::FaultKind::Disconnect:
      ch->closeWrite(true);
      ch->stallReading(true);
      stdin_closed_ = true;
      if (tw_) tw_->eof(trace::Dir::EngineToPlugin);
      return Outcome::ok();
    case dsl::FaultKind::Restart: return restart();
  }
  return Outcome::error("unknown fault");
}

// fault restart: the reference engine restarts as its driver's `engine.restart` does (SHUT sequence
// for the plugin, then a new process on a new connection with a fresh epoch and handshake). The
// steps continue on the new connection; the inbox keeps what the old one said. Frames of the new
// handshake are left unconsumed only when the case judged the first one (judges_handshake).
Peer::Outcome CaseRunner::restart() {
  const std::string& name = cfg_.plugins[0].name;
  const engine::ConnId old_conn = conn_;
  eng_->beginRestart();
  auto grace = std::chrono::milliseconds(cfg_.plugins[0].shutdown_grace_ms);
  if (!pumpUntil(wire::deadlineIn(grace + kShutdownSlack), [&] { return eng_->restartReady(); }))
    return Outcome::error("fault restart: the reference engine did not finish stopping the plugin in time");
  auto old = chans_.find(old_conn);
  if (old != chans_.end()) old->second->close(false);
  dispatch();
  // The old process's EOF and exit belong to the old connection: they leave the inbox, so
  // `expect exit|eof` after the restart waits for the new process (the trace keeps them).
  conv_.inbox.erase(std::remove_if(conv_.inbox.begin(), conv_.inbox.end(),
                                   [](const Inbound& in) { return in.kind != Inbound::Kind::Frame; }),
                    conv_.inbox.end());
  const std::size_t mark = conv_.inbox.size();
  eng_->finishRestart();
  if (tw_) tw_->note("fault restart: plugin started again on a new connection");
  pumpUntil(wire::deadlineIn(std::chrono::milliseconds(cfg_.plugins[0].startup_timeout_ms) + kHandshakeSlack), [&] {
    auto st = eng_->status(name);
    return st && conn_ != old_conn && st->state != engine::PluginState::Connecting;
  });
  auto st = eng_->status(name);
  if (!st || st->state != engine::PluginState::Connected)
    return Outcome::failure("the plugin did not reconnect after an engine restart", "state connected after the restart",
                            st ? std::string(engine::toString(st->state)) + (st->reason ? " (" + *st->reason + ")" : "")
                               : "no status");
  if (!case_.judges_handshake)
    for (std::size_t i = mark; i < conv_.inbox.size(); ++i) conv_.inbox[i].consumed = true;
  return Outcome::ok();
}

// drive ACTION …: the reference engine acts (docs/dsl.md lists the actions).
Peer::Outcome CaseRunner::drive(const std::string& action, const std::vector<std::string>& args,
                                const json::Document& json) {
  auto arg = [&](std::size_t i) -> Expected<std::string, std::string> {
    if (i >= args.size()) return unexpected(fmt::format("drive {}: missing argument {}", action, i + 1));
    return args[i];
  };
  const std::string& name = cfg_.plugins[0].name;
  if (action == "session.create") return Outcome::ok(producers_ ? producers_->createSession() : eng_->createSession());
  if (action == "event") {
    auto session = arg(0);
    auto cls = arg(1);
    if (!session) return Outcome::error(session.error());
    if (!cls) return Outcome::error(cls.error());
    engine::RecordClass rc;
    if (*cls == "class=chunk") rc = engine::RecordClass::Chunk;
    else if (*cls == "class=ordinary") rc = engine::RecordClass::Ordinary;
    else if (*cls == "class=terminal") rc = engine::RecordClass::Terminal;
    else return Outcome::error(fmt::format("drive event: expected class=chunk|ordinary|terminal, found `{}`", *cls));
    auto r = eng_->produceEvent(*session, rc);
    if (!r) return Outcome::error("drive event: " + r.error());
    dispatch();
    return Outcome::ok();
  }
  if (action == "tool.call") {
    auto session = arg(0);
    auto tool = arg(1);
    if (!session) return Outcome::error(session.error());
    if (!tool) return Outcome::error(tool.error());
    auto r = eng_->callTool(*session, *tool, json);
    if (!r) return Outcome::error("drive tool.call: " + r.error());
    dispatch();
    return Outcome::ok(*r);
  }
  if (action == "ping") {
    // Waits for the engine's verdict on the ping (its deadline is interception_timeout_ms, PING-03).
    std::uint64_t h = eng_->ping(name);
    auto limit = std::chrono::milliseconds(cfg_.plugins[0].interception_timeout_ms) + std::chrono::milliseconds(500);
    pumpUntil(wire::deadlineIn(limit), [&] {
      auto* p = eng_->pingStatus(h);
      return p && p->state != engine::PingStatus::State::Pending;
    });
    auto* p = eng_->pingStatus(h);
    if (!p || p->state != engine::PingStatus::State::Ok)
      return Outcome::failure("the reference engine's plugin/ping failed", "ping answered with {}",
                              p ? (p->reason.empty() ? "no answer" : p->reason) : "no ping status");
    return Outcome::ok();
  }
  if (action == "shutdown") {
    eng_->shutdown();
    dispatch();
    return Outcome::ok();
  }
  if (action == "flush") {
    eng_->flushDiagnostics();
    return Outcome::ok();
  }
  if (action == "run" || action == "compact") return driveRuntime(action, args, json);
  return Outcome::error(fmt::format(
      "unknown drive action `{}` (session.create, event, tool.call, ping, shutdown, flush, run, compact)", action));
}

// drive run $s {input, turns?} / drive compact $s [{instructions?}]: the simulated runtime fires the
// hooks at their trigger points (mock_engine/runtime.h); the step waits for the run or operation to
// end and binds its record (`as $r`: {run_id, state, reason, …} / {status, …}).
Peer::Outcome CaseRunner::driveRuntime(const std::string& action, const std::vector<std::string>& args,
                                       const json::Document& json) {
  if (args.empty()) return Outcome::error(fmt::format("drive {}: missing the session argument", action));
  const std::string& session = args[0];
  std::shared_ptr<std::string> done = std::make_shared<std::string>();
  auto finished = std::make_shared<bool>(false);
  if (action == "run") {
    auto script = engine::parseRunScript(json);
    if (!script) return Outcome::error("drive run: " + script.error());
    auto r = runtime_->startRun(session, std::move(*script), std::nullopt, [done, finished](const engine::RunRecord& rec) {
      *done = engine::runJson(rec);
      *finished = true;
    });
    if (!r) return Outcome::error("drive run: " + r.error());
  } else {
    std::optional<std::string> instr;
    if (auto i = json::stringMember(json, "instructions")) instr = std::string(*i);
    auto r = runtime_->compact(session, instr, [done, finished](const engine::SessionOpResult& op) {
      *done = engine::sessionOpJson(op);
      *finished = true;
    });
    if (!r) return Outcome::error("drive compact: " + r.error());
  }
  // Every hook of a run is bounded by interception_timeout_ms (HOOK-06) and a run fires at most a
  // few dozen hooks, so this is a backstop against an engine bug, not a plugin verdict.
  const auto limit = std::chrono::milliseconds(cfg_.plugins[0].interception_timeout_ms) * 8 + std::chrono::seconds(2);
  if (!pumpUntil(wire::deadlineIn(limit), [&] { return *finished; }))
    return Outcome::error(fmt::format("drive {}: the reference engine did not finish within {} ms", action, limit.count()));
  Outcome o = Outcome::ok();
  auto parsed = json::parse(*done);
  if (parsed) o.doc = std::make_shared<json::Document>(std::move(parsed->doc));
  return o;
}

void finishVerdict(CaseRun& out, const std::string& rule, const std::optional<StepFailure>& failure,
                   std::string error, const std::string& profile, std::uint8_t binds) {
  // Verdict: the case's own expectation, then every monitor finding against the side under test.
  if (failure) {
    const reports::RuleInfo* ri = reports::findRule(rule);
    out.result.findings.push_back(reports::makeFinding(rule, ri ? ri->binds : binds, failure->message,
                                                       failure->expected, failure->actual, failure->evidence));
    reports::Finding& f = out.result.findings.back();
    if (ri && !(ri->binds & binds) && f.level == reports::Level::Must) {
      // The case's rule binds only the OTHER side (e.g. HOOK-06 "each hook call is bounded by the
      // interception timeout" binds the engine): the side under test did something that rule makes
      // the other side handle, which no rule forbids it. Advisory, as the monitors' findings of that
      // kind are (NON-STRICT; --strict does not promote it either): a FAIL would be a false FAIL.
      f.level = reports::Level::Should;
      f.verdict = reports::Verdict::NonStrict;
    }
  }
  auto reader = trace::TraceReader::fromString(out.trace);
  rules::LintOptions lo;
  lo.profile = profile;
  auto lint = rules::lint(*reader, lo);
  if (lint) {
    for (auto& f : lint->findings)
      if (f.binds & binds) out.result.findings.push_back(std::move(f));
  } else if (error.empty()) {
    error = "internal: the case trace is unreadable: " + lint.error().str();
  }
  if (!error.empty()) {
    out.result.verdict = reports::Verdict::Error;
    out.result.error = error;
  }
  reports::finalize(out.result);
}

// ---- Conversation -----------------------------------------------------------------------------

void Conversation::pushFrame(std::string raw, bool decoded_ok) {
  Inbound in;
  in.line = traceLine();
  in.raw = std::move(raw);
  if (decoded_ok) {
    auto p = json::parse(in.raw);
    if (p) {
      in.doc = std::make_shared<json::Document>(std::move(p->doc));
      if (in.doc->IsObject()) {
        auto method = json::stringMember(*in.doc, "method");
        bool has_id = json::member(*in.doc, "id") != nullptr;
        if (method) {
          in.method = std::string(*method);
          in.msg = has_id ? dsl::MsgKind::Request : dsl::MsgKind::Notify;
        } else {
          in.msg = json::member(*in.doc, "error") ? dsl::MsgKind::Error : dsl::MsgKind::Response;
        }
      }
    }
  }
  inbox.push_back(std::move(in));
}

void Conversation::traceBytes(trace::Dir dir, std::string_view bytes) {
  if (!tw) return;
  std::string_view rest = bytes;
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    if (nl == std::string_view::npos) {
      tw->raw(dir, rest);
      break;
    }
    std::string_view line = rest.substr(0, nl);
    bool cr = !line.empty() && line.back() == '\r';
    if (cr) line.remove_suffix(1);
    tw->frame(dir, line, cr);
    rest.remove_prefix(nl + 1);
  }
}

void Conversation::pushEof() {
  Inbound in;
  in.kind = Inbound::Kind::Eof;
  in.line = traceLine();
  inbox.push_back(std::move(in));
}

void Conversation::pushExit(const wire::ExitStatus& st) {
  Inbound in;
  in.kind = Inbound::Kind::Exit;
  in.status = st;
  in.line = traceLine();
  inbox.push_back(std::move(in));
}

std::string Conversation::recentInbound(std::size_t n, std::string_view who) const {
  std::string out;
  std::size_t start = inbox.size() > n ? inbox.size() - n : 0;
  for (std::size_t i = start; i < inbox.size(); ++i) {
    const Inbound& in = inbox[i];
    if (!out.empty()) out += "; ";
    switch (in.kind) {
      case Inbound::Kind::Frame: out += fmt::format("line {}: {}", in.line, reports::shortenEvidence(in.raw, 160)); break;
      case Inbound::Kind::Eof: out += fmt::format("line {}: EOF", in.line); break;
      case Inbound::Kind::Exit: out += fmt::format("line {}: {}", in.line, in.status.str()); break;
    }
  }
  return out.empty() ? fmt::format("nothing from the {}", who) : out;
}

}  // namespace detail

CaseRun runEngineCase(const dsl::Case& c, const Target& target) {
  detail::CaseRunner r(c, target);
  return r.run();
}

}  // namespace conform::runner
