// harness/rules/producer_monitor — PROD-*: producer requests and the engine's answers (§14, §19).
//
//   PROD-01 producer requests succeed only on a producer-enabled connection (-32040 otherwise)
//   PROD-14/15 a send succeeds only on a producer_id this connection registered and has not
//              unregistered (ids never cross connections, PROD-07)
//   PROD-18 an identical retry (session, key, mode, description, body) returns the original message_id
//   PROD-19 reusing a key with another mode/description/body is rejected
//   PROD-42 rejections use the codes of §19 (-32040…-32049, -32602) [chosen]
// Only what one connection proves: keys accepted on earlier connections are unknown here.
// Tables are bounded (kMaxKeys, kMaxProducers); past them the affected checks stop.
#include <fmt/format.h>

#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

namespace m = protocol::method;
constexpr std::size_t kMaxKeys = 65'536;
constexpr std::size_t kMaxProducers = 65'536;
constexpr std::size_t kMaxInflight = 1'024;

struct Inflight {
  std::string method, session, producer, key, body_sig;
};

class ProducerMonitor : public Monitor {
 public:
  std::string_view name() const override { return "PROD"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    if (!o.decoded) return;
    if (o.fromPlugin() && o.msg.isRequest() && isProducer(o.msg.method)) remember(o);
    if (o.fromEngine() && o.match == Match::Matched && isProducer(o.answeredMethod())) answer(o, s, out);
  }

 private:
  std::unordered_map<wire::RpcId, Inflight, wire::RpcIdHash> inflight_;
  std::unordered_map<std::string, bool> producers_;  // producer_id → still registered
  bool producers_full_ = false;
  // (session \x1f key) → (signature of mode/description/body, message_id)
  std::unordered_map<std::string, std::pair<std::string, std::string>> keys_;

  static bool isProducer(std::string_view method) {
    return method == m::kProducerRegister || method == m::kProducerSend || method == m::kProducerUnregister ||
           method == m::kProducerDiscard;
  }

  void remember(const Observation& o) {
    if (inflight_.size() >= kMaxInflight) return;
    const json::Value* p = o.msg.params;
    Inflight f;
    f.method = std::string(o.msg.method);
    f.session = std::string(str(member(p, "session_id")));
    f.producer = std::string(str(member(p, "producer_id")));
    f.key = std::string(str(member(p, "idempotency_key")));
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
    std::vector<Evidence> ev{{o.request->line, f.method}, o.evidence()};
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
    if (!hs.producerEnabled() || !success) return;
    const json::Value* r = o.msg.result;
    if (f.method == m::kProducerRegister) {
      std::string id(str(member(r, "producer_id")));
      if (id.empty()) return;
      if (producers_.size() >= kMaxProducers) producers_full_ = true;
      else producers_[id] = true;
    } else if (f.method == m::kProducerUnregister) {
      auto p = producers_.find(f.producer);
      if (p != producers_.end()) p->second = false;
    } else if (f.method == m::kProducerSend) {
      auto p = producers_.find(f.producer);
      if (p == producers_.end() && !producers_full_)
        out.report("PROD-14", reports::kBindsEngine, "a send on a producer_id this connection never registered succeeded",
                   "error -32043", "success", ev);
      else if (p != producers_.end() && !p->second)
        out.report("PROD-15", reports::kBindsEngine, "a send on an unregistered producer succeeded",
                   "error -32043", "success", ev);
      std::string mid(str(member(r, "message_id")));
      std::string k = f.session + '\x1f' + f.key;
      auto kit = keys_.find(k);
      if (kit == keys_.end()) {
        if (keys_.size() < kMaxKeys) keys_.emplace(std::move(k), std::make_pair(f.body_sig, mid));
      } else if (kit->second.first != f.body_sig) {
        out.report("PROD-19", reports::kBindsEngine, "an idempotency key was reused with another mode/description/body and accepted",
                   "error -32045", "success", ev);
      } else if (kit->second.second != mid) {
        out.report("PROD-18", reports::kBindsEngine, "an identical retry got a different message_id",
                   fmt::format("message_id \"{}\"", kit->second.second), fmt::format("message_id \"{}\"", mid), ev);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Monitor> makeProducerMonitor() { return std::make_unique<ProducerMonitor>(); }

}  // namespace conform::rules
