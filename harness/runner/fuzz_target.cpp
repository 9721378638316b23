// harness/runner/fuzz_target — one live plugin process under `conform fuzz` (fuzz_impl.h).
//
// The process stays alive across batches (state that leaks from one call into the next is what a
// live fuzzer is for) and is restarted only when it dies or a problem was found. We play the
// smallest engine a plugin needs to keep serving: every plugin/emit gets its plugin/emit_result
// (the built-in `publish` tool of conform-plugin waits for it before answering), every plugin
// request gets -32601 (the handshake offers no producer messaging, so none is owed a real answer).
// Those reactive frames are traced like every other frame, so a reproducer replays them.
//
// Judging one batch (ARCHITECTURE.md: the monitors judge every exchange):
//   * the new trace lines go through the same MonitorSet `lint` and `check` use; only findings
//     bound to the plugin count (binds P or S, not E: our mutated frames break engine rules on
//     purpose);
//   * death by a signal we did not send is a crash;
//   * an exit after valid input only (no `may_end` step in the batch) is a finding (RPC-08: the
//     probe request is never answered); after `may_end` input it is the expected end;
//   * an owed answer past its deadline (2 s by default: the interception and ping defaults, HOOK-06,
//     PING-03) is a hang, unless the batch held possibly-fatal input and the plugin never proved it
//     was still serving (the batch's last valid request unanswered): then it is shutting down, and
//     staying silent is the sound choice;
//   * after plugin/shutdown or stdin EOF the plugin must exit within the shutdown grace (SHUT-08,
//     3,000 ms default) and, after EOF, with status 0 (FRAME-18).
// Monitors' end-of-trace judgements (MonitorSet::finish) are not used: a session we end by killing
// is not a complete conversation, and our own deadlines replace them.
#include <algorithm>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/clock/clock.h"
#include "core/protocol/methods.h"
#include "core/trace/trace.h"
#include "core/wire/channel.h"
#include "core/wire/rpc.h"
#include "harness/rules/monitor.h"
#include "harness/runner/fuzz_impl.h"

namespace conform::runner::fuzz {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// INIT-18: startup_timeout_ms default 10,000 — the handshake's own deadline.
constexpr milliseconds kHandshakeDeadline{10'000};
// SHUT-08 / SHUT-03: shutdown_grace_ms default 3,000.
constexpr milliseconds kShutdownGrace{3'000};
// The session trace kept in memory for the report; beyond it only a note is added (reproducers
// come from fresh trials, so nothing needed for replay is lost).
constexpr std::size_t kMaxSessionTraceBytes = 32u << 20;

const std::uint8_t kPluginSide = reports::kBindsPlugin | reports::kBindsSdk;

}  // namespace

const char* toString(Problem::Kind k) {
  switch (k) {
    case Problem::Kind::Crash: return "crash";
    case Problem::Kind::Exit: return "exit";
    case Problem::Kind::Hang: return "hang";
    case Problem::Kind::Rule: return "rule";
  }
  return "?";
}

std::string Problem::signature() const { return fmt::format("{}:{}", toString(kind), rule); }

struct Target::Impl {
  struct Pending {
    Clock::time_point deadline;
    std::string method;
    bool hook = false;
  };

  std::vector<std::string> command;
  const protocol::Profile& profile;
  milliseconds deadline;
  // One reactor per session, destroyed after its channel: a reactor reused across sessions was
  // seen delivering a dead session's stderr bytes as stdout frames of the next (fd numbers are
  // reused by the kernel while the old channel's completions may still be queued).
  std::unique_ptr<wire::Reactor> reactor;
  std::unique_ptr<wire::Channel> ch;
  bool monitors_on = true;
  std::unique_ptr<rules::MonitorSet> mon;
  std::size_t mon_seen = 0;

  std::string header_line;   // with its LF
  std::string trace;         // header + events of the session so far (bounded)
  bool trace_truncated = false;
  std::uint64_t lines = 1;   // lines in `trace` (header = 1)
  std::ostringstream chunk;  // events not yet judged
  std::unique_ptr<trace::TraceWriter> tw;
  Clock::time_point t0;

  std::vector<FuzzStep> sent;
  RunStats stats;

  bool exited = false, exit_judged = false, killed = false, stdin_closed = false, shutdown_sent = false;
  wire::ExitStatus status;
  Clock::time_point closed_at;
  std::map<std::string, Pending> pending;  // owed answers by rendered id
  // A possibly-fatal step was sent and the plugin has not yet proved it survived it (by answering
  // a valid request sent after it). While set, an exit is the expected end, and silence is no hang.
  bool may_end_pending = false;
  std::string may_end_probe;
  std::optional<TargetInfo> info;

  Impl(std::vector<std::string> c, const protocol::Profile& p, std::uint32_t d)
      : command(std::move(c)), profile(p), deadline(d) {}

  std::int64_t t() const { return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count(); }

  void captureHandshake(const wire::Message& m) {
    if (!m.result || !m.result->IsObject()) return;
    TargetInfo ti;
    const json::Value& r = *m.result;
    ti.name = std::string(rules::str(rules::member(&r, "name")));
    if (const json::Value* caps = rules::member(&r, "capabilities")) {
      auto flag = [&](const char* k) { const json::Value* v = rules::member(caps, k); return v && v->IsBool() && v->GetBool(); };
      ti.subscribe_events = flag("subscribe_events");
      ti.subscribe_bus = flag("subscribe_bus");
      ti.publish_bus = flag("publish_bus");
      if (const json::Value* hooks = rules::member(caps, "intercept"); hooks && hooks->IsArray())
        for (auto& h : hooks->GetArray())
          if (h.IsString() && rules::hookIndex(h.GetString()) >= 0) ti.hooks.emplace_back(h.GetString());
    }
    if (const json::Value* tools = rules::member(&r, "tools"); tools && tools->IsArray())
      for (auto& tv : tools->GetArray()) {
        DeclaredTool dt;
        dt.name = std::string(rules::str(rules::member(&tv, "name")));
        dt.permission_name = std::string(rules::str(rules::member(&tv, "permission_name")));
        if (const json::Value* pr = rules::member(&tv, "primary_resource_param"); pr && pr->IsString())
          dt.primary_resource_param = pr->GetString();
        if (const json::Value* ps = rules::member(&tv, "parameters")) dt.parameters = std::make_shared<json::Document>(json::copy(*ps));
        if (!dt.name.empty()) ti.tools.push_back(std::move(dt));
      }
    info = std::move(ti);
  }

  void writeFrame(std::string_view bytes, bool cr = false, bool unterminated = false) {
    tw->frame(trace::Dir::EngineToPlugin, bytes, cr, t(), trace::FrameHint::Unknown, unterminated);
    std::string w(bytes);
    if (!unterminated) w += cr ? "\r\n" : "\n";
    stats.bytes_sent += w.size();
    ++stats.frames_sent;
    ch->write(w);
  }

  void handle(const wire::ChannelEvent& ev) {
    using K = wire::ChannelEvent::Kind;
    switch (ev.kind) {
      case K::Frame:
      case K::FrameError: {
        tw->frameEvent(trace::Dir::PluginToEngine, ev.frame, t());
        ++stats.frames_received;
        if (ev.kind != K::Frame || ev.frame.kind != wire::FrameEvent::Kind::Frame) break;
        auto m = wire::decodeMessage(ev.frame.bytes);
        if (!m) break;
        if (m->isResponse()) {
          const std::string id = m->id.render();
          if (id == "1" && !info && m->kind == wire::MessageKind::Success) captureHandshake(*m);
          pending.erase(id);
          if (may_end_pending && id == may_end_probe) may_end_pending = false;
        } else if (m->isRequest()) {
          // No plugin request is served (no producer messaging offered): -32601, connection kept.
          if (!stdin_closed) writeFrame(wire::encodeError(m->id, -32601, "method not found"));
        } else if (m->method == protocol::method::kEmit && !stdin_closed) {
          // The engine answers every emit (§11): the SDK pairs results FIFO by name.
          const json::Value* name = m->params ? rules::member(m->params, "name") : nullptr;
          json::Document d;
          d.SetObject();
          auto& a = d.GetAllocator();
          d.AddMember("name", name && name->IsString() ? json::Value(*name, a) : json::str("", a), a);
          d.AddMember("bus", json::str("published", a), a);
          d.AddMember("durable", json::str("dropped", a), a);
          d.AddMember("reason", json::Value(), a);
          writeFrame(wire::encodeNotification(protocol::method::kEmitResult, d));
        }
        break;
      }
      case K::Stderr: tw->stderrLine(ev.text, trace::Dir::PluginToEngine, t()); break;
      case K::Eof: tw->eof(trace::Dir::PluginToEngine, t()); break;
      case K::Exited:
        if (killed) break;
        exited = true;
        status = ev.status;
        if (status.signaled) tw->exitSignal(status.signal, {}, t());
        else tw->exitCode(status.code, t());
        break;
      case K::WriteFailed: tw->note(fmt::format("write failed: {}", ev.text), t()); break;
    }
  }

  void drain() {
    reactor->pollOnce();
    while (auto ev = ch->poll()) handle(*ev);
  }

  void pumpUntil(Clock::time_point until) {
    while (!exited) {
      auto ev = ch->next(until);
      if (!ev) return;
      handle(*ev);
    }
  }

  void send(const FuzzStep& s) {
    sent.push_back(s);
    if (s.kind == FuzzStep::Kind::CloseStdin) {
      ch->closeWrite();
      tw->eof(trace::Dir::EngineToPlugin, t());
      stdin_closed = true;
      closed_at = Clock::now();
      pending.clear();  // after EOF the plugin exits: no answer is owed any more (SHUT-09)
      return;
    }
    if (s.shutdown) shutdown_sent = true;
    if (s.may_end) {
      may_end_pending = true;
      may_end_probe.clear();
    } else if (may_end_pending && !s.expect_id.empty()) {
      may_end_probe = s.expect_id;
    }
    const auto now = Clock::now();
    if (!s.expect_id.empty() && !shutdown_sent) {
      const bool hook = s.method.rfind(protocol::method::kInterceptPrefix, 0) == 0;
      const auto d = s.method == protocol::method::kInitialize ? kHandshakeDeadline : deadline;
      pending[s.expect_id] = Pending{now + d, s.method, hook};
    }
    if (s.delivery == FuzzStep::Delivery::Split && s.bytes.size() >= 4) {
      // Pieces each flushed before the next: the plugin's reader sees partial lines.
      tw->frame(trace::Dir::EngineToPlugin, s.bytes, s.cr, t(), trace::FrameHint::Unknown, s.unterminated);
      tw->note("previous frame written in 3 pieces", t());
      std::string w = s.bytes + (s.unterminated ? "" : (s.cr ? "\r\n" : "\n"));
      const std::size_t a = w.size() / 3, b = 2 * w.size() / 3;
      for (auto piece : {w.substr(0, a), w.substr(a, b - a), w.substr(b)}) {
        ch->write(piece);
        ch->flush(wire::deadlineIn(milliseconds(200)));
      }
      stats.bytes_sent += w.size();
      ++stats.frames_sent;
    } else {
      writeFrame(s.bytes, s.cr, s.unterminated);
      // Whole: pushed to the pipe now (one write per frame). Coalesce: left queued, so it leaves
      // together with the next step's bytes (several frames in one read on the plugin's side).
      if (s.delivery != FuzzStep::Delivery::Coalesce) ch->flush(wire::deadlineIn(milliseconds(50)));
    }
    if (s.delivery == FuzzStep::Delivery::Stall) {
      tw->note(fmt::format("not reading the plugin's stdout for {} ms", s.stall_ms), t());
      ch->stallReading(true);
      const auto until = Clock::now() + milliseconds(s.stall_ms);
      while (!exited) {
        auto ev = ch->next(until);
        if (!ev) break;
        handle(*ev);
      }
      ch->stallReading(false);
      for (auto& [id, p] : pending) p.deadline += milliseconds(s.stall_ms);  // our stall, not theirs
    } else {
      drain();
    }
  }

  // Moves the unjudged chunk into the session trace and runs the monitors over it.
  std::vector<reports::Finding> flushChunk(bool judge) {
    tw->flush();
    std::string text = chunk.str();
    chunk.str("");
    chunk.clear();
    std::vector<reports::Finding> out;
    if (text.empty()) return out;
    const std::uint64_t base = lines;
    const std::uint64_t n = static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n'));
    if (judge && monitors_on) {
      auto reader = trace::TraceReader::fromString(header_line + text);
      while (true) {
        auto ev = reader->next();
        if (!ev || !*ev) break;
        mon->feed(**ev);
      }
      auto& all = mon->findings();
      for (; mon_seen < all.size(); ++mon_seen) {
        reports::Finding f = all[mon_seen];
        if (!(f.binds & kPluginSide) || (f.binds & reports::kBindsEngine)) continue;
        if (f.verdict != reports::Verdict::Fail && f.verdict != reports::Verdict::NonStrict) continue;
        for (auto& e : f.evidence) if (e.line > 1) e.line = base + (e.line - 1);
        out.push_back(std::move(f));
      }
    }
    if (trace.size() + text.size() <= kMaxSessionTraceBytes) {
      trace += text;
    } else if (!trace_truncated) {
      trace_truncated = true;
    }
    lines += n;
    return out;
  }

  std::optional<Problem> judge(bool batch_may_end, const std::string& probe_id, bool probe_answered) {
    batch_may_end = batch_may_end || may_end_pending;
    auto findings = flushChunk(true);
    std::optional<Problem> p;
    if (exited && !exit_judged) {
      exit_judged = true;
      if (status.signaled) {
        Problem c;
        c.kind = Problem::Kind::Crash;
        c.rule = stdin_closed || shutdown_sent ? "SHUT-08" : "RPC-08";
        c.message = fmt::format("the plugin was {}{}", status.str(),
                                stdin_closed || shutdown_sent ? " after shutdown/EOF" : " while requests were owed an answer");
        c.trace_line = lines;
        return c;
      }
      if ((stdin_closed || shutdown_sent) && status.code != 0 && !batch_may_end) {
        p = Problem{Problem::Kind::Exit, stdin_closed ? "FRAME-18" : "SHUT-08",
                    fmt::format("after {} the plugin ended with {} (expected exit 0)", stdin_closed ? "stdin EOF" : "plugin/shutdown", status.str()),
                    {}, lines};
      } else if (!stdin_closed && !shutdown_sent && !batch_may_end) {
        p = Problem{Problem::Kind::Exit, "RPC-08",
                    fmt::format("the plugin ended ({}) after valid input only, with requests owed an answer", status.str()), {}, lines};
      }
    }
    if (!findings.empty()) {
      Problem r;
      r.kind = Problem::Kind::Rule;
      r.rule = findings.front().rule_id;
      r.message = findings.front().message;
      r.trace_line = findings.front().evidence.empty() ? lines : findings.front().evidence.front().line;
      r.findings = std::move(findings);
      return r;
    }
    if (p) return p;
    if (!exited && (stdin_closed || shutdown_sent) && Clock::now() >= closed_at + kShutdownGrace && stdin_closed) {
      return Problem{Problem::Kind::Hang, "SHUT-08",
                     fmt::format("the plugin was still running {} ms after plugin/shutdown and stdin EOF", kShutdownGrace.count()), {}, lines};
    }
    if (!exited && !pending.empty()) {
      const auto now = Clock::now();
      for (const auto& [id, pd] : pending) {
        if (now < pd.deadline) continue;
        if (batch_may_end && !probe_answered) return std::nullopt;  // shutting down after invalid input
        (void)probe_id;
        tw->timeout(fmt::format("response to id {} ({})", id, pd.method), t());
        flushChunk(false);
        Problem h{Problem::Kind::Hang, pd.hook ? "HOOK-06" : "RPC-08",
                  fmt::format("no answer to {} (id {}) within {} ms", pd.method, id, deadline.count()), {}, lines};
        pending.erase(id);  // reported once
        return h;
      }
    }
    return std::nullopt;
  }

  std::optional<Problem> run(const std::vector<FuzzStep>& steps) {
    bool may_end = false;
    std::string probe;
    for (const auto& s : steps) {
      if (exited) break;
      if (s.kind == FuzzStep::Kind::CloseStdin && stdin_closed) continue;
      may_end = may_end || s.may_end;
      if (!s.expect_id.empty() && !s.may_end) probe = s.expect_id;
      if (stdin_closed) break;  // nothing can be written after EOF
      send(s);
    }
    // Wait: every owed answer, or the plugin's exit after shutdown/EOF, or the first deadline.
    while (!exited) {
      Clock::time_point until;
      if (stdin_closed) {
        until = closed_at + kShutdownGrace;
      } else if (!pending.empty()) {
        until = std::min_element(pending.begin(), pending.end(), [](auto& a, auto& b) { return a.second.deadline < b.second.deadline; })->second.deadline;
      } else {
        break;
      }
      if (Clock::now() >= until) break;
      auto ev = ch->next(until);
      if (ev) handle(*ev);
    }
    drain();
    const bool probe_answered = !probe.empty() && !pending.count(probe);
    auto p = judge(may_end, probe, probe_answered);
    if (!p && !exited) {
      // Unresponsive after possibly-fatal input: end the session without a finding (see file comment).
      bool overdue = false;
      for (const auto& [id, pd] : pending) overdue = overdue || Clock::now() >= pd.deadline;
      if (overdue || stdin_closed) stop("unresponsive after possibly-fatal input: restarted");
    }
    return p;
  }

  void stop(std::string_view why) {
    if (ch) {
      if (!exited) {
        killed = true;
        tw->note(fmt::format("killed by conform fuzz: {}", why), t());
        ch->close();
      }
      flushChunk(false);
      ch.reset();
    }
  }
};

Target::Target(std::vector<std::string> command, const protocol::Profile& profile, std::uint32_t deadline_ms)
    : impl_(std::make_unique<Impl>(std::move(command), profile, deadline_ms)) {}
Target::~Target() { stop(); }

Target::StartResult Target::start(const FuzzStep& handshake) {
  Impl& m = *impl_;
  stop();
  StartResult r;
  m.exited = m.exit_judged = m.killed = m.stdin_closed = m.shutdown_sent = false;
  m.pending.clear();
  m.may_end_pending = false;
  m.may_end_probe.clear();
  m.sent.clear();
  m.mon = std::make_unique<rules::MonitorSet>(&m.profile);
  m.mon_seen = 0;
  m.trace_truncated = false;
  m.lines = 1;
  m.info.reset();
  trace::TraceHeader hdr;
  hdr.role = "engine";
  hdr.peer = m.command;
  hdr.profile = std::string(m.profile.version());
  hdr.extra.AddMember("name", json::str("conform fuzz", hdr.extra.GetAllocator()), hdr.extra.GetAllocator());
  {
    std::ostringstream h;
    trace::TraceWriter hw(h, clock::RealClock::instance(), std::move(hdr));
    hw.flush();
    m.header_line = h.str();
  }
  m.trace = m.header_line;
  m.chunk.str("");
  m.chunk.clear();
  m.tw = std::make_unique<trace::TraceWriter>(m.chunk, clock::RealClock::instance(), trace::TraceWriter::NoHeader{},
                                              trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  m.t0 = std::chrono::steady_clock::now();
  wire::SpawnOptions so;
  so.program = m.command.front();
  so.args.assign(m.command.begin() + 1, m.command.end());
  wire::SpawnError se;
  m.reactor = std::make_unique<wire::Reactor>();
  m.ch = wire::spawnProcess(*m.reactor, so, &se);
  if (!m.ch) {
    r.harness_error = se.message;
    return r;
  }
  ++m.stats.sessions;
  r.problem = m.run({handshake});
  if (!r.problem && m.exited) {
    r.problem = Problem{Problem::Kind::Exit, "RPC-08", fmt::format("the plugin ended ({}) during the handshake", m.status.str()), {}, m.lines};
  }
  r.info = m.info;
  if (!r.problem && !r.info) r.harness_error = "the plugin did not accept the handshake (error response); nothing to fuzz";
  return r;
}

std::optional<Problem> Target::run(const std::vector<FuzzStep>& steps) {
  if (!impl_->ch) return std::nullopt;
  return impl_->run(steps);
}
bool Target::alive() const { return impl_->ch && !impl_->exited; }
void Target::stop() { impl_->stop("end of session"); }
std::string Target::traceText() const {
  std::string out = impl_->trace;
  if (impl_->trace_truncated) out += "";  // the rest of the session was not kept (kMaxSessionTraceBytes)
  return out;
}
const std::vector<FuzzStep>& Target::sent() const { return impl_->sent; }
const RunStats& Target::stats() const { return impl_->stats; }
void Target::setMonitors(bool on) { impl_->monitors_on = on; }
void Target::settle(std::chrono::milliseconds d) {
  if (impl_->ch) impl_->pumpUntil(Clock::now() + d);
}

Trial runTrial(const std::vector<std::string>& command, const protocol::Profile& profile, std::uint32_t deadline_ms,
               const std::vector<FuzzStep>& steps) {
  Trial tr;
  Target t(command, profile, deadline_ms);
  if (steps.empty()) return tr;
  auto sr = t.start(steps.front());
  if (!sr.harness_error.empty() && !sr.problem) {
    tr.harness_error = sr.harness_error;
    return tr;
  }
  tr.problem = sr.problem;
  if (!tr.problem) {
    std::vector<FuzzStep> rest(steps.begin() + 1, steps.end());
    tr.problem = t.run(rest);
  }
  if (t.alive() && (!tr.problem || tr.problem->kind == Problem::Kind::Rule || tr.problem->kind == Problem::Kind::Hang)) {
    // Settle, then end the conversation the way an engine does (stdin EOF): the reproducer then
    // ends with a recorded exit that `conform replay` compares. A fault that acts on a timer after
    // the last frame (crash_after_initialize) shows up during the settle time.
    // 250 ms: long enough for timers a step arms, short enough for ddmin's many trials.
    t.settle(std::chrono::milliseconds(250));
    if (auto p = t.run({}); p && !tr.problem) tr.problem = p;
    FuzzStep close;
    close.kind = FuzzStep::Kind::CloseStdin;
    close.label = "close stdin";
    if (t.alive()) {
      auto p2 = t.run({close});
      if (!tr.problem) tr.problem = p2;
    }
  }
  t.stop();
  tr.trace = t.traceText();
  return tr;
}

}  // namespace conform::runner::fuzz
