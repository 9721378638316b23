// mock_plugin/sdk.cpp — the dispatch half of the SDK state machine: frames in, frames out.
// Classification and strictness follow PROTOCOL §2–§3 and §17.11–12 exactly; every fatal
// condition names its rule ID so a user reading the plugin's stderr knows what the engine broke.
#include <algorithm>
#include <iostream>

#include "mock_plugin/sdk_core.h"

namespace conform::plugin {

// ---------------------------------------------------------------------------------------------
// Core basics
// ---------------------------------------------------------------------------------------------

Core::Core(PluginBuilder::Spec s, clock::Clock& c) : spec(std::move(s)), clk(c) {
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
  if (active >= kMaxCallbacks) return nullptr;
  ++active;
  auto s = std::make_shared<SlotToken>();
  s->core = weak_from_this();
  return s;
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
    wire::FrameEvent ev = std::move(in.front());
    in.pop_front();
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
  auto parsed = sj::parse(ev.bytes);
  if (!parsed) {
    // FRAME-10 (empty line), FRAME-13/14: malformed JSON is fatal, never answered with -32700.
    fatal("FRAME-13: malformed JSON from the engine: " + parsed.error());
    return;
  }
  const json::Value& msg = parsed.value();
  if (!msg.IsObject()) {
    // FRAME-12: a parseable frame that is not an object has no `method`; the SDK ignores it.
    log(std::string("conform-plugin: ignoring a frame that is not a JSON object (FRAME-12): ") +
        sj::typeName(msg));
    return;
  }
  onMessage(msg);
}

namespace {
bool validId(const json::Value& id) { return id.IsNull() || id.IsString() || id.IsInt64(); }
}  // namespace

void Core::onMessage(const json::Value& msg) {
  // RPC-01..05: the envelope is closed and strict; any violation is fatal (PROTOCOL §3.1).
  const json::Value* jr = sj::member(msg, "jsonrpc");
  if (!jr || !jr->IsString() || std::string_view(jr->GetString(), jr->GetStringLength()) != "2.0")
    return fatal("RPC-01: envelope member jsonrpc must be exactly \"2.0\"");
  const json::Value* method = sj::member(msg, "method");
  const json::Value* id = sj::member(msg, "id");
  if (method) {
    for (const auto& m : msg.GetObject()) {
      std::string_view n(m.name.GetString(), m.name.GetStringLength());
      if (n != "jsonrpc" && n != "method" && n != "id" && n != "params")
        return fatal("RPC-03: unknown envelope member \"" + std::string(n) + "\"");
    }
    if (!method->IsString()) return fatal("RPC-03: method must be a string");
    if (id && !validId(*id)) return fatal("RPC-05: id must be an int64 integer, a string or null");
  } else {
    const json::Value* result = sj::member(msg, "result");
    const json::Value* error = sj::member(msg, "error");
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
      sj::Fields f(*error, "error");
      const json::Value* code = f.req("code", sj::Kind::Any);
      f.req("message", sj::Kind::String);
      f.opt("data", sj::Kind::Any);
      if (!f.closed()) return fatal("RPC-03: malformed error object: " + f.error());
      if (!code->IsInt()) return fatal("RPC-03: error.code must be an int32 integer");
    }
  }
  if (observer && observer(msg)) return;  // fault gallery
  const json::Value* params = sj::member(msg, "params");
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
       std::to_string(code) + ",\"message\":" + sj::quote(message) + "}}");
}

namespace {
// PING-01 / SHUT-10 / RECOV-01: params that must be exactly {} (a missing params decodes as null,
// which fails strict decoding: RPC-11).
bool isEmptyObject(const json::Value* p) { return p && p->IsObject() && p->MemberCount() == 0; }
}  // namespace

void Core::onRequest(const json::Value& id, std::string_view method, const json::Value* params) {
  const std::string id_text = sj::write(id);
  if (method == "plugin/initialize") {
    if (!params) return fatal("RPC-11: plugin/initialize without params");
    sj::Fields f(*params, "params");
    f.req("protocol_version", sj::Kind::String);
    f.req("engine_version", sj::Kind::String);  // INIT-26: informational, never rejected
    const json::Value* caps = f.req("capabilities", sj::Kind::Object);
    if (!f.closed()) return fatal("SDK-25: undecodable plugin/initialize params: " + f.error());
    sj::Fields c(*caps, "params.capabilities");
    for (const char* k : {"ping", "shutdown", "tools", "event_streaming", "event_publishing", "interception"})
      c.req(k, sj::Kind::Bool);
    const json::Value* pm = nullptr;
    if (spec.profile == Profile::V006) pm = c.req("producer_messaging", sj::Kind::Bool);  // INIT-03
    if (!c.closed()) return fatal("SDK-25: undecodable plugin/initialize params: " + c.error());
    engine_producers = pm && pm->GetBool();
    initialized = true;
    respond(id_text, initializeResult());
    return;
  }
  if (method == "plugin/ping") {
    // PING-04: answered inline, without a callback slot.
    if (!isEmptyObject(params)) return fatal("SDK-25: plugin/ping params must be exactly {}");
    respond(id_text, "{}");
    return;
  }
  if (method == "plugin/tools/call") return onToolCall(id_text, params);
  constexpr std::string_view kIntercept = "plugin/intercept/";
  if (method.substr(0, kIntercept.size()) == kIntercept) {
    auto h = parseHook(method.substr(kIntercept.size()));
    if (!h || !spec.hooks.count(*h))  // HOOK-14: hook not registered
      return respondError(id_text, kMethodNotFound, "plugin method is not supported");
    return onHook(id_text, *h, params);
  }
  respondError(id_text, kMethodNotFound, "plugin method is not supported");  // RPC-15
}

void Core::onNotification(std::string_view method, const json::Value* params) {
  if (method == "plugin/shutdown") {
    if (!isEmptyObject(params)) return fatal("SHUT-10: plugin/shutdown params must be exactly {}");
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
  const json::Value& id = *sj::member(msg, "id");
  if (!id.IsInt64() || !pending.count(id.GetInt64())) {
    log("conform-plugin: ignoring a response with an unknown id " + sj::write(id));
    return;
  }
  RpcDone done = std::move(pending[id.GetInt64()]);
  pending.erase(id.GetInt64());
  if (const json::Value* err = sj::member(msg, "error")) {
    std::string message = sj::member(*err, "message")->GetString();
    int code = sj::member(*err, "code")->GetInt();
    if (done) done(unexpected(SdkError{ErrorKind::Rpc, message, code}));
    return;
  }
  if (done) done(sj::copyOf(*sj::member(msg, "result")));
}

// ---------------------------------------------------------------------------------------------
// Tools and hooks
// ---------------------------------------------------------------------------------------------

void Core::onToolCall(const std::string& id_text, const json::Value* params) {
  static const json::Value kNull;
  sj::Fields f(params ? *params : kNull, "params");
  const json::Value* tool = f.req("tool", sj::Kind::String);
  f.req("session_id", sj::Kind::String);
  f.req("context_id", sj::Kind::String);
  f.req("invocation_id", sj::Kind::String);
  const json::Value* args = f.req("arguments", sj::Kind::Any);
  bool res_null = false;
  const json::Value* res = f.reqNullable("resource", sj::Kind::String, &res_null);
  const json::Value* cancel = f.opt("cancellation_token", sj::Kind::String);
  if (!f.closed()) return respondError(id_text, kInvalidParams, "invalid plugin/tools/call params: " + f.error());
  std::string name = tool->GetString();
  auto it = std::find_if(spec.tools.begin(), spec.tools.end(),
                         [&](const ToolEntry& t) { return t.decl.name == name; });
  if (it == spec.tools.end()) return respondError(id_text, kMethodNotFound, "unknown tool `" + name + "`");
  if (it->schema) {
    if (auto err = it->schema->validate(*args)) return respondError(id_text, kInvalidParams, *err);
  }
  auto slot = takeSlot();
  if (!slot)  // SDK-17/18
    return respondError(id_text, kBusyCode, "plugin busy: all 64 callback slots are in use");
  ToolCall call;
  call.tool = name;
  call.session_id = f.str("session_id");
  call.context_id = f.str("context_id");
  call.invocation_id = f.str("invocation_id");
  call.arguments = sj::copyOf(*args);
  if (res && !res_null) call.resource = std::string(res->GetString());
  if (cancel) call.cancellation_token = std::string(cancel->GetString());
  auto g = std::make_shared<Grant>();
  g->session_id = call.session_id;
  g->token = call.context_id;
  g->request = true;
  g->decoded = clk.now();
  ToolReply reply;
  reply.st_ = std::make_shared<ReplyBase::State>();
  reply.st_->core = weak_from_this();
  reply.st_->id_text = id_text;
  reply.st_->what = "plugin/tools/call " + name;
  reply.st_->slot = std::move(slot);
  reply.st_->grant = g;
  reply.st_->output = &it->decl.output;
  try {
    it->handler(makeContext(g), std::move(call), reply);
  } catch (...) {
    reply.sendError(kInternalError, "tool handler panicked");  // SDK-26
  }
}

namespace {
struct HookField {
  const char* key;
  sj::Kind kind;
  char presence;  // 'r' req, 'n' req/null, 'o' opt
};
// Params of each hook beyond session_id and context_id (PROTOCOL §13.2; HOOK-17 … HOOK-53).
std::vector<HookField> hookFields(Hook h) {
  using K = sj::Kind;
  switch (h) {
    case Hook::ToolBeforeCall:
      return {{"tool", K::String, 'r'}, {"arguments", K::Any, 'r'}, {"permission_name", K::String, 'r'}, {"resource", K::String, 'n'}};
    case Hook::ToolAfterResult:
      return {{"tool", K::String, 'r'}, {"arguments", K::Any, 'r'}, {"result_content", K::String, 'r'}, {"is_error", K::Bool, 'r'}};
    case Hook::AgentBeforeStart: return {{"agent_path", K::String, 'r'}, {"prompt_context", K::Any, 'r'}};
    case Hook::SessionBeforeCompact:
      return {{"checkpoint_id", K::String, 'r'}, {"additions", K::Array, 'r'}, {"instructions", K::String, 'o'}};
    case Hook::UserBeforeInput: return {{"text", K::String, 'r'}};
    case Hook::ModelBeforeRequest:
      return {{"attempt_id", K::String, 'r'}, {"messages", K::Array, 'r'}, {"model", K::Object, 'r'}, {"params", K::Object, 'r'}};
    case Hook::ProviderBeforeHeaders: return {{"attempt_id", K::String, 'r'}, {"headers", K::Object, 'r'}};
    case Hook::ProviderBeforeRequest: return {{"attempt_id", K::String, 'r'}, {"payload", K::Any, 'r'}};
    case Hook::ProviderAfterResponse:
      return {{"attempt_id", K::String, 'r'}, {"status", K::U64, 'r'}, {"headers", K::Object, 'r'}};
    case Hook::MessageEnd: return {{"attempt_id", K::String, 'r'}, {"role", K::String, 'r'}, {"content", K::Array, 'r'}};
    case Hook::ModelBeforeSelect: return {{"from", K::Object, 'o'}, {"to", K::Object, 'r'}, {"source", K::String, 'r'}};
    case Hook::SessionBeforeFork: return {{"through_seq", K::U64, 'r'}};
    case Hook::SessionBeforeRevert: return {{"through_seq", K::U64, 'r'}, {"instructions", K::String, 'o'}};
  }
  return {};
}
}  // namespace

void Core::onHook(const std::string& id_text, Hook h, const json::Value* params) {
  static const json::Value kNull;
  sj::Fields f(params ? *params : kNull, "params");
  f.req("session_id", sj::Kind::String);
  f.req("context_id", sj::Kind::String);
  for (const HookField& hf : hookFields(h)) {
    if (hf.presence == 'r') f.req(hf.key, hf.kind);
    else if (hf.presence == 'n') f.reqNullable(hf.key, hf.kind, nullptr);
    else f.opt(hf.key, hf.kind);
  }
  if (!f.closed())  // HOOK-14: undecodable params → -32602
    return respondError(id_text, kInvalidParams,
                        std::string("invalid plugin/intercept/") + hookName(h) + " params: " + f.error());
  auto slot = takeSlot();
  if (!slot) return respondError(id_text, kBusyCode, "plugin busy: all 64 callback slots are in use");
  auto g = std::make_shared<Grant>();
  g->session_id = f.str("session_id");
  g->token = f.str("context_id");
  g->request = true;
  g->decoded = clk.now();
  HookReply reply;
  reply.st_ = std::make_shared<ReplyBase::State>();
  reply.st_->core = weak_from_this();
  reply.st_->id_text = id_text;
  reply.st_->what = std::string("plugin/intercept/") + hookName(h);
  reply.st_->slot = std::move(slot);
  reply.st_->grant = g;
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
  static const json::Value kNull;
  sj::Fields f(params ? *params : kNull, "params");
  f.req("session_id", sj::Kind::String);
  f.req("context_id", sj::Kind::String);
  const json::Value* seq = f.req("seq", sj::Kind::U64);
  const json::Value* ev = f.req("event", sj::Kind::Object);
  f.req("timestamp", sj::Kind::String);
  if (!f.closed()) {
    // EVT-11: the 0.0.6 SDK never fails the connection because of event content; 0.0.4 decodes
    // strictly (DELTA §1).
    if (spec.profile == Profile::V004) return fatal("SDK-25: undecodable plugin/event params: " + f.error());
    log("conform-plugin: dropping an undecodable plugin/event (EVT-11): " + f.error());
    return;
  }
  auto slot = takeSlot();
  if (!slot) {  // SDK-17: observational notifications are dropped with a stderr line
    log("conform-plugin: callback slots saturated (64 busy): dropped plugin/event seq " +
        std::to_string(seq->GetUint64()) + " (SDK-17)");
    return;
  }
  EventDelivery d;
  d.session_id = f.str("session_id");
  d.context_id = f.str("context_id");
  d.timestamp = f.str("timestamp");
  d.seq = seq->GetUint64();
  d.event = sj::copyOf(*ev);
  auto g = std::make_shared<Grant>();
  g->session_id = d.session_id;
  g->token = d.context_id;
  g->decoded = clk.now();
  Completion c;
  c.slot_ = std::move(slot);
  try {
    spec.on_event(makeContext(g), d, c);
  } catch (...) {
    log("conform-plugin: event handler panicked; continuing (EVT-23)");
  }
}

void Core::onBusEvent(const json::Value* params) {
  static const json::Value kNull;
  sj::Fields f(params ? *params : kNull, "params");
  f.req("session_id", sj::Kind::String);
  const json::Value* ctx = f.opt("context_id", sj::Kind::String);
  f.req("plugin", sj::Kind::String);
  f.req("name", sj::Kind::String);
  const json::Value* payload = f.req("payload", sj::Kind::Any);
  if (!f.closed()) return fatal("SDK-25: undecodable plugin/bus_event params: " + f.error());
  if (!spec.on_bus) return;
  auto slot = takeSlot();
  if (!slot) {
    log("conform-plugin: callback slots saturated (64 busy): dropped plugin/bus_event (SDK-17)");
    return;
  }
  BusDelivery d;
  d.session_id = f.str("session_id");
  d.plugin = f.str("plugin");
  d.name = f.str("name");
  if (ctx) d.context_id = std::string(ctx->GetString());
  d.payload = sj::copyOf(*payload);
  auto g = std::make_shared<Grant>();
  g->session_id = d.session_id;
  g->token = d.context_id;  // BUS-06: no context_id, no usable grant
  g->decoded = clk.now();
  Completion c;
  c.slot_ = std::move(slot);
  try {
    spec.on_bus(makeContext(g), d, c);
  } catch (...) {
    log("conform-plugin: bus handler panicked; continuing (SDK-26)");
  }
}

namespace {
std::optional<EmitStatus> parseStatus(const json::Value* v) {
  if (!v || !v->IsString()) return std::nullopt;
  std::string_view s(v->GetString(), v->GetStringLength());
  if (s == "published") return EmitStatus::Published;
  if (s == "dropped") return EmitStatus::Dropped;
  if (s == "rejected") return EmitStatus::Rejected;
  return std::nullopt;
}
}  // namespace

void Core::onEmitResult(const json::Value* params) {
  static const json::Value kNull;
  sj::Fields f(params ? *params : kNull, "params");
  f.req("name", sj::Kind::String);
  auto bus = parseStatus(f.req("bus", sj::Kind::String));
  auto durable = parseStatus(f.req("durable", sj::Kind::String));
  const json::Value* reason = f.opt("reason", sj::Kind::String);
  if (!f.closed() || !bus || !durable)
    return fatal("SDK-25: undecodable plugin/emit_result params: " +
                 (f.error().empty() ? std::string("unknown emit status") : f.error()));
  std::string name = f.str("name");
  // EMIT-25: first pending emit with this name, first in first out.
  auto it = std::find_if(pending_emits.begin(), pending_emits.end(), [&](const auto& p) { return p.first == name; });
  if (it == pending_emits.end()) {
    log("conform-plugin: plugin/emit_result for `" + name + "` matches no pending emit; ignored");
    return;
  }
  auto done = std::move(it->second);
  pending_emits.erase(it);
  EmitResult r;
  r.bus = *bus;  // EMIT-26: the engine's status is reported as received
  r.durable = *durable;
  if (reason) r.reason = std::string(reason->GetString());
  if (done) done(std::move(r));
}

void Core::onRecoveryStart(const json::Value* params) {
  if (!isEmptyObject(params)) log("conform-plugin: plugin/recovery/start params are not {} (RECOV-01)");
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
  recovery_busy = true;  // SDK-21: the dedicated slot, outside the 64
  auto slot = std::make_shared<SlotToken>();
  slot->core = weak_from_this();
  slot->recovery = true;
  rd.st_->slot = slot;
  auto g = std::make_shared<Grant>();  // no token: recovery has no emit grant
  try {
    spec.on_recovery(makeContext(g), rd);
  } catch (...) {
    rd.failed("recovery callback panicked");
  }
}

}  // namespace conform::plugin
