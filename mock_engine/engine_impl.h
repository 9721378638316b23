// mock_engine/engine_impl — private state of the Engine, shared by engine.cpp (lifecycle, frames,
// handshake), engine_tools.cpp (namespace, permissions, calls) and engine_events.cpp (sessions,
// delivery queue, bus, emits, quotas, diagnostics). Not part of the public API.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "mock_engine/engine.h"

namespace conform::engine {

// PROTOCOL §7.2 / §18 (SHUT-07, R4 [impl]): after a kill the engine waits up to 5 s to reap.
inline constexpr clock::Duration kReapTimeout = std::chrono::seconds(5);

struct PendingRequest {
  enum class Kind { Initialize, Ping, ToolCall, Custom } kind = Kind::Initialize;
  std::shared_ptr<Engine::ResponseFn> done;  // Kind::Custom (issue 5: hooks)
  std::string ref;          // tool call invocation id
  std::uint64_t handle = 0; // ping handle
  clock::TimerQueue::Id timer = 0;
};

struct Conn {
  ConnId id = 0;
  std::size_t plugin = 0;  // index into Impl::plugins
  wire::FrameDecoder decoder;
  bool handshake_done = false;
  bool ended = false;        // connection over: nothing more is written or processed
  bool stdin_closed = false;
  bool shutdown_sent = false;  // SHUT-05: nothing is written after plugin/shutdown
  bool exited = false;
  bool kill_sent = false;
  std::int64_t next_id = 2;  // RPC-07: initialize uses 1, later requests 2, 3, …
  std::map<std::int64_t, PendingRequest> pending;
  std::vector<std::string> deferred;  // INIT-07: frames held until the handshake is accepted
  DeliveryQueue queue;
  GrantTable grants;
  clock::TimerQueue::Id startup_timer = 0, grace_timer = 0, reap_timer = 0;
};

struct PluginSlot {
  PluginConfig cfg;
  PluginStatus status;
  ConnId conn = 0;  // current connection (0 = none)
  std::vector<ToolDeclaration> decls;
  bool shutdown_finished = false;  // SHUT: terminal and reaped (or reap timed out)
};

struct ToolClaim {
  enum class Kind { Builtin, Mcp, Plugin } kind = Kind::Plugin;
  std::size_t plugin = 0;
  std::size_t decl = 0;  // index into PluginSlot::decls
};

struct Engine::Impl {
  Impl(Engine& e, EngineConfig c, Host& h, clock::Clock& k)
      : self(e), cfg(std::move(c)), host(h), clk(k) {}

  Engine& self;
  EngineConfig cfg;
  Host& host;
  clock::Clock& clk;
  clock::TimerQueue timers;
  Observer* observer = nullptr;
  bool shutting_down = false;
  bool restarting = false;  // shutting_down is set too, for the plugins only (Engine::beginRestart)
  bool started = false;

  std::vector<PluginSlot> plugins;
  std::map<ConnId, std::unique_ptr<Conn>> conns;
  ConnId next_conn = 1;

  std::map<std::string, Session> sessions;
  std::map<std::string, ToolCallStatus> calls;
  std::map<std::uint64_t, PingStatus> pings;
  std::uint64_t next_ping = 1;
  std::map<std::string, ToolClaim> names;  // the shared tool namespace (TOOL-26…29)

  PublishQuota quota;
  DiagnosticCoalescer diags;
  clock::TimerQueue::Id flush_timer = 0;

  // BUS-04: daemon clients by id (Engine::subscribeDaemon).
  struct DaemonClient {
    std::string session;
    std::deque<std::string> inbox;
    std::uint64_t dropped = 0;
  };
  std::map<std::uint64_t, DaemonClient> daemon_clients;
  std::uint64_t next_daemon = 1;
  std::uint64_t uuid_counter = 0;
  std::map<std::string, RequestHandler> request_handlers;
  std::map<std::string, AsyncRequestHandler> async_handlers;  // issue 5
  std::function<void(ConnId, const std::string&, bool)> conn_watch;  // issue 5 (RECOV-14)
  std::function<void(const ToolCallStatus&)> tool_done;
  AppendSink append_sink;  // issue 5 durability (Engine::setAppendSink)
  std::function<void(std::uint64_t, const PingStatus&)> ping_done;
  // LIFE-12: work waiting until no enabled plugin is `connecting` (Engine::whenPluginsSettled).
  std::vector<std::function<void()>> settle_waiters;
  bool settled() const;
  void wakeSettleWaiters();

  // ---- engine.cpp --------------------------------------------------------------------------------
  Conn* conn(ConnId id);
  PluginSlot& slotOf(const Conn& c) { return plugins[c.plugin]; }
  void spawnPlugin(std::size_t index);
  void setState(PluginSlot& p, PluginState s, std::optional<std::string> reason);
  void observeLifecycle(const Conn& c, std::string_view kind, std::string_view detail);
  // Writes one JSON frame (without LF) now, unless the connection can no longer be written.
  void writeFrame(Conn& c, const std::string& json);
  // Writes now when connected, or holds the frame until the handshake is accepted (INIT-07).
  void sendOrDefer(Conn& c, const std::string& json);
  std::int64_t sendRequest(Conn& c, const std::string& method, const std::string& params_json,
                           PendingRequest pending, clock::Duration timeout);
  void handleFrameEvent(Conn& c, const wire::FrameEvent& ev);
  void handleFrame(Conn& c, const std::string& bytes);
  void handleResponse(Conn& c, const json::Value& msg);
  void handleRequest(Conn& c, const json::Value& msg);
  void handleNotification(Conn& c, const json::Value& msg);
  void handleInitializeResult(Conn& c, const json::Value& msg);
  void fatal(Conn& c, const std::string& reason);
  // End of a connection (LIFE-11, PROTOCOL §16.2).
  void endConnection(Conn& c, PluginState final_state, std::optional<std::string> reason,
                     bool kill);
  void checkShutdownFinished(PluginSlot& p);
  void finishPing(std::uint64_t handle, PingStatus::State st, std::string reason);

  // ---- engine_tools.cpp --------------------------------------------------------------------------
  Expected<std::vector<ToolDeclaration>, std::string> validateTools(const json::Value& tools,
                                                                    const std::string& plugin);
  // Claims every declared name (TOOL-26…28); returns an error for reserved / MCP names.
  Expected<Ok, std::string> claimTools(std::size_t plugin);
  void releaseTools(std::size_t plugin);
  void refreshToolList(std::size_t plugin);
  Decision decide(const std::string& session, const std::string& permission_resource) const;
  bool pluginToolsVisible(const std::string& session) const;
  bool skillAllows(const std::string& session, const std::string& plugin) const;  // TOOL-25
  void handleToolResult(Conn& c, const PendingRequest& pr, const json::Value& msg);
  // An accepted result (either profile): tool_after_result, then the outcome (TOOL-14, HOOK-24).
  void commitToolResult(Conn& c, ToolCallStatus& call);
  void finishCall(ToolCallStatus& call, CallState st, std::string reason, Conn* c);
  void failCallsOf(Conn& c, const std::string& reason);

  // ---- engine_events.cpp -------------------------------------------------------------------------
  Expected<std::uint64_t, std::string> append(const std::string& session, const json::Value& payload,
                                              const std::string& source_plugin);
  void deliverRecord(const Session& s, const EventRecord& r);
  void enqueue(Conn& c, Delivery d);
  void pump(Conn& c);
  void noteDrop(Conn& c, const Delivery& lost);
  void publishBus(Conn& publisher, const std::string& session, const std::string& name,
                  const json::Value& payload);
  void handleEmit(Conn& c, const json::Value& params);
  void emitResult(Conn& c, const std::string& name, const char* bus, const char* durable,
                  std::optional<std::string> reason);
  void recordDiagnostic(const std::string& session, std::size_t plugin, const std::string& kind,
                        std::string_view message);
  void flushDiagnostics();
  std::string timestamp() const;
  // The injected fault (faults.h); EngineFault::None for the conforming engine.
  EngineFault fault = EngineFault::None;
  bool has(EngineFault f) const { return fault == f; }
  std::optional<std::string> held_emit_result;  // EngineFault::EmitResultOutOfOrder
  std::string init_params;  // the plugin/initialize params (EngineFault::SecondInitialize)
  // The append path for an already serialised payload (produceEvent builds it from a template;
  // append() serialises a DOM once). Returns the seq.
  std::uint64_t appendSerialized(Session& s, std::shared_ptr<const std::string> payload,
                                 std::string_view type, RecordClass cls,
                                 const std::string& source_plugin);
  // timestamp(): the formatted calendar second, reused while the wall clock stays in it.
  mutable std::int64_t ts_cache_secs = 0;
  mutable bool ts_cache_valid = false;
  mutable std::string ts_cache_prefix;
  // deliverRecord(): the plugin/event frame prefix of the last session delivered to.
  const Session* event_prefix_session = nullptr;
  std::shared_ptr<const std::string> event_prefix;
};


}  // namespace conform::engine
