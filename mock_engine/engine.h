// mock_engine/engine — the reference engine as a deterministic, sans-IO state machine.
//
// Why sans-IO: the same core must run (a) against real plugin processes (io_shell.h binds it to
// conform::wire::Reactor), (b) in-process against scripted in-memory peers on a VirtualClock
// (tests/engine), (c) under the fuzzer, which decodes its input into plugin->engine frames and
// driver actions with invariants checked after every step, and (d) inside `conform check`, which
// runs a plugin under test as one of the engine's plugins and needs to inject exact frames and
// observe every frame, timed.
//
// Inputs:  frames / EOF / exit per connection (on*()), driver actions (createSession, produceEvent,
//          callTool, ping, shutdown, …), and time (tick() after the Clock moved).
// Outputs: Host actions (spawn, write, closeStdin, kill) and Observer callbacks.
// Every timer lives in one TimerQueue read against the injected clock::Clock.
//
// Rules implemented here (PROTOCOL §1–§12, §16): FRAME, RPC, INIT, PING, SHUT, LIFE, TOOL, EVT,
// BUS, EMIT, QUOTA (engine-bound). Hooks, producers, recovery and the journal (issue 5) plug in
// through the extension points marked "issue 5" below.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/util/expected.h"
#include "core/wire/framing.h"
#include "mock_engine/config.h"
#include "mock_engine/delivery_queue.h"
#include "mock_engine/faults.h"
#include "mock_engine/grants.h"
#include "mock_engine/quota.h"

namespace conform::engine {

// BUS-04: a daemon client that never reads keeps at most this many notifications [chosen]; the
// engine must not grow without bound because a UI stopped reading.
inline constexpr std::size_t kMaxDaemonInbox = 10'000;

// Identifies one connection (one process lifetime). It is the engine's epoch: fresh, never reused
// within one engine lifetime (PROTOCOL §0.4). 0 means "none".
using ConnId = std::uint64_t;

enum class PluginState { Disabled, Disconnected, Connecting, Connected, Failed };
const char* toString(PluginState);

// PROTOCOL §8.1 ExtensionToolDeclaration, as validated by the engine.
struct ToolDeclaration {
  std::string name, description, permission_name;
  std::optional<std::string> primary_resource_param;
  std::shared_ptr<json::Document> parameters;
  bool named_output = false;
  std::vector<std::string> streams;  // named output: declared stream names, in declaration order
};

struct PluginCapabilities {
  bool tools = false, resources = false, subscribe_events = false, subscribe_bus = false,
       publish_bus = false, publish_session_events = false, producer_messaging = false;
  std::vector<std::string> intercept;
};

// LIFE-10 status record, plus what tests and the driver look at.
struct PluginStatus {
  std::string plugin;
  PluginState state = PluginState::Disconnected;
  std::optional<std::string> reason;
  std::vector<std::string> tools;  // claimed names
  std::uint64_t dropped_events = 0;
  std::array<std::uint64_t, 3> dropped_by_class{};  // chunk, ordinary, terminal
  std::map<std::string, std::uint64_t> diagnostics;  // kind -> count recorded about this plugin
  std::vector<std::string> notes;  // status diagnostics (tool replaced, unknown token, drain…)
  ConnId epoch = 0;
  std::uint64_t spawn_count = 0;
  std::optional<std::string> exit_status;  // "exit 0", "killed by signal 9 (SIGKILL)"
  std::string plugin_version;
  PluginCapabilities capabilities;
  bool producer_enabled = false;
  std::size_t queued = 0;  // records in the delivery queue
};

// What the engine asks of the outside world.
class Host {
 public:
  virtual ~Host() = default;
  // Start the process for `conn`. Returns false with `error` set when it cannot start.
  virtual bool spawn(ConnId conn, const PluginConfig& cfg, std::string& error) = 0;
  // Write bytes to the plugin's stdin (frames include their LF).
  virtual void write(ConnId conn, std::string_view bytes) = 0;
  // Back-pressure: whether the host takes more delivery frames now. Deliveries stay in the
  // 1024-record queue (where eviction by class applies) while this is false; the host calls
  // Engine::onWritable() when it drains.
  virtual bool writable(ConnId) { return true; }
  virtual void closeStdin(ConnId conn) = 0;
  // Kill the process group; the host reports the reaped exit through Engine::onExited().
  virtual void kill(ConnId conn) = 0;
};

enum class Direction { ToPlugin, FromPlugin };

// Observes every frame and lifecycle event on every connection, timed (conform check, traces).
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void onFrame(const std::string& plugin, ConnId, Direction, std::string_view frame,
                       clock::TimePoint) {}
  // kind: "spawn", "spawn_failed", "state", "eof", "exit", "stdin_closed", "kill", "frame_error"
  virtual void onLifecycle(const std::string& plugin, ConnId, std::string_view kind,
                           std::string_view detail, clock::TimePoint) {}
};

enum class CallState { Pending, Completed, Failed, Cancelled, Denied };
const char* toString(CallState);

struct ToolCallStatus {
  std::string invocation_id, session_id, tool, plugin, context_id;
  CallState state = CallState::Pending;
  std::string reason;
  std::optional<std::string> resource;
  std::string permission_resource;
  std::string approval_display;  // TOOL-24
  std::shared_ptr<json::Document> output;  // normalized output object, when a result was accepted
  std::optional<std::string> display;      // UI-only (TOOL-13)
  bool is_error = false;
  bool incomplete = false;  // TOOL-15: accepted output retained but flagged incomplete
  bool frame_sent = false;
  // PROTOCOL §5.3: the session seq current when the model asked for the call (the turn that owns
  // it); the owner ref of tool_call_started/tool_call_terminated points at it.
  std::uint64_t model_turn_seq = 0;
  // Interception (engine4, mock_engine/hooks.h): the arguments actually executed (after
  // tool_before_call, HOOK-20), whether a hook blocked the call (HOOK-18), and the model-facing
  // content after tool_after_result (HOOK-24/25; unset when no hook gate is installed).
  std::shared_ptr<json::Document> arguments;
  bool hook_blocked = false;
  std::optional<std::string> model_content;
};

struct PingStatus {
  std::string plugin;
  enum class State { Pending, Ok, Failed } state = State::Pending;
  std::string reason;
};

struct EventRecord {
  std::uint64_t seq = 0;
  std::shared_ptr<const std::string> payload;  // compact JSON of the EventPayload
  std::string type;
  std::string timestamp;
  std::string source_plugin;  // appended on behalf of this plugin (EVT-18); "" = runtime
  RecordClass cls = RecordClass::Ordinary;
};

struct Session {
  std::string id;
  std::deque<EventRecord> log;
  std::uint64_t next_seq = 1;
  bool persisted = true;  // EVT-04: buffered sessions deliver their prefix when first persisted
  std::uint64_t delivered_through = 0;
  std::vector<PermissionRule> overlay;  // session permission overlay (PROTOCOL §8.5)
  // TOOL-25: the active skill's `allowed-tools` entries (unset = no skill restricts tools).
  std::optional<std::vector<std::string>> skill_allowed_tools;
  // Simulates a slow store: diagnostic appends wait, and time out after 250 ms (QUOTA-14).
  bool stalled = false;
};

// JSON string literal (quoted, escaped) of `s`.
std::string quoteJson(std::string_view s);

class Engine {
 public:
  Engine(EngineConfig cfg, Host& host, clock::Clock& clk);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineConfig& config() const;
  clock::Clock& clock();

  // ---- lifecycle ------------------------------------------------------------------------------
  // Starts every enabled plugin eagerly, in registration order (LIFE-05).
  void start();
  // Engine shutdown (SHUT-01…07): drain diagnostics, then plugin/shutdown, close stdin, grace,
  // kill, reap. Bounded even while handshakes are pending (SHUT-04).
  void shutdown();
  bool shuttingDown() const;
  // Engine restart (driver `engine.restart`, docs/driver-protocol.md): beginRestart() runs the SHUT
  // sequence for every plugin exactly as shutdown() does, but the engine itself keeps running, so
  // shuttingDown() stays false (the IO loop must not exit). restartReady() turns true once every
  // plugin is terminal and reaped; finishRestart() then starts every enabled plugin again on new
  // connections, so each gets a fresh epoch (PROD-04) and a new handshake. Sessions stay. A
  // shutdown() during a restart turns it into a plain shutdown (restarting() becomes false).
  void beginRestart();
  bool restarting() const;
  bool restartReady() const;
  void finishRestart();
  // True once every plugin reached a terminal state and its process is reaped (or reaping timed
  // out after 5 s).
  bool shutdownComplete() const;

  // ---- inputs from the host -------------------------------------------------------------------
  // Raw bytes from the plugin's stdout (the engine frames them itself: FRAME-04/06/08/09/10).
  void onBytes(ConnId conn, std::string_view bytes);
  // A frame event already produced by a FrameDecoder (the IO shell's channels decode).
  void onFrameEvent(ConnId conn, const wire::FrameEvent& ev);
  void onStdoutEof(ConnId conn);
  // The process ended and was reaped. `status` is ExitStatus::str() text.
  void onExited(ConnId conn, const std::string& status);
  void onWritable(ConnId conn);
  void onStderr(ConnId conn, std::string_view line);

  // ---- time ------------------------------------------------------------------------------------
  // Runs every timer due at clock().now(). Call after the clock moved (VirtualClock::advance) or
  // when the IO loop wakes up.
  void tick();
  clock::TimePoint nextDeadline() const;

  // ---- the simulated runtime and driver actions ------------------------------------------------
  std::string createSession(bool persisted = true);
  Expected<Ok, std::string> persistSession(const std::string& session);
  // Appends a runtime event (durable) and fans it out. Returns its seq.
  Expected<std::uint64_t, std::string> appendEvent(const std::string& session,
                                                   const json::Value& payload,
                                                   const std::string& source_plugin = "");
  // Produces one event of a class: chunk = tool_call_progress with output_chunk, ordinary =
  // tool_call_progress without a chunk, terminal = tool_call_terminated.
  Expected<std::uint64_t, std::string> produceEvent(const std::string& session, RecordClass cls);
  void setSessionPermissions(const std::string& session, std::vector<PermissionRule> rules);
  // TOOL-25 (PROTOCOL §8.5): a skill's `allowed-tools` list for the session (nullopt = no skill).
  // `Plugin` allows every plugin tool, `Plugin(<plugin>:*)` every tool of that configured plugin,
  // the way MCP group entries govern MCP tools; other entries do not concern plugin tools. A plugin
  // tool the skill does not allow is hidden, and a call naming it (a pinned call) is denied as
  // "not enabled" — never as "unknown", which is kept for names no connected plugin claims.
  Expected<Ok, std::string> setSessionSkill(const std::string& session,
                                            std::optional<std::vector<std::string>> allowed_tools);
  Expected<Ok, std::string> setSessionStalled(const std::string& session, bool stalled);
  // Swaps out the diagnostics batch now (the 100 ms timer does this on its own).
  void flushDiagnostics();
  const Session* session(const std::string& id) const;

  // Tools (TOOL-*). The model asks for `tool` with `arguments`; the returned id names the call
  // (its invocation_id). The call may already be finished (denied, failed) when this returns.
  Expected<std::string, std::string> callTool(const std::string& session, const std::string& tool,
                                              const json::Value& arguments);
  bool cancelToolCall(const std::string& invocation_id);
  const ToolCallStatus* toolCall(const std::string& invocation_id) const;
  // Tools the model would be offered in `session` (TOOL-21).
  std::vector<std::string> visibleTools(const std::string& session) const;
  // MCP lazily claims a name (TOOL-27): a plugin owning it is forced to `failed`.
  void claimMcpTool(const std::string& name);

  // Ping (PING-*): returns a handle for pingStatus().
  std::uint64_t ping(const std::string& plugin);
  const PingStatus* pingStatus(std::uint64_t handle) const;

  // ---- inspection --------------------------------------------------------------------------------
  std::vector<PluginStatus> statuses() const;
  std::optional<PluginStatus> status(const std::string& plugin) const;
  ConnId connection(const std::string& plugin) const;  // current epoch, 0 when none
  std::string pluginOf(ConnId conn) const;

  // ---- hooks for `conform check` and tests -------------------------------------------------------
  void setObserver(Observer* o);
  // Writes exact bytes on the plugin's stdin, bypassing the state machine (a malformed request, a
  // duplicate id, raw bytes). Responses to injected requests are ignored by the engine (unknown
  // id, RPC-09) but reach the Observer. Returns false when there is no live connection.
  bool injectBytes(const std::string& plugin, std::string_view bytes);
  // Called whenever a tool call or ping finishes (the driver defers replies on it).
  void setToolCallDone(std::function<void(const ToolCallStatus&)> fn);
  void setPingDone(std::function<void(std::uint64_t, const PingStatus&)> fn);

  // Issue 5 extension point: plugin->engine request methods served by the engine (producer and
  // recovery). A handler returns the result or an error (code, message); unknown methods get
  // -32601 (RPC-13). The params are passed undecoded.
  struct RpcError {
    int code;
    std::string message;
  };
  using RequestHandler = std::function<Expected<json::Document, RpcError>(
      ConnId conn, const std::string& plugin, const json::Value& params)>;
  void setRequestHandler(const std::string& method, RequestHandler h);

  // ---- issue 5 additions (engine3: hooks, producers, recovery, journal) --------------------------
  // Deferred replies: the handler gets a Responder it calls exactly once, now or later (durable
  // acceptance finishes after the handler returned, PROD-17/35). A reply for a connection that
  // ended meanwhile is dropped (the plugin sees a commit-uncertain send, PROD-21).
  using Responder = std::function<void(Expected<json::Document, RpcError>)>;
  using AsyncRequestHandler = std::function<void(ConnId conn, const std::string& plugin,
                                                 const json::Value& params, Responder reply)>;
  void setAsyncRequestHandler(const std::string& method, AsyncRequestHandler h);
  // Called when a connection's handshake is accepted (up = true, right after
  // plugin/recovery/start was written) and when a connection ends (up = false). RECOV-14.
  void setConnectionWatch(std::function<void(ConnId, const std::string& plugin, bool up)> fn);
  // Engine -> plugin request with a completion callback (hooks, HOOK-06). `done` gets the whole
  // response object, or nullptr with a reason on timeout, disconnect or unwritable connection.
  // Returns false (without calling `done`) when the plugin has no connected connection.
  using ResponseFn = std::function<void(const json::Value* response, const std::string& why)>;
  bool requestPlugin(const std::string& plugin, const std::string& method,
                     const std::string& params_json, clock::Duration timeout, ResponseFn done);
  // Recreates a session with a known id (journal replay after an engine restart). False when it
  // exists already.
  bool restoreSession(const std::string& id);
  // Records a plugin_diagnostic (QUOTA-13 coalescing) on behalf of `plugin` in `session`.
  void recordPluginDiagnostic(const std::string& session, const std::string& plugin,
                              const std::string& kind, std::string_view message);
  // Runs `fn` at the next tick() (coalescing watches, RECOV-14).
  void post(std::function<void()> fn);
  // LIFE-12: runs `fn` now when the engine has started and no enabled plugin is `connecting`;
  // otherwise at the first tick() after the last pending handshake settled (connected or failed).
  // The runtime waits on it before the first user_before_input of a root input.
  void whenPluginsSettled(std::function<void()> fn);
  bool pluginsSettled() const;

  std::string newUuid();

  // The engine fault gallery (mock_engine/faults.h): makes this engine break one rule on purpose
  // (`conform-engine --fault NAME`). Set before start().
  void setFault(EngineFault f);
  EngineFault fault() const;  // for the hook, producer and recovery services

  // ---- issue 5 additions (engine4: interception, mock_engine/hooks.h) ----------------------------
  // A hook request: requestPlugin plus a request grant for `context_id` bound to `session`,
  // activated at the write and revoked when the call ends (HOOK-10). A plugin whose 1024-record
  // queue is full is not asked at all: hooks never wait for queue space (HOOK-15).
  enum class HookSend { Sent, NotConnected, QueueFull };
  HookSend requestHook(const std::string& plugin, const std::string& method,
                       const std::string& params_json, const std::string& session,
                       const std::string& context_id, clock::Duration timeout, ResponseFn done);
  // The tool path's interception gate. engine_tools.cpp asks it after policy and approval
  // (HOOK-16) and again when a result arrived, before the termination is committed (HOOK-24).
  // Without a gate the tool path runs as before.
  class ToolHooks {
   public:
    virtual ~ToolHooks() = default;
    struct BeforeOutcome {
      bool blocked = false;
      std::string block_text;                     // HOOK-19: what the model is told
      std::shared_ptr<json::Document> arguments;  // the arguments to execute; null = unchanged
    };
    struct AfterOutcome {
      std::string model_content;     // HOOK-24: what the model sees
      bool supersede_output = false;  // 0.0.4 (DELTA §4.5): the replacement replaces the output too
    };
    virtual void beforeCall(const ToolCallStatus& call, const ToolDeclaration& decl,
                            std::function<void(BeforeOutcome)> done) = 0;
    virtual void afterResult(const ToolCallStatus& call, std::function<void(AfterOutcome)> done) = 0;
    // Every call's end (the runtime waits on it).
    virtual void finished(const ToolCallStatus&) {}
  };
  void setToolHooks(ToolHooks* hooks);

  // ---- daemon clients (BUS-04) --------------------------------------------------------------------
  // A daemon client (a UI attached to the engine) subscribed to one session. Every bus publication
  // in that session also becomes an engine PluginEvent and an `events.plugin` notification
  // {"jsonrpc":"2.0","method":"events.plugin","params":{session_id, plugin, name, payload}} to the
  // clients subscribed to that session only. Notifications wait in a per-client inbox of at most
  // kMaxDaemonInbox (older ones are dropped and counted) until read.
  Expected<std::uint64_t, std::string> subscribeDaemon(const std::string& session);
  struct DaemonInbox {
    std::string session;
    std::vector<std::string> notifications;  // JSON-RPC notification frames, oldest first
    std::uint64_t dropped = 0;
  };
  // Takes the client's notifications (and resets its dropped count); nullopt for an unknown client.
  std::optional<DaemonInbox> readDaemon(std::uint64_t client);
  bool unsubscribeDaemon(std::uint64_t client);

  // ---- issue 5 additions (engine: durability of session events) ------------------------------------
  // Called for every record of a persisted session before it is delivered (EVT-04: plugin/event
  // only after the append is durable): the producer service writes it to the journal and fsyncs.
  // Returning false (the journal write failed) keeps the record in memory but delivers nothing.
  // A buffered session's prefix goes through the sink when it is persisted.
  using AppendSink = std::function<bool(const Session&, const EventRecord&)>;
  void setAppendSink(AppendSink sink);
  // Journal replay: re-adds one record with its original seq, timestamp and source plugin, without
  // delivering it (it was delivered, or lost with the crash, in the earlier lifetime). The session
  // is created when unknown; a seq not above the log's last one is refused (false).
  bool restoreEvent(const std::string& session, std::uint64_t seq, std::string timestamp,
                    std::string source_plugin, std::shared_ptr<const std::string> payload_json);

  struct Impl;  // engine_impl.h: shared by the engine_*.cpp files

 private:
  std::unique_ptr<Impl> impl_;
  ToolHooks* tool_hooks_ = nullptr;  // engine4: set by HookRunner
};

}  // namespace conform::engine
