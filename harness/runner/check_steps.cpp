// harness/runner/check_steps — the DSL interpreter of both roles: one switch over Step::Kind, one
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
  if (s.code) d += s.not_code ? fmt::format(" (not an error {})", *s.code) : fmt::format(" with code {}", *s.code);
  if (s.json) d += fmt::format(" {}{}", s.exact ? "exactly " : "matching ", json::compact(*s.json));
  return d;
}

// A method name with capture segments (`plugin/intercept/$h`): each `$name` segment is replaced by
// the bound string. An unbound or non-string capture is an error naming it.
Expected<std::string, std::string> resolveMethod(const json::Captures& caps, const std::string& m) {
  if (m.find('$') == std::string::npos) return m;
  std::string out;
  std::size_t start = 0;
  while (true) {
    std::size_t slash = m.find('/', start);
    std::string seg = m.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!seg.empty() && seg[0] == '$') {
      const json::Value* v = json::resolveCapture(caps, seg);
      if (!v || !v->IsString()) return unexpected(fmt::format("{} in the method name `{}` is unbound or not a string", seg, m));
      seg.assign(v->GetString(), v->GetStringLength());
    }
    out += seg;
    if (slash == std::string::npos) break;
    out += '/';
    start = slash + 1;
  }
  return out;
}

}  // namespace

bool Interpreter::fail(const Step& s, std::string message, std::string expected, std::string actual,
                      std::vector<reports::Evidence> ev) {
  if (!failure_)
    failure_ = StepFailure{fmt::format("{}: {}", s.loc.str(), message), std::move(expected), std::move(actual), std::move(ev)};
  if (conv_.tw) conv_.tw->note("FAILED " + failure_->message);
  return false;
}

bool Interpreter::harnessError(const Step& s, std::string message) {
  if (error_.empty()) error_ = fmt::format("{}: {}", s.loc.str(), message);
  return false;
}

void Interpreter::bind(const std::string& name, json::Document value, const json::Value* id) {
  caps_[name] = std::move(value);
  if (id) ids_[name] = json::copy(*id);
}

Expected<json::Document, std::string> Interpreter::resolve(const dsl::JsonPtr& p) {
  if (!p) return json::Document(rapidjson::kObjectType);
  return json::substitute(*p, caps_);
}

bool Interpreter::execAll(const std::vector<Step>& steps) {
  for (const Step& s : steps)
    if (!exec(s)) return false;
  return true;
}

bool Interpreter::exec(const Step& s) {
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

bool Interpreter::onSendRequest(const Step& s) {
  auto params = resolve(s.json);
  if (!params) return harnessError(s, params.error());
  auto method = resolveMethod(caps_, s.method);
  if (!method) return harnessError(s, method.error());
  json::Document frame(rapidjson::kObjectType);
  auto& a = frame.GetAllocator();
  frame.AddMember("jsonrpc", "2.0", a);
  json::Document id;
  if (s.id) id.CopyFrom(*s.id, id.GetAllocator());
  else id.SetInt64(next_id_++);
  frame.AddMember("id", json::Value(id, a), a);
  frame.AddMember("method", json::str(*method, a), a);
  frame.AddMember("params", json::Value(*params, a), a);
  if (!s.as.empty()) bind(s.as, json::copy(*params), &id);
  peer_.send(wire::encodeFrame(json::compact(frame)));
  return true;
}

bool Interpreter::onSendNotify(const Step& s) {
  auto params = resolve(s.json);
  if (!params) return harnessError(s, params.error());
  auto method = resolveMethod(caps_, s.method);
  if (!method) return harnessError(s, method.error());
  json::Document frame(rapidjson::kObjectType);
  auto& a = frame.GetAllocator();
  frame.AddMember("jsonrpc", "2.0", a);
  frame.AddMember("method", json::str(*method, a), a);
  frame.AddMember("params", json::Value(*params, a), a);
  peer_.send(wire::encodeFrame(json::compact(frame)));
  return true;
}

bool Interpreter::onSendResponse(const Step& s) {
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
  peer_.send(wire::encodeFrame(json::compact(frame)));
  return true;
}

bool Interpreter::onSendRaw(const Step& s) {
  peer_.send(s.text);
  return true;
}

bool Interpreter::onSendFrame(const Step& s) {
  if (s.size == 0) {
    auto doc = resolve(s.json);
    if (!doc) return harnessError(s, doc.error());
    peer_.send(wire::encodeFrame(json::compact(*doc)));
    return true;
  }
  // `size N`: measure the frame with an empty pad, then bind $pad to the 'x' run that makes the
  // compact frame exactly N bytes ('x' needs no escaping, so one byte per character).
  auto bindPad = [&](std::size_t n) {
    json::Document pad;
    std::string x(n, 'x');
    pad.SetString(x.data(), static_cast<rapidjson::SizeType>(x.size()), pad.GetAllocator());
    caps_[dsl::kPadCapture] = std::move(pad);
  };
  bindPad(0);
  auto bare = resolve(s.json);
  if (!bare) return harnessError(s, bare.error());
  const std::size_t base = json::compact(*bare).size();
  if (base > s.size) {
    caps_.erase(dsl::kPadCapture);
    return harnessError(s, fmt::format("the frame is {} bytes without padding, more than size {}", base, s.size));
  }
  bindPad(static_cast<std::size_t>(s.size) - base);
  auto doc = resolve(s.json);
  caps_.erase(dsl::kPadCapture);
  if (!doc) return harnessError(s, doc.error());
  std::string text = json::compact(*doc);
  if (text.size() != s.size) return harnessError(s, fmt::format("internal: padded frame is {} bytes, not {}", text.size(), s.size));
  peer_.send(wire::encodeFrame(text));
  return true;
}

// ---- expect -----------------------------------------------------------------------------------

bool Interpreter::matches(const Step& s, Inbound& in, json::Captures& caps, std::string* why) {
  if (in.kind != Inbound::Kind::Frame || !in.doc || !in.doc->IsObject()) return false;
  if (s.msg == MsgKind::Answer) {
    if (in.msg != MsgKind::Response && in.msg != MsgKind::Error) return false;
  } else if (s.msg != MsgKind::Frame && in.msg != s.msg) {
    // `expect response` accepts neither error responses nor vice versa; a frame matches anything.
    return false;
  }
  if (!s.method.empty()) {
    auto method = resolveMethod(caps, s.method);
    if (!method || in.method != *method) return false;
  }
  const json::Value* subject = in.doc.get();
  switch (s.msg) {
    case MsgKind::Request:
    case MsgKind::Notify: subject = json::member(*in.doc, "params"); break;
    case MsgKind::Response: subject = json::member(*in.doc, "result"); break;
    case MsgKind::Error: subject = json::member(*in.doc, "error"); break;
    case MsgKind::Frame:
    case MsgKind::Answer: break;
  }
  if (!s.ref.empty()) {
    auto it = ids_.find(s.ref);
    const json::Value* id = json::member(*in.doc, "id");
    if (it == ids_.end() || !id || !idEqual(*id, it->second)) return false;
  }
  if (s.code && !s.not_code) {
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

bool Interpreter::onExpect(const Step& s) {
  if (!s.ref.empty() && !ids_.count(s.ref)) return harnessError(s, fmt::format("${} names no request", s.ref));
  Inbound* hit = nullptr;
  std::string why;
  auto scan = [&] {
    for (Inbound& in : conv_.inbox) {
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
  if (!peer_.pumpUntil(wire::deadlineIn(withinOf(s, dsl::kDefaultExpectWithin)), scan)) {
    if (conv_.tw) conv_.tw->timeout(fmt::format("{}: expect {}", s.loc.str(), describe(s)));
    std::string actual = why.empty() ? recent(3) : "closest: " + why + "; last: " + recent(2);
    return fail(s, fmt::format("no {} within {}", describe(s), dsl::formatDuration(withinOf(s, dsl::kDefaultExpectWithin))),
                describe(s), actual, {{conv_.traceLine(), "timeout"}});
  }
  hit->consumed = true;
  if (s.not_code) {
    // expect answer $r not CODE: the answer arrived; an error with that code is the failure.
    const json::Value* err = json::member(*hit->doc, "error");
    const json::Value* code = err ? json::member(*err, "code") : nullptr;
    if (code && code->IsInt64() && code->GetInt64() == *s.code)
      return fail(s, fmt::format("the answer to ${} is an error with code {}", s.ref, *s.code),
                  fmt::format("a result, or an error other than {}", *s.code),
                  fmt::format("line {}: {}", hit->line, reports::shortenEvidence(hit->raw, 300)),
                  {{hit->line, reports::shortenEvidence(hit->raw)}});
  }
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

bool Interpreter::onExpectNo(const Step& s) {
  if (!s.ref.empty() && !ids_.count(s.ref)) return harnessError(s, fmt::format("${} names no request", s.ref));
  Inbound* hit = nullptr;
  auto scan = [&] {
    for (Inbound& in : conv_.inbox) {
      if (in.consumed) continue;
      json::Captures trial = copyCaps(caps_);
      if (matches(s, in, trial, nullptr)) {
        hit = &in;
        return true;
      }
    }
    return false;
  };
  if (peer_.pumpUntil(wire::deadlineIn(withinOf(s, dsl::kDefaultExpectNoWithin)), scan))
    return fail(s, fmt::format("unexpected {}", describe(s)), "no " + describe(s),
                fmt::format("line {}: {}", hit->line, reports::shortenEvidence(hit->raw, 300)),
                {{hit->line, reports::shortenEvidence(hit->raw)}});
  return true;
}

bool Interpreter::onExpectExit(const Step& s) {
  const Inbound* hit = nullptr;
  auto scan = [&] {
    for (const Inbound& in : conv_.inbox)
      if (in.kind == Inbound::Kind::Exit) { hit = &in; return true; }
    return false;
  };
  auto within = withinOf(s, dsl::kDefaultExitWithin);
  if (!peer_.pumpUntil(wire::deadlineIn(within), scan)) {
    if (conv_.tw) conv_.tw->timeout(fmt::format("{}: expect exit", s.loc.str()));
    return fail(s, fmt::format("the {} did not exit within {}", peer_.subject(), dsl::formatDuration(within)), "process exit",
                "still running; last: " + recent(2), {{conv_.traceLine(), "timeout"}});
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
  if (!ok) return fail(s, fmt::format("the {} ended with {}", peer_.subject(), st.str()), want, st.str(), {{hit->line, st.str()}});
  return true;
}

bool Interpreter::onExpectEof(const Step& s) {
  auto within = withinOf(s, dsl::kDefaultExitWithin);
  auto scan = [&] {
    for (const Inbound& in : conv_.inbox)
      if (in.kind == Inbound::Kind::Eof) return true;
    return false;
  };
  if (!peer_.pumpUntil(wire::deadlineIn(within), scan))
    return fail(s, fmt::format("no EOF from the {} within {}", peer_.subject(), dsl::formatDuration(within)), "stdout EOF",
                recent(2), {{conv_.traceLine(), "timeout"}});
  return true;
}

bool Interpreter::onExpectState(const Step& s) {
  auto within = withinOf(s, dsl::kDefaultExpectWithin);
  auto good = [&] {
    auto st = peer_.state();
    if (!st || s.text != st->state) return false;
    return s.reason.empty() || st->reason.find(s.reason) != std::string::npos;
  };
  if (!peer_.pumpUntil(wire::deadlineIn(within), good)) {
    auto st = peer_.state();
    std::string actual = st ? st->state + (st->reason.empty() ? "" : " (" + st->reason + ")") : "no status";
    std::string want = s.text + (s.reason.empty() ? "" : " with reason containing \"" + s.reason + "\"");
    return fail(s, fmt::format("engine-side state is {}, expected {}", actual, want), want, actual, {{conv_.traceLine(), actual}});
  }
  return true;
}

// ---- control ----------------------------------------------------------------------------------

bool Interpreter::onRepeat(const Step& s) {
  for (std::uint32_t i = 0; i < s.count; ++i)
    if (!execAll(s.body)) return false;
  return true;
}

bool Interpreter::onForEach(const Step& s) {
  for (const std::string& item : peer_.items(s.kind == Step::Kind::ForEachTool)) {
    json::Document v;
    v.SetString(item.data(), static_cast<rapidjson::SizeType>(item.size()), v.GetAllocator());
    bind(s.as, std::move(v));
    if (!execAll(s.body)) return false;
  }
  return true;
}

bool Interpreter::outcome(const Step& s, Peer::Outcome o) {
  switch (o.kind) {
    case Peer::Outcome::Kind::Ok:
      if (!s.as.empty() && o.doc) {
        bind(s.as, json::copy(*o.doc));
      } else if (!s.as.empty() && o.value) {
        json::Document d;
        d.SetString(o.value->data(), static_cast<rapidjson::SizeType>(o.value->size()), d.GetAllocator());
        bind(s.as, std::move(d));
      }
      return true;
    case Peer::Outcome::Kind::Fail:
      return fail(s, std::move(o.message), std::move(o.expected), std::move(o.actual), {{conv_.traceLine(), toString(s.kind)}});
    case Peer::Outcome::Kind::Error: return harnessError(s, std::move(o.message));
  }
  return harnessError(s, "unknown outcome");
}

bool Interpreter::onAdvance(const Step& s) { return outcome(s, peer_.advance(s.duration)); }

bool Interpreter::onWait(const Step& s) {
  peer_.pumpUntil(wire::deadlineIn(s.duration), [] { return false; });
  return true;
}

bool Interpreter::onFault(const Step& s) { return outcome(s, peer_.fault(s.fault, s.duration)); }

// drive ACTION …: captures in the arguments are resolved here; the peer acts (docs/dsl.md).
bool Interpreter::onDrive(const Step& s) {
  std::vector<std::string> args;
  for (const std::string& a : s.args) {
    if (!a.empty() && a[0] == '$') {
      const json::Value* v = json::resolveCapture(caps_, a);
      if (!v || !v->IsString()) return harnessError(s, fmt::format("{} is unbound or not a string", a));
      args.emplace_back(v->GetString(), v->GetStringLength());
    } else if (a.size() >= 2 && a.front() == '"') {
      args.push_back(a.substr(1, a.size() - 2));
    } else {
      args.push_back(a);
    }
  }
  auto json = resolve(s.json);
  if (!json) return harnessError(s, json.error());
  return outcome(s, peer_.drive(s.text, args, *json));
}

}  // namespace conform::runner::detail
