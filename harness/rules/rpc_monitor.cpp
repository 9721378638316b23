// harness/rules/rpc_monitor — RPC-*: envelopes (RPC-01/03/04/05 via core/wire/rpc.h), params as
// objects (RPC-11), strict params/result shapes (RPC-12 and the method's own rule, via
// Profile::validate), engine id discipline (RPC-06 unique integers, RPC-07 sequence), answers
// echoing ids with the same JSON type exactly once (RPC-08 plugin, RPC-17 engine), and
// unknown-method handling (RPC-13 engine → -32601, RPC-15 SDK → -32601).
//
// RPC-16: a SUCCESS response with id null answers no request (requests carry integer or string
// ids; a null id is only for errors about undecodable frames), so it can only be a response to a
// notification. It is reported as RPC-16, or RECOV-01 for the plugin's first such answer after
// plugin/recovery/start (that rule names the "no response" of recovery/start).
// RPC-08 [advisory] at the end of the trace: a plugin/ping the plugin never answered although the
// ping deadline (PING-03, 2,000 ms by default) had passed before the engine shut down, closed stdin
// or the trace ended — pings are answered inline (PING-04), so this is not an in-flight handler
// abandoned at shutdown (SHUT-09). Advisory: the trace cannot show that no answer would ever come.
//
// Not judged: other unanswered requests at the end of a trace (shutdown, timeouts and kills
// legitimately abandon them, SHUT-09/TOOL-16), RPC-10 ordering (any order is allowed), responses to unknown ids
// when the trace does not start at the handshake (a slice cannot know earlier requests).
#include <map>

#include <fmt/format.h>

#include "core/protocol/limits.h"
#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

// Engine request ids seen, as merged integer intervals: a conforming counter (RPC-07) keeps this at
// one interval whatever the trace length. Capped; past the cap RPC-06 is no longer judged.
class IdIntervals {
 public:
  static constexpr std::size_t kMaxIntervals = 65'536;
  // false when `v` was already present.
  bool insert(std::int64_t v) {
    auto it = m_.upper_bound(v);  // first interval starting after v
    if (it != m_.begin()) {
      auto prev = std::prev(it);
      if (v <= prev->second) return false;
      if (prev->second != INT64_MAX && v == prev->second + 1) {
        prev->second = v;
        if (it != m_.end() && it->first == v + 1) {
          prev->second = it->second;
          m_.erase(it);
        }
        return true;
      }
    }
    if (it != m_.end() && v != INT64_MAX && it->first == v + 1) {
      std::int64_t hi = it->second;
      m_.erase(it);
      m_.emplace(v, hi);
      return true;
    }
    if (m_.size() >= kMaxIntervals) {
      full_ = true;
      return true;
    }
    m_.emplace(v, v);
    return true;
  }
  bool full() const { return full_; }

 private:
  std::map<std::int64_t, std::int64_t> m_;
  bool full_ = false;
};

// TOOL-03 (M) states a named output's 1–8 distinct stream names; the profile files every output
// declaration problem under TOOL-04 (C: the member spelling and stream-name characters). A count or
// a duplicate is reported under the normative rule.
bool streamCountOrDuplicate(const json::Value& init_result) {
  const json::Value* tools = member(&init_result, "tools");
  if (!tools || !tools->IsArray()) return false;
  for (const json::Value& t : tools->GetArray()) {
    const json::Value* streams = member(member(&t, "output"), "streams");
    if (str(member(member(&t, "output"), "kind")) != "named" || !streams || !streams->IsArray()) continue;
    if (streams->Size() < protocol::limits::kNamedStreamsMin || streams->Size() > protocol::limits::kNamedStreamsMax)
      return true;
    for (rapidjson::SizeType i = 0; i < streams->Size(); ++i)
      for (rapidjson::SizeType j = 0; j < i; ++j)
        if ((*streams)[i] == (*streams)[j]) return true;
  }
  return false;
}

std::string resultRule(const RequestInfo& req, const json::Value& result, const std::string& rule) {
  if (rule.empty()) return "RPC-12";
  if (rule == "TOOL-04" && req.method && req.method->name == protocol::method::kInitialize &&
      streamCountOrDuplicate(result))
    return "TOOL-03";
  return rule;
}

std::uint8_t sender(const Observation& o) {
  return o.fromPlugin() ? reports::kBindsPlugin : reports::kBindsEngine;
}

class RpcMonitor : public Monitor {
 public:
  std::string_view name() const override { return "RPC"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    if (o.t()) last_t_ = o.t();
    observeEnd(o);
    if (!o.is_frame) return;
    if (o.envelope_error) {
      const wire::EnvelopeError& e = *o.envelope_error;
      if (e.kind == wire::EnvelopeErrorKind::NotObject) return;  // FRAME-11, frame_monitor
      out.report(e.rule, sender(o), "malformed JSON-RPC envelope (fatal to the receiver)",
                 "a closed JSON-RPC 2.0 envelope (PROTOCOL §3.1)", e.message, {o.evidence()});
      return;
    }
    if (!o.decoded) return;
    const wire::Message& m = o.msg;
    const protocol::Profile& prof = s.effectiveProfile();
    if (m.isNotification()) {
      if (o.fromEngine() && m.method == protocol::method::kRecoveryStart) recovery_start_seen_ = true;
      LastNotification& ln = last_notification_[o.fromEngine() ? 0 : 1];
      ln.method.assign(m.method.data(), m.method.size());
      ln.line = o.line();
    }
    if (m.isRequest() && o.fromEngine() && m.method == protocol::method::kPing && pings_.size() < kMaxPings)
      pings_.push_back({m.id, o.line(), o.t()});
    if (o.match == Match::Matched && o.fromPlugin() && o.answeredMethod() == protocol::method::kPing) answeredPing(m.id);
    if (m.isRequest() || m.isNotification()) {
      if (!m.params || !m.params->IsObject()) {
        out.report("RPC-11", sender(o), fmt::format("`{}` was sent without an object `params`", m.method),
                   "params is an object ({} when empty)",
                   m.params ? json::typeName(*m.params) : "params absent", {o.evidence()});
      } else if (o.method && o.method->direction == direction(o)) {
        if (auto v = prof.validate(*o.method, protocol::Part::Params, *m.params, hints(o)))
          out.report(v->rule_id.empty() ? "RPC-12" : v->rule_id, sender(o),
                     fmt::format("`{}` params do not match their shape", m.method),
                     fmt::format("{} (strict decoding, PROTOCOL §3.3)", o.method->params_type), v->str(),
                     {o.evidence()});
      }
      if (m.isRequest() && o.fromEngine()) engineId(o, s, out);
      return;
    }
    // Responses.
    bool plugin_answers = o.fromPlugin();
    const char* rule = plugin_answers ? "RPC-08" : "RPC-17";
    std::uint8_t who = plugin_answers ? reports::kBindsPlugin : reports::kBindsEngine;
    switch (o.match) {
      case Match::WrongIdType:
        out.report(rule, who, "the response id has another JSON type than the request id",
                   fmt::format("id {} (as sent at line {})", o.request->id.render(), o.request->line),
                   fmt::format("id {}", m.id.render()), {{o.request->line, "request"}, o.evidence()});
        return;
      case Match::AlreadyAnswered:
        out.report(rule, who, "a request was answered twice", "exactly one response per request",
                   fmt::format("a second response with id {}", m.id.render()), {o.evidence()});
        return;
      case Match::Unknown:
        if (m.id.isNull() && m.kind == wire::MessageKind::Success) {
          notificationAnswer(o, out);
          return;
        }
        // Only when the trace holds the whole connection and tracking never gave up.
        if (!s.handshake().request_line || s.untracked(plugin_answers ? Dir::EngineToPlugin : Dir::PluginToEngine))
          return;
        out.report(rule, who, "a response answers no outstanding request",
                   "responses only to requests, echoing their id",
                   fmt::format("response with id {} that matches no request", m.id.render()), {o.evidence()});
        return;
      case Match::Matched:
        break;
      default:
        return;
    }
    const RequestInfo& req = *o.request;
    if (!req.method || req.method->direction == direction(o)) {  // a request travels opposite
      // RPC-13 (engine) / RPC-15 (SDK): unknown requests get -32601.
      bool ok = m.kind == wire::MessageKind::Error && m.error.code == wire::kMethodNotFound;
      if (!ok)
        out.report(plugin_answers ? "RPC-15" : "RPC-13", plugin_answers ? reports::kBindsSdk : reports::kBindsEngine,
                   fmt::format("unknown method `{}` was not answered with -32601", req.method_name()),
                   "error response with code -32601",
                   m.kind == wire::MessageKind::Error ? fmt::format("error code {}", m.error.code)
                                                      : std::string("a success response"),
                   {{req.line, "request"}, o.evidence()});
      return;
    }
    if (m.kind == wire::MessageKind::Success && m.result) {
      if (auto v = prof.validate(*req.method, protocol::Part::Result, *m.result, hints(o)))
        out.report(resultRule(req, *m.result, v->rule_id), who,
                   fmt::format("the `{}` result does not match its shape", req.method->name),
                   fmt::format("{} (strict decoding, PROTOCOL §3.3)", req.method->result_type), v->str(),
                   {{req.line, "request"}, o.evidence()});
    }
  }

  // A frame from the trace reader comes with the list of its repeated member names: when it is
  // empty, validation need not look for repeats itself.
  static protocol::Profile::ValidateHints hints(const Observation& o) {
    protocol::Profile::ValidateHints h;
    h.no_duplicate_names = o.ev->duplicates && o.ev->duplicates->empty();
    return h;
  }

  void observeEnd(const Observation& o) {
    // The end of the plugin's chance to answer: shutdown notification or stdin EOF.
    if (end_t_) return;
    if ((o.decoded && o.fromEngine() && o.msg.isNotification() && o.msg.method == protocol::method::kShutdown) ||
        (o.ev->kind == trace::Kind::Eof && o.fromEngine()))
      end_t_ = o.t() ? o.t() : 1;
  }

  void finish(const ConnectionState& s, FindingSink& out) override {
    if (s.untracked(Dir::EngineToPlugin)) return;
    const std::int64_t end = end_t_ ? end_t_ : last_t_;
    for (const PendingPing& p : pings_) {
      if (end - p.t_us < kPingDeadlineUs + kToleranceUs) continue;
      out.report("RPC-08", reports::kBindsPlugin, "a plugin/ping was never answered",
                 fmt::format("a response within the ping deadline ({} ms by default, PING-03)",
                             protocol::limits::kInterceptionTimeoutMsDefault),
                 fmt::format("no response to id {} in the {} ms before the connection ended", p.id.render(),
                             (end - p.t_us) / 1000),
                 {{p.line, "plugin/ping"}}, /*advisory=*/true);
    }
  }

 private:
  // PING-03: the ping deadline is interception_timeout_ms (2,000 ms by default); RULES.md ±250 ms.
  static constexpr std::int64_t kPingDeadlineUs =
      static_cast<std::int64_t>(protocol::limits::kInterceptionTimeoutMsDefault) * 1000;
  static constexpr std::int64_t kToleranceUs = 250'000;
  // Outstanding pings (a conforming plugin answers each inline, so this stays near empty; capped).
  static constexpr std::size_t kMaxPings = 1'024;
  struct PendingPing {
    wire::RpcId id;
    std::uint64_t line = 0;
    std::int64_t t_us = 0;
  };
  std::vector<PendingPing> pings_;
  std::int64_t end_t_ = 0, last_t_ = 0;
  struct LastNotification {
    std::string method;
    std::uint64_t line = 0;
  };
  LastNotification last_notification_[2];  // [0] sent by the engine, [1] by the plugin
  bool recovery_start_seen_ = false, recovery_answer_seen_ = false;

  void answeredPing(const wire::RpcId& id) {
    for (std::size_t i = 0; i < pings_.size(); ++i)
      if (pings_[i].id == id) {
        pings_.erase(pings_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
  }

  // A success response with id null: an answer to a notification (see the file comment).
  void notificationAnswer(const Observation& o, FindingSink& out) {
    const LastNotification& ln = last_notification_[o.fromPlugin() ? 0 : 1];
    const std::uint8_t who = sender(o);
    std::vector<Evidence> ev;
    if (ln.line) ev.push_back({ln.line, "last notification received: " + ln.method});
    ev.push_back(o.evidence());
    // recovery/start is the first frame after the handshake (RECOV-03) and so the first
    // notification a plugin that answers notifications answers: the first null-id answer after it
    // is RECOV-01 even when the engine has written other notifications since.
    const bool recovery = o.fromPlugin() && recovery_start_seen_ && !recovery_answer_seen_;
    if (o.fromPlugin() && recovery_start_seen_) recovery_answer_seen_ = true;
    if (recovery)
      out.report("RECOV-01", who, "plugin/recovery/start was answered with a response",
                 "no response: plugin/recovery/start is a notification", "a response with id null", std::move(ev));
    else
      out.report("RPC-16", who, "a notification received a response",
                 "no response to notifications (a success response with id null answers no request)",
                 ln.line ? fmt::format("a response with id null after `{}`", ln.method)
                         : std::string("a response with id null"),
                 std::move(ev));
  }

  IdIntervals ids_;
  std::optional<std::int64_t> next_expected_;
  bool seq_reported_ = false;

  static protocol::Direction direction(const Observation& o) {
    return o.fromPlugin() ? protocol::Direction::PluginToEngine : protocol::Direction::EngineToPlugin;
  }

  void engineId(const Observation& o, const ConnectionState&, FindingSink& out) {
    const wire::RpcId& id = o.msg.id;
    if (!id.isInteger()) {
      out.report("RPC-06", reports::kBindsEngine, "an engine request id is not an integer",
                 "integer ids, unique within the connection", fmt::format("id {}", id.render()), {o.evidence()});
      return;
    }
    if (!ids_.full() && !ids_.insert(id.integer()))
      out.report("RPC-06", reports::kBindsEngine, "an engine request id was reused",
                 "integer ids, unique within the connection",
                 fmt::format("id {} used again", id.integer()), {o.evidence()});
    // RPC-07 [impl]: initialize = 1, then 2, 3, … from one counter.
    std::int64_t want = next_expected_.value_or(1);
    if (!seq_reported_ && id.integer() != want) {
      seq_reported_ = true;
      out.report("RPC-07", reports::kBindsEngine, "engine request ids do not follow 1, 2, 3, …",
                 fmt::format("id {}", want), fmt::format("id {}", id.integer()), {o.evidence()});
    }
    if (id.integer() != INT64_MAX) next_expected_ = id.integer() + 1;
  }
};

}  // namespace

std::unique_ptr<Monitor> makeRpcMonitor() { return std::make_unique<RpcMonitor>(); }

}  // namespace conform::rules
