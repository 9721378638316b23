// mock_engine/producer — plugin/producer/* (PROTOCOL §14). Recovery (§15) is in recovery.cpp.
// See producer.h for the model, the durability path and the journal record types.
#include "mock_engine/producer.h"

#include "core/json/json.h"
#include "core/protocol/limits.h"
#include "core/protocol/producer.h"

namespace conform::engine {

using protocol::DeliveryMode;
using namespace prodcode;

const char* toString(MessageState s) {
  switch (s) {
    case MessageState::Waiting: return "waiting";
    case MessageState::Claimed: return "claimed";
    case MessageState::Consumed: return "consumed";
    case MessageState::Discarded: return "discarded";
  }
  return "waiting";
}

namespace {

Unexpected<Engine::RpcError> err(int code, std::string msg) {
  return unexpected(Engine::RpcError{code, std::move(msg)});
}

json::Document doc(const std::string& text) {
  auto p = json::parse(text);
  return p ? std::move(p->doc) : json::Document();
}

std::string dedupKey(const std::string& s, const std::string& o, const std::string& k) {
  return s + '\x1f' + o + '\x1f' + k;
}

template <class T>
Expected<T, std::string> decodeParams(const json::Value& v) {
  return json::decode<T>(v, "params");
}

}  // namespace

ProducerService::ProducerService(Engine& engine, std::optional<Journal> journal)
    : engine_(engine), journal_(std::move(journal)) {
  for (auto& p : engine_.config().plugins) {
    if (!p.producer_messaging) continue;
    // RECOV-15: configured producer plugins have a status before (and without) any connection.
    RecoveryStatus rs;
    rs.plugin = p.name;
    rs.state = RecoveryState::Disabled;
    rs.reason = p.enabled ? "not connected" : "plugin is disabled in the configuration";
    recovery_[p.name] = rs;
  }
  replay();
  if (journal_) {
    // Durability (issue 5): every session event — runtime records, hook audit records
    // (message_injected, user_input_transformed), plugin_diagnostic records (hook and recovery
    // diagnostics) — is journaled and fsynced before it is delivered, like every acceptance.
    engine_.setAppendSink([this](const Session& s, const EventRecord& r) {
      std::string rec = R"({"t":"event","session":)" + quoteJson(s.id) + R"(,"seq":)" +
                        std::to_string(r.seq) + R"(,"ts":)" + quoteJson(r.timestamp) + R"(,"src":)" +
                        quoteJson(r.source_plugin) + R"(,"ev":)" + *r.payload + "}";
      return static_cast<bool>(persist({std::move(rec)}));
    });
  }
  engine_.setConnectionWatch(
      [this](ConnId c, const std::string& plugin, bool up) { onConnection(c, plugin, up); });
  // DELTA-0.0.4 §3.6: producer and recovery methods do not exist in 0.0.4 (they stay -32601).
  if (engine_.config().protocol_version == "0.0.4") return;
  for (const char* m : {"plugin/producer/register", "plugin/producer/send", "plugin/producer/unregister",
                        "plugin/producer/discard", "plugin/recovery/complete"}) {
    std::string method = m;
    std::weak_ptr<bool> alive = alive_;
    engine_.setAsyncRequestHandler(
        method, [this, method, alive](ConnId c, const std::string& plugin, const json::Value& params,
                                      Engine::Responder reply) {
          // The service may be gone before the engine (driver teardown): then no handler (PROD-39).
          if (auto a = alive.lock(); !a || !*a)
            return reply(err(kUnavailable, "producer handler is not installed"));
          handle(method, c, plugin, params, std::move(reply));
        });
  }
}

ProducerService::~ProducerService() {
  *alive_ = false;
  engine_.setConnectionWatch(nullptr);
  if (journal_) engine_.setAppendSink(nullptr);
}

const JournalOpenReport* ProducerService::journalReport() const {
  return journal_ ? &journal_->report() : nullptr;
}

std::string ProducerService::createSession(bool persisted) {
  std::string id = engine_.createSession(persisted);
  // A failed journal write leaves the session volatile; producer sends to it still journal
  // their acceptance, which restores the session on replay.
  (void)persist({R"({"t":"session","id":)" + quoteJson(id) + "}"});
  return id;
}

void ProducerService::replay() {
  if (!journal_) return;
  // Sessions this replay created: only their events are restored. A session still in memory (an
  // in-process engine.restart) already holds its log.
  std::set<std::string> fresh;
  auto restore = [&](const std::string& id) {
    if (engine_.restoreSession(id)) fresh.insert(id);
  };
  for (auto& rec : journal_->replayed()) {
    auto p = json::parse(rec);
    if (!p || !p->doc.IsObject()) continue;  // CRC-checked, so only a format change lands here
    const json::Value& r = p->doc;
    std::string t(json::stringMember(r, "t").value_or(""));
    auto s = [&](const char* k) { return std::string(json::stringMember(r, k).value_or("")); };
    if (t == "session") {
      restore(s("id"));
    } else if (t == "event") {
      std::string sid = s("session");
      if (!engine_.session(sid)) restore(sid);
      const json::Value* seq = json::member(r, "seq");
      const json::Value* ev = json::member(r, "ev");
      if (!fresh.count(sid) || !seq || !seq->IsUint64() || !ev) continue;
      (void)engine_.restoreEvent(sid, seq->GetUint64(), s("ts"), s("src"),
                                 std::make_shared<const std::string>(json::compact(*ev)));
    } else if (t == "accept") {
      ProducerMessage m;
      m.id = s("id");
      m.session = s("session");
      m.owner = s("owner");
      m.key = s("key");
      m.description = s("description");
      m.body = s("body");
      m.mode = protocol::parseDeliveryMode(s("mode")).value_or(DeliveryMode::Steer);
      m.order = next_order_++;
      m.durable = true;
      restore(m.session);
      by_key_[dedupKey(m.session, m.owner, m.key)] = m.id;
      messages_[m.id] = std::move(m);
    } else if (t == "state") {
      auto it = messages_.find(s("id"));
      if (it == messages_.end()) continue;
      std::string st = s("state");
      if (st == "consumed") it->second.state = MessageState::Consumed;
      if (st == "discarded") it->second.state = MessageState::Discarded;
    }
  }
  journal_->dropReplayed();
}

Expected<Ok, std::string> ProducerService::persist(std::vector<std::string> records) {
  if (!journal_) return Ok{};
  return journal_->append(records);
}

Engine::Responder ProducerService::task(ConnId conn, Reply r) {
  tasks_[conn]++;
  std::weak_ptr<bool> alive = alive_;
  return [this, alive, conn, r = std::move(r)](Expected<json::Document, Engine::RpcError> res) {
    if (auto a = alive.lock(); a && *a) {
      auto it = tasks_.find(conn);
      if (it != tasks_.end() && it->second > 0 && --it->second == 0) tasks_.erase(it);
    }
    r(std::move(res));
  };
}

std::size_t ProducerService::tasks(ConnId conn) const {
  auto it = tasks_.find(conn);
  return it == tasks_.end() ? 0 : it->second;
}

std::optional<Engine::RpcError> ProducerService::gate(ConnId conn, const std::string& owner) {
  auto st = engine_.status(owner);
  // PROD-01/39: both opt-ins and the installed handler (the engine offers the capability only
  // with the handler and the config opt-in; producer_enabled is the conjunction).
  if (!st || !engine_.config().producer_handler || !st->producer_enabled || engine_.connection(owner) != conn) {
    if (st && engine_.connection(owner) != conn)
      return Engine::RpcError{kStale, "connection is no longer current for plugin `" + owner + "`"};
    return Engine::RpcError{kUnavailable, "producer messaging is not enabled on this connection (it needs the plugin capability, plugins." + owner + ".producer_messaging = true and the runtime handler)"};
  }
  // PROD-34: at most 32 handler tasks per connection, beyond that an explicit error.
  if (tasks(conn) >= protocol::limits::kProducerHandlerTasks)
    return Engine::RpcError{kOverloaded, "producer handler overloaded: " +
                                             std::to_string(protocol::limits::kProducerHandlerTasks) +
                                             " requests already in progress on this connection"};
  return std::nullopt;
}

void ProducerService::handle(const std::string& method, ConnId conn, const std::string& plugin,
                             const json::Value& params, Engine::Responder reply) {
  if (method == "plugin/producer/register") return onRegister(conn, plugin, params, std::move(reply));
  if (method == "plugin/producer/send") return onSend(conn, plugin, params, std::move(reply));
  if (method == "plugin/producer/unregister") return onUnregister(conn, plugin, params, std::move(reply));
  if (method == "plugin/producer/discard") return onDiscard(conn, plugin, params, std::move(reply));
  if (method == "plugin/recovery/complete") return onComplete(conn, plugin, params, std::move(reply));
  reply(err(-32601, "plugin method `" + method + "` is not supported by this engine"));
}

// §14.3 (PROD-05/08): served at once, whatever the recovery state (no waiting for readiness).
void ProducerService::onRegister(ConnId conn, const std::string& owner, const json::Value& params,
                                 Reply reply) {
  auto p = decodeParams<protocol::ProducerRegisterParams>(params);
  if (!p) return reply(err(kInvalidParams, "invalid params: " + p.error()));
  if (auto g = gate(conn, owner)) return reply(unexpected(*g));
  if (!engine_.session(p->session_id))
    return reply(err(kSession, "unknown session `" + p->session_id + "`"));
  Registration r;
  r.producer_id = engine_.newUuid();  // PROD-05: fresh, runtime-only
  r.owner = owner;                    // PROD-03: the configured name, never a param
  r.session = p->session_id;
  r.epoch = conn;                     // PROD-07: bound to (owner, epoch)
  std::string id = r.producer_id;
  regs_[id] = std::move(r);
  reply(doc(R"({"producer_id":)" + quoteJson(id) + "}"));  // PROD-37: the bare result object
}

// §14.4: the processing order is the spec's, check by check.
void ProducerService::onSend(ConnId conn, const std::string& owner, const json::Value& params,
                             Reply reply) {
  auto p = decodeParams<protocol::ProducerSendParams>(params);  // PROD-09..13
  if (!p) return reply(err(kInvalidParams, "invalid params: " + p.error()));
  if (auto g = gate(conn, owner)) return reply(unexpected(*g));
  Reply r = task(conn, std::move(reply));
  auto rit = regs_.find(p->producer_id);
  // PROD-14/15/16: live registration of this owner and epoch on the same session.
  if (rit == regs_.end() || rit->second.owner != owner || rit->second.epoch != conn ||
      rit->second.closed)
    return r(err(kRegistration, "producer_id `" + p->producer_id +
                                    "` is not a live registration of this connection"));
  if (rit->second.session != p->session_id)
    return r(err(kRegistration, "session_id does not match the registration's session"));
  if (!engine_.session(p->session_id))
    return r(err(kSession, "unknown session `" + p->session_id + "`"));
  // PROD-18/19/20: (session, owner, key), never epoch or producer id.
  std::string k = engine_.fault() == EngineFault::DedupByProducerId
                      ? dedupKey(p->session_id, p->producer_id, p->idempotency_key)
                      : dedupKey(p->session_id, owner, p->idempotency_key);
  if (auto it = by_key_.find(k); it != by_key_.end()) {
    ProducerMessage& m = messages_[it->second];
    if ((m.mode != p->mode || m.description != p->description || m.body != p->body) &&
        engine_.fault() != EngineFault::AcceptChangedRetry)
      return r(err(kIdempotency, "idempotency_key `" + p->idempotency_key +
                                     "` was already used with a different description, body or mode"));
    if (m.durable) return r(doc(R"({"message_id":)" + quoteJson(m.id) + "}"));
    // The original acceptance is still on its way to disk: answer both when it lands.
    for (auto& pa : pending_)
      if (pa.message_id == m.id) pa.waiters.push_back(std::move(r));
    return;
  }
  ProducerMessage m;
  m.id = engine_.newUuid();  // PROD-44: UUID, stable across restarts (it is journaled)
  m.session = p->session_id;
  m.owner = owner;
  m.key = p->idempotency_key;
  m.description = p->description;
  m.body = p->body;
  m.mode = p->mode;
  m.order = next_order_++;
  std::string rec = R"({"t":"accept","id":)" + quoteJson(m.id) + R"(,"session":)" +
                    quoteJson(m.session) + R"(,"owner":)" + quoteJson(owner) + R"(,"key":)" +
                    quoteJson(m.key) + R"(,"mode":")" + std::string(protocol::toString(m.mode)) +
                    R"(","description":)" + quoteJson(m.description) + R"(,"body":)" +
                    quoteJson(m.body) + "}";
  by_key_[k] = m.id;
  PendingAccept pa{m.id, std::move(rec), {}};
  pa.waiters.push_back(std::move(r));
  messages_[m.id] = std::move(m);
  pending_.push_back(std::move(pa));
  if (!hold_) commitDurable();
}

void ProducerService::holdDurability(bool hold) {
  hold_ = hold;
  if (!hold_) commitDurable();
}

// One group commit: every pending acceptance in one append + fsync, then the ACKs (PROD-17).
void ProducerService::commitDurable() {
  if (pending_.empty()) return;
  std::deque<PendingAccept> batch;
  batch.swap(pending_);
  std::vector<std::string> recs;
  for (auto& pa : batch) recs.push_back(pa.record);
  auto ok = persist(std::move(recs));
  for (auto& pa : batch) {
    auto it = messages_.find(pa.message_id);
    if (ok) {
      if (it != messages_.end()) it->second.durable = true;
      for (auto& w : pa.waiters) w(doc(R"({"message_id":)" + quoteJson(pa.message_id) + "}"));
      // PROD-43: the runtime learns of a deliverable message (a queue message may start a turn).
      if (accepted_watch_ && it != messages_.end()) accepted_watch_(it->second.session);
    } else {
      // Not accepted: forget it entirely so a retry starts afresh (-32049, no ACK semantics).
      if (it != messages_.end()) {
        by_key_.erase(dedupKey(it->second.session, it->second.owner, it->second.key));
        messages_.erase(it);
      }
      for (auto& w : pa.waiters) w(err(kDurability, "durable acceptance failed: " + ok.error()));
    }
  }
}

// §14.5 (PROD-23/24/25).
void ProducerService::onUnregister(ConnId conn, const std::string& owner, const json::Value& params,
                                   Reply reply) {
  auto p = decodeParams<protocol::ProducerUnregisterParams>(params);
  if (!p) return reply(err(kInvalidParams, "invalid params: " + p.error()));
  if (auto g = gate(conn, owner)) return reply(unexpected(*g));
  auto it = regs_.find(p->producer_id);
  if (it == regs_.end() || it->second.owner != owner || it->second.epoch != conn ||
      it->second.session != p->session_id)
    return reply(err(kRegistration, "producer_id `" + p->producer_id +
                                        "` is unknown, foreign or from another connection"));
  it->second.closed = true;  // accepted messages stay (PROD-23); repeat succeeds (PROD-24)
  reply(doc("{}"));
}

// §14.6 (PROD-26…32, RECOV-16): by receipt, no registration needed, any epoch of the owner.
void ProducerService::onDiscard(ConnId conn, const std::string& owner, const json::Value& params,
                                Reply reply) {
  auto p = decodeParams<protocol::ProducerDiscardParams>(params);
  if (!p) return reply(err(kInvalidParams, "invalid params: " + p.error()));
  if (auto g = gate(conn, owner)) return reply(unexpected(*g));
  auto it = messages_.find(p->message_id);
  if (it == messages_.end() || !it->second.durable || it->second.owner != owner ||
      it->second.session != p->session_id)
    return reply(err(kNotDiscardable, "message `" + p->message_id +
                                          "` is unknown, owned by another plugin or in another session"));
  ProducerMessage& m = it->second;
  switch (m.state) {
    case MessageState::Discarded: return reply(doc("{}"));  // PROD-31
    case MessageState::Consumed:
      return reply(err(kNotDiscardable, "message `" + m.id + "` was already consumed"));  // PROD-28
    case MessageState::Claimed:
      return reply(err(kClaimed, "message `" + m.id + "` is claimed by a run; retry after release"));  // PROD-29
    case MessageState::Waiting: break;
  }
  auto ok = persist({R"({"t":"state","id":)" + quoteJson(m.id) + R"(,"state":"discarded"})"});
  if (!ok) return reply(err(kDurability, "cannot record the discard: " + ok.error()));
  m.state = MessageState::Discarded;
  reply(doc("{}"));
}

// ---- the runtime side ---------------------------------------------------------------------------

std::optional<std::string> ProducerService::claim(const std::string& session,
                                                  std::optional<DeliveryMode> mode) {
  const ProducerMessage* best = nullptr;
  for (auto& [id, m] : messages_)
    if (m.session == session && m.durable && m.state == MessageState::Waiting &&
        (!mode || m.mode == *mode) && (!best || m.order < best->order))
      best = &m;
  if (!best) return std::nullopt;
  messages_[best->id].state = MessageState::Claimed;  // PROD-29: before preparation and hooks
  return best->id;
}

bool ProducerService::hasWaiting(const std::string& session, std::optional<DeliveryMode> mode) const {
  for (auto& [id, m] : messages_)
    if (m.session == session && m.durable && m.state == MessageState::Waiting && (!mode || m.mode == *mode))
      return true;
  return false;
}

std::vector<std::string> ProducerService::sessionsWaiting(DeliveryMode mode) const {
  std::set<std::string> out;
  for (auto& [id, m] : messages_)
    if (m.durable && m.state == MessageState::Waiting && m.mode == mode) out.insert(m.session);
  return {out.begin(), out.end()};
}

void ProducerService::release(const std::string& id) {
  auto it = messages_.find(id);
  // PROD-30: back to waiting; a consumed message never returns.
  if (it != messages_.end() && it->second.state == MessageState::Claimed)
    it->second.state = MessageState::Waiting;
}

Expected<Ok, std::string> ProducerService::consume(const std::string& id) {
  auto it = messages_.find(id);
  if (it == messages_.end() || it->second.state != MessageState::Claimed)
    return unexpected("message `" + id + "` is not claimed");
  auto ok = persist({R"({"t":"state","id":)" + quoteJson(id) + R"(,"state":"consumed"})"});
  if (!ok) return ok;
  it->second.state = MessageState::Consumed;
  return Ok{};
}

const ProducerMessage* ProducerService::message(const std::string& id) const {
  auto it = messages_.find(id);
  return it == messages_.end() ? nullptr : &it->second;
}

std::vector<const ProducerMessage*> ProducerService::messages(const std::string& session) const {
  std::vector<const ProducerMessage*> out;
  for (auto& [id, m] : messages_)
    if (m.session == session && m.durable) out.push_back(&m);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->order < b->order; });
  return out;
}

const Registration* ProducerService::registration(const std::string& id) const {
  auto it = regs_.find(id);
  return it == regs_.end() ? nullptr : &it->second;
}

}  // namespace conform::engine
