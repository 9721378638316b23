// mock_engine/producer — producer messaging (PROTOCOL §14, PROD-*) and recovery (§15, RECOV-*) of
// the reference engine, on the Engine's issue-5 extension points (async request handlers, the
// connection watch) and the crash-safe Journal.
//
// Model (§14.1): registrations are bound to (owner, epoch) where the owner is the configured plugin
// name of the connection (never a param, PROD-03) and the epoch is the engine's ConnId (fresh,
// never reused, PROD-04). Messages are bound to (session, owner) and deduplicated on (session,
// owner, idempotency_key) (PROD-18/20) — the message record IS the idempotency record.
//
// Durability (PROD-17): a send is answered only after its acceptance record is in the journal and
// fsynced. Acceptances are group-committed: by default each send commits at once; with
// holdDurability(true) (tests) they wait for commitDurable(), which models a slow disk so the 32
// concurrent handler tasks (PROD-34) and the never-blocked transport reader (PROD-35) can be
// shown on the virtual clock.
//
// Journal records (one compact JSON object each):
//   {"t":"session","id":S}                                         a session exists
//   {"t":"accept","id":M,"session":S,"owner":O,"key":K,"mode":"steer","description":D,"body":B}
//   {"t":"state","id":M,"state":"consumed"|"discarded"}
//   {"t":"event","session":S,"seq":N,"ts":T,"src":P,"ev":{…}}     a session event (Engine append
//                                                                  sink), fsynced before delivery
// Claims are not journaled: a claim is no proof of delivery (PROD-30), so after a crash a claimed
// message is waiting again; consumption is journaled before the run goes on.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/protocol/common.h"
#include "core/protocol/recovery.h"
#include "mock_engine/engine.h"
#include "mock_engine/journal.h"

namespace conform::engine {

// §19 chosen codes (PROD-42).
namespace prodcode {
inline constexpr int kInvalidParams = -32602;
inline constexpr int kUnavailable = -32040;
inline constexpr int kOverloaded = -32041;
inline constexpr int kStale = -32042;
inline constexpr int kRegistration = -32043;
inline constexpr int kSession = -32044;
inline constexpr int kIdempotency = -32045;
inline constexpr int kNotDiscardable = -32046;
inline constexpr int kClaimed = -32047;
inline constexpr int kRecoveryConflict = -32048;
inline constexpr int kDurability = -32049;
}  // namespace prodcode

enum class MessageState { Waiting, Claimed, Consumed, Discarded };
const char* toString(MessageState);

struct ProducerMessage {
  std::string id, session, owner, key, description, body;
  protocol::DeliveryMode mode = protocol::DeliveryMode::Steer;
  MessageState state = MessageState::Waiting;
  std::uint64_t order = 0;  // acceptance order (delivery is FIFO per session)
  bool durable = false;     // acceptance fsynced; invisible to runs until then
};

struct Registration {
  std::string producer_id, owner, session;
  ConnId epoch = 0;
  bool closed = false;
};

// PluginRecoveryStatus (§15.3, RECOV-08): exactly these four.
enum class RecoveryState { Starting, Ready, Failed, Disabled };
const char* toString(RecoveryState);

struct RecoveryStatus {
  std::string plugin;
  RecoveryState state = RecoveryState::Disabled;
  ConnId epoch = 0;  // RECOV-09: bound to (owner, epoch)
  std::optional<protocol::RecoveryOutcome> outcome;
  std::string reason;
  bool start_written = false;
};

class ProducerService {
 public:
  // Installs the request handlers (0.0.6 profile only: in 0.0.4 the methods stay unknown, -32601)
  // and the connection watch. With `journal` the state is replayed from it (sessions are
  // restored into the engine) and every acceptance is fsynced before its ACK.
  ProducerService(Engine& engine, std::optional<Journal> journal);
  ~ProducerService();
  ProducerService(const ProducerService&) = delete;
  ProducerService& operator=(const ProducerService&) = delete;

  // Creates a session and makes it durable (the journal keeps it across restarts).
  std::string createSession(bool persisted = true);

  // ---- the runtime side (claims, PROD-29/30/43) ------------------------------------------------
  // Claims the oldest durable waiting message of `session` with `mode` (any mode when nullopt).
  std::optional<std::string> claim(const std::string& session,
                                   std::optional<protocol::DeliveryMode> mode);
  void release(const std::string& message_id);  // claimed -> waiting (preparation failed/cancelled)
  Expected<Ok, std::string> consume(const std::string& message_id);  // claimed -> consumed (journaled)
  bool hasWaiting(const std::string& session, std::optional<protocol::DeliveryMode> mode) const;
  // Sessions holding a durable waiting message of `mode`.
  std::vector<std::string> sessionsWaiting(protocol::DeliveryMode mode) const;
  // Called with the session after a message became durable (the runtime delivers it, PROD-43).
  void setAcceptedWatch(std::function<void(const std::string& session)> fn) { accepted_watch_ = std::move(fn); }

  // ---- inspection (driver, tests) ---------------------------------------------------------------
  const ProducerMessage* message(const std::string& id) const;
  std::vector<const ProducerMessage*> messages(const std::string& session) const;
  std::size_t messageCount() const { return messages_.size(); }
  const Registration* registration(const std::string& producer_id) const;
  // RECOV-12/15: every configured producer plugin has a status, disabled and failed ones too.
  std::vector<RecoveryStatus> recoveryStatuses() const;
  std::optional<RecoveryStatus> recovery(const std::string& plugin) const;
  const std::vector<std::string>& notices() const { return notices_; }  // user-visible (RECOV-11)
  std::uint64_t reconciles() const { return reconciles_; }              // RECOV-14 (coalescing)
  std::size_t tasks(ConnId conn) const;                                 // PROD-34
  const JournalOpenReport* journalReport() const;

  // ---- durability knobs (tests; PROD-17/34/35) -------------------------------------------------
  void holdDurability(bool hold);
  void commitDurable();
  std::size_t pendingDurable() const { return pending_.size(); }

  // Direct entry for unit tests (PROD-40: a stale connection cannot reach the engine's reader).
  void handle(const std::string& method, ConnId conn, const std::string& plugin,
              const json::Value& params, Engine::Responder reply);

 private:
  using Reply = Engine::Responder;
  void onRegister(ConnId, const std::string& owner, const json::Value&, Reply);
  void onSend(ConnId, const std::string& owner, const json::Value&, Reply);
  void onUnregister(ConnId, const std::string& owner, const json::Value&, Reply);
  void onDiscard(ConnId, const std::string& owner, const json::Value&, Reply);
  void onComplete(ConnId, const std::string& owner, const json::Value&, Reply);
  void onConnection(ConnId, const std::string& plugin, bool up);
  // Wraps a reply so the handler task is counted until it answers (PROD-34).
  Reply task(ConnId conn, Reply r);
  // Checks shared by every method: producer-enabled (-32040), capacity (-32041), current (-32042).
  std::optional<Engine::RpcError> gate(ConnId conn, const std::string& owner);
  void wake();  // RECOV-14: coalescing state watch
  void reconcile();
  void replay();
  Expected<Ok, std::string> persist(std::vector<std::string> records);
  void setRecovery(const std::string& plugin, RecoveryState st, std::string reason);

  Engine& engine_;
  std::optional<Journal> journal_;
  std::map<std::string, ProducerMessage> messages_;
  std::map<std::string, std::string> by_key_;  // session \x1f owner \x1f key -> message id
  std::map<std::string, Registration> regs_;
  std::map<std::string, RecoveryStatus> recovery_;
  std::map<ConnId, std::size_t> tasks_;
  std::vector<std::string> notices_;
  std::uint64_t next_order_ = 1;
  std::uint64_t reconciles_ = 0;
  bool wake_posted_ = false;
  bool hold_ = false;
  struct PendingAccept {
    std::string message_id, record;
    std::vector<Reply> waiters;
  };
  std::deque<PendingAccept> pending_;
  std::function<void(const std::string&)> accepted_watch_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace conform::engine
