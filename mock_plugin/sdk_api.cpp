// mock_plugin/sdk_api.cpp — the author-facing half of the SDK: contexts and grants (SDK-06/07),
// replies, producers (SDK-09…16), hook result helpers (SDK-24), declarations (SDK-03) and the
// builder that derives capabilities from registrations (SDK-02).
#include <algorithm>
#include <set>

#include "core/protocol/lifecycle.h"
#include "core/protocol/producer.h"
#include "core/protocol/tools.h"
#include "core/protocol/validate.h"
#include "mock_plugin/sdk_core.h"

namespace conform::plugin {

// ---------------------------------------------------------------------------------------------
// Names and small helpers
// ---------------------------------------------------------------------------------------------

const char* protocolVersion(Profile p) { return p == Profile::V004 ? "0.0.4" : "0.0.6"; }
std::optional<Profile> parseProfile(std::string_view s) {
  if (s == "0.0.6" || s == "v006") return Profile::V006;
  if (s == "0.0.4" || s == "v004") return Profile::V004;
  return std::nullopt;
}

const char* hookName(Hook h) {
  // core/protocol's names are string literals, so data() is NUL-terminated.
  return protocol::toString(h).data();
}

std::string quote(std::string_view s) {
  json::Document d;
  return json::compact(json::str(s, d.GetAllocator()));
}
json::Document parseTrusted(std::string_view text) {
  auto r = json::parse(text);
  if (!r) return json::Document();
  return std::move(r.value().doc);
}

const char* toString(ErrorKind k) {
  switch (k) {
    case ErrorKind::ContextUnavailable: return "ContextUnavailable";
    case ErrorKind::PublishingNotEnabled: return "PublishingNotEnabled";
    case ErrorKind::ProducersNotEnabled: return "ProducersNotEnabled";
    case ErrorKind::InvalidArgument: return "InvalidArgument";
    case ErrorKind::TooManyPending: return "TooManyPending";
    case ErrorKind::TransportClosed: return "TransportClosed";
    case ErrorKind::Oversized: return "Oversized";
    case ErrorKind::Rpc: return "Rpc";
    case ErrorKind::Malformed: return "Malformed";
  }
  return "?";
}
std::string SdkError::str() const {
  std::string s = toString(kind);
  if (kind == ErrorKind::Rpc) s += " " + std::to_string(code);
  return s + ": " + message;
}
std::optional<std::string> checkDescription(std::string_view d) {
  if (auto e = protocol::checkDescription(d)) return "PROD-12: " + *e;
  return std::nullopt;
}

Result<IdempotencyKey> IdempotencyKey::make(std::string key) {
  if (auto e = protocol::checkIdempotencyKey(key)) return unexpected(SdkError{ErrorKind::InvalidArgument, "PROD-11: " + *e, 0});
  return IdempotencyKey(std::move(key));
}

std::string EventDelivery::type() const {
  return std::string(json::stringMember(event, "type").value_or(""));
}

// ---------------------------------------------------------------------------------------------
// Tool results
// ---------------------------------------------------------------------------------------------

ToolResult ToolResult::success(std::string text) { ToolResult r; r.text = std::move(text); return r; }
ToolResult ToolResult::error(std::string text) { ToolResult r; r.text = std::move(text); r.is_error = true; return r; }
ToolResult ToolResult::namedOutput(std::vector<std::pair<std::string, std::string>> s, bool is_error) {
  ToolResult r;
  r.named = true;
  r.streams = std::move(s);
  r.is_error = is_error;
  return r;
}

ToolDecl makeTool(std::string name, std::string description, std::string_view schema_json,
                  std::string permission_name, std::optional<std::string> primary, OutputDecl output) {
  ToolDecl d;
  d.name = std::move(name);
  d.description = std::move(description);
  d.parameters = parseTrusted(schema_json);
  d.permission_name = std::move(permission_name);
  d.primary_resource_param = std::move(primary);
  d.output = std::move(output);
  return d;
}

namespace {
protocol::ToolOutputDeclaration toProtocol(const OutputDecl& d) {
  protocol::ToolOutputDeclaration o;
  o.kind = d.named ? protocol::OutputKind::Named : protocol::OutputKind::Single;
  if (d.named) o.streams = d.streams;
  return o;
}
protocol::ToolOutput toProtocol(const ToolResult& r) {
  protocol::ToolOutput o;
  o.kind = r.named ? protocol::OutputKind::Named : protocol::OutputKind::Single;
  o.text = r.text;
  for (const auto& [n, t] : r.streams) o.streams.push_back({n, t});
  return o;
}
protocol::ToolDeclaration toProtocol(const ToolDecl& d) {
  protocol::ToolDeclaration t;
  t.name = d.name;
  t.description = d.description;
  t.parameters = protocol::JsonValue(d.parameters);
  t.permission_name = d.permission_name;
  t.primary_resource_param = d.primary_resource_param;
  t.output = toProtocol(d.output);
  return t;
}

// Model-facing rendering of named output for the 0.0.4 `content` member (0.0.4 has no streams).
std::string renderNamed(const ToolResult& r) {
  std::string s;
  for (const auto& [n, t] : r.streams) s += "[" + n + "]\n" + t + "\n";
  return s;
}

std::string resultJson(const ToolResult& r, Profile p) {
  json::Document d;
  if (p == Profile::V004) {
    protocol::v004::ToolCallResult v{r.named ? renderNamed(r) : r.text, r.is_error};
    return json::compact(toJSON(v, d.GetAllocator()));
  }
  protocol::ToolCallResult v{toProtocol(r), r.display, r.is_error};
  return json::compact(toJSON(v, d.GetAllocator()));
}

// SDK-03 checks core/protocol cannot do from one list: draft 2020-12 meta-validation of the
// schema (core/json/schema.h) and the profile's output rules (TOOL-03/04 via the output decoder).
std::optional<std::string> checkDeclExtras(const ToolDecl& d, Profile p) {
  const std::string t = "tool `" + d.name + "`: ";
  if (auto v = json::checkSchemaDocument(d.parameters)) return "INIT-21: " + t + "invalid parameters schema: " + v->str();
  if (auto c = json::Schema::compile(d.parameters); !c) return "INIT-21: " + t + "parameters schema: " + c.error();
  if (d.output.named) {
    if (p == Profile::V004) return "TOOL-03: " + t + "named output does not exist in protocol 0.0.4";
    json::Document doc;
    json::Value out = toJSON(toProtocol(d.output), doc.GetAllocator());
    if (d.output.streams.empty() || d.output.streams.size() > kMaxStreams)
      return "TOOL-03: " + t + "named output needs 1-8 streams";
    if (auto e = json::decode<protocol::ToolOutputDeclaration>(out, "output"); !e) return "TOOL-04: " + t + e.error();
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::string> validateToolDecl(const ToolDecl& d, Profile p) {
  if (auto e = protocol::checkToolDeclarations({toProtocol(d)})) return e->rule_id + ": " + e->message;
  return checkDeclExtras(d, p);
}

// ---------------------------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------------------------

bool ReplyBase::answered() const { return !st_ || st_->answered; }

bool ReplyBase::sendResult(json::Document result) {
  if (!st_ || st_->answered) return false;  // one reply per request (RPC-08)
  st_->answered = true;
  if (st_->grant) st_->grant->ended = true;  // SDK-07: request grant ends with the answer
  if (st_->slot) st_->slot->release();
  auto c = st_->core.lock();
  if (!c || !c->running()) return false;  // SHUT-09: abandoned after shutdown
  c->respond(st_->id_text, json::compact(result));
  return true;
}

bool ReplyBase::sendError(int code, std::string message) {
  if (!st_ || st_->answered) return false;
  st_->answered = true;
  if (st_->grant) st_->grant->ended = true;
  if (st_->slot) st_->slot->release();
  auto c = st_->core.lock();
  if (!c || !c->running()) return false;
  c->respondError(st_->id_text, code, message);
  return true;
}

ReplyBase::State::~State() {
  if (answered) return;
  if (grant) grant->ended = true;
  if (slot) slot->release();
  auto c = core.lock();
  if (c && c->running()) c->respondError(id_text, kInternalError, what + ": handler ended without answering");
}

bool ToolReply::ok(ToolResult r) {
  if (!st_ || st_->answered) return false;
  auto c = st_->core.lock();
  if (st_->output) {  // TOOL-11/12: a mismatching result never reaches the wire
    if (auto err = protocol::checkToolOutput(toProtocol(*st_->output), toProtocol(r)))
      return sendError(kInternalError, "tool handler result rejected (TOOL-11/TOOL-12): " + *err);
  }
  Profile p = c ? c->spec.profile : Profile::V006;
  if (!st_->answered) {
    st_->answered = true;
    if (st_->grant) st_->grant->ended = true;
    if (st_->slot) st_->slot->release();
    if (!c || !c->running()) return false;
    c->respond(st_->id_text, resultJson(r, p));
  }
  return true;
}

bool ToolReply::fail(ToolFailure f) { return sendError(f.code, std::move(f.message)); }

bool HookReply::answer(json::Document result) {
  if (!result.IsObject()) return sendError(kInternalError, "hook handler returned a non-object result");
  return sendResult(std::move(result));
}

void Completion::done() {
  if (slot_) slot_->release();
}

RecoveryDone::State::~State() {
  if (answered) return;
  answered = true;
  if (slot) slot->release();
  auto c = core.lock();
  if (c && c->running())
    c->request("plugin/recovery/complete",
               "{\"outcome\":{\"status\":\"failed\",\"message\":\"recovery callback ended without an outcome\"}}", {});
}

bool RecoveryDone::ready() {
  if (!st_ || st_->answered) return false;
  st_->answered = true;
  if (st_->slot) st_->slot->release();
  auto c = st_->core.lock();
  if (!c || !c->running()) return false;
  c->request("plugin/recovery/complete", "{\"outcome\":{\"status\":\"ready\"}}", [w = st_->core](Result<json::Document> r) {
    if (auto cc = w.lock(); cc && !r) cc->log("conform-plugin: recovery/complete failed: " + r.error().str());
  });
  return true;
}

bool RecoveryDone::failed(std::string message) {
  if (!st_ || st_->answered) return false;
  st_->answered = true;
  if (st_->slot) st_->slot->release();
  auto c = st_->core.lock();
  if (!c || !c->running()) return false;
  c->request("plugin/recovery/complete",
             "{\"outcome\":{\"status\":\"failed\",\"message\":" + quote(message) + "}}",
             [w = st_->core](Result<json::Document> r) {
               if (auto cc = w.lock(); cc && !r) cc->log("conform-plugin: recovery/complete failed: " + r.error().str());
             });
  return true;
}

// ---------------------------------------------------------------------------------------------
// Context, emit, producers
// ---------------------------------------------------------------------------------------------

Context Core::makeContext(std::shared_ptr<Grant> g) {
  Context c;
  c.core_ = weak_from_this();
  c.grant_ = std::move(g);
  return c;
}

const std::string& Context::sessionId() const {
  static const std::string kEmpty;
  return grant_ ? grant_->session_id : kEmpty;
}
std::optional<std::string> Context::contextId() const { return grant_ ? grant_->token : std::nullopt; }

void Context::after(clock::Duration d, std::function<void()> fn) const {
  if (auto c = core_.lock()) c->schedule(d, std::move(fn));
}
clock::TimePoint Context::now() const {
  auto c = core_.lock();
  return c ? c->clk.now() : clock::TimePoint{};
}
void Context::log(std::string_view line) const {
  if (auto c = core_.lock()) c->log(line);
}

void Context::emitBus(std::string_view session_id, std::string name, const json::Value& payload,
                      std::function<void(Result<EmitResult>)> done) {
  auto c = core_.lock();
  if (!c || !c->running()) {
    if (done) done(unexpected(SdkError{ErrorKind::TransportClosed, "transport closed", 0}));
    return;
  }
  c->emit(grant_, session_id, std::move(name), payload, std::move(done));
}

void Core::emit(const std::shared_ptr<Grant>& g, std::string_view session_id, std::string name,
                const json::Value& payload, std::function<void(Result<EmitResult>)> done) {
  auto failWith = [&](ErrorKind k, std::string msg) {
    if (done) done(unexpected(SdkError{k, std::move(msg), 0}));
  };
  // EMIT-24: not enabled → local failure, grant not consumed.
  if (!spec.publish_bus) return failWith(ErrorKind::PublishingNotEnabled, "bus publishing was not enabled");
  // SDK-06/07, BUS-06: only this callback's own, unspent, unexpired grant.
  if (!g || !g->token) return failWith(ErrorKind::ContextUnavailable, "this callback has no context grant");
  if (g->spent) return failWith(ErrorKind::ContextUnavailable, "the context grant was already spent");
  if (g->request && g->ended) return failWith(ErrorKind::ContextUnavailable, "the request grant ended with its answer");
  if (!g->request && clk.now() - g->decoded >= kNotificationGrant)
    return failWith(ErrorKind::ContextUnavailable, "the notification grant expired (4 s after decode)");
  if (session_id != g->session_id)
    return failWith(ErrorKind::ContextUnavailable, "the grant belongs to another session");
  std::string frame = "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/emit\",\"params\":{\"session_id\":" +
                      quote(session_id) + ",\"context_id\":" + quote(*g->token) +
                      ",\"name\":" + quote(name) + ",\"payload\":" + json::compact(payload) + "}}";
  if (frame.size() > wire::kMaxFrameBytes)  // FRAME-16: an oversized emit fails locally, unwritten
    return failWith(ErrorKind::Oversized, "the emit frame would exceed 4,194,304 bytes");
  g->spent = true;
  pending_emits.emplace_back(std::move(name), std::move(done));
  send(std::move(frame));
}

void Core::request(std::string_view method, std::string params_json, RpcDone done) {
  auto failWith = [&](ErrorKind k, std::string msg) {
    if (done) done(unexpected(SdkError{k, std::move(msg), 0}));
  };
  if (!running()) return failWith(ErrorKind::TransportClosed, "transport closed");
  if (pending.size() >= kMaxPendingReplies)  // SDK-20: fails locally, nothing written
    return failWith(ErrorKind::TooManyPending, "128 producer requests already await replies");
  std::int64_t id = next_id++;
  pending.emplace(id, std::move(done));
  send("{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) + ",\"method\":" + quote(method) +
       ",\"params\":" + params_json + "}");
}

namespace {
// Decodes a closed result with exactly one string member `key` (or none when key is empty).
template <class T>
Result<T> decodeResult(Result<json::Document> r) {
  if (!r) return unexpected(r.error());
  auto v = json::decode<T>(r.value(), "result");
  if (!v) return unexpected(SdkError{ErrorKind::Malformed, v.error(), 0});
  return std::move(v.value());
}

std::shared_ptr<Core> producerCore(const std::weak_ptr<Core>& w, SdkError* err) {
  auto c = w.lock();
  if (!c || !c->running()) { *err = {ErrorKind::TransportClosed, "transport closed", 0}; return nullptr; }
  if (!c->spec.producers) { *err = {ErrorKind::ProducersNotEnabled, "enableProducers() was not called", 0}; return nullptr; }
  return c;
}
}  // namespace

void Context::registerProducer(std::string session_id, std::function<void(Result<ProducerHandle>)> done) {
  SdkError err;
  auto c = producerCore(core_, &err);
  if (!c) { if (done) done(unexpected(err)); return; }
  std::weak_ptr<Core> w = core_;
  c->request("plugin/producer/register", "{\"session_id\":" + quote(session_id) + "}",
             [w, session_id, done](Result<json::Document> r) {
               auto res = decodeResult<protocol::ProducerRegisterResult>(std::move(r));
               if (!done) return;
               if (!res) return done(unexpected(res.error()));
               done(ProducerHandle(w, res->producer_id, session_id));
             });
}

void Context::discardProducerMessage(std::string session_id, std::string message_id, Done done) {
  SdkError err;
  auto c = producerCore(core_, &err);
  if (!c) { if (done) done(unexpected(err)); return; }
  c->request("plugin/producer/discard",
             "{\"session_id\":" + quote(session_id) + ",\"message_id\":" + quote(message_id) + "}",
             [done](Result<json::Document> r) {
               auto v = decodeResult<protocol::Empty>(std::move(r));
               if (!done) return;
               if (!v) return done(unexpected(v.error()));
               done(Ok{});
             });
}

void ProducerHandle::send(std::string body, std::string description, DeliveryMode mode,
                          const IdempotencyKey& key, ReceiptDone done) {
  if (auto e = checkDescription(description)) {  // PROD-12, validated before writing
    if (done) done(unexpected(SdkError{ErrorKind::InvalidArgument, *e, 0}));
    return;
  }
  SdkError err;
  auto c = producerCore(core_, &err);
  if (!c) { if (done) done(unexpected(err)); return; }
  c->request("plugin/producer/send",
             "{\"session_id\":" + quote(session_id_) + ",\"producer_id\":" + quote(id_) +
                 ",\"mode\":\"" + std::string(toString(mode)) + "\",\"idempotency_key\":" + quote(key.str()) +
                 ",\"description\":" + quote(description) + ",\"body\":" + quote(body) + "}",
             [done](Result<json::Document> r) {
               auto v = decodeResult<protocol::ProducerSendResult>(std::move(r));
               if (!done) return;
               if (!v) return done(unexpected(v.error()));
               done(v->message_id);
             });
}

void ProducerHandle::unregister(Done done) {
  SdkError err;
  auto c = producerCore(core_, &err);
  if (!c) { if (done) done(unexpected(err)); return; }
  c->request("plugin/producer/unregister",
             "{\"session_id\":" + quote(session_id_) + ",\"producer_id\":" + quote(id_) + "}",
             [done](Result<json::Document> r) {
               auto v = decodeResult<protocol::Empty>(std::move(r));
               if (!done) return;
               if (!v) return done(unexpected(v.error()));
               done(Ok{});
             });
}

void ProducerHandle::discard(std::string message_id, Done done) {
  Context ctx;
  ctx.core_ = core_;
  ctx.discardProducerMessage(session_id_, std::move(message_id), std::move(done));
}

// ---------------------------------------------------------------------------------------------
// Hook result helpers (SDK-24)
// ---------------------------------------------------------------------------------------------
namespace hooks {
namespace {
json::Document obj(std::initializer_list<std::pair<const char*, std::string>> members) {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : members) {
    s += std::string(first ? "" : ",") + quote(k) + ":" + v;
    first = false;
  }
  return parseTrusted(s + "}");
}
std::string q(std::string_view s) { return quote(s); }
}  // namespace

json::Document allow() { return obj({{"action", q("allow")}}); }
json::Document allowWithArguments(const json::Value& m) { return obj({{"action", q("allow")}, {"modified_arguments", json::compact(m)}}); }
json::Document block(std::string_view reason, std::optional<std::string_view> mtm) {
  if (mtm) return obj({{"action", q("block")}, {"reason", q(reason)}, {"message_to_model", q(*mtm)}});
  return obj({{"action", q("block")}, {"reason", q(reason)}});
}
json::Document keep() { return obj({{"action", q("keep")}}); }
json::Document replaceResult(std::string_view c) { return obj({{"action", q("replace")}, {"replacement_content", q(c)}}); }
json::Document appendPrompt(std::string_view t) { return obj({{"append_to_system_prompt", q(t)}}); }
json::Document replacePrompt(std::string_view t) { return obj({{"replace_system_prompt", q(t)}}); }
json::Document injectMessage(std::string_view role, std::string_view content) {
  return obj({{"inject_message", "{\"role\":" + q(role) + ",\"content\":" + q(content) + "}"}});
}
json::Document noChange() { return obj({}); }
json::Document compactAddendum(std::string_view t) { return obj({{"addendum", q(t)}}); }
json::Document cancelCompaction(std::string_view r) { return obj({{"cancel", "true"}, {"reason", q(r)}}); }
json::Document overrideCompactionInstructions(std::string_view t) { return obj({{"instructions_override", q(t)}}); }
json::Document inputAllow() { return obj({{"action", q("allow")}}); }
json::Document inputTransform(std::string_view t) { return obj({{"action", q("transform")}, {"new_text", q(t)}}); }
json::Document inputHandled(std::string_view r) { return obj({{"action", q("handled")}, {"reason", q(r)}}); }
json::Document replaceMessages(const json::Value& m) { return obj({{"action", q("replace")}, {"messages", json::compact(m)}}); }
json::Document replacePayload(const json::Value& p) { return obj({{"action", q("replace")}, {"payload", json::compact(p)}}); }
json::Document replaceContent(const json::Value& c) { return obj({{"action", q("replace")}, {"content", json::compact(c)}}); }
json::Document overrideRevertInstructions(std::string_view t) {
  return obj({{"action", q("override")}, {"instructions_override", q(t)}});
}
json::Document passThrough(Hook h) {
  switch (h) {
    case Hook::ToolBeforeCall:
    case Hook::ModelBeforeSelect:
    case Hook::SessionBeforeFork:
    case Hook::SessionBeforeRevert:
    case Hook::UserBeforeInput: return allow();
    case Hook::ToolAfterResult:
    case Hook::ModelBeforeRequest:
    case Hook::ProviderBeforeRequest:
    case Hook::MessageEnd: return keep();
    case Hook::AgentBeforeStart:
    case Hook::SessionBeforeCompact:
    case Hook::ProviderBeforeHeaders:
    case Hook::ProviderAfterResponse: return noChange();
  }
  return noChange();
}
}  // namespace hooks

// ---------------------------------------------------------------------------------------------
// Builder and server
// ---------------------------------------------------------------------------------------------

PluginBuilder::PluginBuilder(std::string name, std::string version) : spec_(std::make_shared<Spec>()) {
  spec_->name = std::move(name);
  spec_->version = std::move(version);
}
PluginBuilder& PluginBuilder::profile(Profile p) { spec_->profile = p; return *this; }
PluginBuilder& PluginBuilder::tool(ToolDecl decl, ToolHandler handler) {
  spec_->tools.push_back(ToolEntry{std::move(decl), std::move(handler), json::Schema()});
  return *this;
}
PluginBuilder& PluginBuilder::onEvent(EventHandler h) { spec_->on_event = std::move(h); return *this; }
PluginBuilder& PluginBuilder::onBusEvent(BusHandler h) { spec_->on_bus = std::move(h); return *this; }
PluginBuilder& PluginBuilder::enableBusPublishing() { spec_->publish_bus = true; return *this; }
PluginBuilder& PluginBuilder::enableProducers() { spec_->producers = true; return *this; }
PluginBuilder& PluginBuilder::onRecovery(RecoveryHandler h) { spec_->on_recovery = std::move(h); return *this; }
PluginBuilder& PluginBuilder::intercept(Hook hook, HookHandler h) { spec_->hooks[hook] = std::move(h); return *this; }

Expected<std::unique_ptr<PluginServer>, std::string> PluginBuilder::build(clock::Clock& clk) {
  Spec s = std::move(*spec_);
  // SDK-03: the whole list at once (duplicates, snake_case, description, primary parameter), then
  // per tool the schema meta-validation and the output declaration.
  std::vector<protocol::ToolDeclaration> decls;
  for (const auto& t : s.tools) decls.push_back(toProtocol(t.decl));
  if (auto e = protocol::checkToolDeclarations(decls)) return unexpected(e->rule_id + ": " + e->path + ": " + e->message);
  for (auto& t : s.tools) {
    if (auto e = checkDeclExtras(t.decl, s.profile)) return unexpected(*e);
    t.schema = json::Schema::compile(t.decl.parameters).value();  // compiled by checkDeclExtras already
  }
  if (s.profile == Profile::V004 && (s.producers || s.on_recovery))
    return unexpected(std::string("SDK-09: producer messaging does not exist in protocol 0.0.4"));
  if (s.on_recovery && !s.producers)
    return unexpected(std::string("SDK-14: onRecovery() needs enableProducers()"));
  auto core = std::make_shared<Core>(std::move(s), clk);
  return std::unique_ptr<PluginServer>(new PluginServer(std::move(core)));
}

std::string Core::initializeResult() const {
  // SDK-02: every flag is derived from registrations; SDK-05 / INIT-25: the two legacy flags are
  // always false. Written by core/protocol's codec of the profile's result shape.
  json::Document d;
  auto fill = [&](auto& caps) {
    caps.tools = !spec.tools.empty();
    caps.resources = false;
    caps.subscribe_events = static_cast<bool>(spec.on_event);
    caps.subscribe_bus = static_cast<bool>(spec.on_bus);
    caps.publish_bus = spec.publish_bus;
    caps.publish_session_events = false;
    for (const auto& [h, fn] : spec.hooks) caps.intercept.push_back(h);
  };
  if (spec.profile == Profile::V004) {
    protocol::v004::InitializeResult r;
    r.name = spec.name;
    r.version = spec.version;
    fill(r.capabilities);
    for (const auto& t : spec.tools) {
      auto full = toProtocol(t.decl);
      r.tools.push_back({full.name, full.description, full.parameters, full.permission_name, full.primary_resource_param});
    }
    return json::compact(toJSON(r, d.GetAllocator()));
  }
  protocol::InitializeResult r;
  r.name = spec.name;
  r.version = spec.version;
  fill(r.capabilities);
  r.capabilities.producer_messaging = spec.producers;
  for (const auto& t : spec.tools) r.tools.push_back(toProtocol(t.decl));
  return json::compact(toJSON(r, d.GetAllocator()));
}

PluginServer::PluginServer(std::shared_ptr<Core> c) : core_(std::move(c)) {}
PluginServer::~PluginServer() {
  // Abandon everything: replies and completions still held by handlers see a dead core.
  core_->st = core_->st == ServerState::Running ? ServerState::Finished : core_->st;
  core_->failPending("server destroyed");
}

bool PluginServer::canAcceptFrame() const {
  return core_->running() && !core_->reading_stopped && core_->in.size() < kInboundQueueFrames;
}
void PluginServer::receive(wire::FrameEvent ev) {
  if (core_->reading_stopped) return;
  core_->in.push_back(std::move(ev));
}
void PluginServer::receiveFrame(std::string_view text) {
  wire::FrameEvent ev;
  ev.kind = wire::FrameEvent::Kind::Frame;
  ev.bytes = std::string(text);
  ev.size = text.size();
  receive(std::move(ev));
}
void PluginServer::receiveEof() {
  wire::FrameEvent ev;
  ev.kind = wire::FrameEvent::Kind::Eof;
  receive(std::move(ev));
}
void PluginServer::process() { core_->process(); }
bool PluginServer::hasOutbound() const { return !core_->out.empty(); }
std::optional<std::string> PluginServer::popOutbound() {
  if (core_->out.empty()) return std::nullopt;
  std::string f = std::move(core_->out.front());
  core_->out.pop_front();
  return f;
}
std::size_t PluginServer::outboundSize() const { return core_->out.size(); }
ServerState PluginServer::state() const { return core_->st; }
const std::string& PluginServer::failure() const { return core_->failure; }
clock::TimePoint PluginServer::nextTimer() const { return core_->timers.nextDue(); }
std::size_t PluginServer::activeCallbacks() const { return core_->active; }
std::size_t PluginServer::pendingReplies() const { return core_->pending.size(); }
bool PluginServer::producerEnabled() const { return core_->spec.producers && core_->engine_producers; }
json::Document PluginServer::initializeResult() const { return parseTrusted(core_->initializeResult()); }
void PluginServer::setOutboundFilter(OutboundFilter f) { core_->filter = std::move(f); }
void PluginServer::setInboundObserver(InboundObserver f) { core_->observer = std::move(f); }
void PluginServer::writeRaw(std::string bytes) {
  if (core_->running()) core_->out.push_back(std::move(bytes));
}
void PluginServer::after(clock::Duration d, std::function<void()> fn) { core_->schedule(d, std::move(fn)); }
void PluginServer::setLogSink(std::function<void(std::string_view)> sink) { core_->log_sink = std::move(sink); }
void PluginServer::stopReading() { core_->reading_stopped = true; }
bool PluginServer::readingStopped() const { return core_->reading_stopped; }
void PluginServer::disconnect() { core_->finish(); }

}  // namespace conform::plugin
