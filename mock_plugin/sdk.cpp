// mock_plugin/sdk.cpp — the dispatch half of the SDK state machine: frames in, frames out.
// Classification and strictness follow PROTOCOL §2–§3 and §17.11–12 exactly; every fatal
// condition names its rule ID so a user reading the plugin's stderr knows what the engine broke.
#include <algorithm>
#include <iostream>

#include "core/protocol/emit.h"
#include "core/protocol/events.h"
#include "core/protocol/hooks.h"
#include "core/protocol/lifecycle.h"
#include "core/protocol/tools.h"
#include "mock_plugin/sdk_core.h"

namespace conform::plugin {

// ---------------------------------------------------------------------------------------------
// Core basics
// ---------------------------------------------------------------------------------------------

Core::Core(PluginBuilder::Spec s, clock::Clock& c) : spec(std::move(s)), clk(c) {
  in.clk = &clk;
  // FRAME-02: diagnostics go to stderr, never to stdout.
  log_sink = [](std::string_view l) { std::cerr << l << '\n' << std::flush; };
}

void Core::log(std::string_view line) {
  if (log_sink) log_sink(line);
}

void Core::send(std::string frame) {
  if (!running()) return;
  // FRAME-16: the SDK never writes an oversized frame; anything but an emit (checked earlier,
  // locally) is fatal.
  if (frame.size() > wire::kMaxFrameBytes) {
    fatal("FRAME-16: refusing to write an outbound frame of " + std::to_string(frame.size()) +
          " bytes (limit 4,194,304)");
    return;
  }
  if (filter) {
    for (auto& f : filter(std::move(frame))) out.push_back(std::move(f));
  } else {
    out.push_back(std::move(frame));
  }
}

void Core::fatal(std::string msg) {
  if (!running()) return;
  log("conform-plugin: fatal: " + msg);
  failure = std::move(msg);
  st = ServerState::Failed;
  failPending("transport closed: " + failure);
}

void Core::finish() {
  if (!running()) return;
  st = ServerState::Finished;
  failPending("transport closed");
}

void Core::failPending(const std::string& why) {
  // SDK-23 / EMIT-25: pending producer calls and emits fail with TransportClosed. Moved out first:
  // a callback may call back into the core (which now refuses everything).
  auto reqs = std::move(pending);
  pending.clear();
  auto emits = std::move(pending_emits);
  pending_emits.clear();
  for (auto& [id, done] : reqs)
    if (done) done(unexpected(SdkError{ErrorKind::TransportClosed, why, 0}));
  for (auto& [name, done] : emits)
    if (done) done(unexpected(SdkError{ErrorKind::TransportClosed, why, 0}));
}

void Core::schedule(clock::Duration d, std::function<void()> fn) {
  if (!running()) return;
  std::weak_ptr<Core> weak = weak_from_this();
  timers.schedule(clk.now() + d, [weak, fn = std::move(fn)] {
    auto c = weak.lock();
    if (!c || !c->running()) return;
    try {
      fn();
    } catch (...) {
      c->log("conform-plugin: a scheduled callback threw; ignored (SDK-26)");
    }
  });
}

std::shared_ptr<SlotToken> Core::takeSlot() {
  if (active >= spec.dev.max_callbacks) return nullptr;  // SDK-17: 64 (kMaxCallbacks) unless a fixture fault
  ++active;
  auto s = std::make_shared<SlotToken>();
  s->core = weak_from_this();
  return s;
}

std::shared_ptr<Grant> Core::newGrant(const std::string& session_id, std::optional<std::string> token, bool request) {
  std::shared_ptr<Grant> g;
  if (spec.dev.session_shared_grant) {  // fixture fault (SDK-06 broken): one grant per session
    auto& shared = session_grants[session_id];
    if (!shared) shared = std::make_shared<Grant>();
    *shared = Grant{};
    g = shared;
  } else {
    g = std::make_shared<Grant>();  // SDK-06: each context holds only its own frame's token
  }
  g->session_id = session_id;
  g->token = std::move(token);
  g->request = request;
  g->decoded = decoded_at;  // SDK-07: notification grants run from the reader's decode, not dispatch
  return g;
}

bool Core::dropReplyWhileSaturated(std::string_view what) {
  if (!spec.dev.replies_need_slot || active < spec.dev.max_callbacks) return false;
  log("conform-plugin: callback slots saturated: dropped " + std::string(what) + " (fixture fault, SDK-22)");
  return true;
}

void SlotToken::release() {
  if (released) return;
  released = true;
  if (auto c = core.lock()) {
    if (recovery) c->recovery_busy = false;
    else if (c->active > 0) --c->active;
  }
}

// ---------------------------------------------------------------------------------------------
// Inbound
// ---------------------------------------------------------------------------------------------

void Core::process() {
  // SDK-19: while the outbound queue holds 128 frames, writers wait, so we stop dispatching; the
  // inbound queue then fills and the reader stops (back-pressure, never a drop).
  while (running() && !in.empty() && out.size() < kOutboundQueueFrames) {
    auto [ev, at] = std::move(in.q.front());
    in.q.pop_front();
    decoded_at = at;
    handle(std::move(ev));
  }
  if (running()) timers.runDue(clk.now());
}

void Core::handle(wire::FrameEvent ev) {
  using K = wire::FrameEvent::Kind;
  switch (ev.kind) {
    case K::Eof:
      finish();  // FRAME-18: EOF on stdin ends the SDK normally
      return;
    case K::Oversized:
      fatal("FRAME-07: engine frame longer than 4,194,304 bytes");
      return;
    case K::InvalidUtf8:
      fatal("FRAME-05: engine frame is not valid UTF-8 (byte " + std::to_string(ev.utf8_error_at) + ")");
      return;
    case K::Frame:
      break;
  }
  // core/json's hardened parser: UTF-8 validated, depth capped, non-finite numbers refused.
  auto parsed = json::parse(ev.bytes);
  if (!parsed) {
    // FRAME-10 (empty line), FRAME-13/14: malformed JSON is fatal, never answered with -32700.
    fatal("FRAME-13: malformed JSON from the engine: " + parsed.error().message);
    return;
  }
  const json::Value& msg = parsed.value().doc;
  if (!msg.IsObject()) {
    // FRAME-12: a parseable frame that is not an object has no `method`; the SDK ignores it.
    log(std::string("conform-plugin: ignoring a frame that is not a JSON object (FRAME-12): ") +
        json::typeName(msg));
    return;
  }
  onMessage(msg);
}

namespace {
// The JSON-RPC error object (PROTOCOL §3.1): closed; code int32, message string, data any.
struct RpcErrorObject {
  std::int32_t code = 0;
  std::string message;
  std::optional<json::Document> data;
};
bool fromJSON(const json::Value& v, RpcErrorObject& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("code", r.code) || !o.map("message", r.message)) return false;
  (void)o.get("data");  // any value (opt)
  return o.closed();
}

// Decodes params with core/protocol's typed decoders (closed objects, presence rules, formats);
// a missing params member decodes as null, which fails strict decoding (RPC-11).
template <class T>
Expected<T, std::string> decodeParams(const json::Value* params) {
  static const json::Value kNull;
  return json::decode<T>(params ? *params : kNull, "params");
}

bool validId(const json::Value& id) { return id.IsNull() || id.IsString() || id.IsInt64(); }
}  // namespace

void Core::onMessage(const json::Value& msg) {
  // RPC-01..05: the envelope is closed and strict; any violation is fatal (PROTOCOL §3.1).
  const json::Value* jr = json::member(msg, "jsonrpc");
  if (!jr || !jr->IsString() || std::string_view(jr->GetString(), jr->GetStringLength()) != "2.0")
    return fatal("RPC-01: envelope member jsonrpc must be exactly \"2.0\"");
  const json::Value* method = json::member(msg, "method");
  const json::Value* id = json::member(msg, "id");
  if (method) {
    for (const auto& m : msg.GetObject()) {
      std::string_view n(m.name.GetString(), m.name.GetStringLength());
      if (n != "jsonrpc" && n != "method" && n != "id" && n != "params")
        return fatal("RPC-03: unknown envelope member \"" + std::string(n) + "\"");
    }
    if (!method->IsString()) return fatal("RPC-03: method must be a string");
    if (id && !validId(*id)) return fatal("RPC-05: id must be an int64 integer, a string or null");
  } else {
    const json::Value* result = json::member(msg, "result");
    const json::Value* error = json::member(msg, "error");
    for (const auto& m : msg.GetObject()) {
      std::string_view n(m.name.GetString(), m.name.GetStringLength());
      if (n != "jsonrpc" && n != "id" && n != "result" && n != "error")
        return fatal("RPC-03: unknown response member \"" + std::string(n) + "\"");
    }
    if (!id) return fatal("RPC-03: a response needs an id");
    if (!validId(*id)) return fatal("RPC-05: id must be an int64 integer, a string or null");
    if ((result != nullptr) == (error != nullptr))
      return fatal("RPC-04: a response carries exactly one of result and error");
    if (error) {
      if (auto e = json::decode<RpcErrorObject>(*error, "error"); !e)
        return fatal("RPC-03: malformed error object: " + e.error());
    }
  }
  if (observer && observer(msg)) return;  // fault gallery
  const json::Value* params = json::member(msg, "params");
  std::string_view m = method ? std::string_view(method->GetString(), method->GetStringLength()) : "";
  if (method && id) onRequest(*id, m, params);
  else if (method) onNotification(m, params);
  else onResponse(msg);
}

void Core::respond(std::string_view id_text, std::string result_json) {
  send("{\"jsonrpc\":\"2.0\",\"id\":" + std::string(id_text) + ",\"result\":" + result_json + "}");
}

void Core::respondError(std::string_view id_text, int code, std::string_view message) {
  send("{\"jsonrpc\":\"2.0\",\"id\":" + std::string(id_text) + ",\"error\":{\"code\":" +
       std::to_string(code) + ",\"message\":" + quote(message) + "}}");
}

namespace {
// PING-01 / SHUT-10 / RECOV-01: params that must be exactly {}.
bool isEmptyParams(const json::Value* p) { return decodeParams<protocol::Empty>(p).has_value(); }

// Decodes the params of one hook with core/protocol's decoder of that hook (HOOK-17 … HOOK-53).
std::optional<std::string> checkHookParams(Hook h, const json::Value* p) {
  auto err = [](auto r) -> std::optional<std::string> {
    if (r) return std::nullopt;
    return r.error();
  };
  using namespace protocol;
  switch (h) {
    case Hook::ToolBeforeCall: return err(decodeParams<ToolBeforeCallParams>(p));
    case Hook::ToolAfterResult: return err(decodeParams<ToolAfterResultParams>(p));
    case Hook::AgentBeforeStart: return err(decodeParams<AgentBeforeStartParams>(p));
    case Hook::SessionBeforeCompact: return err(decodeParams<SessionBeforeCompactParams>(p));
    case Hook::UserBeforeInput: return err(decodeParams<UserBeforeInputParams>(p));
    case Hook::ModelBeforeRequest: return err(decodeParams<ModelBeforeRequestParams>(p));
    case Hook::ProviderBeforeHeaders: return err(decodeParams<ProviderBeforeHeadersParams>(p));
    case Hook::ProviderBeforeRequest: return err(decodeParams<ProviderBeforeRequestParams>(p));
    case Hook::ProviderAfterResponse: return err(decodeParams<ProviderAfterResponseParams>(p));
    case Hook::MessageEnd: return err(decodeParams<MessageEndParams>(p));
    case Hook::ModelBeforeSelect: return err(decodeParams<ModelBeforeSelectParams>(p));
    case Hook::SessionBeforeFork: return err(decodeParams<SessionBeforeForkParams>(p));
    case Hook::SessionBeforeRevert: return err(decodeParams<SessionBeforeRevertParams>(p));
  }
  return std::string("unknown hook");
}
}  // namespace

void Core::onRequest(const json::Value& id, std::string_view method, const json::Value* params) {
  const std::string id_text = json::compact(id);
  if (spec.dev.shared_id_space && id.IsInt64()) {
    // Fixture fault (RPC-18 broken): one id table for both directions, so the engine's request
    // resolves the plugin's own pending request with the same number and is never answered.
    if (auto it = pending.find(id.GetInt64()); it != pending.end()) {
      RpcDone done = std::move(it->second);
      pending.erase(it);
      static const json::Value kNull;
      if (done) done(json::copy(params ? *params : kNull));
      return;
    }
  }
  if (method == "plugin/initialize") {
    // SDK-25: undecodable initialize params are fatal. The profile's decoder also insists on its own
    // protocol_version (exact match before 1.0, PROTOCOL §18) and on its capability set (INIT-03).
    // engine_version is informational and never refused (INIT-26).
    if (spec.profile == Profile::V006) {
      auto p = decodeParams<protocol::InitializeParams>(params);
      if (!p) return fatal("SDK-25: undecodable plugin/initialize params: " + p.error());
      engine_producers = p->capabilities.producer_messaging;
    } else {
      auto p = decodeParams<protocol::v004::InitializeParams>(params);
      if (!p) return fatal("SDK-25: undecodable plugin/initialize params: " + p.error());
      engine_producers = false;
    }
    initialized = true;
    respond(id_text, initializeResult());
    return;
  }
  if (method == "plugin/ping") {
    // PING-04: answered inline, without a callback slot.
    if (!isEmptyParams(params)) return fatal("SDK-25: plugin/ping params must be exactly {}");
    if (spec.dev.ping_takes_slot) {  // fixture fault (PING-04 broken): ping waits for a slot like a callback
      auto slot = takeSlot();
      if (!slot) return respondError(id_text, spec.dev.busy_code, "plugin busy: all callback slots are in use");
    }
    respond(id_text, "{}");
    return;
  }
  if (method == "plugin/tools/call") return onToolCall(id_text, params);
  if (auto h = protocol::hookOfMethod(method)) {
    if (!spec.hooks.count(*h))  // HOOK-14: hook not registered
      return respondError(id_text, kMethodNotFound, "plugin method is not supported");
    return onHook(id_text, *h, params);
  }
  respondError(id_text, kMethodNotFound, "plugin method is not supported");  // RPC-15
}

void Core::onNotification(std::string_view method, const json::Value* params) {
  if (method == "plugin/shutdown") {
    if (!isEmptyParams(params)) return fatal("SHUT-10: plugin/shutdown params must be exactly {}");
    return finish();  // SHUT-09: in-flight handlers are abandoned without responses
  }
  if (method == "plugin/event") return onEvent(params);
  if (method == "plugin/bus_event") return onBusEvent(params);
  if (method == "plugin/emit_result") return onEmitResult(params);
  if (method == "plugin/recovery/start") return onRecoveryStart(params);
  // RPC-15: unknown notifications are ignored.
}

void Core::onResponse(const json::Value& msg) {
  // SDK-22: responses are processed on the reader path, independent of callback slots.
  const json::Value& id = *json::member(msg, "id");
  if (dropReplyWhileSaturated("a response to request " + json::compact(id))) return;
  if (!id.IsInt64() || !pending.count(id.GetInt64())) {
    log("conform-plugin: ignoring a response with an unknown id " + json::compact(id));
    return;
  }
  RpcDone done = std::move(pending[id.GetInt64()]);
  pending.erase(id.GetInt64());
  if (const json::Value* err = json::member(msg, "error")) {
    std::string message = json::member(*err, "message")->GetString();
    int code = json::member(*err, "code")->GetInt();
    if (done) done(unexpected(SdkError{ErrorKind::Rpc, message, code}));
    return;
  }
  if (done) done(json::copy(*json::member(msg, "result")));
}

// ---------------------------------------------------------------------------------------------
// Tools and hooks
// ---------------------------------------------------------------------------------------------

void Core::onToolCall(const std::string& id_text, const json::Value* params) {
  auto p = decodeParams<protocol::ToolCallParams>(params);  // TOOL-05, TOOL-31: strict decoding
  if (!p) return respondError(id_text, kInvalidParams, "invalid plugin/tools/call params: " + p.error());
  auto it = std::find_if(spec.tools.begin(), spec.tools.end(),
                         [&](const ToolEntry& t) { return t.decl.name == p->tool; });
  if (it == spec.tools.end()) return respondError(id_text, kMethodNotFound, "unknown tool `" + p->tool + "`");
  // Arguments are validated against the declared schema before the handler runs (TOOL-31).
  if (auto v = it->schema.validate(p->arguments.get()))
    return respondError(id_text, kInvalidParams,
                        "arguments do not match the parameter schema of `" + p->tool + "`: " + v->str());
  auto slot = takeSlot();
  if (!slot)  // SDK-17/18
    return respondError(id_text, spec.dev.busy_code, "plugin busy: all 64 callback slots are in use");
  ToolCall call;
  call.tool = p->tool;
  call.session_id = p->session_id;
  call.context_id = p->context_id;
  call.invocation_id = p->invocation_id;
  call.arguments = std::move(p->arguments.doc());
  call.resource = p->resource;
  call.cancellation_token = p->cancellation_token;
  auto g = newGrant(call.session_id, call.context_id, /*request=*/true);
  ToolReply reply;
  reply.st_ = std::make_shared<ReplyBase::State>();
  reply.st_->core = weak_from_this();
  reply.st_->id_text = id_text;
  reply.st_->what = "plugin/tools/call " + call.tool;
  reply.st_->slot = std::move(slot);
  // SDK-07: the answer ends the request grant the context holds (the fixture fault
  // grant_outlives_answer ends a copy instead).
  reply.st_->grant = spec.dev.grant_outlives_answer ? std::make_shared<Grant>(*g) : g;
  reply.st_->output = &it->decl.output;
  try {
    it->handler(makeContext(g), std::move(call), reply);
  } catch (...) {
    reply.sendError(spec.dev.panic_code, "tool handler panicked");  // SDK-26: -32603
  }
}

void Core::onHook(const std::string& id_text, Hook h, const json::Value* params) {
  if (auto e = checkHookParams(h, params))  // HOOK-14: undecodable params → -32602
    return respondError(id_text, kInvalidParams,
                        std::string("invalid plugin/intercept/") + hookName(h) + " params: " + *e);
  auto slot = takeSlot();
  if (!slot) return respondError(id_text, spec.dev.busy_code, "plugin busy: all 64 callback slots are in use");
  auto g = newGrant(std::string(*json::stringMember(*params, "session_id")),
                    std::string(*json::stringMember(*params, "context_id")), /*request=*/true);
  HookReply reply;
  reply.st_ = std::make_shared<ReplyBase::State>();
  reply.st_->core = weak_from_this();
  reply.st_->id_text = id_text;
  reply.st_->what = std::string("plugin/intercept/") + hookName(h);
  reply.st_->slot = std::move(slot);
  reply.st_->grant = spec.dev.grant_outlives_answer ? std::make_shared<Grant>(*g) : g;
  try {
    spec.hooks[h](makeContext(g), *params, reply);
  } catch (...) {
    reply.sendError(kInternalError, "hook handler panicked");  // HOOK-14, SDK-26
  }
}

// ---------------------------------------------------------------------------------------------
// Events, bus, emit results, recovery
// ---------------------------------------------------------------------------------------------

void Core::onEvent(const json::Value* params) {
  if (!spec.on_event) return;
  auto p = decodeParams<protocol::EventParams>(params);
  if (!p) {
    // EVT-11: the 0.0.6 SDK never fails the connection because of event content; 0.0.4 decodes
    // strictly (DELTA §1).
    if (spec.profile == Profile::V004) return fatal("SDK-25: undecodable plugin/event params: " + p.error());
    log("conform-plugin: dropping an undecodable plugin/event (EVT-11): " + p.error());
    return;
  }
  auto slot = takeSlot();
  if (!slot) {  // SDK-17: observational notifications are dropped with a stderr line
    log("conform-plugin: callback slots saturated (64 busy): dropped plugin/event seq " + std::to_string(p->seq) +
        " (SDK-17)");
    return;
  }
  EventDelivery d;
  d.session_id = p->session_id;
  d.context_id = p->context_id;
  d.timestamp = p->timestamp;
  d.seq = p->seq;
  d.event = std::move(p->event.doc());
  auto g = newGrant(d.session_id, d.context_id, /*request=*/false);
  Completion c;
  c.slot_ = std::move(slot);
  try {
    spec.on_event(makeContext(g), d, c);
  } catch (...) {
    if (spec.dev.event_panic_fatal) return fatal("event handler panicked (fixture fault: EVT-23 broken)");
    log("conform-plugin: event handler panicked; continuing (EVT-23, SDK-26)");
  }
}

void Core::onBusEvent(const json::Value* params) {
  auto p = decodeParams<protocol::BusEventParams>(params);
  if (!p) return fatal("SDK-25: undecodable plugin/bus_event params: " + p.error());
  if (!spec.on_bus) return;
  auto slot = takeSlot();
  if (!slot) {
    log("conform-plugin: callback slots saturated (64 busy): dropped plugin/bus_event (SDK-17)");
    return;
  }
  BusDelivery d;
  d.session_id = p->session_id;
  d.plugin = p->plugin;
  d.name = p->name;
  d.context_id = p->context_id;
  d.payload = std::move(p->payload.doc());
  auto g = newGrant(d.session_id, d.context_id, /*request=*/false);  // BUS-06: no context_id, no usable grant
  Completion c;
  c.slot_ = std::move(slot);
  try {
    spec.on_bus(makeContext(g), d, c);
  } catch (...) {
    log("conform-plugin: bus handler panicked; continuing (SDK-26)");
  }
}

void Core::onEmitResult(const json::Value* params) {
  auto p = decodeParams<protocol::EmitResultParams>(params);
  if (!p) return fatal("SDK-25: undecodable plugin/emit_result params: " + p.error());
  if (dropReplyWhileSaturated("plugin/emit_result for `" + p->name + "`")) return;
  // EMIT-25: first pending emit with this name, first in first out (the fixture fault
  // emit_pairing_lifo takes the newest one instead).
  auto same = [&](const auto& e) { return e.first == p->name; };
  auto it = std::find_if(pending_emits.begin(), pending_emits.end(), same);
  if (spec.dev.emit_pairing_lifo) {
    auto rit = std::find_if(pending_emits.rbegin(), pending_emits.rend(), same);
    it = rit == pending_emits.rend() ? pending_emits.end() : std::prev(rit.base());
  }
  if (it == pending_emits.end()) {
    log("conform-plugin: plugin/emit_result for `" + p->name + "` matches no pending emit; ignored");
    return;
  }
  auto done = std::move(it->second);
  pending_emits.erase(it);
  EmitResult r;
  r.bus = p->bus;  // EMIT-26, SDK-08: the engine's status is reported as received
  r.durable = p->durable;
  r.reason = p->reason;
  if (spec.dev.emit_optimistic) r.bus = EmitStatus::Published;  // fixture fault: SDK-08 broken
  if (spec.dev.emit_status_collapsed && r.bus != EmitStatus::Published) r.bus = EmitStatus::Dropped;  // EMIT-26 broken
  if (done) done(std::move(r));
}

void Core::onRecoveryStart(const json::Value* params) {
  if (!isEmptyParams(params)) log("conform-plugin: plugin/recovery/start params are not {} (RECOV-01)");
  if (!spec.producers) {
    log("conform-plugin: plugin/recovery/start on a connection without producer messaging; ignored");
    return;
  }
  if (recovery_started) {
    log("conform-plugin: second plugin/recovery/start ignored (RECOV-02)");
    return;
  }
  recovery_started = true;
  RecoveryDone rd;
  rd.st_ = std::make_shared<RecoveryDone::State>();
  rd.st_->core = weak_from_this();
  if (!spec.on_recovery) {  // SDK-16: no callback → ready at once
    rd.ready();
    return;
  }
  std::shared_ptr<SlotToken> slot;
  if (spec.dev.recovery_takes_slot) {  // fixture fault (SDK-21 broken): recovery uses an ordinary slot
    slot = takeSlot();
    if (!slot) {
      log("conform-plugin: callback slots saturated: recovery callback not run (fixture fault, SDK-21)");
      return;
    }
  } else {
    recovery_busy = true;  // SDK-21: the dedicated slot, outside the 64
    slot = std::make_shared<SlotToken>();
    slot->core = weak_from_this();
    slot->recovery = true;
  }
  rd.st_->slot = slot;
  auto g = std::make_shared<Grant>();  // no token: recovery has no emit grant
  try {
    spec.on_recovery(makeContext(g), rd);
  } catch (...) {
    rd.failed("recovery callback panicked");
  }
}

PluginBuilder& PluginBuilder::deviations(SdkDeviations d) {
  spec_->dev = d;
  return *this;
}

}  // namespace conform::plugin
