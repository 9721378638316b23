// mock_engine/engine — lifecycle, framing, envelopes, handshake, ping and shutdown of the reference
// engine (PROTOCOL §1–§7, §16; FRAME, RPC, INIT, PING, SHUT, LIFE). Tools are in engine_tools.cpp,
// events/bus/emits/quotas/diagnostics in engine_events.cpp.
#include "mock_engine/engine.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>

#include "mock_engine/engine_impl.h"

namespace conform::engine {

const char* toString(PluginState s) {
  switch (s) {
    case PluginState::Disabled: return "disabled";
    case PluginState::Disconnected: return "disconnected";
    case PluginState::Connecting: return "connecting";
    case PluginState::Connected: return "connected";
    case PluginState::Failed: return "failed";
  }
  return "failed";
}

const char* toString(CallState s) {
  switch (s) {
    case CallState::Pending: return "pending";
    case CallState::Completed: return "completed";
    case CallState::Failed: return "failed";
    case CallState::Cancelled: return "cancelled";
    case CallState::Denied: return "denied";
  }
  return "failed";
}

std::string quoteJson(std::string_view s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

namespace {

// PROTOCOL §5.2: the 13 interception hooks; any other name in `intercept` is malformed (INIT-16).
constexpr std::array<std::string_view, 13> kHooks = {
    "tool_before_call",      "tool_after_result",       "agent_before_start",
    "session_before_compact", "user_before_input",      "model_before_request",
    "provider_before_headers", "provider_before_request", "provider_after_response",
    "message_end",           "model_before_select",     "session_before_fork",
    "session_before_revert"};

std::string idText(const json::Value& id) { return json::compact(id); }

// RPC-05: an id is an int64 integer, a string or null.
bool validId(const json::Value& id) { return id.IsInt64() || id.IsString() || id.IsNull(); }

bool onlyMembers(const json::Value& v, std::initializer_list<std::string_view> allowed,
                 std::string* extra) {
  for (auto& m : v.GetObject()) {
    std::string_view k(m.name.GetString(), m.name.GetStringLength());
    bool ok = false;
    for (auto a : allowed) ok = ok || a == k;
    if (!ok) { *extra = std::string(k); return false; }
  }
  return true;
}

}  // namespace

// =================================================================================================
// Engine: thin forwarding to Impl
// =================================================================================================

Engine::Engine(EngineConfig cfg, Host& host, clock::Clock& clk)
    : impl_(std::make_unique<Impl>(*this, std::move(cfg), host, clk)) {
  for (auto& pc : impl_->cfg.plugins) {
    PluginSlot s;
    s.cfg = pc;
    s.status.plugin = pc.name;
    s.status.state = pc.enabled ? PluginState::Disconnected : PluginState::Disabled;
    s.shutdown_finished = true;
    impl_->plugins.push_back(std::move(s));
  }
  for (auto& b : impl_->cfg.builtin_tools) impl_->names[b] = ToolClaim{ToolClaim::Kind::Builtin, 0, 0};
  for (auto& m : impl_->cfg.mcp_tools) impl_->names[m] = ToolClaim{ToolClaim::Kind::Mcp, 0, 0};
}
Engine::~Engine() = default;

const EngineConfig& Engine::config() const { return impl_->cfg; }
clock::Clock& Engine::clock() { return impl_->clk; }
bool Engine::shuttingDown() const { return impl_->shutting_down && !impl_->restarting; }

void Engine::beginRestart() {
  if (impl_->shutting_down) return;  // already stopping (a shutdown wins over a restart)
  impl_->restarting = true;
  shutdown();
}

bool Engine::restarting() const { return impl_->restarting; }

bool Engine::restartReady() const { return impl_->restarting && shutdownComplete(); }

void Engine::finishRestart() {
  Impl& m = *impl_;
  if (!restartReady()) return;
  m.restarting = false;
  m.shutting_down = false;
  // LIFE-05: eagerly, in registration order, like start(); spawnPlugin() allocates a new ConnId.
  for (std::size_t i = 0; i < m.plugins.size(); ++i)
    if (m.plugins[i].cfg.enabled) m.spawnPlugin(i);
}
clock::TimePoint Engine::nextDeadline() const { return impl_->timers.nextDue(); }
void Engine::setObserver(Observer* o) { impl_->observer = o; }
void Engine::setToolCallDone(std::function<void(const ToolCallStatus&)> fn) { impl_->tool_done = std::move(fn); }
void Engine::setPingDone(std::function<void(std::uint64_t, const PingStatus&)> fn) { impl_->ping_done = std::move(fn); }
void Engine::setRequestHandler(const std::string& method, RequestHandler h) {
  impl_->request_handlers[method] = std::move(h);
}

void Engine::tick() { impl_->timers.runDue(impl_->clk.now()); }

EngineFault Engine::fault() const { return impl_->fault; }

void Engine::setFault(EngineFault f) {
  impl_->fault = f;
  // QUOTA-05 broken: the 41st emit in a second is admitted.
  if (f == EngineFault::QuotaOffByOne) impl_->quota.setRateLimit(kEmitsPerSecond + 1);
}

// ---- issue 5 additions (engine3) ------------------------------------------------------------------
void Engine::setAsyncRequestHandler(const std::string& method, AsyncRequestHandler h) {
  impl_->async_handlers[method] = std::move(h);
}
void Engine::setConnectionWatch(std::function<void(ConnId, const std::string&, bool)> fn) {
  impl_->conn_watch = std::move(fn);
}
bool Engine::requestPlugin(const std::string& plugin, const std::string& method,
                           const std::string& params_json, clock::Duration timeout, ResponseFn done) {
  Impl& m = *impl_;
  for (auto& p : m.plugins) {
    if (p.cfg.name != plugin) continue;
    Conn* c = m.conn(p.conn);
    if (!c || c->ended || !c->handshake_done || c->shutdown_sent || c->stdin_closed) return false;
    PendingRequest pr;
    pr.kind = PendingRequest::Kind::Custom;
    pr.done = std::make_shared<ResponseFn>(std::move(done));
    m.sendRequest(*c, method, params_json, pr, timeout);
    return true;
  }
  return false;
}
bool Engine::restoreSession(const std::string& id) {
  if (impl_->sessions.count(id)) return false;
  Session& s = impl_->sessions[id];
  s.id = id;
  return true;
}
void Engine::recordPluginDiagnostic(const std::string& session, const std::string& plugin,
                                    const std::string& kind, std::string_view message) {
  for (std::size_t i = 0; i < impl_->plugins.size(); ++i)
    if (impl_->plugins[i].cfg.name == plugin) impl_->recordDiagnostic(session, i, kind, message);
}
void Engine::post(std::function<void()> fn) {
  impl_->timers.schedule(impl_->clk.now(), std::move(fn));
}

bool Engine::Impl::settled() const {
  if (!started) return false;
  for (const PluginSlot& p : plugins)
    if (p.status.state == PluginState::Connecting) return false;
  return true;
}

void Engine::Impl::wakeSettleWaiters() {
  if (settle_waiters.empty() || !settled()) return;
  // Posted, not called: the state change that settled the last plugin is still in progress (the
  // handshake writes plugin/recovery/start right after it, RECOV-01).
  auto waiting = std::move(settle_waiters);
  settle_waiters.clear();
  for (auto& fn : waiting) self.post(std::move(fn));
}

void Engine::whenPluginsSettled(std::function<void()> fn) {
  if (impl_->settled() || impl_->has(EngineFault::HooksBeforeSettled)) return fn();
  impl_->settle_waiters.push_back(std::move(fn));
}

bool Engine::pluginsSettled() const { return impl_->settled(); }

std::string Engine::newUuid() {
  // UUIDv7 layout: 48-bit wall-clock milliseconds, version 7, then a counter in the random bits.
  // Deterministic on a VirtualClock, unique within the engine (the counter never repeats).
  auto ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(impl_->clk.wallNow().time_since_epoch())
          .count());
  std::uint64_t n = ++impl_->uuid_counter;
  // Hand-rolled hex (not snprintf): one UUID per delivery token is on the fan-out hot path
  // (bench/engine_fanout.cpp). Layout: %08x-%04x-7%03x-8%03x-%012x.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(36, '-');
  auto put = [&](std::size_t at, std::uint64_t v, int digits) {
    for (int i = digits - 1; i >= 0; --i, v >>= 4) out[at + static_cast<std::size_t>(i)] = kHex[v & 0xf];
  };
  put(0, (ms >> 16) & 0xffffffffULL, 8);
  put(9, ms & 0xffffULL, 4);
  out[14] = '7';
  put(15, (n >> 60) & 0xfffULL, 3);
  out[19] = '8';
  put(20, (n >> 48) & 0xfffULL, 3);
  put(24, n & 0xffffffffffffULL, 12);
  return out;
}

void Engine::start() {
  if (impl_->started) return;
  impl_->started = true;
  for (std::size_t i = 0; i < impl_->plugins.size(); ++i)
    if (impl_->plugins[i].cfg.enabled) impl_->spawnPlugin(i);
  impl_->wakeSettleWaiters();
}

void Engine::onBytes(ConnId id, std::string_view bytes) {
  Conn* c = impl_->conn(id);
  if (!c || c->ended) return;
  c->decoder.feed(bytes);
  while (auto ev = c->decoder.next()) {
    if (c->ended) break;
    impl_->handleFrameEvent(*c, *ev);
  }
}

void Engine::onFrameEvent(ConnId id, const wire::FrameEvent& ev) {
  Conn* c = impl_->conn(id);
  if (!c || c->ended) return;
  impl_->handleFrameEvent(*c, ev);
}

void Engine::onStdoutEof(ConnId id) {
  Conn* c = impl_->conn(id);
  if (!c) return;
  impl_->observeLifecycle(*c, "eof", "");
  if (c->ended) return;
  // Flush an unterminated fragment first (FRAME-09), then EOF.
  c->decoder.feedEof();
  while (auto ev = c->decoder.next()) {
    if (c->ended) return;
    if (ev->kind == wire::FrameEvent::Kind::Eof) break;
    impl_->handleFrameEvent(*c, *ev);
  }
  if (c->ended) return;
  // During shutdown the plugin is expected to go away: wait for its exit (SHUT-06).
  if (c->shutdown_sent) return;
  // FRAME-17: EOF on stdout fails the plugin and ends the process.
  impl_->endConnection(*c, PluginState::Failed, "plugin stdout reached EOF", true);
}

void Engine::onExited(ConnId id, const std::string& status) {
  Conn* c = impl_->conn(id);
  if (!c) return;
  c->exited = true;
  PluginSlot& p = impl_->slotOf(*c);
  if (p.conn == id) p.status.exit_status = status;
  impl_->observeLifecycle(*c, "exit", status);
  if (c->reap_timer) { impl_->timers.cancel(c->reap_timer); c->reap_timer = 0; }
  if (!c->ended) {
    if (c->shutdown_sent) {
      // SHUT-06: exit inside the grace period leaves `disconnected`.
      if (c->grace_timer) { impl_->timers.cancel(c->grace_timer); c->grace_timer = 0; }
      impl_->endConnection(*c, PluginState::Disconnected, std::nullopt, false);
    } else {
      impl_->endConnection(*c, PluginState::Failed, "plugin process exited (" + status + ")", false);
    }
  }
  impl_->checkShutdownFinished(p);
}

void Engine::onWritable(ConnId id) {
  if (Conn* c = impl_->conn(id)) impl_->pump(*c);
}

void Engine::onStderr(ConnId id, std::string_view line) {
  // FRAME-02: stderr is passed through, never parsed.
  if (Conn* c = impl_->conn(id)) impl_->observeLifecycle(*c, "stderr", line);
}

void Engine::shutdown() {
  Impl& m = *impl_;
  if (m.shutting_down) {
    m.restarting = false;  // engine.shutdown during engine.restart: stay down
    return;
  }
  m.shutting_down = true;
  // QUOTA-15: drain diagnostics first (synchronous in the simulated runtime, so far below 5 s).
  m.flushDiagnostics();
  for (auto& p : m.plugins) {
    Conn* c = m.conn(p.conn);
    if (!c || c->ended) continue;
    // SHUT-01/02/04: notification (also while initialize is unanswered), then stdin close.
    if (!m.has(EngineFault::NoShutdownNotification))
      m.writeFrame(*c, R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
    c->shutdown_sent = true;
    c->deferred.clear();
    if (!c->stdin_closed && !m.has(EngineFault::NoStdinClose)) {
      c->stdin_closed = true;
      m.host.closeStdin(c->id);
      m.observeLifecycle(*c, "stdin_closed", "");
    }
    if (c->startup_timer) { m.timers.cancel(c->startup_timer); c->startup_timer = 0; }
    p.shutdown_finished = false;
    ConnId cid = c->id;
    // SHUT-03/06: grace, then kill the process group; state `failed`.
    c->grace_timer = m.timers.schedule(
        m.clk.now() + std::chrono::milliseconds(p.cfg.shutdown_grace_ms), [&m, cid] {
          Conn* cc = m.conn(cid);
          if (!cc) return;
          cc->grace_timer = 0;
          if (!cc->ended)
            m.endConnection(*cc, PluginState::Failed, "plugin shutdown grace period expired", true);
        });
  }
  for (auto& p : m.plugins) m.checkShutdownFinished(p);
}

bool Engine::shutdownComplete() const {
  if (!impl_->shutting_down) return false;
  for (auto& p : impl_->plugins)
    if (!p.shutdown_finished) return false;
  return true;
}

std::uint64_t Engine::ping(const std::string& plugin) {
  Impl& m = *impl_;
  std::uint64_t h = m.next_ping++;
  PingStatus& ps = m.pings[h];
  ps.plugin = plugin;
  Conn* c = nullptr;
  for (auto& p : m.plugins)
    if (p.cfg.name == plugin) c = m.conn(p.conn);
  // PING-02: only connected plugins are pinged; otherwise the ping fails locally, no frame.
  if (!c || c->ended || !c->handshake_done || c->shutdown_sent) {
    m.finishPing(h, PingStatus::State::Failed, "plugin is not connected");
    return h;
  }
  PendingRequest pr;
  pr.kind = PendingRequest::Kind::Ping;
  pr.handle = h;
  // PING-03: the ping deadline is interception_timeout_ms.
  m.sendRequest(*c, "plugin/ping", "{}", pr,
                std::chrono::milliseconds(m.plugins[c->plugin].cfg.interception_timeout_ms));
  return h;
}

const PingStatus* Engine::pingStatus(std::uint64_t h) const {
  auto it = impl_->pings.find(h);
  return it == impl_->pings.end() ? nullptr : &it->second;
}

std::vector<PluginStatus> Engine::statuses() const {
  std::vector<PluginStatus> out;
  for (auto& p : impl_->plugins) out.push_back(*status(p.cfg.name));
  return out;
}

std::optional<PluginStatus> Engine::status(const std::string& plugin) const {
  for (auto& p : impl_->plugins) {
    if (p.cfg.name != plugin) continue;
    PluginStatus s = p.status;
    auto it = impl_->conns.find(p.conn);
    if (it != impl_->conns.end()) s.queued = it->second->queue.size();
    return s;
  }
  return std::nullopt;
}

ConnId Engine::connection(const std::string& plugin) const {
  for (auto& p : impl_->plugins)
    if (p.cfg.name == plugin) return p.conn;
  return 0;
}

std::string Engine::pluginOf(ConnId id) const {
  auto it = impl_->conns.find(id);
  return it == impl_->conns.end() ? std::string() : impl_->plugins[it->second->plugin].cfg.name;
}

bool Engine::injectBytes(const std::string& plugin, std::string_view bytes) {
  Impl& m = *impl_;
  for (auto& p : m.plugins) {
    if (p.cfg.name != plugin) continue;
    Conn* c = m.conn(p.conn);
    if (!c || c->ended || c->stdin_closed) return false;
    m.host.write(c->id, bytes);
    if (m.observer) m.observer->onFrame(plugin, c->id, Direction::ToPlugin, bytes, m.clk.now());
    return true;
  }
  return false;
}

// =================================================================================================
// Impl: connections and writing
// =================================================================================================

Conn* Engine::Impl::conn(ConnId id) {
  auto it = conns.find(id);
  return it == conns.end() ? nullptr : it->second.get();
}

void Engine::Impl::observeLifecycle(const Conn& c, std::string_view kind, std::string_view detail) {
  if (observer) observer->onLifecycle(plugins[c.plugin].cfg.name, c.id, kind, detail, clk.now());
}

void Engine::Impl::setState(PluginSlot& p, PluginState s, std::optional<std::string> reason) {
  p.status.state = s;
  if (reason) p.status.reason = std::move(reason);
  if (observer)
    observer->onLifecycle(p.cfg.name, p.conn, "state",
                          std::string(toString(s)) + (p.status.reason ? ": " + *p.status.reason : ""),
                          clk.now());
  if (s != PluginState::Connecting) wakeSettleWaiters();  // LIFE-12
}

void Engine::Impl::spawnPlugin(std::size_t index) {
  PluginSlot& p = plugins[index];
  auto c = std::make_unique<Conn>();
  c->id = next_conn++;
  c->plugin = index;
  Conn& cr = *c;
  conns[c->id] = std::move(c);
  p.conn = cr.id;
  p.status.epoch = cr.id;
  p.status.spawn_count++;
  p.status.reason.reset();
  p.status.exit_status.reset();
  p.shutdown_finished = false;
  std::string err;
  if (!host.spawn(cr.id, p.cfg, err)) {
    // LIFE-03: a spawn failure is contained to this plugin.
    observeLifecycle(cr, "spawn_failed", err);
    cr.ended = true;
    cr.exited = true;
    setState(p, PluginState::Failed, "failed to start plugin process: " + err);
    p.shutdown_finished = true;
    return;
  }
  observeLifecycle(cr, "spawn", p.cfg.command);
  setState(p, PluginState::Connecting, std::nullopt);
  // INIT-01/02/03/05: the first frame is plugin/initialize with id 1.
  std::string caps =
      R"({"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true)";
  if (cfg.protocol_version != "0.0.4")
    caps += std::string(R"(,"producer_messaging":)") +
            (cfg.producer_handler && p.cfg.producer_messaging ? "true" : "false");
  caps += "}";
  std::string params = R"({"protocol_version":)" + quoteJson(cfg.protocol_version) +
                       R"(,"engine_version":)" + quoteJson(cfg.engine_version) +
                       R"(,"capabilities":)" + caps + "}";
  init_params = params;
  writeFrame(cr, std::string(R"({"jsonrpc":"2.0","id":)") +
                     (has(EngineFault::InitializeIdZero) ? "0" : "1") +
                     R"(,"method":"plugin/initialize","params":)" + params + "}");
  PendingRequest pr;
  pr.kind = PendingRequest::Kind::Initialize;
  cr.pending[1] = pr;
  ConnId cid = cr.id;
  // INIT-18: the result must arrive within startup_timeout_ms of writing the request.
  cr.startup_timer = timers.schedule(
      clk.now() + std::chrono::milliseconds(p.cfg.startup_timeout_ms), [this, cid] {
        Conn* cc = conn(cid);
        if (!cc || cc->ended) return;
        cc->startup_timer = 0;
        cc->pending.erase(1);
        endConnection(*cc, PluginState::Failed, "handshake timeout", true);
      });
}

void Engine::Impl::writeFrame(Conn& c, const std::string& json) {
  // FRAME-15: the single writer; SHUT-05: nothing after plugin/shutdown.
  if (c.ended || c.stdin_closed || c.shutdown_sent) return;
  std::string frame = wire::encodeFrame(json);
  host.write(c.id, frame);
  if (observer)
    observer->onFrame(plugins[c.plugin].cfg.name, c.id, Direction::ToPlugin, json, clk.now());
}

void Engine::Impl::sendOrDefer(Conn& c, const std::string& json) {
  if (c.handshake_done || has(EngineFault::WriteBeforeHandshake)) writeFrame(c, json);
  else if (!c.ended && !c.shutdown_sent) c.deferred.push_back(json);
}

std::int64_t Engine::Impl::sendRequest(Conn& c, const std::string& method,
                                       const std::string& params_json, PendingRequest pr,
                                       clock::Duration timeout) {
  // RPC-07: one counter per connection; overflow is fatal.
  if (c.next_id == std::numeric_limits<std::int64_t>::max()) {
    fatal(c, "engine request id counter exhausted");
    return 0;
  }
  std::int64_t id = c.next_id++;
  ConnId cid = c.id;
  std::string params = params_json;
  if (method == "plugin/tools/call") params = applyToolCallFault(fault, params);
  // TOOL-16 broken: the call is never bounded.
  if (method == "plugin/tools/call" && has(EngineFault::IgnoreToolTimeout))
    timeout = std::chrono::hours(24 * 365);
  pr.timer = timers.schedule(clk.now() + timeout, [this, cid, id] {
    Conn* cc = conn(cid);
    if (!cc) return;
    auto it = cc->pending.find(id);
    if (it == cc->pending.end()) return;
    PendingRequest p = it->second;
    cc->pending.erase(it);  // RPC-09: a late answer is now unknown and ignored
    if (p.kind == PendingRequest::Kind::Ping) {
      finishPing(p.handle, PingStatus::State::Failed, "ping timed out");
    } else if (p.kind == PendingRequest::Kind::ToolCall) {
      auto cit = calls.find(p.ref);
      if (cit != calls.end())
        finishCall(cit->second, CallState::Failed, "plugin tool call timed out", cc);
    } else if (p.kind == PendingRequest::Kind::Custom && p.done) {
      (*p.done)(nullptr, "timed out");  // HOOK-06: the chain fails open
    }
  });
  c.pending[id] = pr;
  writeFrame(c, R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":)" +
                    quoteJson(method) + R"(,"params":)" + params + "}");
  return id;
}

void Engine::Impl::fatal(Conn& c, const std::string& reason) {
  endConnection(c, PluginState::Failed, reason, true);
}

void Engine::Impl::endConnection(Conn& c, PluginState final_state,
                                 std::optional<std::string> reason, bool kill) {
  if (c.ended) return;
  c.ended = true;
  PluginSlot& p = plugins[c.plugin];
  if (c.startup_timer) { timers.cancel(c.startup_timer); c.startup_timer = 0; }
  if (c.grace_timer) { timers.cancel(c.grace_timer); c.grace_timer = 0; }
  // LIFE-11 / PROTOCOL §16.2: fail pending requests, drop queued deliveries and grants, release
  // claims, forget declarations and capabilities.
  auto pending = std::move(c.pending);
  c.pending.clear();
  for (auto& [id, pr] : pending) {
    timers.cancel(pr.timer);
    if (pr.kind == PendingRequest::Kind::Ping)
      finishPing(pr.handle, PingStatus::State::Failed, "plugin disconnected");
    if (pr.kind == PendingRequest::Kind::Custom && pr.done) (*pr.done)(nullptr, "plugin disconnected");
  }
  failCallsOf(c, "plugin `" + p.cfg.name + "` stopped during tool call");
  c.queue.clear();
  c.grants.clear();
  c.deferred.clear();
  releaseTools(c.plugin);
  p.decls.clear();
  p.status.capabilities = PluginCapabilities{};
  p.status.producer_enabled = false;
  if (kill && !c.exited && !c.kill_sent) {
    c.kill_sent = true;
    host.kill(c.id);
    observeLifecycle(c, "kill", "");
    ConnId cid = c.id;
    // SHUT-07: reaping is bounded at 5 s after the kill.
    c.reap_timer = timers.schedule(clk.now() + kReapTimeout, [this, cid] {
      Conn* cc = conn(cid);
      if (!cc || cc->exited) return;
      cc->reap_timer = 0;
      PluginSlot& ps = plugins[cc->plugin];
      ps.status.notes.push_back("process was not reaped within 5 s after the kill");
      ps.shutdown_finished = true;
    });
  }
  setState(p, final_state, std::move(reason));
  checkShutdownFinished(p);
  if (conn_watch && c.handshake_done) conn_watch(c.id, p.cfg.name, false);  // RECOV-14
}

void Engine::Impl::checkShutdownFinished(PluginSlot& p) {
  Conn* c = conn(p.conn);
  if (!c) { p.shutdown_finished = true; return; }
  if (c->ended && (c->exited || (c->kill_sent && !c->reap_timer))) p.shutdown_finished = true;
}

void Engine::Impl::finishPing(std::uint64_t h, PingStatus::State st, std::string reason) {
  auto it = pings.find(h);
  if (it == pings.end()) return;
  it->second.state = st;
  it->second.reason = std::move(reason);
  if (ping_done) ping_done(h, it->second);
}

// =================================================================================================
// Impl: inbound frames
// =================================================================================================

void Engine::Impl::handleFrameEvent(Conn& c, const wire::FrameEvent& ev) {
  using K = wire::FrameEvent::Kind;
  switch (ev.kind) {
    case K::Frame:
      if (observer)
        observer->onFrame(plugins[c.plugin].cfg.name, c.id, Direction::FromPlugin, ev.bytes,
                          clk.now());
      handleFrame(c, ev.bytes);
      return;
    case K::Oversized:
      // FRAME-06: more than 4,194,304 bytes before the LF is fatal.
      observeLifecycle(c, "frame_error", "oversized");
      fatal(c, "malformed plugin message: frame exceeds " + std::to_string(wire::kMaxFrameBytes) +
                   " bytes");
      return;
    case K::InvalidUtf8:
      // FRAME-04.
      observeLifecycle(c, "frame_error", "invalid UTF-8");
      fatal(c, "malformed plugin message: frame is not valid UTF-8 (byte " +
                   std::to_string(ev.utf8_error_at) + ")");
      return;
    case K::Eof:
      return;  // handled by onStdoutEof
  }
}

namespace {

// FRAME-19: R4 decodes into generic JSON values, where a repeated member name keeps the LAST
// value. RapidJSON keeps every copy and json::member() finds the first, so the engine removes the
// earlier copies before anything reads the frame. Linear per object (one map of names); recursion
// is bounded by the parser's depth limit.
void keepLastDuplicates(json::Value& v, json::Document::AllocatorType& a) {
  // Index loops: RapidJSON's mutable member iterators compare ambiguously under C++20.
  if (v.IsArray()) {
    for (rapidjson::SizeType k = 0; k < v.Size(); ++k) keepLastDuplicates(v[k], a);
    return;
  }
  if (!v.IsObject()) return;
  const rapidjson::SizeType n = v.MemberCount();
  // Owned keys: moving a member below moves its (possibly inline) name storage.
  std::map<std::string, rapidjson::SizeType> last;
  for (rapidjson::SizeType k = 0; k < n; ++k) {
    const json::Value& name = (v.MemberBegin() + k)->name;
    last[std::string(name.GetString(), name.GetStringLength())] = k;
  }
  json::Value out(rapidjson::kObjectType);
  for (rapidjson::SizeType k = 0; k < n; ++k) {
    auto m = v.MemberBegin() + k;
    if (last[std::string(m->name.GetString(), m->name.GetStringLength())] != k) continue;
    keepLastDuplicates(m->value, a);
    out.AddMember(m->name, m->value, a);  // moves name and value
  }
  v = std::move(out);
}

}  // namespace

void Engine::Impl::handleFrame(Conn& c, const std::string& bytes) {
  // FRAME-10/13/14: empty lines, BOMs and bad JSON are fatal, never answered with -32700.
  auto parsed = json::parse(bytes);
  if (!parsed) {
    fatal(c, "malformed plugin message: " + parsed.error().message);
    return;
  }
  if (!parsed->duplicates.empty()) keepLastDuplicates(parsed->doc, parsed->doc.GetAllocator());
  const json::Value& msg = parsed->doc;
  // FRAME-11: one JSON object per frame; arrays (batches) and scalars are fatal.
  if (!msg.IsObject()) {
    fatal(c, std::string("malformed plugin message: expected a JSON object, found ") +
                 json::typeName(msg));
    return;
  }
  // RPC-01: jsonrpc is exactly "2.0".
  auto ver = json::stringMember(msg, "jsonrpc");
  if (!ver || *ver != "2.0") {
    fatal(c, "malformed plugin message: jsonrpc must be the string \"2.0\"");
    return;
  }
  const json::Value* method = json::member(msg, "method");
  const json::Value* id = json::member(msg, "id");
  const json::Value* params = json::member(msg, "params");
  std::string extra;
  // RPC-02/03/05/19: classification and strict, closed envelopes.
  if (method) {
    if (!method->IsString()) return fatal(c, "malformed plugin message: method must be a string");
    if (id) {
      if (!validId(*id))
        return fatal(c, "malformed plugin message: request id must be an integer, string or null");
      if (!onlyMembers(msg, {"jsonrpc", "id", "method", "params"}, &extra))
        return fatal(c, "malformed plugin message: unknown request member `" + extra + "`");
      return handleRequest(c, msg);
    }
    if (!onlyMembers(msg, {"jsonrpc", "method", "params"}, &extra))
      return fatal(c, "malformed plugin message: unknown notification member `" + extra + "`");
    return handleNotification(c, msg);
  }
  (void)params;
  if (!id) return fatal(c, "malformed plugin message: response without id");
  if (!validId(*id))
    return fatal(c, "malformed plugin message: response id must be an integer, string or null");
  if (!onlyMembers(msg, {"jsonrpc", "id", "result", "error"}, &extra))
    return fatal(c, "malformed plugin message: unknown response member `" + extra + "`");
  const json::Value* result = json::member(msg, "result");
  const json::Value* error = json::member(msg, "error");
  // RPC-04: exactly one of result and error.
  if ((result == nullptr) == (error == nullptr))
    return fatal(c, "malformed plugin message: a response needs exactly one of result and error");
  if (error) {
    bool ok = error->IsObject();
    if (ok) {
      const json::Value* code = json::member(*error, "code");
      const json::Value* message = json::member(*error, "message");
      ok = code && code->IsInt() && message && message->IsString() &&
           onlyMembers(*error, {"code", "message", "data"}, &extra);
    }
    if (!ok)
      return fatal(c, "malformed plugin message: error must be {code: int32, message: string, data?}");
  }
  handleResponse(c, msg);
}

void Engine::Impl::handleResponse(Conn& c, const json::Value& msg) {
  const json::Value& id = msg["id"];
  // RPC-09: only integer ids correlate; unknown or timed-out ids are ignored.
  if (!id.IsInt64()) return;
  auto it = c.pending.find(id.GetInt64());
  if (it == c.pending.end()) return;
  PendingRequest pr = it->second;
  c.pending.erase(it);
  timers.cancel(pr.timer);
  const json::Value* error = json::member(msg, "error");
  switch (pr.kind) {
    case PendingRequest::Kind::Initialize:
      handleInitializeResult(c, msg);
      return;
    case PendingRequest::Kind::Ping: {
      // PING-01/03: result exactly {}; an error or malformed result fails this ping only.
      if (error) {
        finishPing(pr.handle, PingStatus::State::Failed,
                   "ping rejected: " + std::string(json::stringMember(*error, "message").value_or("")));
        return;
      }
      const json::Value& r = msg["result"];
      if (!r.IsObject() || r.MemberCount() != 0) {
        finishPing(pr.handle, PingStatus::State::Failed,
                   "malformed ping result: expected {}, found " + json::compact(r));
        return;
      }
      finishPing(pr.handle, PingStatus::State::Ok, "");
      return;
    }
    case PendingRequest::Kind::ToolCall:
      handleToolResult(c, pr, msg);
      return;
    case PendingRequest::Kind::Custom:
      if (pr.done) (*pr.done)(&msg, "");
      return;
  }
}

void Engine::Impl::handleRequest(Conn& c, const json::Value& msg) {
  std::string method(msg["method"].GetString(), msg["method"].GetStringLength());
  const json::Value* params = json::member(msg, "params");
  json::Value null_params;
  std::string id = idText(msg["id"]);  // RPC-17: echoed verbatim
  if (auto ait = async_handlers.find(method); ait != async_handlers.end()) {
    // Issue 5: deferred reply, answered with the original id (RPC-17, PROD-35).
    ConnId cid = c.id;
    auto sent = std::make_shared<bool>(false);
    Responder respond = [this, cid, id, sent](Expected<json::Document, RpcError> r) {
      if (*sent) return;
      *sent = true;
      Conn* cc = conn(cid);
      if (!cc || cc->ended) return;
      std::string out =
          r ? R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)" + json::compact(*r) + "}"
            : R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":)" +
                  std::to_string(r.error().code) + R"(,"message":)" + quoteJson(r.error().message) +
                  "}}";
      sendOrDefer(*cc, out);
    };
    ait->second(c.id, plugins[c.plugin].cfg.name, params ? *params : null_params, std::move(respond));
    return;
  }
  auto it = request_handlers.find(method);
  std::string reply;
  if (it == request_handlers.end() && has(EngineFault::UnknownRequestSuccess)) {
    reply = R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{}})";
  } else if (it == request_handlers.end() && cfg.protocol_version != "0.0.4" &&
             (method == "plugin/producer/register" || method == "plugin/producer/send" ||
              method == "plugin/producer/unregister" || method == "plugin/producer/discard" ||
              method == "plugin/recovery/complete")) {
    // PROD-39/42: the 0.0.6 producer methods exist even when the runtime has no producer
    // handler; such a connection is not producer-enabled, so -32040, never -32601.
    reply = R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":-32040,"message":)" +
            quoteJson("producer messaging is not enabled on this connection (the runtime has no producer handler)") + "}}";
  } else if (it == request_handlers.end()) {
    // RPC-13: -32601 and the connection continues.
    std::string text = cfg.protocol_version == "0.0.4"
                           ? "plugin method is reserved but not supported by this engine stage"
                           : "plugin method `" + method + "` is not supported by this engine";
    reply = R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":-32601,"message":)" +
            quoteJson(text) + "}}";
  } else {
    auto r = it->second(c.id, plugins[c.plugin].cfg.name, params ? *params : null_params);
    if (r)
      reply = R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)" + json::compact(*r) + "}";
    else
      reply = R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":)" +
              std::to_string(r.error().code) + R"(,"message":)" + quoteJson(r.error().message) + "}}";
  }
  sendOrDefer(c, reply);
}

void Engine::Impl::handleNotification(Conn& c, const json::Value& msg) {
  std::string_view method(msg["method"].GetString(), msg["method"].GetStringLength());
  // RPC-14: only plugin/emit is acted on; other notifications are ignored.
  if (method != "plugin/emit") return;
  const json::Value* params = json::member(msg, "params");
  json::Value null_params;
  handleEmit(c, params ? *params : null_params);
}

// PROTOCOL §6.3: the validation sequence, first failure ends the connection.
void Engine::Impl::handleInitializeResult(Conn& c, const json::Value& msg) {
  PluginSlot& p = plugins[c.plugin];
  if (c.startup_timer) { timers.cancel(c.startup_timer); c.startup_timer = 0; }
  if (c.shutdown_sent) return;  // shutting down: the handshake no longer matters
  // Step 1 (INIT-19).
  if (const json::Value* err = json::member(msg, "error")) {
    return fatal(c, "handshake rejected: " +
                        std::string(json::stringMember(*err, "message").value_or("")));
  }
  const json::Value& r = msg["result"];
  // Step 2 (INIT-12).
  const json::Value* pv = json::member(r, "protocol_version");
  if (!pv || !pv->IsString())
    return fatal(c, "malformed handshake result: protocol_version must be a string");
  // Step 3 (INIT-11): exact match, the reason contains the value found.
  std::string found(pv->GetString(), pv->GetStringLength());
  if (found != cfg.protocol_version && !has(EngineFault::AcceptWrongVersion))
    return fatal(c, "version mismatch: expected " + cfg.protocol_version + ", found " + found);
  // Step 4 (INIT-09/16/17): strict decode of the whole result.
  json::Path::Root root("result");
  json::Path path(root);
  std::string name, version;
  PluginCapabilities caps;
  const json::Value* tools = nullptr;
  {
    json::ObjectMapper o(r, path);
    std::string pv2;
    const json::Value* capv = nullptr;
    bool ok = o && o.map("protocol_version", pv2) && o.map("name", name) &&
              o.map("version", version);
    if (ok) {
      capv = o.get("capabilities");
      tools = o.get("tools");
      ok = o.closed();
      if (ok && !capv) ok = path.field("capabilities").report("required member is missing");
      if (ok && (!tools || !tools->IsArray()))
        ok = path.field("tools").report("required member must be an array");
    }
    if (ok) {
      json::Path cp = path.field("capabilities");
      json::ObjectMapper co(*capv, cp);
      std::vector<std::string> intercept;
      ok = co && co.map("tools", caps.tools) && co.map("resources", caps.resources) &&
           co.map("subscribe_events", caps.subscribe_events) &&
           co.map("subscribe_bus", caps.subscribe_bus) && co.map("publish_bus", caps.publish_bus) &&
           co.map("publish_session_events", caps.publish_session_events) &&
           (cfg.protocol_version == "0.0.4" ||
            co.map("producer_messaging", caps.producer_messaging)) &&
           co.map("intercept", intercept) && co.closed();
      if (ok) {
        for (std::size_t i = 0; i < intercept.size() && ok; ++i) {
          bool known = false;
          for (auto h : kHooks) known = known || h == intercept[i];
          if (!known) ok = cp.field("intercept").index(i).report("unknown hook `" + intercept[i] + "`");
        }
        caps.intercept = intercept;
      }
    }
    if (!ok) return fatal(c, "malformed handshake result: " + root.error().value_or("invalid"));
  }
  // Step 5 (INIT-13).
  if (name != p.cfg.name && !has(EngineFault::SkipNameCheck))
    return fatal(c, "plugin name mismatch: configured `" + p.cfg.name + "`, reported `" + name + "`");
  // Step 6 (INIT-20/21, TOOL-03/04).
  auto decls = validateTools(*tools, p.cfg.name);
  if (!decls) return fatal(c, decls.error());
  p.decls = std::move(*decls);
  // Step 7 (TOOL-26…28).
  auto claimed = claimTools(c.plugin);
  if (!claimed) {
    p.decls.clear();
    return fatal(c, claimed.error());
  }
  // Step 8 (INIT-23).
  c.handshake_done = true;
  p.status.capabilities = caps;
  p.status.plugin_version = version;
  bool engine_offers = cfg.protocol_version != "0.0.4" && cfg.producer_handler &&
                       p.cfg.producer_messaging;
  // INIT-24: a one-sided opt-in never fails the handshake.
  p.status.producer_enabled = engine_offers && caps.producer_messaging;
  refreshToolList(c.plugin);
  p.status.reason.reset();
  setState(p, PluginState::Connected, std::nullopt);
  // Step 9: recovery/start is the next frame on a producer-enabled connection (issue 5 runs it).
  if (p.status.producer_enabled && !has(EngineFault::NoRecoveryStart))
    writeFrame(c, R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  if (p.status.producer_enabled && has(EngineFault::RecoveryStartTwice))
    writeFrame(c, R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  if (conn_watch) conn_watch(c.id, p.cfg.name, true);
  if (has(EngineFault::SecondInitialize))
    writeFrame(c, R"({"jsonrpc":"2.0","id":)" + std::to_string(c.next_id++) +
                      R"(,"method":"plugin/initialize","params":)" + init_params + "}");  // RECOV-14: handshake wakes the watch
  auto deferred = std::move(c.deferred);
  c.deferred.clear();
  for (auto& f : deferred) writeFrame(c, f);
  pump(c);
}

}  // namespace conform::engine
