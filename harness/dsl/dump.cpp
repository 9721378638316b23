// harness/dsl/dump — `conform run FILE.scn --dump-plan`: the compiled steps, one a line, so an
// author sees exactly what the interpreter will do (defaults filled in, JSON normalised, bytes in
// hex). The format is stable: tests/dsl compares it with a golden file.
#include <fmt/format.h>

#include "harness/dsl/plan.h"

namespace conform::dsl {

const char* toString(MsgKind k) {
  switch (k) {
    case MsgKind::Request: return "request";
    case MsgKind::Notify: return "notify";
    case MsgKind::Response: return "response";
    case MsgKind::Error: return "error";
    case MsgKind::Frame: return "frame";
    case MsgKind::Answer: return "answer";
  }
  return "?";
}

const char* toString(FaultKind k) {
  switch (k) {
    case FaultKind::CloseStdin: return "close-stdin";
    case FaultKind::Kill: return "kill";
    case FaultKind::Restart: return "restart";
    case FaultKind::StallReading: return "stall-reading";
    case FaultKind::DropReply: return "drop-reply";
    case FaultKind::Disconnect: return "disconnect";
  }
  return "?";
}

const char* toString(Step::Kind k) {
  using K = Step::Kind;
  switch (k) {
    case K::SendRequest: return "send-request";
    case K::SendNotify: return "send-notify";
    case K::SendResponse: return "send-response";
    case K::SendError: return "send-error";
    case K::SendRaw: return "send-raw";
    case K::SendFrame: return "send-frame";
    case K::Expect: return "expect";
    case K::ExpectNo: return "expect-no";
    case K::ExpectExit: return "expect-exit";
    case K::ExpectEof: return "expect-eof";
    case K::ExpectState: return "expect-state";
    case K::Repeat: return "repeat";
    case K::ForEachTool: return "for-each-tool";
    case K::ForEachHook: return "for-each-hook";
    case K::Advance: return "advance";
    case K::Wait: return "wait";
    case K::Fault: return "fault";
    case K::Drive: return "drive";
  }
  return "?";
}

namespace {

std::string hex(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

void dumpSteps(std::string& out, const std::vector<Step>& steps, int indent) {
  using K = Step::Kind;
  for (const Step& s : steps) {
    std::string line = fmt::format("{:{}}{}:{} {}", "", indent, s.loc.line, s.loc.column, toString(s.kind));
    auto js = [&](const JsonPtr& p) { return p ? json::compact(*p) : std::string(); };
    switch (s.kind) {
      case K::SendRequest:
        line += fmt::format(" {} {} id={}", s.method, js(s.json), s.id ? js(s.id) : "auto");
        break;
      case K::SendNotify: line += fmt::format(" {} {}", s.method, js(s.json)); break;
      case K::SendResponse: line += fmt::format(" ${} {}", s.ref, js(s.json)); break;
      case K::SendError: {
        json::Document d;
        d.SetString(s.text.data(), static_cast<rapidjson::SizeType>(s.text.size()), d.GetAllocator());
        line += fmt::format(" ${} {} {}", s.ref, *s.code, json::compact(d));
        break;
      }
      case K::SendRaw: line += fmt::format(" hex:{}", hex(s.text)); break;
      case K::SendFrame:
        line += " " + js(s.json);
        if (s.size) line += fmt::format(" size={}", s.size);
        break;
      case K::Expect:
      case K::ExpectNo:
        line += fmt::format(" {}", toString(s.msg));
        if (!s.method.empty()) line += " " + s.method;
        if (!s.ref.empty()) line += " $" + s.ref;
        if (s.code) line += fmt::format(" {}={}", s.not_code ? "not-code" : "code", *s.code);
        if (s.json) line += fmt::format(" {}{}", s.exact ? "exact " : "", js(s.json));
        line += fmt::format(" within={}", formatDuration(s.within.value_or(s.kind == K::ExpectNo ? kDefaultExpectNoWithin : kDefaultExpectWithin)));
        break;
      case K::ExpectExit: {
        const char* w[] = {"any", "zero", "nonzero", "code", "signal"};
        line += fmt::format(" {}", w[static_cast<int>(s.exit)]);
        if (s.code) line += fmt::format(" {}", *s.code);
        line += fmt::format(" within={}", formatDuration(s.within.value_or(kDefaultExitWithin)));
        break;
      }
      case K::ExpectEof: line += fmt::format(" within={}", formatDuration(s.within.value_or(kDefaultExitWithin))); break;
      case K::ExpectState:
        line += " " + s.text;
        if (!s.reason.empty()) line += fmt::format(" reason=\"{}\"", s.reason);
        line += fmt::format(" within={}", formatDuration(s.within.value_or(kDefaultExpectWithin)));
        break;
      case K::Repeat: line += fmt::format(" {}", s.count); break;
      case K::ForEachTool:
      case K::ForEachHook: line += " $" + s.as; break;
      case K::Advance:
      case K::Wait: line += " " + formatDuration(s.duration); break;
      case K::Fault:
        line += fmt::format(" {}", toString(s.fault));
        if (s.fault == FaultKind::StallReading) line += " " + formatDuration(s.duration);
        break;
      case K::Drive:
        line += " " + s.text;
        for (const auto& a : s.args) line += " " + a;
        if (s.json) line += " " + js(s.json);
        break;
    }
    if (!s.as.empty() && s.kind != K::ForEachTool && s.kind != K::ForEachHook) line += " as $" + s.as;
    if (!s.plugin.empty()) line += " on=" + s.plugin;
    out += line + "\n";
    if (!s.body.empty()) dumpSteps(out, s.body, indent + 2);
  }
}

}  // namespace

std::string dump(const Plan& plan) {
  std::string out;
  for (const Case& c : plan.cases) {
    std::string rules;
    for (const auto& r : c.rules) rules += (rules.empty() ? "" : ",") + r;
    out += fmt::format("{} \"{}\" role={} profile={} rules={}", c.id, c.title, c.role, c.profile, rules);
    for (const Need& n : c.needs)
      out += std::string(n.negated ? " needs=no:" : " needs=") +
             (n.kind == Need::Kind::Tool ? "tool" : n.kind == Need::Kind::Hook ? "hook:" + n.name : n.name);
    for (const auto& [k, v] : c.handshake) out += fmt::format(" handshake:{}={}", k, v);
    for (const auto& [k, v] : c.config) out += fmt::format(" config:{}={}", k, v);
    out += "\n";
    // Further probes, one line each: `  plugin NAME[ first][ workspace] handshake:k=v config:k=v`.
    for (const ExtraPlugin& x : c.plugins) {
      out += fmt::format("  plugin {}{}{}", x.name, x.first ? " first" : "", x.workspace ? " workspace" : "");
      for (const auto& [k, v] : x.handshake) out += fmt::format(" handshake:{}={}", k, v);
      for (const auto& [k, v] : x.config) out += fmt::format(" config:{}={}", k, v);
      out += "\n";
    }
    dumpSteps(out, c.steps, 2);
  }
  return out;
}

}  // namespace conform::dsl
