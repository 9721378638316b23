// mock_plugin/sdk — the reference plugin SDK (PROTOCOL.md §17, RULES.md SDK-*), in the spirit of
// the seed's Rust SDK (S6 §Rust SDK, §Producer SDK) but sans-IO:
//
//   * PluginServer is a single-threaded state machine. The IO shell (stdio.h) or a test feeds it
//     inbound frames and clock ticks; it produces outbound frames (JSON text without the LF).
//     Handlers receive a Context and complete asynchronously through a reply object, so a "slow"
//     handler is simply one that replies later (e.g. from a Context::after() timer on a
//     VirtualClock). Every SDK-* bound is therefore exactly testable in-process.
//   * Authors never set capability flags or the protocol version (SDK-02, INIT-27): both are
//     derived from what was registered on the builder and from the chosen profile.
//   * Errors are values. Bad input from the engine never throws: it becomes an error response,
//     a stderr line, or (for the frame/envelope violations of SDK-25) a fatal state with a
//     message naming the rule.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/protocol/common.h"
#include "core/util/expected.h"
#include "core/wire/framing.h"

namespace conform::plugin {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// Limits (PROTOCOL §17.4, §18; each constant names the rule that fixes it)
// ---------------------------------------------------------------------------------------------
inline constexpr std::size_t kMaxCallbacks = 64;          // SDK-17: concurrent ordinary callbacks
inline constexpr std::size_t kMaxPendingReplies = 128;    // SDK-19/20: producer requests awaiting replies
inline constexpr std::size_t kInboundQueueFrames = 32;    // SDK-19/20: back-pressure, never drops
inline constexpr std::size_t kOutboundQueueFrames = 128;  // SDK-19: writers wait beyond this
inline constexpr clock::Duration kNotificationGrant = 4s; // SDK-07: 1 s margin under the engine's 5 s
inline constexpr int kBusyCode = -32050;                  // SDK-18 (PROTOCOL §19 [chosen])
inline constexpr int kMethodNotFound = -32601;            // RPC-15, TOOL-31, HOOK-14
inline constexpr int kInvalidParams = -32602;             // TOOL-31, HOOK-14
inline constexpr int kInternalError = -32603;             // SDK-26
inline constexpr int kToolFailureCode = -32000;           // TOOL-31: default ToolFailure code
inline constexpr std::size_t kMaxIdempotencyKeyBytes = 256;  // PROD-11
inline constexpr std::size_t kMaxDescriptionBytes = 1024;    // PROD-12
inline constexpr std::size_t kMaxStreams = 8;                // TOOL-03
inline constexpr std::size_t kMaxStreamNameChars = 64;       // TOOL-04 [chosen]

enum class Profile { V006, V004 };
const char* protocolVersion(Profile);  // "0.0.6" / "0.0.4" (INIT-10)
std::optional<Profile> parseProfile(std::string_view);

// The 13 hooks (HOOK-03, PROTOCOL §5.2), in protocol order: core/protocol's enumeration.
using Hook = protocol::Hook;
inline constexpr std::size_t kHookCount = protocol::kHookCount;
const char* hookName(Hook);  // the wire name ("tool_before_call"), a string literal
using protocol::allHooks;
using protocol::parseHook;

// Small text helpers over core/json for code that writes frames as text (the SDK, behaviours,
// faults): a JSON string literal, and parsing of trusted literals (null on error).
std::string quote(std::string_view s);
json::Document parseTrusted(std::string_view text);

// ---------------------------------------------------------------------------------------------
// Errors surfaced to plugin code
// ---------------------------------------------------------------------------------------------
enum class ErrorKind {
  ContextUnavailable,    // SDK-07: no usable grant (spent, expired, request ended, absent)
  PublishingNotEnabled,  // EMIT-24: enableBusPublishing() was not called
  ProducersNotEnabled,   // SDK-09: enableProducers() was not called / engine did not offer it
  InvalidArgument,       // PROD-11/12: key or description rejected locally
  TooManyPending,        // SDK-20: 128 producer requests already await replies
  TransportClosed,       // SDK-23: disconnect or shutdown
  Oversized,             // FRAME-16: the emit frame would exceed 4 MiB
  Rpc,                   // the engine answered with a JSON-RPC error (code, message)
  Malformed,             // the engine's answer did not decode
};
struct SdkError {
  ErrorKind kind = ErrorKind::Rpc;
  std::string message;
  int code = 0;  // Rpc only
  std::string str() const;
};
const char* toString(ErrorKind);

template <class T>
using Result = Expected<T, SdkError>;

using EmitStatus = protocol::EmitStatus;  // protocol::toString gives the wire spelling
struct EmitResult {
  EmitStatus bus = EmitStatus::Rejected;
  EmitStatus durable = EmitStatus::Rejected;
  std::optional<std::string> reason;
};

// ---------------------------------------------------------------------------------------------
// Tools (PROTOCOL §8)
// ---------------------------------------------------------------------------------------------
struct OutputDecl {
  bool named = false;
  std::vector<std::string> streams;  // named only: 1–8 distinct URI-safe names (TOOL-03/04)
  static OutputDecl single() { return {}; }
  static OutputDecl namedStreams(std::vector<std::string> s) { return {true, std::move(s)}; }
};

struct ToolDecl {
  std::string name;
  std::string description;
  json::Document parameters;  // JSON Schema object
  std::string permission_name;
  std::optional<std::string> primary_resource_param;
  OutputDecl output;
};
// Convenience: parses `schema_json` (must be valid JSON; an invalid literal yields a schema that
// fails declaration validation, never a crash).
ToolDecl makeTool(std::string name, std::string description, std::string_view schema_json,
                  std::string permission_name, std::optional<std::string> primary = std::nullopt,
                  OutputDecl output = OutputDecl::single());

// ToolOutput::success / ::error (TOOL-33): single output; display set independently.
struct ToolResult {
  bool named = false;
  std::string text;                                          // single
  std::vector<std::pair<std::string, std::string>> streams;  // named: (stream, text)
  std::optional<std::string> display;
  bool is_error = false;

  static ToolResult success(std::string text);
  static ToolResult error(std::string text);
  static ToolResult namedOutput(std::vector<std::pair<std::string, std::string>> s, bool is_error = false);
  ToolResult& withDisplay(std::string d) { display = std::move(d); return *this; }
};
struct ToolFailure {
  int code = kToolFailureCode;
  std::string message;
};

struct ToolCall {
  std::string tool, session_id, context_id, invocation_id;
  json::Document arguments;
  std::optional<std::string> resource;
  std::optional<std::string> cancellation_token;
};

struct EventDelivery {
  std::string session_id, context_id, timestamp;
  std::uint64_t seq = 0;
  json::Document event;  // opaque in 0.0.6 (EVT-11)
  std::string type() const;  // event.type when it is a string, else ""
};
struct BusDelivery {
  std::string session_id, plugin, name;
  std::optional<std::string> context_id;  // BUS-06: without it the handler has no grant
  json::Document payload;
};

class Core;  // private state of a PluginServer, shared with contexts and replies
struct Grant;
struct SlotToken;

// ---------------------------------------------------------------------------------------------
// Producers (PROTOCOL §14, S6 §Producer SDK)
// ---------------------------------------------------------------------------------------------
using DeliveryMode = protocol::DeliveryMode;

// ProducerIdempotencyKey::new — 1–256 control-free bytes (PROD-11), validated before any write.
class IdempotencyKey {
 public:
  static Result<IdempotencyKey> make(std::string key);
  const std::string& str() const { return key_; }
 private:
  explicit IdempotencyKey(std::string k) : key_(std::move(k)) {}
  std::string key_;
};
// Description rule of PROD-12 (nonblank, control-free, at most 1024 UTF-8 bytes): core/protocol's
// check, with the rule ID prefixed. Error text or nullopt.
std::optional<std::string> checkDescription(std::string_view d);

using Done = std::function<void(Result<Ok>)>;
using ReceiptDone = std::function<void(Result<std::string>)>;  // message_id

// Not one-shot; usable after the callback returned (SDK-09); copying is cheap; dropping it
// neither unregisters nor discards (SDK-12, PROD-25).
class ProducerHandle {
 public:
  const std::string& id() const { return id_; }                 // SDK-11
  const std::string& sessionId() const { return session_id_; }  // SDK-11
  void send(std::string body, std::string description, DeliveryMode mode, const IdempotencyKey& key,
            ReceiptDone done);
  void steer(std::string body, std::string description, const IdempotencyKey& key, ReceiptDone done) {
    send(std::move(body), std::move(description), DeliveryMode::Steer, key, std::move(done));
  }
  void queue(std::string body, std::string description, const IdempotencyKey& key, ReceiptDone done) {
    send(std::move(body), std::move(description), DeliveryMode::Queue, key, std::move(done));
  }
  void unregister(Done done);                           // may be retried after a rejection
  void discard(std::string message_id, Done done);      // also after unregister (SDK-13)

 private:
  friend class Core;
  friend class Context;
  ProducerHandle(std::weak_ptr<Core> c, std::string id, std::string s)
      : core_(std::move(c)), id_(std::move(id)), session_id_(std::move(s)) {}
  std::weak_ptr<Core> core_;
  std::string id_, session_id_;
};

// ---------------------------------------------------------------------------------------------
// Context: what a callback may do. It holds only the grant of its triggering frame (SDK-06).
// ---------------------------------------------------------------------------------------------
class Context {
 public:
  Context() = default;
  const std::string& sessionId() const;
  std::optional<std::string> contextId() const;
  // ctx.emit_bus: spends this callback's grant once (EMIT-24, SDK-06/07). `done` receives the
  // engine's plugin/emit_result (EMIT-25/26) or a local error; it may be empty.
  void emitBus(std::string_view session_id, std::string name, const json::Value& payload,
               std::function<void(Result<EmitResult>)> done = {});
  void registerProducer(std::string session_id, std::function<void(Result<ProducerHandle>)> done);
  void discardProducerMessage(std::string session_id, std::string message_id, Done done);
  // Runs fn on the server's clock after d (slow handlers, scripted delays). No-op after shutdown.
  void after(clock::Duration d, std::function<void()> fn) const;
  clock::TimePoint now() const;
  void log(std::string_view line) const;  // one stderr line (FRAME-02: never stdout)

 private:
  friend class Core;
  friend class ProducerHandle;
  std::weak_ptr<Core> core_;
  std::shared_ptr<Grant> grant_;
};

// Single-shot replies (clangd ReplyOnce): a second answer is refused; dropping an unanswered reply
// sends -32603 so the engine never waits for nothing (RPC-08). Answering frees the callback slot
// and ends the request grant (SDK-07).
class ReplyBase {
 public:
  bool answered() const;
 protected:
  struct State;
  std::shared_ptr<State> st_;
  friend class Core;
  bool sendResult(json::Document result);
  bool sendError(int code, std::string message);
};
class ToolReply : public ReplyBase {
 public:
  bool ok(ToolResult r);
  bool fail(ToolFailure f);
};
class HookReply : public ReplyBase {
 public:
  bool answer(json::Document result);
  bool fail(int code, std::string message) { return sendError(code, std::move(message)); }
};
// Frees an event/bus callback slot when done() is called or the last copy is dropped.
class Completion {
 public:
  void done();
 private:
  friend class Core;
  std::shared_ptr<SlotToken> slot_;
};
class RecoveryDone {
 public:
  bool ready();
  bool failed(std::string message);
 private:
  friend class Core;
  struct State;
  std::shared_ptr<State> st_;
};

using ToolHandler = std::function<void(Context, ToolCall, ToolReply)>;
using HookHandler = std::function<void(Context, const json::Value& params, HookReply)>;
using EventHandler = std::function<void(Context, const EventDelivery&, Completion)>;
using BusHandler = std::function<void(Context, const BusDelivery&, Completion)>;
using RecoveryHandler = std::function<void(Context, RecoveryDone)>;

// Result builders for every hook (SDK-24). Each returns the closed result object of its hook.
namespace hooks {
json::Document allow();                                   // tool_before_call, model_before_select, fork, revert
json::Document allowWithArguments(const json::Value& modified);
json::Document block(std::string_view reason, std::optional<std::string_view> message_to_model = {});
json::Document keep();                                    // tool_after_result, model_before_request, provider_before_request, message_end
json::Document replaceResult(std::string_view content);   // tool_after_result
json::Document appendPrompt(std::string_view text);       // agent_before_start
json::Document replacePrompt(std::string_view text);      // agent_before_start
json::Document injectMessage(std::string_view role, std::string_view content);
json::Document noChange();                                // {} — agent_before_start, compact, headers, after_response
json::Document compactAddendum(std::string_view text);
json::Document cancelCompaction(std::string_view reason);
json::Document overrideCompactionInstructions(std::string_view text);
json::Document inputAllow();
json::Document inputTransform(std::string_view new_text);
json::Document inputHandled(std::string_view reason);
json::Document replaceMessages(const json::Value& messages);
json::Document replacePayload(const json::Value& payload);
json::Document replaceContent(const json::Value& content);   // message_end
json::Document overrideRevertInstructions(std::string_view text);
// The result a conforming plugin gives when it changes nothing, for each hook.
json::Document passThrough(Hook);
}  // namespace hooks

// ---------------------------------------------------------------------------------------------
// The server and its builder
// ---------------------------------------------------------------------------------------------
enum class ServerState { Running, Finished, Failed };

class PluginServer {
 public:
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // --- input --------------------------------------------------------------------------------
  // SDK-19/20: the reader must stop reading while this is false (back-pressure, nothing dropped).
  bool canAcceptFrame() const;
  // Takes one decoder event (Frame, Oversized, InvalidUtf8, Eof). Queued; see process().
  void receive(wire::FrameEvent ev);
  void receiveFrame(std::string_view json_text);  // convenience for tests
  void receiveEof();
  // Dispatches queued inbound frames (stops while the outbound queue is full) and runs due timers.
  void process();

  // --- output -------------------------------------------------------------------------------
  bool hasOutbound() const;
  std::optional<std::string> popOutbound();  // one frame, without its LF
  std::size_t outboundSize() const;

  ServerState state() const;
  const std::string& failure() const;  // non-empty when Failed
  clock::TimePoint nextTimer() const;  // TimePoint::max() when none
  std::size_t activeCallbacks() const;
  std::size_t pendingReplies() const;
  bool producerEnabled() const;  // both sides opted in (PROTOCOL §6.4)

  // The initialize result this server answers with (for tests and --list).
  json::Document initializeResult() const;

  // --- fault injection (the conform-plugin fault gallery; never used by conforming plugins) -
  // Rewrites each outbound frame just before it is queued; may return zero or more frames.
  using OutboundFilter = std::function<std::vector<std::string>(std::string frame)>;
  void setOutboundFilter(OutboundFilter f);
  // Sees every inbound message after envelope decoding; return true to swallow it.
  using InboundObserver = std::function<bool(const json::Value& msg)>;
  void setInboundObserver(InboundObserver f);
  void writeRaw(std::string bytes);  // queued as-is (no filter, no size check)
  // Schedules fn on the server clock (used by faults and behaviour scripts).
  void after(clock::Duration d, std::function<void()> fn);
  void setLogSink(std::function<void(std::string_view)> sink);
  void stopReading();  // fault: never read stdin again
  bool readingStopped() const;
  // Ends the run as if the engine disconnected (SDK-23): pending calls fail TransportClosed.
  void disconnect();

 private:
  friend class PluginBuilder;
  explicit PluginServer(std::shared_ptr<Core> c);
  std::shared_ptr<Core> core_;
};

// SDK deviations: the fault knobs of the SDK fixture (mock_plugin/fixture.h, `conform-plugin
// --fixture sdk --fault NAME`). Each makes the SDK break ONE callback/emit rule the way real SDKs
// get it wrong, so the fixture catalogue can prove its case for that rule FAILs. The defaults are
// the conforming SDK; conforming plugins never call PluginBuilder::deviations().
struct SdkDeviations {
  std::size_t max_callbacks = kMaxCallbacks;  // SDK-17: slots before saturation
  int busy_code = kBusyCode;                  // SDK-18: the saturation error code
  bool ping_takes_slot = false;               // PING-04: ping dispatched through a callback slot
  bool recovery_takes_slot = false;           // SDK-21: recovery holds one of the ordinary slots
  bool replies_need_slot = false;             // SDK-22: responses / emit_results dropped while saturated
  bool event_panic_fatal = false;             // EVT-23: a panicking event handler ends the plugin
  int panic_code = kInternalError;            // SDK-26: the error a panicking tool handler answers
  bool session_shared_grant = false;          // SDK-06: contexts share the session's newest grant
  bool grant_outlives_answer = false;         // SDK-07: request grants stay usable after the answer
  bool emit_optimistic = false;               // SDK-08: an emit that reached the wire reports published
  bool emit_pairing_lifo = false;             // EMIT-25: results pair with the NEWEST pending emit of a name
  bool emit_status_collapsed = false;         // EMIT-26: every status but published reported as dropped (0.0.4's mapping)
  bool shared_id_space = false;               // RPC-18: an engine request whose id equals a pending plugin
                                              // request's id is taken as that request's response
};

class PluginBuilder {
 public:
  PluginBuilder(std::string name, std::string version);
  PluginBuilder& profile(Profile p);
  PluginBuilder& tool(ToolDecl decl, ToolHandler handler);
  PluginBuilder& onEvent(EventHandler h);
  PluginBuilder& onBusEvent(BusHandler h);
  PluginBuilder& enableBusPublishing();
  PluginBuilder& enableProducers();
  PluginBuilder& onRecovery(RecoveryHandler h);
  PluginBuilder& intercept(Hook hook, HookHandler h);
  // Fixture faults only (SdkDeviations above); defined in sdk.cpp.
  PluginBuilder& deviations(SdkDeviations d);
  // Named builder methods for every hook (SDK-24).
  PluginBuilder& toolBeforeCall(HookHandler h) { return intercept(Hook::ToolBeforeCall, std::move(h)); }
  PluginBuilder& toolAfterResult(HookHandler h) { return intercept(Hook::ToolAfterResult, std::move(h)); }
  PluginBuilder& agentBeforeStart(HookHandler h) { return intercept(Hook::AgentBeforeStart, std::move(h)); }
  PluginBuilder& sessionBeforeCompact(HookHandler h) { return intercept(Hook::SessionBeforeCompact, std::move(h)); }
  PluginBuilder& userBeforeInput(HookHandler h) { return intercept(Hook::UserBeforeInput, std::move(h)); }
  PluginBuilder& modelBeforeRequest(HookHandler h) { return intercept(Hook::ModelBeforeRequest, std::move(h)); }
  PluginBuilder& providerBeforeHeaders(HookHandler h) { return intercept(Hook::ProviderBeforeHeaders, std::move(h)); }
  PluginBuilder& providerBeforeRequest(HookHandler h) { return intercept(Hook::ProviderBeforeRequest, std::move(h)); }
  PluginBuilder& providerAfterResponse(HookHandler h) { return intercept(Hook::ProviderAfterResponse, std::move(h)); }
  PluginBuilder& messageEnd(HookHandler h) { return intercept(Hook::MessageEnd, std::move(h)); }
  PluginBuilder& modelBeforeSelect(HookHandler h) { return intercept(Hook::ModelBeforeSelect, std::move(h)); }
  PluginBuilder& sessionBeforeFork(HookHandler h) { return intercept(Hook::SessionBeforeFork, std::move(h)); }
  PluginBuilder& sessionBeforeRevert(HookHandler h) { return intercept(Hook::SessionBeforeRevert, std::move(h)); }

  // SDK-03: validates every declaration; the error names the tool and the broken rule.
  // Consumes the builder's registrations (build once).
  Expected<std::unique_ptr<PluginServer>, std::string> build(clock::Clock& clk);

  struct Spec;  // defined in sdk_core.h

 private:
  std::shared_ptr<Spec> spec_;
};

// Validation pieces, exposed for tests and for the behaviour-file loader.
std::optional<std::string> validateToolDecl(const ToolDecl& d, Profile p);  // error text (rule ID first)

}  // namespace conform::plugin
