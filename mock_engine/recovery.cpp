// mock_engine/recovery — plugin/recovery/* and the recovery status (PROTOCOL §15, RECOV-*), part of
// ProducerService (producer.h).
//
// plugin/recovery/start itself is written by the engine's handshake (engine.cpp step 9: the first
// frame after accepting the initialize result, on the ordinary writer, never queued, never a
// pending request, no deadline — RECOV-02/03/04/07). This file tracks what follows: the status
// bound to (owner, epoch), completion, and the coalescing state watch.
#include "core/json/json.h"
#include "core/protocol/recovery.h"
#include "mock_engine/producer.h"

namespace conform::engine {

using namespace prodcode;

const char* toString(RecoveryState s) {
  switch (s) {
    case RecoveryState::Starting: return "starting";
    case RecoveryState::Ready: return "ready";
    case RecoveryState::Failed: return "failed";
    case RecoveryState::Disabled: return "disabled";
  }
  return "disabled";
}

void ProducerService::setRecovery(const std::string& plugin, RecoveryState st, std::string reason) {
  RecoveryStatus& rs = recovery_[plugin];
  rs.plugin = plugin;
  // A new epoch that ends up disabled is a change too (the earlier status was about no epoch).
  bool changed = rs.state != st || rs.reason != reason;
  rs.state = st;
  rs.reason = std::move(reason);
  if (!changed) return;
  // RECOV-11/19: failed and disabled need a diagnostic (to the sessions holding this plugin's
  // waiting or claimed messages) and a user-visible notice. Unrecovered work stays unknown
  // (RECOV-13): nothing here completes or drops a message.
  if (st == RecoveryState::Failed || st == RecoveryState::Disabled) {
    const char* kind = st == RecoveryState::Failed ? "recovery_failed" : "recovery_disabled";
    std::string text = std::string("plugin `") + plugin + "` recovery " + toString(st) +
                       (rs.reason.empty() ? "" : ": " + rs.reason);
    std::set<std::string> sessions;
    for (auto& [id, m] : messages_)
      if (m.owner == plugin && (m.state == MessageState::Waiting || m.state == MessageState::Claimed))
        sessions.insert(m.session);
    for (auto& s : sessions) engine_.recordPluginDiagnostic(s, plugin, kind, text);
    notices_.push_back(text);
  }
}

void ProducerService::onConnection(ConnId conn, const std::string& plugin, bool up) {
  std::weak_ptr<bool> alive = alive_;
  if (up) {
    auto st = engine_.status(plugin);
    if (st && st->producer_enabled) {
      // RECOV-02/09: the engine just wrote plugin/recovery/start for this epoch.
      RecoveryStatus& rs = recovery_[plugin];
      rs.epoch = conn;
      rs.outcome.reset();
      rs.start_written = true;
      setRecovery(plugin, RecoveryState::Starting, "");
    } else if (recovery_.count(plugin)) {
      recovery_[plugin].epoch = conn;
      recovery_[plugin].start_written = false;
      setRecovery(plugin, RecoveryState::Disabled,
                  "producer messaging was not negotiated on this connection");
    }
  } else {
    // PROD-07: only this epoch's registrations are revoked.
    for (auto& [id, r] : regs_)
      if (r.epoch == conn) r.closed = true;
    tasks_.erase(conn);
    auto it = recovery_.find(plugin);
    // RECOV-19 [chosen]: a disconnect while starting or ready moves the status to failed.
    if (it != recovery_.end() && it->second.epoch == conn &&
        (it->second.state == RecoveryState::Starting || it->second.state == RecoveryState::Ready))
      setRecovery(plugin, RecoveryState::Failed, "disconnected");
  }
  wake();
}

// RECOV-14: changes only mark the watch; one reconcile runs at the next tick, however many
// changes arrived meanwhile.
void ProducerService::wake() {
  if (wake_posted_) return;
  wake_posted_ = true;
  std::weak_ptr<bool> alive = alive_;
  engine_.post([this, alive] {
    auto a = alive.lock();
    if (!a || !*a) return;
    wake_posted_ = false;
    reconcile();
  });
}

void ProducerService::reconcile() {
  ++reconciles_;
  // Re-read every recovery state against the engine; revoke registrations whose owner/epoch is
  // no longer current (a registration can only be used from its own epoch anyway, PROD-40).
  for (auto& [id, r] : regs_)
    if (!r.closed && engine_.connection(r.owner) != r.epoch) r.closed = true;
  for (auto& [name, rs] : recovery_) {
    if (engine_.connection(name) != rs.epoch && rs.state == RecoveryState::Starting)
      setRecovery(name, RecoveryState::Failed, "disconnected");
  }
}

// §15.2 (RECOV-05/10/17/18).
void ProducerService::onComplete(ConnId conn, const std::string& owner, const json::Value& params,
                                 Reply reply) {
  auto p = json::decode<protocol::RecoveryCompleteParams>(params, "params");
  if (!p) return reply(unexpected(Engine::RpcError{kInvalidParams, "invalid params: " + p.error()}));
  if (auto g = gate(conn, owner)) return reply(unexpected(*g));
  auto it = recovery_.find(owner);
  if (it == recovery_.end() || it->second.epoch != conn || !it->second.start_written)
    return reply(unexpected(Engine::RpcError{
        kRecoveryConflict, "plugin/recovery/start was not written on this connection"}));
  RecoveryStatus& rs = it->second;
  if (rs.outcome) {
    if (*rs.outcome == p->outcome && engine_.fault() != EngineFault::RecoveryRepeatRejected)
      return reply(json::Document(rapidjson::kObjectType));
    return reply(unexpected(Engine::RpcError{
        kRecoveryConflict, std::string("recovery already completed with status `") +
                               std::string(protocol::toString(rs.outcome->status)) + "`"}));
  }
  rs.outcome = p->outcome;
  if (p->outcome.status == protocol::OutcomeStatus::Ready)
    setRecovery(owner, RecoveryState::Ready, "");
  else
    setRecovery(owner, RecoveryState::Failed, p->outcome.message.value_or(""));
  wake();
  json::Document d(rapidjson::kObjectType);
  reply(std::move(d));
}

std::vector<RecoveryStatus> ProducerService::recoveryStatuses() const {
  std::vector<RecoveryStatus> out;
  for (auto& [n, rs] : recovery_) out.push_back(rs);
  return out;
}

std::optional<RecoveryStatus> ProducerService::recovery(const std::string& plugin) const {
  auto it = recovery_.find(plugin);
  if (it == recovery_.end()) return std::nullopt;
  return it->second;
}

}  // namespace conform::engine
