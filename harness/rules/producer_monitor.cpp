// harness/rules/producer_monitor — PROD-* (and RECOV-18): producer requests and the engine's
// answers (§14, §19), judged from what ONE connection shows.
//
//   PROD-01 producer requests succeed only on a producer-enabled connection (-32040 otherwise)
//   PROD-05 register returns a fresh producer_id (never one this connection already holds)
//   PROD-14/15 a send succeeds only on a producer_id this connection registered and has not
//              unregistered (ids never cross connections, PROD-07)
//   PROD-16 [chosen] the send's session must be the registration's session (-32043)
//   PROD-18 an identical retry (session, key, mode, description, body) returns the original
//           message_id — and is never rejected as a key conflict (-32045)
//   PROD-19 reusing a key with another mode/description/body is rejected
//   PROD-23 unregistering a live registration of this connection is not "registration invalid"
//   PROD-24 [chosen] a second unregister on the same connection succeeds again; an id this
//           connection never registered is rejected
//   PROD-26 a discard does not unregister: a later send on the live registration is not -32043
//   PROD-27 discard needs no registration, so it is never answered "registration invalid" (-32043)
//   PROD-28 a receipt sent to session S is not discardable through another session
//   PROD-31 discarding an already discarded message of the same owner succeeds again
//   PROD-42 rejections use the codes of §19 (-32040…-32049, -32602) [chosen], and -32043 only for
//           registrations that really are unknown/closed/mismatched
//   RECOV-18 [chosen] the recovery outcome never gates producer operations (no -32048 for them)
// Against the plugin:
//   PROD-06 a send/unregister naming a producer_id no register answer of this connection returned
//           (persisted from an earlier connection, or made up — the wire cannot tell which; either
//           way the send has no live registration, PROD-14)
//   PROD-19 [advisory] a send reusing a key this connection already had accepted with other content
//           (the rule binds the engine, whose answer is -32045, not a broken connection)
//
// Never judged ("should have succeeded" beyond the above): -32041 overload, -32042 stale, -32044
// closing session and -32049 storage failure are legitimate at any time; keys, receipts and
// registrations from earlier connections are unknown here (PROD-18/20/27 across restarts need two
// connections); claims (PROD-29/30) and consumption (PROD-28 "consumed") are engine-internal.
// Tables are bounded (kMaxKeys, kMaxProducers, kMaxMessages, kMaxInflight); past them the affected
// checks stop (silence, never a guess).
#include <fmt/format.h>

#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

namespace m = protocol::method;
constexpr std::size_t kMaxKeys = 65'536;
constexpr std::size_t kMaxProducers = 65'536;
constexpr std::size_t kMaxMessages = 65'536;
// R4 serves at most 32 producer handler tasks per connection (PROD-34); 1,024 outstanding producer
// requests is far beyond a conforming plugin's reach.
constexpr std::size_t kMaxInflight = 1'024;

struct Inflight {
  std::string method, session, producer, key, body_sig, message;
};

struct Registration {
  std::string session;
  bool live = true;
  std::uint64_t line = 0;             // the register request
  std::uint64_t discards_at_register = 0;
};

struct Receipt {
  std::string session;
  bool discarded = false;
  std::uint64_t line = 0;  // the send that returned it (or the discard that succeeded)
};

class ProducerMonitor : public Monitor {
 public:
  std::string_view name() const override { return "PROD"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    if (!o.decoded) return;
    if (o.fromPlugin() && o.msg.isRequest() && isProducer(o.msg.method)) {
      unknownProducer(o, s, out);
      remember(o);
    }
    if (o.fromEngine() && o.match == Match::Matched && isProducer(o.answeredMethod())) answer(o, s, out);
  }

 private:
  std::unordered_map<wire::RpcId, Inflight, wire::RpcIdHash> inflight_;
  std::unordered_map<std::string, Registration> producers_;  // producer_id → registration
  bool producers_full_ = false;
  // (session \x1f key) → (signature of mode/description/body, message_id)
  std::unordered_map<std::string, std::pair<std::string, std::string>> keys_;
  std::unordered_map<std::string, Receipt> messages_;  // message_id → receipt sent on this connection
  std::uint64_t discards_ = 0;                         // successful discards so far (PROD-26)

  static bool isProducer(std::string_view method) {
    return method == m::kProducerRegister || method == m::kProducerSend || method == m::kProducerUnregister ||
           method == m::kProducerDiscard;
  }

  // PROD-06: a producer_id the plugin never got from a register answer on this connection was
  // either persisted from an earlier connection or made up. Exact: the plugin can only know an id
  // after reading the engine's answer, which the trace records before the plugin's next request.
  void unknownProducer(const Observation& o, const ConnectionState& s, FindingSink& out) {
    if (producers_full_ || !s.handshake().producerEnabled() ||
        s.effectiveProfile().id() != protocol::Profile::Id::V006)
      return;
    if (o.msg.method != m::kProducerSend && o.msg.method != m::kProducerUnregister) return;  // discard: PROD-27
    std::string_view id = str(member(o.msg.params, "producer_id"));
    if (id.empty() || producers_.count(std::string(id))) return;
    out.report("PROD-06", reports::kBindsPlugin,
               fmt::format("`{}` names a producer_id this connection never registered", o.msg.method),
               "a producer_id returned by plugin/producer/register on this connection (ids are never reused "
               "after a reconnect; a send needs a live registration, PROD-14)",
               fmt::format("producer_id \"{}\"", id), {o.evidence()});
  }

  void remember(const Observation& o) {
    if (inflight_.size() >= kMaxInflight) {
      // A register we cannot follow could make a later id look unknown: stop the "unknown" checks.
      producers_full_ = true;
      return;
    }
    const json::Value* p = o.msg.params;
    Inflight f;
    f.method = std::string(o.msg.method);
    f.session = std::string(str(member(p, "session_id")));
    f.producer = std::string(str(member(p, "producer_id")));
    f.key = std::string(str(member(p, "idempotency_key")));
    f.message = std::string(str(member(p, "message_id")));
    if (o.msg.method == m::kProducerSend) {
      const json::Value* mode = member(p, "mode");
      const json::Value* desc = member(p, "description");
      const json::Value* body = member(p, "body");
      f.body_sig = (mode ? json::canonical(*mode) : "") + '\x1f' + (desc ? json::canonical(*desc) : "") +
                   '\x1f' + (body ? json::canonical(*body) : "");
    }
    inflight_[o.msg.id] = std::move(f);
  }

  void answer(const Observation& o, const ConnectionState& s, FindingSink& out) {
    auto it = inflight_.find(o.msg.id);
    if (it == inflight_.end()) return;
    Inflight f = std::move(it->second);
    inflight_.erase(it);
    const Handshake& hs = s.handshake();
    bool success = o.msg.kind == wire::MessageKind::Success;
    std::int32_t code = success ? 0 : o.msg.error.code;
    const RequestEvidence ev(o.request->line, f.method, o);
    if (s.effectiveProfile().id() != protocol::Profile::Id::V006) return;  // RPC-13 covers 0.0.4
    if (!success && code != wire::kInvalidParams &&
        (code < wire::kProducerCodeFirst || code > wire::kProducerCodeLast))
      out.report("PROD-42", reports::kBindsEngine, "a producer rejection used a code outside §19",
                 "-32040…-32049 or -32602", fmt::format("error {}", code), ev);
    if (hs.ok && !hs.producerEnabled()) {
      if (success)
        out.report("PROD-01", reports::kBindsEngine, "a producer request succeeded on a connection that is not producer-enabled",
                   "error -32040", "success",
                   ev);
      return;
    }
    if (!hs.producerEnabled()) return;
    // §19: -32048 is the recovery conflict; producer operations are never gated by recovery.
    if (code == wire::kRecoveryConflict)
      out.report("RECOV-18", reports::kBindsEngine, "a producer operation was rejected with the recovery conflict code",
                 "producer operations are served before, during and after recovery",
                 "error -32048", ev);
    if (f.method == m::kProducerRegister) registered(o, f, success, ev, out);
    else if (f.method == m::kProducerUnregister) unregistered(f, success, code, ev, out);
    else if (f.method == m::kProducerSend) sent(o, f, success, code, ev, out);
    else if (f.method == m::kProducerDiscard) discarded(f, success, code, ev, out);
  }

  void registered(const Observation& o, const Inflight& f, bool success, const RequestEvidence& ev,
                  FindingSink& out) {
    if (!success) return;
    std::string id(str(member(o.msg.result, "producer_id")));
    if (id.empty()) return;  // shape: rpc_monitor
    auto p = producers_.find(id);
    if (p != producers_.end()) {
      out.report("PROD-05", reports::kBindsEngine, "register returned a producer_id this connection already holds",
                 "a fresh producer_id per registration",
                 fmt::format("producer_id \"{}\" again (first at line {})", id, p->second.line), ev);
      return;
    }
    if (producers_.size() >= kMaxProducers) {
      producers_full_ = true;
      return;
    }
    producers_.emplace(std::move(id), Registration{f.session, true, o.request->line, discards_});
  }

  void unregistered(const Inflight& f, bool success, std::int32_t code, const RequestEvidence& ev,
                    FindingSink& out) {
    auto p = producers_.find(f.producer);
    if (p == producers_.end()) {
      if (success && !producers_full_)
        out.report("PROD-24", reports::kBindsEngine,
                   "unregister succeeded for a producer_id this connection never registered",
                   "error -32043 (unknown, foreign or other-epoch id)", "success", ev);
      return;
    }
    Registration& r = p->second;
    if (success) {
      r.live = false;
      return;
    }
    if (code != wire::kRegistrationInvalid || f.session != r.session) return;
    if (r.live)
      out.report("PROD-23", reports::kBindsEngine, "unregistering a live registration was rejected as invalid",
                 "{} (valid with zero sends)", "error -32043", ev);
    else
      out.report("PROD-24", reports::kBindsEngine,
                 "unregistering a registration this connection already closed was rejected",
                 "{} again (idempotent on the same connection)", "error -32043", ev);
  }

  void sent(const Observation& o, const Inflight& f, bool success, std::int32_t code,
            const RequestEvidence& ev, FindingSink& out) {
    auto p = producers_.find(f.producer);
    const Registration* reg = p == producers_.end() ? nullptr : &p->second;
    std::string k = f.session + '\x1f' + f.key;
    auto kit = keys_.find(k);
    if (kit != keys_.end() && kit->second.first != f.body_sig)
      out.report("PROD-19", reports::kBindsPlugin,
                 "the plugin reused an idempotency key with another mode/description/body",
                 fmt::format("a new key for a new message (key first accepted as message \"{}\")", kit->second.second),
                 "the same key with different content", ev, /*advisory=*/true);
    if (!success) {
      if (code == wire::kIdempotencyConflict && kit != keys_.end() && kit->second.first == f.body_sig)
        out.report("PROD-18", reports::kBindsEngine, "an identical retry was rejected as a key conflict",
                   fmt::format("success with the original message_id \"{}\"", kit->second.second),
                   "error -32045", ev);
      if (code == wire::kRegistrationInvalid && reg && reg->live && reg->session == f.session) {
        if (discards_ > reg->discards_at_register)
          out.report("PROD-26", reports::kBindsEngine,
                     "a send on a live registration was rejected as invalid after a discard",
                     "discard addresses a receipt and unregisters nothing", "error -32043",
                     {{reg->line, "register"}, ev.first(), ev.second()});
        else
          out.report("PROD-42", reports::kBindsEngine,
                     "a send on a live registration of this connection was rejected as invalid",
                     "-32043 only for unknown, closed, foreign or session-mismatched registrations",
                     "error -32043", {{reg->line, "register"}, ev.first(), ev.second()});
      }
      return;
    }
    if (!reg && !producers_full_)
      out.report("PROD-14", reports::kBindsEngine, "a send on a producer_id this connection never registered succeeded",
                 "error -32043", "success", ev);
    else if (reg && !reg->live)
      out.report("PROD-15", reports::kBindsEngine, "a send on an unregistered producer succeeded",
                 "error -32043", "success", ev);
    else if (reg && reg->session != f.session)
      out.report("PROD-16", reports::kBindsEngine, "a send for another session than the registration's succeeded",
                 fmt::format("error -32043 (registered for session {})", reg->session),
                 fmt::format("success for session {}", f.session), {{reg->line, "register"}, ev.first(), ev.second()});
    std::string mid(str(member(o.msg.result, "message_id")));
    if (kit == keys_.end()) {
      if (keys_.size() < kMaxKeys) keys_.emplace(std::move(k), std::make_pair(f.body_sig, mid));
    } else if (kit->second.first != f.body_sig) {
      out.report("PROD-19", reports::kBindsEngine, "an idempotency key was reused with another mode/description/body and accepted",
                 "error -32045", "success", ev);
    } else if (kit->second.second != mid) {
      out.report("PROD-18", reports::kBindsEngine, "an identical retry got a different message_id",
                 fmt::format("message_id \"{}\"", kit->second.second), fmt::format("message_id \"{}\"", mid), ev);
    }
    if (!mid.empty() && messages_.size() < kMaxMessages)
      messages_.try_emplace(std::move(mid), Receipt{f.session, false, o.line()});
  }

  void discarded(const Inflight& f, bool success, std::int32_t code, const RequestEvidence& ev,
                 FindingSink& out) {
    if (code == wire::kRegistrationInvalid)
      out.report("PROD-27", reports::kBindsEngine, "a discard was rejected as \"registration invalid\"",
                 "discard addresses a receipt and needs no registration (-32046/-32047 for receipts)",
                 "error -32043", ev);
    auto r = messages_.find(f.message);
    if (r == messages_.end()) {
      if (success) ++discards_;
      return;
    }
    Receipt& rc = r->second;
    if (success) {
      ++discards_;
      if (rc.session != f.session)
        out.report("PROD-28", reports::kBindsEngine, "a receipt was discarded through another session",
                   fmt::format("error -32046 (the message was sent to session {})", rc.session),
                   fmt::format("success for session {}", f.session), {{rc.line, "send result"}, ev.first(), ev.second()});
      else if (!rc.discarded) {
        rc.discarded = true;
        rc.line = ev.responseLine();
      }
      return;
    }
    // A discarded message never leaves `discarded` (§14.2), so a repeat cannot be consumed/claimed.
    if (rc.discarded && rc.session == f.session &&
        (code == wire::kMessageNotDiscardable || code == wire::kMessageClaimed))
      out.report("PROD-31", reports::kBindsEngine, "discarding an already discarded message was rejected",
                 "{} again (discard is idempotent for the owner)", fmt::format("error {}", code),
                 {{rc.line, "first discard"}, ev.first(), ev.second()});
  }
};

}  // namespace

std::unique_ptr<Monitor> makeProducerMonitor() { return std::make_unique<ProducerMonitor>(); }

}  // namespace conform::rules
