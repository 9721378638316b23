// harness/runner/check_steps — the DSL interpreter for role engine: one switch over Step::Kind, one
// onX() per kind (WABT spectest-interp style). A failed expectation stops the case and becomes a
// finding on the case's rule; a harness problem (an unbound capture, a bad drive argument) is an
// ERROR, never blamed on the plugin.
#include <fmt/format.h>

#include "core/wire/framing.h"
#include "harness/runner/check_case_impl.h"

namespace conform::runner::detail {

using dsl::MsgKind;
using dsl::Step;

namespace {

// JSON-RPC ids echo "with the same JSON type and value" (RPC-08): 1 ≠ 1.0 ≠ "1".
bool idEqual(const json::Value& a, const json::Value& b) {
  if (a.IsString() && b.IsString())
    return a.GetStringLength() == b.GetStringLength() &&
           std::string_view(a.GetString(), a.GetStringLength()) == std::string_view(b.GetString(), b.GetStringLength());
  if (a.IsNull() && b.IsNull()) return true;
  if (a.IsInt64() && b.IsInt64()) return a.GetInt64() == b.GetInt64() && a.IsDouble() == b.IsDouble();
  if (a.IsUint64() && b.IsUint64()) return a.GetUint64() == b.GetUint64() && a.IsDouble() == b.IsDouble();
  return false;
}

// Captures hold Documents (move-only): a trial match works on a deep copy and is committed on success.
json::Captures copyCaps(const json::Captures& c) {
  json::Captures out;
  for (const auto& [k, v] : c) out.emplace(k, json::copy(v));
  return out;
}

std::chrono::milliseconds withinOf(const Step& s, std::chrono::milliseconds dflt) { return s.within.value_or(dflt); }

std::string describe(const Step& s) {
  std::string d = toString(s.msg);
  if (!s.method.empty()) d += " " + s.method;
  if (!s.ref.empty()) d += " to $" + s.ref;
  if (s.code) d += fmt::format(" with code {}", *s.code);
  if (s.json) d += fmt::format(" {}{}", s.exact ? "exactly " : "matching ", json::compact(*s.json));
  return d;
}

}  // namespace

bool CaseRunner::fail(const Step& s, std::string message, std::string expected, std::string actual,
                      std::vector<reports::Evidence> ev) {
  if (!failure_)
    failure_ = StepFailure{fmt::format("{}: {}", s.loc.str(), message), std::move(expected), std::move(actual), std::move(ev)};
  if (tw_) tw_->note("FAILED " + failure_->message);
  return false;
}

bool CaseRunner::harnessError(const Step& s, std::string message) {
  if (error_.empty()) error_ = fmt::format("{}: {}", s.loc.str(), message);
  return false;
}

void CaseRunner::bind(const std::string& name, json::Document value, const json::Value* id) {
  caps_[name] = std::move(value);
  if (id) ids_[name] = json::copy(*id);
}

Expected<json::Document, std::string> CaseRunner::resolve(const dsl::JsonPtr& p) {
  if (!p) return json::Document(rapidjson::kObjectType);
  return json::substitute(*p, caps_);
}

bool CaseRunner::execAll(const std::vector<Step>& steps) {
  for (const Step& s : steps)
    if (!exec(s)) return false;
  return true;
}

bool CaseRunner::exec(const Step& s) {
  using K = Step::Kind;
  switch (s.kind) {
    case K::SendRequest: return onSendRequest(s);
    case K::SendNotify: return onSendNotify(s);
    case K::SendResponse:
    case K::SendError: return onSendResponse(s);
    case K::SendRaw: return onSendRaw(s);
    case K::SendFrame: return onSendFrame(s);
    case K::Expect: return onExpect(s);
    case K::ExpectNo: return onExpectNo(s);
    case K::ExpectExit: return onExpectExit(s);
    case K::ExpectEof: return onExpectEof(s);
    case K::ExpectState: return onExpectState(s);
    case K::Repeat: return onRepeat(s);
    case K::ForEachTool:
    case K::ForEachHook: return onForEach(s);
    case K::Advance: return onAdvance(s);
    case K::Wait: return onWait(s);
    case K::Fault: return onFault(s);
    case K::Drive: return onDrive(s);
  }
  return harnessError(s, "unknown step kind");
}

// ---- send -------------------------------------------------------------------------------------

bool CaseRunner::onSendRequest(const Step& s) {
  auto params = resolve(s.json);
  if (!params) return harnessError(s, params.error());
  json::Document frame(rapidjson::kObjectType);
  auto& a = frame.GetAllocator();
  frame.AddMember("jsonrpc", "2.0", a);
  json::Document id;
  if (s.id) id.CopyFrom(*s.id, id.GetAllocator());
  else id.SetInt64(next_id_++);
  frame.AddMember("id", json::Value(id, a), a);
  frame.AddMember("method", json::str(s.method, a), a);
  frame.AddMember("params", json::Value(*params, a), a);
  if (!s.as.empty()) bind(s.as, json::copy(*params), &id);
  inject(wire::encodeFrame(json::compact(frame)), true);
  return true;
}

bool CaseRunner::onSendNotify(const Step& s) {
  auto params = resolve(s.json);
  if (!params) return harnessError(s, params.error());
  json::Document frame(rapidjson::kObjectType);
  auto& a = frame.GetAllocator();
  frame.AddMember("jsonrpc", "2.0", a);
  frame.AddMember("method", json::str(s.method, a), a);
  frame.AddMember("params", json::Value(*params, a), a);
  inject(wire::encodeFrame(json::compact(frame)), true);
  return true;
}

bool CaseRunner::onSendResponse(const Step& s) {
  auto it = ids_.find(s.ref);
  if (it == ids_.end()) return harnessError(s, fmt::format("${} names no request (bind one with `expect request … as ${}`)", s.ref, s.ref));
  json::Document frame(rapidjson::kObjectType);
  auto& a = frame.GetAllocator();
  frame.AddMember("jsonrpc", "2.0", a);
  frame.AddMember("id", json::Value(it->second, a), a);
  if (s.kind == Step::Kind::SendError) {
    json::Value err(rapidjson::kObjectType);
    err.AddMember("code", json::Value(static_cast<std::int64_t>(*s.code)), a);
    err.AddMember("message", json::str(s.text, a), a);
    frame.AddMember("error", err, a);
  } else {
    auto result = resolve(s.json);
    if (!result) return harnessError(s, result.error());
    frame.AddMember("result", json::Value(*result, a), a);
  }
  inject(wire::encodeFrame(json::compact(frame)), true);
  return true;
}

bool CaseRunner::onSendRaw(const Step& s) {
  inject(s.text, false);
  return true;
}

bool CaseRunner::onSendFrame(const Step& s) {
  auto doc = resolve(s.json);
  if (!doc) return harnessError(s, doc.error());
  inject(wire::encodeFrame(json::compact(*doc)), true);
  return true;
}

// ---- expect -----------------------------------------------------------------------------------

bool CaseRunner::matches(const Step& s, Inbound& in, json::Captures& caps, std::string* why) {
  if (in.kind != Inbound::Kind::Frame || !in.doc || !in.doc->IsObject()) return false;
  if (s.msg != MsgKind::Frame && in.msg != s.msg) {
    // `expect response` accepts neither error responses nor vice versa; a frame matches anything.
    return false;
  }
  if (!s.method.empty() && in.method != s.method) return false;
  const json::Value* subject = in.doc.get();
  switch (s.msg) {
    case MsgKind::Request:
    case MsgKind::Notify: subject = json::member(*in.doc, "params"); break;
    case MsgKind::Response: subject = json::member(*in.doc, "result"); break;
    case MsgKind::Error: subject = json::member(*in.doc, "error"); break;
    case MsgKind::Frame: break;
  }
  if (!s.ref.empty()) {
    auto it = ids_.find(s.ref);
    const json::Value* id = json::member(*in.doc, "id");
    if (it == ids_.end() || !id || !idEqual(*id, it->second)) return false;
  }
  if (s.code) {
    const json::Value* code = subject ? json::member(*subject, "code") : nullptr;
    if (!code || !code->IsInt64() || code->GetInt64() != *s.code) {
      if (why) *why = fmt::format("error code {}", code ? json::compact(*code) : "(absent)");
      return false;
    }
  }
  if (s.json) {
    static const json::Value kNull;
    const json::Value& subj = subject ? *subject : kNull;
    if (s.exact) {
      auto want = json::substitute(*s.json, caps);
      if (!want || !json::equal(*want, subj)) {
        if (why) *why = fmt::format("{} (line {})", json::compact(subj), in.line);
        return false;
      }
    } else if (auto mm = json::matchSubset(*s.json, subj, caps)) {
      if (why) *why = fmt::format("{} (line {})", mm->str(), in.line);
      return false;
    }
  }
  return true;
}

bool CaseRunner::onExpect(const Step& s) {
  if (!s.ref.empty() && !ids_.count(s.ref)) return harnessError(s, fmt::format("${} names no request", s.ref));
  Inbound* hit = nullptr;
  std::string why;
  auto scan = [&] {
    for (Inbound& in : inbox_) {
      if (in.consumed) continue;
      json::Captures trial = copyCaps(caps_);
      std::string w;
      if (matches(s, in, trial, &w)) {
        caps_ = std::move(trial);
        hit = &in;
        return true;
      }
      if (!w.empty()) why = w;
    }
    return false;
  };
  if (!pumpUntil(wire::deadlineIn(withinOf(s, dsl::kDefaultExpectWithin)), scan)) {
    if (tw_) tw_->timeout(fmt::format("{}: expect {}", s.loc.str(), describe(s)));
    std::string actual = why.empty() ? recentInbound(3) : "closest: " + why + "; last: " + recentInbound(2);
    return fail(s, fmt::format("no {} within {}", describe(s), dsl::formatDuration(withinOf(s, dsl::kDefaultExpectWithin))),
                describe(s), actual, {{traceLine(), "timeout"}});
  }
  hit->consumed = true;
  if (!s.as.empty()) {
    const json::Value* part = hit->doc.get();
    if (s.msg == MsgKind::Request || s.msg == MsgKind::Notify) part = json::member(*hit->doc, "params");
    else if (s.msg == MsgKind::Response) part = json::member(*hit->doc, "result");
    else if (s.msg == MsgKind::Error) part = json::member(*hit->doc, "error");
    json::Document v = part ? json::copy(*part) : json::Document();
    bind(s.as, std::move(v), json::member(*hit->doc, "id"));
  }
  return true;
}

bool CaseRunner::onExpectNo(const Step& s) {
  if (!s.ref.empty() && !ids_.count(s.ref)) return harnessError(s, fmt::format("${} names no request", s.ref));
  Inbound* hit = nullptr;
  auto scan = [&] {
    for (Inbound& in : inbox_) {
      if (in.consumed) continue;
      json::Captures trial = copyCaps(caps_);
      if (matches(s, in, trial, nullptr)) {
        hit = &in;
        return true;
      }
    }
    return false;
  };
  if (pumpUntil(wire::deadlineIn(withinOf(s, dsl::kDefaultExpectNoWithin)), scan))
    return fail(s, fmt::format("unexpected {}", describe(s)), "no " + describe(s),
                fmt::format("line {}: {}", hit->line, reports::shortenEvidence(hit->raw, 300)),
                {{hit->line, reports::shortenEvidence(hit->raw)}});
  return true;
}

bool CaseRunner::onExpectExit(const Step& s) {
  const Inbound* hit = nullptr;
  auto scan = [&] {
    for (const Inbound& in : inbox_)
      if (in.kind == Inbound::Kind::Exit) { hit = &in; return true; }
    return false;
  };
  auto within = withinOf(s, dsl::kDefaultExitWithin);
  if (!pumpUntil(wire::deadlineIn(within), scan)) {
    if (tw_) tw_->timeout(fmt::format("{}: expect exit", s.loc.str()));
    return fail(s, fmt::format("the plugin did not exit within {}", dsl::formatDuration(within)), "process exit",
                "still running; last: " + recentInbound(2), {{traceLine(), "timeout"}});
  }
  const wire::ExitStatus& st = hit->status;
  bool ok = true;
  std::string want;
  switch (s.exit) {
    case dsl::ExitWant::Any: want = "any exit"; break;
    case dsl::ExitWant::Zero: want = "exit 0"; ok = st.success(); break;
    case dsl::ExitWant::Nonzero: want = "a non-zero exit (an error exit, not a signal)"; ok = !st.signaled && st.code != 0; break;
    case dsl::ExitWant::Code: want = fmt::format("exit {}", *s.code); ok = !st.signaled && st.code == *s.code; break;
    case dsl::ExitWant::Signal: want = "killed by a signal"; ok = st.signaled; break;
  }
  if (!ok) return fail(s, fmt::format("the plugin ended with {}", st.str()), want, st.str(), {{hit->line, st.str()}});
  return true;
}

bool CaseRunner::onExpectEof(const Step& s) {
  auto within = withinOf(s, dsl::kDefaultExitWithin);
  auto scan = [&] {
    for (const Inbound& in : inbox_)
      if (in.kind == Inbound::Kind::Eof) return true;
    return false;
  };
  if (!pumpUntil(wire::deadlineIn(within), scan))
    return fail(s, fmt::format("no EOF on the plugin's stdout within {}", dsl::formatDuration(within)), "stdout EOF",
                recentInbound(2), {{traceLine(), "timeout"}});
  return true;
}

bool CaseRunner::onExpectState(const Step& s) {
  const std::string& name = cfg_.plugins[0].name;
  auto within = withinOf(s, dsl::kDefaultExpectWithin);
  auto good = [&] {
    auto st = eng_->status(name);
    if (!st || s.text != engine::toString(st->state)) return false;
    return s.reason.empty() || (st->reason && st->reason->find(s.reason) != std::string::npos);
  };
  if (!pumpUntil(wire::deadlineIn(within), good)) {
    auto st = eng_->status(name);
    std::string actual = st ? std::string(engine::toString(st->state)) + (st->reason ? " (" + *st->reason + ")" : "") : "no status";
    std::string want = s.text + (s.reason.empty() ? "" : " with reason containing \"" + s.reason + "\"");
    return fail(s, fmt::format("engine-side state is {}, expected {}", actual, want), want, actual, {{traceLine(), actual}});
  }
  return true;
}

// ---- control ----------------------------------------------------------------------------------

bool CaseRunner::onRepeat(const Step& s) {
  for (std::uint32_t i = 0; i < s.count; ++i)
    if (!execAll(s.body)) return false;
  return true;
}

bool CaseRunner::onForEach(const Step& s) {
  auto st = eng_->status(cfg_.plugins[0].name);
  if (!st) return harnessError(s, "no plugin status");
  const auto& items = s.kind == Step::Kind::ForEachTool ? st->tools : st->capabilities.intercept;
  for (const std::string& item : items) {
    json::Document v;
    v.SetString(item.data(), static_cast<rapidjson::SizeType>(item.size()), v.GetAllocator());
    bind(s.as, std::move(v));
    if (!execAll(s.body)) return false;
  }
  return true;
}

bool CaseRunner::onAdvance(const Step& s) {
  clk_.advance(s.duration);
  if (tw_) tw_->note(fmt::format("advance {} (engine clock)", dsl::formatDuration(s.duration)));
  dispatch();
  return true;
}

bool CaseRunner::onWait(const Step& s) {
  pumpFor(s.duration);
  return true;
}

bool CaseRunner::onFault(const Step& s) {
  wire::Channel* ch = channel();
  if (!ch) return harnessError(s, "no plugin process");
  if (tw_) tw_->note(fmt::format("fault {}", toString(s.fault)));
  switch (s.fault) {
    case dsl::FaultKind::CloseStdin:
      ch->closeWrite(false);
      stdin_closed_ = true;
      if (tw_) tw_->eof(trace::Dir::EngineToPlugin);
      return true;
    case dsl::FaultKind::Kill:
      ch->close(false);
      dispatch();
      return true;
    case dsl::FaultKind::StallReading:
      ch->stallReading(true);
      pumpFor(s.duration);
      ch->stallReading(false);
      return true;
    case dsl::FaultKind::DropReply:
      drop_next_reply_ = true;
      return true;
    case dsl::FaultKind::Disconnect:
      ch->closeWrite(true);
      ch->stallReading(true);
      stdin_closed_ = true;
      if (tw_) tw_->eof(trace::Dir::EngineToPlugin);
      return true;
    case dsl::FaultKind::Restart:
      return harnessError(s, "fault restart is not available in role engine yet (the reference engine has no restart action)");
  }
  return harnessError(s, "unknown fault");
}

// drive ACTION …: the reference engine acts (docs/dsl.md lists the actions).
bool CaseRunner::onDrive(const Step& s) {
  auto arg = [&](std::size_t i) -> Expected<std::string, std::string> {
    if (i >= s.args.size()) return unexpected(fmt::format("drive {}: missing argument {}", s.text, i + 1));
    const std::string& a = s.args[i];
    if (!a.empty() && a[0] == '$') {
      const json::Value* v = json::resolveCapture(caps_, a);
      if (!v || !v->IsString()) return unexpected(fmt::format("{} is unbound or not a string", a));
      return std::string(v->GetString(), v->GetStringLength());
    }
    if (a.size() >= 2 && a.front() == '"') return a.substr(1, a.size() - 2);
    return a;
  };
  auto bindString = [&](const std::string& v) {
    if (s.as.empty()) return;
    json::Document d;
    d.SetString(v.data(), static_cast<rapidjson::SizeType>(v.size()), d.GetAllocator());
    bind(s.as, std::move(d));
  };
  const std::string& name = cfg_.plugins[0].name;
  if (s.text == "session.create") {
    bindString(eng_->createSession());
    return true;
  }
  if (s.text == "event") {
    auto session = arg(0);
    auto cls = arg(1);
    if (!session) return harnessError(s, session.error());
    if (!cls) return harnessError(s, cls.error());
    engine::RecordClass rc;
    if (*cls == "class=chunk") rc = engine::RecordClass::Chunk;
    else if (*cls == "class=ordinary") rc = engine::RecordClass::Ordinary;
    else if (*cls == "class=terminal") rc = engine::RecordClass::Terminal;
    else return harnessError(s, fmt::format("drive event: expected class=chunk|ordinary|terminal, found `{}`", *cls));
    auto r = eng_->produceEvent(*session, rc);
    if (!r) return harnessError(s, "drive event: " + r.error());
    dispatch();
    return true;
  }
  if (s.text == "tool.call") {
    auto session = arg(0);
    auto tool = arg(1);
    if (!session) return harnessError(s, session.error());
    if (!tool) return harnessError(s, tool.error());
    auto args = resolve(s.json);
    if (!args) return harnessError(s, args.error());
    auto r = eng_->callTool(*session, *tool, *args);
    if (!r) return harnessError(s, "drive tool.call: " + r.error());
    bindString(*r);
    dispatch();
    return true;
  }
  if (s.text == "ping") {
    // Waits for the engine's verdict on the ping (its deadline is interception_timeout_ms, PING-03).
    std::uint64_t h = eng_->ping(name);
    auto limit = std::chrono::milliseconds(cfg_.plugins[0].interception_timeout_ms) + std::chrono::milliseconds(500);
    pumpUntil(wire::deadlineIn(limit), [&] {
      auto* p = eng_->pingStatus(h);
      return p && p->state != engine::PingStatus::State::Pending;
    });
    auto* p = eng_->pingStatus(h);
    if (!p || p->state != engine::PingStatus::State::Ok)
      return fail(s, "the reference engine's plugin/ping failed", "ping answered with {}",
                  p ? (p->reason.empty() ? "no answer" : p->reason) : "no ping status", {{traceLine(), "ping"}});
    return true;
  }
  if (s.text == "shutdown") {
    eng_->shutdown();
    dispatch();
    return true;
  }
  if (s.text == "flush") {
    eng_->flushDiagnostics();
    return true;
  }
  return harnessError(s, fmt::format("unknown drive action `{}` (session.create, event, tool.call, ping, shutdown, flush)", s.text));
}

}  // namespace conform::runner::detail
