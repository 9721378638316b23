// mock_plugin/sdk_core — private state of a PluginServer (Core), shared by sdk.cpp (dispatch),
// sdk_api.cpp (contexts, replies, producers, builder) and nothing else. Not part of the SDK's
// public API: plugin authors include sdk.h only.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>

#include "core/json/schema.h"
#include "mock_plugin/sdk.h"

namespace conform::plugin {

// The grant of one triggering frame (SDK-06/07, PROTOCOL §11.3 and §17.3).
struct Grant {
  std::string session_id;
  std::optional<std::string> token;  // absent: bus event without context_id (BUS-06), recovery
  bool request = false;              // request grants end with the answer
  bool ended = false;
  bool spent = false;
  clock::TimePoint decoded{};        // notification grants: 4 s from decode
};

struct SlotToken {
  std::weak_ptr<Core> core;
  bool recovery = false;
  bool released = false;
  void release();
  ~SlotToken() { release(); }
};

struct ToolEntry {
  ToolDecl decl;
  ToolHandler handler;
  json::Schema schema;  // compiled once at build(); arguments are validated before the handler runs
};

struct PluginBuilder::Spec {
  std::string name, version;
  Profile profile = Profile::V006;
  std::vector<ToolEntry> tools;
  EventHandler on_event;
  BusHandler on_bus;
  bool publish_bus = false;
  bool producers = false;
  RecoveryHandler on_recovery;
  std::map<Hook, HookHandler> hooks;
  SdkDeviations dev;  // fixture faults only (sdk.h)
};

struct ReplyBase::State {
  std::weak_ptr<Core> core;
  std::string id_text;            // the request id, compact JSON, echoed verbatim (RPC-08)
  std::string what;               // "plugin/tools/call echo" for messages
  std::shared_ptr<SlotToken> slot;
  std::shared_ptr<Grant> grant;
  const OutputDecl* output = nullptr;  // tools: the declaration the result must match
  bool answered = false;
  ~State();
};

struct RecoveryDone::State {
  std::weak_ptr<Core> core;
  std::shared_ptr<SlotToken> slot;
  bool answered = false;
  ~State();
};

using RpcDone = std::function<void(Result<json::Document>)>;

// The inbound queue (SDK-19/20: 32 frames, back-pressure on the reader). Each frame keeps the time
// the reader handed it over, because a notification grant runs from the reader's decode (SDK-07,
// PROTOCOL §17.3), not from dispatch: a frame can wait here while the outbound queue is full.
struct InboundQueue {
  const clock::Clock* clk = nullptr;
  std::deque<std::pair<wire::FrameEvent, clock::TimePoint>> q;
  void push_back(wire::FrameEvent ev) { q.emplace_back(std::move(ev), clk ? clk->now() : clock::TimePoint{}); }
  std::size_t size() const { return q.size(); }
  bool empty() const { return q.empty(); }
};

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(PluginBuilder::Spec s, clock::Clock& c);

  PluginBuilder::Spec spec;
  clock::Clock& clk;
  clock::TimerQueue timers;
  InboundQueue in;
  clock::TimePoint decoded_at{};    // when the reader decoded the frame being dispatched (SDK-07)
  std::deque<std::string> out;
  ServerState st = ServerState::Running;
  std::string failure;
  std::size_t active = 0;           // ordinary callbacks in flight (SDK-17)
  bool recovery_busy = false;       // the one recovery slot (SDK-21)
  bool recovery_started = false;
  bool initialized = false;
  bool engine_producers = false;
  bool reading_stopped = false;
  std::int64_t next_id = 1;         // RPC-21: plugin request ids are integers from 1
  std::map<std::int64_t, RpcDone> pending;
  std::deque<std::pair<std::string, std::function<void(Result<EmitResult>)>>> pending_emits;
  PluginServer::OutboundFilter filter;
  PluginServer::InboundObserver observer;
  std::function<void(std::string_view)> log_sink;
  // SdkDeviations::session_shared_grant: the newest grant of each session (SDK-06 broken).
  std::map<std::string, std::shared_ptr<Grant>> session_grants;

  bool running() const { return st == ServerState::Running; }
  void log(std::string_view line);
  void send(std::string frame);   // filtered; FRAME-16 size check
  void fatal(std::string msg);
  void finish();                  // clean end: shutdown / EOF (SDK-25, SHUT-09)
  void failPending(const std::string& why);
  void schedule(clock::Duration d, std::function<void()> fn);

  // Plugin -> engine requests (producers, recovery). Fails locally when not possible (SDK-20).
  void request(std::string_view method, std::string params_json, RpcDone done);
  void emit(const std::shared_ptr<Grant>& g, std::string_view session_id, std::string name,
            const json::Value& payload, std::function<void(Result<EmitResult>)> done);

  // Dispatch (sdk.cpp).
  void process();
  void handle(wire::FrameEvent ev);
  void onMessage(const json::Value& msg);
  void onRequest(const json::Value& id, std::string_view method, const json::Value* params);
  void onNotification(std::string_view method, const json::Value* params);
  void onResponse(const json::Value& msg);
  void respond(std::string_view id_text, std::string result_json);
  void respondError(std::string_view id_text, int code, std::string_view message);
  void onToolCall(const std::string& id_text, const json::Value* params);
  void onHook(const std::string& id_text, Hook h, const json::Value* params);
  void onEvent(const json::Value* params);
  void onBusEvent(const json::Value* params);
  void onEmitResult(const json::Value* params);
  void onRecoveryStart(const json::Value* params);
  std::string initializeResult() const;
  std::shared_ptr<SlotToken> takeSlot();  // nullptr when 64 are busy
  // The grant of one triggering frame (SDK-06/07); `token` absent: no usable grant (BUS-06).
  std::shared_ptr<Grant> newGrant(const std::string& session_id, std::optional<std::string> token, bool request);
  // SDK-22: responses and emit results are never dropped — except under the fixture fault
  // SdkDeviations::replies_need_slot, where they are dropped while every slot is busy.
  bool dropReplyWhileSaturated(std::string_view what);
  Context makeContext(std::shared_ptr<Grant> g);
};

}  // namespace conform::plugin
