// mock_engine/driver — see driver.h and docs/driver-protocol.md.
#include "mock_engine/driver.h"

#include <chrono>
#include <cstdio>
#include <deque>

#include "core/json/json.h"
#include "core/trace/trace.h"

namespace conform::engine {

namespace {

std::string b(bool v) { return v ? "true" : "false"; }

std::string strList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + quoteJson(v[i]);
  return out + "]";
}

std::string pingJson(const PingStatus& p) {
  const char* st = p.state == PingStatus::State::Ok ? "ok"
                   : p.state == PingStatus::State::Failed ? "failed" : "pending";
  return R"({"plugin":)" + quoteJson(p.plugin) + R"(,"state":")" + st + R"(","reason":)" +
         quoteJson(p.reason) + "}";
}

// Driver-level error codes (docs/driver-protocol.md).
constexpr int kInvalidParams = -32602;
constexpr int kMethodNotFound = -32601;
constexpr int kActionFailed = -32000;

// trace.start: at most this many records are kept between two trace.read calls; older ones are
// dropped and counted (a driver that never reads must not grow the engine without bound).
constexpr std::size_t kMaxTraceRecords = 100'000;

}  // namespace

class Driver::TraceTap final : public Observer {
 public:
  TraceTap(std::string plugin, clock::Clock& clk) : plugin_(std::move(plugin)), t0_(clk.now()) {}
  void onFrame(const std::string& plugin, ConnId conn, Direction dir, std::string_view frame,
               clock::TimePoint at) override {
    if (!plugin_.empty() && plugin != plugin_) return;
    add(R"({"plugin":)" + quoteJson(plugin) + R"(,"epoch":)" + std::to_string(conn) + R"(,"dir":")" +
        (dir == Direction::ToPlugin ? "to_plugin" : "from_plugin") + R"(","frame":)" + quoteJson(frame) +
        R"(,"t_ms":)" + ms(at) + "}");
  }
  void onLifecycle(const std::string& plugin, ConnId conn, std::string_view kind, std::string_view detail,
                   clock::TimePoint at) override {
    if (!plugin_.empty() && plugin != plugin_) return;
    add(R"({"plugin":)" + quoteJson(plugin) + R"(,"epoch":)" + std::to_string(conn) + R"(,"event":)" +
        quoteJson(kind) + R"(,"detail":)" + quoteJson(detail) + R"(,"t_ms":)" + ms(at) + "}");
  }
  std::string read() {
    std::string out = R"({"records":[)";
    for (std::size_t i = 0; i < records_.size(); ++i) out += (i ? "," : "") + records_[i];
    out += R"(],"dropped":)" + std::to_string(dropped_) + "}";
    records_.clear();
    dropped_ = 0;
    return out;
  }

 private:
  void add(std::string rec) {
    if (records_.size() >= kMaxTraceRecords) {
      records_.pop_front();
      ++dropped_;
    }
    records_.push_back(std::move(rec));
  }
  std::string ms(clock::TimePoint at) const {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(at - t0_).count());
  }
  std::string plugin_;
  clock::TimePoint t0_;
  std::deque<std::string> records_;
  std::uint64_t dropped_ = 0;
};

Driver::~Driver() {
  if (trace_) engine_.setObserver(nullptr);
}

std::string statusJson(const PluginStatus& s) {
  std::string diags = "{";
  bool first = true;
  for (auto& [k, n] : s.diagnostics) {
    diags += (first ? "" : ",") + quoteJson(k) + ":" + std::to_string(n);
    first = false;
  }
  diags += "}";
  const auto& c = s.capabilities;
  return R"({"plugin":)" + quoteJson(s.plugin) + R"(,"state":")" + toString(s.state) +
         R"(","reason":)" + (s.reason ? quoteJson(*s.reason) : "null") + R"(,"tools":)" +
         strList(s.tools) + R"(,"dropped_events":)" + std::to_string(s.dropped_events) +
         R"(,"dropped_by_class":{"chunk":)" + std::to_string(s.dropped_by_class[0]) +
         R"(,"ordinary":)" + std::to_string(s.dropped_by_class[1]) + R"(,"terminal":)" +
         std::to_string(s.dropped_by_class[2]) + R"(},"diagnostics":)" + diags + R"(,"notes":)" +
         strList(s.notes) + R"(,"epoch":)" + std::to_string(s.epoch) + R"(,"spawn_count":)" +
         std::to_string(s.spawn_count) + R"(,"exit_status":)" +
         (s.exit_status ? quoteJson(*s.exit_status) : "null") + R"(,"queued":)" +
         std::to_string(s.queued) + R"(,"producer_enabled":)" + b(s.producer_enabled) +
         R"(,"capabilities":{"tools":)" + b(c.tools) + R"(,"subscribe_events":)" +
         b(c.subscribe_events) + R"(,"subscribe_bus":)" + b(c.subscribe_bus) +
         R"(,"publish_bus":)" + b(c.publish_bus) + R"(,"publish_session_events":)" +
         b(c.publish_session_events) + R"(,"producer_messaging":)" + b(c.producer_messaging) +
         R"(,"intercept":)" + strList(c.intercept) + "}}";
}

std::string toolCallJson(const ToolCallStatus& c) {
  return R"({"invocation_id":)" + quoteJson(c.invocation_id) + R"(,"session_id":)" +
         quoteJson(c.session_id) + R"(,"tool":)" + quoteJson(c.tool) + R"(,"plugin":)" +
         quoteJson(c.plugin) + R"(,"state":")" + toString(c.state) + R"(","reason":)" +
         quoteJson(c.reason) + R"(,"context_id":)" + quoteJson(c.context_id) + R"(,"resource":)" +
         (c.resource ? quoteJson(*c.resource) : "null") + R"(,"permission_resource":)" +
         quoteJson(c.permission_resource) + R"(,"approval_display":)" + quoteJson(c.approval_display) +
         R"(,"output":)" +
         (c.output ? json::compact(*c.output) : "null") + R"(,"display":)" +
         (c.display ? quoteJson(*c.display) : "null") + R"(,"is_error":)" + b(c.is_error) +
         R"(,"incomplete":)" + b(c.incomplete) + R"(,"hook_blocked":)" + b(c.hook_blocked) +
         R"(,"model_content":)" + (c.model_content ? quoteJson(*c.model_content) : "null") +
         R"(,"arguments":)" + (c.arguments ? json::compact(*c.arguments) : "null") + "}";
}

Driver::Driver(Engine& engine, clock::VirtualClock* vclock, std::function<void(std::string)> send)
    : engine_(engine), vclock_(vclock), send_(std::move(send)) {
  openProducers();
  runtime_ = std::make_unique<Runtime>(engine_);  // engine4: installs the tool hook gate
  runtime_->setProducers(producers_.get());       // PROD-43: runs consume producer messages
  engine_.setToolCallDone([this](const ToolCallStatus& c) {
    auto it = waiting_calls_.find(c.invocation_id);
    if (it == waiting_calls_.end()) return;
    std::string id = it->second;
    waiting_calls_.erase(it);
    reply(id, toolCallJson(c));
  });
  engine_.setPingDone([this](std::uint64_t h, const PingStatus& p) {
    auto it = waiting_pings_.find(h);
    if (it == waiting_pings_.end()) return;
    std::string id = it->second;
    waiting_pings_.erase(it);
    reply(id, pingJson(p));
  });
}

void Driver::openProducers() {
  if (!engine_.config().producer_handler) return;
  std::optional<Journal> journal;
  if (engine_.config().journal_dir) {
    auto j = Journal::open(*engine_.config().journal_dir);
    if (j) journal.emplace(std::move(*j));
    else {
      startup_error_ = j.error();
      std::fprintf(stderr, "conform-engine: journal: %s\n", startup_error_.c_str());
    }
  }
  if (startup_error_.empty()) producers_ = std::make_unique<ProducerService>(engine_, std::move(journal));
}

void Driver::finishRestart() {
  std::string id = std::move(waiting_restart_);
  waiting_restart_.clear();
  // Everything the producer service holds in memory goes, as in a crash: only the journal
  // survives (accepted messages and their idempotency records, PROD-17/18/20), and registrations
  // bound to the old epochs are gone with them (PROD-04). The old service is destroyed first so
  // its journal segment is closed before the directory is opened again.
  runtime_->setProducers(nullptr);
  producers_.reset();
  startup_error_.clear();
  openProducers();
  runtime_->setProducers(producers_.get());
  if (!startup_error_.empty()) {
    // The plugins stay down: without the journal no producer promise could be kept.
    engine_.shutdown();
    return error(id, kActionFailed, "journal: " + startup_error_);
  }
  engine_.finishRestart();
  std::string out = R"({"plugins":[)";
  auto all = engine_.statuses();
  for (std::size_t i = 0; i < all.size(); ++i) out += (i ? "," : "") + statusJson(all[i]);
  reply(id, out + "]}");
}

void Driver::reply(const std::string& id, const std::string& result) {
  send_(R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)" + result + "}");
}

void Driver::error(const std::string& id, int code, const std::string& message) {
  send_(R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":)" + std::to_string(code) +
        R"(,"message":)" + quoteJson(message) + "}}");
}

void Driver::poll() {
  if (!waiting_restart_.empty()) {
    if (engine_.restartReady()) finishRestart();
    else if (!engine_.restarting()) {  // engine.shutdown (or driver EOF) overtook the restart
      std::string id = std::move(waiting_restart_);
      waiting_restart_.clear();
      error(id, kActionFailed, "engine restart superseded by engine shutdown");
    }
  }
  if (!waiting_shutdown_.empty() && engine_.shutdownComplete()) {
    // Every waiting engine.shutdown is answered (a second one sent before completion used to
    // replace the first, which then never got its answer: found by fuzz_engine_state).
    std::vector<std::string> ids = std::move(waiting_shutdown_);
    waiting_shutdown_.clear();
    for (const std::string& id : ids) reply(id, "{}");
    quit_ = true;
  }
}

void Driver::onFrame(std::string_view frame) {
  auto parsed = json::parse(frame);
  if (!parsed || !parsed->doc.IsObject()) {
    error("null", -32700, "driver request is not a JSON object");
    return;
  }
  const json::Value& msg = parsed->doc;
  const json::Value* idv = json::member(msg, "id");
  auto method = json::stringMember(msg, "method");
  if (!method) return error(idv ? json::compact(*idv) : "null", -32600, "request without method");
  if (!idv) return;  // notifications are ignored
  std::string id = json::compact(*idv);
  static const json::Value kEmpty(rapidjson::kObjectType);
  const json::Value* pp = json::member(msg, "params");
  const json::Value& p = pp && pp->IsObject() ? *pp : kEmpty;
  auto sparam = [&](const char* k) { return std::string(json::stringMember(p, k).value_or("")); };
  auto flag = [&](const char* k) {
    const json::Value* v = json::member(p, k);
    return v && v->IsBool() && v->GetBool();
  };
  std::string m(*method);

  if (m == "engine.status") {
    std::string out = R"({"shutting_down":)" + b(engine_.shuttingDown()) + R"(,"virtual_clock":)" +
                      b(vclock_ != nullptr) + R"(,"plugins":[)";
    auto all = engine_.statuses();
    for (std::size_t i = 0; i < all.size(); ++i) out += (i ? "," : "") + statusJson(all[i]);
    return reply(id, out + "]}");
  }
  if (m == "plugin.status") {
    auto s = engine_.status(sparam("plugin"));
    if (!s) return error(id, kInvalidParams, "unknown plugin `" + sparam("plugin") + "`");
    return reply(id, statusJson(*s));
  }
  if (m == "session.create") {
    const json::Value* pv = json::member(p, "persisted");
    bool persisted = !(pv && pv->IsFalse());
    std::string sid = producers_ ? producers_->createSession(persisted) : engine_.createSession(persisted);
    return reply(id, R"({"session_id":)" + quoteJson(sid) + "}");
  }
  if (m == "producer.messages") {
    if (!producers_) return error(id, kActionFailed, "producer messaging is not installed (producer_handler)");
    std::string out = R"({"messages":[)";
    bool first = true;
    for (auto* pm : producers_->messages(sparam("session_id"))) {
      out += std::string(first ? "" : ",") + R"({"message_id":)" + quoteJson(pm->id) +
             R"(,"owner":)" + quoteJson(pm->owner) + R"(,"idempotency_key":)" + quoteJson(pm->key) +
             R"(,"mode":")" + std::string(protocol::toString(pm->mode)) + R"(","state":")" +
             toString(pm->state) + R"(","body":)" + quoteJson(pm->body) + "}";
      first = false;
    }
    return reply(id, out + "]}");
  }
  if (m == "recovery.status") {
    if (!producers_) return error(id, kActionFailed, "producer messaging is not installed (producer_handler)");
    std::string out = R"({"plugins":[)";
    bool first = true;
    for (auto& rs : producers_->recoveryStatuses()) {
      out += std::string(first ? "" : ",") + R"({"plugin":)" + quoteJson(rs.plugin) + R"(,"status":")" +
             toString(rs.state) + R"(","epoch":)" + std::to_string(rs.epoch) + R"(,"reason":)" +
             quoteJson(rs.reason) + "}";
      first = false;
    }
    out += R"(],"notices":)" + strList(producers_->notices());
    if (auto* jr = producers_->journalReport())
      out += R"(,"journal":{"records":)" + std::to_string(jr->records) + R"(,"torn_bytes":)" +
             std::to_string(jr->torn_bytes) + R"(,"torn_reason":)" + quoteJson(jr->torn_reason) + "}";
    return reply(id, out + "}");
  }
  if (m == "session.persist") {
    auto r = engine_.persistSession(sparam("session_id"));
    return r ? reply(id, "{}") : error(id, kInvalidParams, r.error());
  }
  if (m == "session.stall") {
    auto r = engine_.setSessionStalled(sparam("session_id"), flag("stalled"));
    return r ? reply(id, "{}") : error(id, kInvalidParams, r.error());
  }
  if (m == "session.events") {
    const Session* s = engine_.session(sparam("session_id"));
    if (!s) return error(id, kInvalidParams, "unknown session");
    std::string out = R"({"events":[)";
    bool first = true;
    for (auto& r : s->log) {
      out += std::string(first ? "" : ",") + R"({"seq":)" + std::to_string(r.seq) +
             R"(,"timestamp":)" + quoteJson(r.timestamp) + R"(,"source_plugin":)" +
             quoteJson(r.source_plugin) + R"(,"event":)" + *r.payload + "}";
      first = false;
    }
    return reply(id, out + "]}");
  }
  if (m == "session.set_permissions") {
    std::vector<PermissionRule> rules;
    const json::Value* rv = json::member(p, "rules");
    if (rv && rv->IsObject()) {
      for (auto& r : rv->GetObject()) {
        std::string d = r.value.IsString() ? r.value.GetString() : "";
        Decision dec = d == "allow" ? Decision::Allow : d == "ask" ? Decision::Ask : Decision::Deny;
        if (d != "allow" && d != "ask" && d != "deny")
          return error(id, kInvalidParams, "rules values are \"allow\", \"ask\" or \"deny\"");
        rules.push_back({"plugin", r.name.GetString(), dec});
      }
    }
    engine_.setSessionPermissions(sparam("session_id"), std::move(rules));
    return reply(id, "{}");
  }
  if (m == "session.set_skill") {
    // TOOL-25: `allowed_tools` = the skill's allowed-tools entries; null or absent = no skill.
    std::optional<std::vector<std::string>> allowed;
    const json::Value* av = json::member(p, "allowed_tools");
    if (av && !av->IsNull()) {
      if (!av->IsArray()) return error(id, kInvalidParams, "params.allowed_tools must be an array of strings or null");
      allowed.emplace();
      for (auto& e : av->GetArray()) {
        if (!e.IsString()) return error(id, kInvalidParams, "params.allowed_tools must be an array of strings or null");
        allowed->emplace_back(e.GetString(), e.GetStringLength());
      }
    }
    auto r = engine_.setSessionSkill(sparam("session_id"), std::move(allowed));
    return r ? reply(id, "{}") : error(id, kInvalidParams, r.error());
  }
  if (m == "daemon.subscribe") {
    auto r = engine_.subscribeDaemon(sparam("session_id"));
    return r ? reply(id, R"({"client_id":)" + std::to_string(*r) + "}") : error(id, kInvalidParams, r.error());
  }
  if (m == "daemon.read" || m == "daemon.unsubscribe") {
    const json::Value* cv = json::member(p, "client_id");
    if (!cv || !cv->IsUint64()) return error(id, kInvalidParams, "params.client_id must be a client id");
    auto inbox = engine_.readDaemon(cv->GetUint64());
    if (!inbox) return error(id, kInvalidParams, "unknown client_id");
    if (m == "daemon.unsubscribe") engine_.unsubscribeDaemon(cv->GetUint64());
    std::string out = R"({"session_id":)" + quoteJson(inbox->session) + R"(,"notifications":[)";
    for (std::size_t i = 0; i < inbox->notifications.size(); ++i)
      out += (i ? "," : "") + inbox->notifications[i];
    return reply(id, out + R"(],"dropped":)" + std::to_string(inbox->dropped) + "}");
  }
  if (m == "event.produce") {
    std::string cls = sparam("class");
    RecordClass rc = cls == "chunk" ? RecordClass::Chunk
                     : cls == "terminal" ? RecordClass::Terminal : RecordClass::Ordinary;
    if (cls != "chunk" && cls != "ordinary" && cls != "terminal")
      return error(id, kInvalidParams, "class must be chunk, ordinary or terminal");
    const json::Value* cv = json::member(p, "count");
    std::uint64_t count = cv && cv->IsUint64() ? cv->GetUint64() : 1;
    std::uint64_t first = 0, last = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      auto r = engine_.produceEvent(sparam("session_id"), rc);
      if (!r) return error(id, kInvalidParams, r.error());
      if (i == 0) first = *r;
      last = *r;
    }
    return reply(id, R"({"first_seq":)" + std::to_string(first) + R"(,"last_seq":)" +
                         std::to_string(last) + "}");
  }
  if (m == "event.append") {
    const json::Value* ev = json::member(p, "event");
    if (!ev) return error(id, kInvalidParams, "params.event is required");
    auto r = engine_.appendEvent(sparam("session_id"), *ev);
    return r ? reply(id, R"({"seq":)" + std::to_string(*r) + "}") : error(id, kInvalidParams, r.error());
  }
  if (m == "tool.call") {
    const json::Value* args = json::member(p, "arguments");
    static const json::Value kNoArgs(rapidjson::kObjectType);
    auto r = engine_.callTool(sparam("session_id"), sparam("tool"), args ? *args : kNoArgs);
    if (!r) return error(id, kInvalidParams, r.error());
    const ToolCallStatus* c = engine_.toolCall(*r);
    if (flag("wait") && c->state == CallState::Pending) {
      waiting_calls_[*r] = id;
      return;
    }
    return reply(id, toolCallJson(*c));
  }
  if (m == "tool.status" || m == "tool.cancel") {
    if (m == "tool.cancel") engine_.cancelToolCall(sparam("invocation_id"));
    const ToolCallStatus* c = engine_.toolCall(sparam("invocation_id"));
    if (!c) return error(id, kInvalidParams, "unknown invocation_id");
    return reply(id, toolCallJson(*c));
  }
  if (m == "tools.visible") {
    return reply(id, R"({"tools":)" + strList(engine_.visibleTools(sparam("session_id"))) + "}");
  }
  if (m == "mcp.claim") {
    engine_.claimMcpTool(sparam("name"));
    return reply(id, "{}");
  }
  if (m == "plugin.ping") {
    auto h = engine_.ping(sparam("plugin"));
    const PingStatus* ps = engine_.pingStatus(h);
    if (flag("wait") && ps->state == PingStatus::State::Pending) {
      waiting_pings_[h] = id;
      return;
    }
    return reply(id, pingJson(*ps));
  }
  if (m == "plugin.inject") {
    // `base64` carries arbitrary bytes (invalid UTF-8, NUL, a frame without LF) and is written
    // exactly as decoded; `bytes` is text, with an LF added unless `raw`.
    std::string bytes;
    if (const json::Value* b64 = json::member(p, "base64")) {
      auto decoded = b64->IsString() ? trace::base64Decode(std::string_view(b64->GetString(), b64->GetStringLength())) : std::nullopt;
      if (!decoded) return error(id, kInvalidParams, "params.base64 must be a base64 string");
      bytes = std::move(*decoded);
    } else {
      bytes = sparam("bytes");
      if (!flag("raw")) bytes += "\n";
    }
    return engine_.injectBytes(sparam("plugin"), bytes)
               ? reply(id, "{}")
               : error(id, kActionFailed, "plugin has no live connection");
  }
  if (m == "trace.start") {
    trace_ = std::make_unique<TraceTap>(sparam("plugin"), engine_.clock());
    engine_.setObserver(trace_.get());
    return reply(id, "{}");
  }
  if (m == "trace.read") {
    if (!trace_) return error(id, kActionFailed, "no trace running (trace.start first)");
    return reply(id, trace_->read());
  }
  if (m == "trace.stop") {
    if (!trace_) return reply(id, R"({"records":[],"dropped":0})");
    std::string out = trace_->read();
    engine_.setObserver(nullptr);
    trace_.reset();
    return reply(id, out);
  }
  if (m == "clock.advance") {
    if (!vclock_) return error(id, kActionFailed, "the engine runs on the real clock (start it with --virtual-clock)");
    const json::Value* ms = json::member(p, "ms");
    if (!ms || !ms->IsUint64()) return error(id, kInvalidParams, "params.ms must be a non-negative integer");
    vclock_->advance(std::chrono::milliseconds(ms->GetUint64()));
    engine_.tick();
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(vclock_->now().time_since_epoch());
    return reply(id, R"({"now_ms":)" + std::to_string(now.count()) + "}");
  }
  if (m == "diagnostics.flush") {
    engine_.flushDiagnostics();
    return reply(id, "{}");
  }
  // ---- issue 5 (engine4): the simulated runtime, hooks (docs/driver-protocol.md) -------------
  // `model` (+ `variant`) as a ModelSelection, checked by core/protocol's decoder (§5.3).
  auto selection = [&](const json::Value& holder) -> Expected<std::optional<protocol::ModelSelection>, std::string> {
    const json::Value* mv = json::member(holder, "model");
    if (!mv) return std::optional<protocol::ModelSelection>();
    json::Document d(rapidjson::kObjectType);
    d.AddMember("model", json::Value(*mv, d.GetAllocator()), d.GetAllocator());
    if (const json::Value* v = json::member(holder, "variant"))
      d.AddMember("variant", json::Value(*v, d.GetAllocator()), d.GetAllocator());
    auto sel = json::decode<protocol::ModelSelection>(d, "params");
    if (!sel) return unexpected(sel.error());
    return std::optional<protocol::ModelSelection>(std::move(*sel));
  };
  auto opDone = [this, id](const SessionOpResult& r) { reply(id, sessionOpJson(r)); };
  if (m == "run.start") {
    auto script = parseRunScript(p);
    if (!script) return error(id, kInvalidParams, script.error());
    auto sel = selection(p);
    if (!sel) return error(id, kInvalidParams, sel.error());
    bool wait = flag("wait");
    auto run = runtime_->startRun(sparam("session_id"), std::move(*script), *sel,
                                  [this, id, wait](const RunRecord& r) { if (wait) reply(id, runJson(r)); });
    if (!run) return error(id, kInvalidParams, run.error());
    if (!wait) return reply(id, runJson(*runtime_->run(*run)));
    return;
  }
  if (m == "runs.list") {
    if (!engine_.session(sparam("session_id"))) return error(id, kInvalidParams, "unknown session");
    std::string out = R"({"runs":[)";
    bool first = true;
    for (const RunRecord* r : runtime_->runsOf(sparam("session_id"))) {
      out += (first ? "" : ",") + runJson(*r);
      first = false;
    }
    return reply(id, out + "]}");
  }
  if (m == "run.status") {
    const RunRecord* r = runtime_->run(sparam("run_id"));
    return r ? reply(id, runJson(*r)) : error(id, kInvalidParams, "unknown run_id");
  }
  if (m == "run.steer") {
    auto r = runtime_->steer(sparam("session_id"), sparam("text"), opDone);
    if (!r) return error(id, kInvalidParams, r.error());
    return;
  }
  if (m == "model.select") {
    auto sel = selection(p);
    if (!sel) return error(id, kInvalidParams, sel.error());
    if (!*sel) return error(id, kInvalidParams, "params.model is required");
    auto r = runtime_->selectModel(sparam("session_id"), **sel);
    return r ? reply(id, "{}") : error(id, kInvalidParams, r.error());
  }
  if (m == "compact" || m == "fork" || m == "revert") {
    auto instructions = json::stringMember(p, "instructions");
    std::optional<std::string> instr;
    if (instructions) instr = std::string(*instructions);
    const json::Value* tv = json::member(p, "through_seq");
    if (m != "compact" && (!tv || !tv->IsUint64()))
      return error(id, kInvalidParams, "params.through_seq must be a non-negative integer");
    auto r = m == "compact" ? runtime_->compact(sparam("session_id"), instr, opDone)
             : m == "fork"  ? runtime_->fork(sparam("session_id"), tv->GetUint64(), opDone)
                            : runtime_->revert(sparam("session_id"), tv->GetUint64(), instr, opDone);
    if (!r) return error(id, kInvalidParams, r.error());
    return;
  }
  if (m == "hooks.trace") {
    std::string out = R"({"calls":[)";
    bool first = true;
    for (auto& t : runtime_->hooks().trace()) {
      out += std::string(first ? "" : ",") + R"({"hook":)" + quoteJson(t.hook) + R"(,"plugin":)" +
             quoteJson(t.plugin) + R"(,"session_id":)" + quoteJson(t.session) + R"(,"context_id":)" +
             quoteJson(t.context_id) + R"(,"outcome":)" + quoteJson(t.outcome) + "}";
      first = false;
    }
    return reply(id, out + "]}");
  }
  if (m == "engine.restart") {
    if (!waiting_restart_.empty() || engine_.shuttingDown())
      return error(id, kActionFailed, "the engine is already restarting or shutting down");
    waiting_restart_ = id;
    engine_.beginRestart();
    return poll();  // no plugin running: the restart completes at once
  }
  if (m == "engine.shutdown") {
    engine_.shutdown();
    if (flag("wait") && !engine_.shutdownComplete()) {
      waiting_shutdown_.push_back(id);
      return;
    }
    quit_ = engine_.shutdownComplete();
    return reply(id, "{}");
  }
  error(id, kMethodNotFound, "unknown driver method `" + m + "`");
}

}  // namespace conform::engine
