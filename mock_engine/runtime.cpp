// mock_engine/runtime — the simulated runtime that fires the hooks (see runtime.h).
#include "mock_engine/runtime.h"

#include <algorithm>
#include <cstdio>

namespace conform::engine {

using protocol::Hook;
using Step = HookRunner::Step;

const char* toString(RunRecord::State s) {
  switch (s) {
    case RunRecord::State::Running: return "running";
    case RunRecord::State::Completed: return "completed";
    case RunRecord::State::Failed: return "failed";
    case RunRecord::State::Handled: return "handled";
    case RunRecord::State::Blocked: return "blocked";
  }
  return "failed";
}

namespace {

// A small writer for the runtime's own event payloads (engine-made text, keys are literals).
class Ev {
 public:
  explicit Ev(std::string_view type) : s_(R"({"type":)" + quoteJson(type)) {}
  Ev& str(std::string_view k, std::string_view v) { return raw(k, quoteJson(v)); }
  Ev& num(std::string_view k, std::uint64_t v) { return raw(k, std::to_string(v)); }
  Ev& raw(std::string_view k, const std::string& json_text) {
    s_ += "," + quoteJson(k) + ":" + json_text;
    return *this;
  }
  std::string text() const { return s_ + "}"; }

 private:
  std::string s_;
};

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

std::string textOf(const std::vector<protocol::JsonValue>& parts) {
  std::string out;
  for (auto& p : parts) {
    auto t = json::stringMember(p.get(), "type");
    if (t && *t == "text") out += std::string(json::stringMember(p.get(), "text").value_or(""));
  }
  return out;
}

bool toolNameOk(std::string_view n) {
  if (n.empty() || n.size() > 128) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '.' || c == '_' || c == '-'));
    if (!ok) return false;
  }
  return true;
}

// HOOK-48: a message_end replacement must validate as a whole persisted assistant turn.
std::optional<std::string> checkTurn(const std::vector<protocol::JsonValue>& parts) {
  if (parts.empty()) return "content must not be empty";
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const json::Value& p = parts[i].get();
    if (auto bad = protocol::checkPersistedPart(p)) return "content[" + std::to_string(i) + "]." + *bad;
    auto t = json::stringMember(p, "type");
    if (*t == "text" || *t == "reasoning") {
      if (!json::member(p, "text")->IsString()) return "content[" + std::to_string(i) + "].text must be a string";
    }
    if (*t == "tool_call") {
      auto id = json::stringMember(p, "id");
      auto name = json::stringMember(p, "name");
      if (!id || id->empty() || id->size() > 512) return "content[" + std::to_string(i) + "].id must be 1-512 characters";
      if (!name || !toolNameOk(*name)) return "content[" + std::to_string(i) + "].name is not a tool name";
      if (std::find(ids.begin(), ids.end(), *id) != ids.end()) return "duplicate tool call id `" + std::string(*id) + "`";
      ids.emplace_back(*id);
    }
  }
  return std::nullopt;
}

// HOOK-43: structural validation of a model request's messages (the reference runtime's shapes:
// system/user text, assistant text or persisted parts, tool {tool_call_id, content, is_error}).
std::optional<std::string> checkMessages(const std::vector<protocol::ModelMessage>& msgs) {
  using R = protocol::MessageRole;
  if (msgs.empty()) return "messages must not be empty";
  bool user = false;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const json::Value& c = msgs[i].content.get();
    std::string at = "messages[" + std::to_string(i) + "]";
    switch (msgs[i].role) {
      case R::System:
        if (i != 0) return at + ": a system message may only come first";
        if (!c.IsString()) return at + ".content must be a string";
        break;
      case R::User:
        if (!c.IsString()) return at + ".content must be a string";
        user = true;
        break;
      case R::Assistant:
        if (c.IsArray()) {
          std::vector<protocol::JsonValue> parts;
          for (auto& p : c.GetArray()) parts.emplace_back(p);
          if (auto bad = checkTurn(parts)) return at + ".content: " + *bad;
        } else if (!c.IsString()) {
          return at + ".content must be text or persisted parts";
        }
        break;
      case R::Tool:
        if (!json::stringMember(c, "tool_call_id") || !json::stringMember(c, "content") ||
            !json::member(c, "is_error") || !json::member(c, "is_error")->IsBool() || c.MemberCount() != 3)
          return at + ".content must be {tool_call_id, content, is_error}";
        break;
    }
  }
  if (!user) return "messages need at least one user message";
  return std::nullopt;
}

// HOOK-43: the scripted model's capabilities.
std::optional<std::string> checkParams(const protocol::ParamsAdjustments& p) {
  if (p.max_tokens && (*p.max_tokens == 0 || *p.max_tokens > kScriptedModelMaxTokens))
    return "max_tokens must be 1-" + std::to_string(kScriptedModelMaxTokens) + " for this model";
  if (p.temperature && (*p.temperature < 0 || *p.temperature > 2)) return "temperature must be 0-2";
  if (p.top_p && (*p.top_p < 0 || *p.top_p > 1)) return "top_p must be 0-1";
  return std::nullopt;
}

// PROTOCOL §13.2 provider_before_request: the runtime's normalized request (not an adapter body).
json::Document normalizedRequest(const protocol::ResolvedModelRef& m,
                                 const std::vector<protocol::ModelMessage>& msgs,
                                 const protocol::ParamsAdjustments& p) {
  json::Document d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  d.AddMember("model", json::str(m.model_id, a), a);
  json::Value arr(rapidjson::kArrayType);
  for (auto& msg : msgs) arr.PushBack(protocol::toJSON(msg, a), a);
  d.AddMember("messages", arr, a);
  d.AddMember("max_tokens", json::Value(p.max_tokens.value_or(1024)), a);
  if (p.temperature) d.AddMember("temperature", json::Value(*p.temperature), a);
  if (p.top_p) d.AddMember("top_p", json::Value(*p.top_p), a);
  d.AddMember("stream", true, a);
  return d;
}

// HOOK-46: a replacement deserializes as a normalized request and keeps the model invariants.
std::optional<std::string> checkNormalizedRequest(const json::Value& v, const std::string& model_id) {
  if (!v.IsObject()) return std::string("payload must be an object");
  for (auto& m : v.GetObject()) {
    std::string_view k(m.name.GetString(), m.name.GetStringLength());
    if (k != "model" && k != "messages" && k != "max_tokens" && k != "temperature" && k != "top_p" && k != "stream")
      return "unknown request member `" + std::string(k) + "`";
  }
  auto model = json::stringMember(v, "model");
  if (!model) return std::string("model must be a string");
  if (*model != model_id) return "model must stay `" + model_id + "`";
  const json::Value* msgs = json::member(v, "messages");
  if (!msgs) return std::string("messages is required");
  auto decoded = json::decode<std::vector<protocol::ModelMessage>>(*msgs, "payload.messages");
  if (!decoded) return decoded.error();
  if (auto bad = checkMessages(*decoded)) return bad;
  protocol::ParamsAdjustments p;
  const json::Value* mt = json::member(v, "max_tokens");
  if (!mt || !mt->IsUint64()) return std::string("max_tokens must be a positive integer");
  p.max_tokens = mt->GetUint64();
  if (const json::Value* t = json::member(v, "temperature")) {
    if (!t->IsNumber()) return std::string("temperature must be a number");
    p.temperature = t->GetDouble();
  }
  if (const json::Value* t = json::member(v, "top_p")) {
    if (!t->IsNumber()) return std::string("top_p must be a number");
    p.top_p = t->GetDouble();
  }
  if (const json::Value* s = json::member(v, "stream"); s && !s->IsBool()) return std::string("stream must be a boolean");
  return checkParams(p);
}

// The title agent's scripted answer: the input's first 40 bytes, cut at a UTF-8 boundary.
std::string titleOf(const std::string& input) {
  std::size_t n = std::min<std::size_t>(input.size(), 40);
  while (n > 0 && n < input.size() && (static_cast<unsigned char>(input[n]) & 0xC0) == 0x80) --n;
  return input.substr(0, n);
}

std::string partsJson(const std::vector<protocol::JsonValue>& parts) {
  std::string out = "[";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + json::compact(parts[i].get());
  return out + "]";
}

}  // namespace

// =================================================================================================
// Scripts
// =================================================================================================

namespace {
Expected<RunScript, std::string> parseScriptAt(const json::Value& v, const std::string& at) {
  if (!v.IsObject()) return unexpected(at + ": expected an object");
  RunScript s;
  if (const json::Value* in = json::member(v, "input")) {
    if (!in->IsString()) return unexpected(at + ".input: expected a string");
    s.input = in->GetString();
  }
  const json::Value* turns = json::member(v, "turns");
  if (!turns) {
    ScriptedTurn t;
    t.deltas = {"ok"};
    s.turns.push_back(std::move(t));
    return s;
  }
  if (!turns->IsArray()) return unexpected(at + ".turns: expected an array");
  for (rapidjson::SizeType i = 0; i < turns->Size(); ++i) {
    const json::Value& tv = (*turns)[i];
    std::string tat = at + ".turns[" + std::to_string(i) + "]";
    if (!tv.IsObject()) return unexpected(tat + ": expected an object");
    ScriptedTurn t;
    for (auto& m : tv.GetObject()) {
      std::string k(m.name.GetString(), m.name.GetStringLength());
      const json::Value& x = m.value;
      if (k == "text") {
        if (!x.IsString()) return unexpected(tat + ".text: expected a string");
        if (!json::member(tv, "deltas")) t.deltas = {x.GetString()};
      } else if (k == "deltas") {
        if (!x.IsArray()) return unexpected(tat + ".deltas: expected an array of strings");
        t.deltas.clear();
        for (auto& d : x.GetArray()) {
          if (!d.IsString()) return unexpected(tat + ".deltas: expected an array of strings");
          t.deltas.emplace_back(d.GetString(), d.GetStringLength());
        }
      } else if (k == "reasoning") {
        if (!x.IsString()) return unexpected(tat + ".reasoning: expected a string");
        t.reasoning = x.GetString();
      } else if (k == "status") {
        if (!x.IsUint() || x.GetUint() < 100 || x.GetUint() > 599) return unexpected(tat + ".status: expected an HTTP status");
        t.status = static_cast<std::uint16_t>(x.GetUint());
      } else if (k == "tool_calls") {
        if (!x.IsArray()) return unexpected(tat + ".tool_calls: expected an array");
        for (rapidjson::SizeType j = 0; j < x.Size(); ++j) {
          auto tool = json::stringMember(x[j], "tool");
          if (!tool) return unexpected(tat + ".tool_calls[" + std::to_string(j) + "].tool: expected a string");
          ScriptedToolCall c;
          c.tool = std::string(*tool);
          const json::Value* args = json::member(x[j], "arguments");
          c.arguments = std::make_shared<json::Document>(
              args ? json::copy(*args) : json::Document(rapidjson::kObjectType));
          t.tool_calls.push_back(std::move(c));
        }
      } else if (k == "delegate") {
        auto child = parseScriptAt(x, tat + ".delegate");
        if (!child) return unexpected(child.error());
        t.delegate = std::make_shared<RunScript>(std::move(*child));
      } else {
        return unexpected(tat + "." + k + ": unknown member");
      }
    }
    s.turns.push_back(std::move(t));
  }
  return s;
}
}  // namespace

Expected<RunScript, std::string> parseRunScript(const json::Value& v) { return parseScriptAt(v, "params"); }

// =================================================================================================
// Runtime
// =================================================================================================

struct Runtime::RunState {
  std::string id, session;
  RunScript script;
  bool delegated = false;
  bool started = false;  // run_started appended
  std::optional<protocol::ModelSelection> requested;
  protocol::ModelSelection selection;
  std::string original_input, input, system_prompt;
  std::vector<protocol::InjectedMessage> injected;
  std::vector<protocol::ModelMessage> history;
  std::vector<std::string> pending_steer;
  std::vector<std::string> claimed;  // PROD-43: producer messages claimed, not yet consumed
  std::string queue_message;         // the queue message that is this run's input ("" = none)
  std::size_t turn = 0;
  bool turn_failed_over = false;  // the current turn's failing attempt already moved to the fallback
  std::uint64_t attempts = 0;
  // the current attempt
  std::string attempt_id;
  std::vector<protocol::ModelMessage> messages;
  protocol::ParamsAdjustments params;
  std::shared_ptr<json::Document> payload;
  std::vector<protocol::JsonValue> content;
  std::vector<std::pair<std::string, std::shared_ptr<json::Document>>> calls;  // committed tool calls
  RunDone done;
};

Runtime::Runtime(Engine& engine, RuntimeOptions opts)
    : engine_(engine), opts_(std::move(opts)), hooks_(engine) {
  hooks_.setToolFinished([this](const ToolCallStatus& c) {
    auto it = waiting_tools_.find(c.invocation_id);
    if (it == waiting_tools_.end()) return;
    auto fn = std::move(it->second);
    waiting_tools_.erase(it);
    fn(c);
  });
}
Runtime::~Runtime() { hooks_.setToolFinished(nullptr); }

Runtime::SessionState* Runtime::state(const std::string& session) {
  if (!engine_.session(session)) return nullptr;
  return &sessions_[session];
}

bool Runtime::delegated(const std::string& session) const {
  auto it = sessions_.find(session);
  return it != sessions_.end() && it->second.delegated;
}

const RunRecord* Runtime::run(const std::string& id) const {
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : &it->second;
}

void Runtime::append(const std::string& session, const std::string& text) {
  auto parsed = json::parse(text);
  if (parsed) (void)engine_.appendEvent(session, parsed->doc);
}

protocol::ResolvedModelRef Runtime::resolve(const protocol::ModelSelection& s) const {
  protocol::ResolvedModelRef r;
  r.selection = s;
  auto slash = s.model.find('/');
  r.provider_id = s.model.substr(0, slash);
  r.model_id = slash == std::string::npos ? s.model : s.model.substr(slash + 1);
  r.adapter_id = protocol::AdaptorId::OpenaiCompatible;
  // A deterministic 64-hex fingerprint of the selection (FNV-1a, four seeds).
  std::string key = s.model + "|" + s.variant.value_or("");
  for (std::uint64_t seed : {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL, 0x100000001b3ULL, 0x1b3ULL}) {
    std::uint64_t h = seed;
    for (unsigned char ch : key) h = (h ^ ch) * 0x100000001b3ULL;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    r.selection_fingerprint += buf;
  }
  return r;
}

Expected<std::string, std::string> Runtime::startRun(const std::string& session, RunScript script,
                                                     std::optional<protocol::ModelSelection> model,
                                                     RunDone done) {
  SessionState* ss = state(session);
  if (!ss) return unexpected("unknown session `" + session + "`");
  if (ss->delegated) return unexpected("session `" + session + "` is a delegated session");
  return begin(session, std::move(script), std::move(model), std::move(done));
}

Expected<std::string, std::string> Runtime::begin(const std::string& session, RunScript script,
                                                  std::optional<protocol::ModelSelection> model,
                                                  RunDone done, const std::string& queue_message) {
  SessionState* ss = state(session);
  if (!ss) return unexpected("unknown session `" + session + "`");
  if (!ss->active_run.empty()) return unexpected("session `" + session + "` already has an active run");
  auto r = std::make_shared<RunState>();
  r->id = engine_.newUuid();
  r->session = session;
  r->script = std::move(script);
  r->delegated = ss->delegated;
  r->requested = std::move(model);
  r->original_input = r->input = r->script.input;
  r->system_prompt = opts_.system_prompt;
  r->done = std::move(done);
  RunRecord& rec = runs_[r->id];
  rec.run_id = r->id;
  rec.session_id = session;
  if (!queue_message.empty()) {
    r->queue_message = queue_message;
    r->claimed.push_back(queue_message);
    rec.producer_messages.push_back(queue_message);
    rec.origin = "producer_queue";
  }
  run_order_.push_back(r->id);
  ss->active_run = r->id;
  active_[r->id] = r;
  selectStep(r);
  return r->id;
}

void Runtime::finish(const std::shared_ptr<RunState>& r, RunRecord::State st, std::string reason) {
  RunRecord& rec = runs_[r->id];
  rec.state = st;
  rec.reason = std::move(reason);
  // PROD-30: messages claimed by a run that ended before their request was prepared go back to
  // waiting (a claim is no proof of delivery).
  bool queue_released = false;
  if (producers_)
    for (auto& id : r->claimed) {
      producers_->release(id);
      queue_released = queue_released || id == r->queue_message;
    }
  r->claimed.clear();
  rec.input = r->input;
  rec.system_prompt = r->system_prompt;
  rec.model = r->selection;
  if (r->started) {
    if (st == RunRecord::State::Completed)
      append(r->session, Ev("run_completed").str("final_text", rec.final_text).text());
    else
      append(r->session, Ev("run_failed").str("error", rec.reason).text());
  }
  sessions_[r->session].active_run.clear();
  active_.erase(r->id);
  // PROD-43: the session is idle now, so a waiting queue message starts the next turn. Not after a
  // run that gave its own queue message back: that would retry the same failure forever.
  if (producers_ && !queue_released) postDeliverQueued(r->session);
  if (r->done) {
    auto done = std::move(r->done);
    r->done = nullptr;
    done(rec);
  }
}

// ---- model_before_select (HOOK-49…51) ----------------------------------------------------------------

void Runtime::selectStep(const std::shared_ptr<RunState>& r) {
  SessionState& ss = sessions_[r->session];
  protocol::ModelSelection to = r->requested ? *r->requested
                                : ss.draft   ? *ss.draft
                                : ss.last_used ? *ss.last_used
                                               : opts_.default_model;
  std::optional<protocol::ModelSelection> from = ss.last_used;
  if (from && *from == to) {  // HOOK-49: an unchanged selection fires nothing
    r->selection = to;
    return inputStep(r);
  }
  // HOOK-51: first use = config, a change = user.
  auto source = from ? protocol::SelectSource::User : protocol::SelectSource::Config;
  auto blocked = std::make_shared<std::optional<std::string>>();
  hooks_.runTyped<protocol::AllowBlockResult>(
      Hook::ModelBeforeSelect, r->session,
      [r, from, to, source](const std::string& ctx) {
        protocol::ModelBeforeSelectParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.from = from;
        p.to = to;
        p.source = source;
        return toJsonText(p);
      },
      [this, r, blocked](const std::string& plugin, protocol::AllowBlockResult& res) {
        if (res.action == protocol::AllowBlock::Allow) return Step::next();
        *blocked = res.reason.value_or("model selection blocked by " + plugin);
        hooks_.diagnose(r->session, plugin, "hook_blocked", **blocked);
        return Step::stop();
      },
      [this, r, to, blocked] {
        // HOOK-50: a block keeps the current selection and the run start fails with the reason.
        if (*blocked) return finish(r, RunRecord::State::Blocked, **blocked);
        sessions_[r->session].last_used = to;
        sessions_[r->session].draft.reset();
        r->selection = to;
        inputStep(r);
      });
}

// ---- user_before_input (HOOK-36…40) ----------------------------------------------------------------

namespace {
// The user_before_input chain over `text`: transforms are validated (HOOK-38), `handled` ends it.
struct InputChain {
  std::string text;
  std::optional<std::string> handled;
};
}  // namespace

void Runtime::inputStep(const std::shared_ptr<RunState>& r) {
  auto started = [this, r] {
    r->started = true;
    append(r->session, Ev("run_started").str("client_run_id", r->id).str("agent", r->delegated ? "agent/delegate" : "agent").text());
    setupStep(r);
  };
  if (r->delegated) return started();  // HOOK-36: never for delegated sessions
  // PROD-43 [chosen]: a producer's queue message is not user input: no user_before_input.
  if (!r->queue_message.empty()) return started();
  // LIFE-12: the chain waits until every enabled plugin is connected or failed, so a plugin still
  // in its handshake gets the first input's hook instead of missing it.
  std::weak_ptr<bool> alive = alive_;
  engine_.whenPluginsSettled([this, r, started, alive] {
    if (alive.expired()) return;  // the runtime went away while the plugins were starting
    inputChain(r, started);
  });
}

void Runtime::inputChain(const std::shared_ptr<RunState>& r, std::function<void()> started) {
  auto st = std::make_shared<InputChain>();
  st->text = r->input;
  hooks_.runTyped<protocol::UserBeforeInputResult>(
      Hook::UserBeforeInput, r->session,
      [r, st](const std::string& ctx) {
        protocol::UserBeforeInputParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.text = st->text;
        return toJsonText(p);
      },
      [this, st](const std::string& plugin, protocol::UserBeforeInputResult& res) {
        switch (res.action) {
          case protocol::InputAction::Allow: return Step::next();
          case protocol::InputAction::Handled:
            st->handled = res.reason.value_or("handled by " + plugin);
            return Step::stop();
          case protocol::InputAction::Transform:
            if (!res.new_text || blank(*res.new_text)) {
              // EngineFault::InvalidStateForwarded: diagnosed, yet the next plugin sees it (HOOK-09).
              if (engine_.fault() == EngineFault::InvalidStateForwarded && res.new_text) st->text = *res.new_text;
              return Step::invalid("transform needs a non-blank new_text");
            }
            st->text = *res.new_text;
            return Step::next();
        }
        return Step::next();
      },
      [this, r, st, started] {
        if (st->handled) return finish(r, RunRecord::State::Handled, *st->handled);  // HOOK-39
        r->input = st->text;
        started();
      });
}

// ---- agent_before_start (HOOK-28…32) ----------------------------------------------------------------

void Runtime::setupStep(const std::shared_ptr<RunState>& r) {
  hooks_.runTyped<protocol::AgentBeforeStartResult>(
      Hook::AgentBeforeStart, r->session,
      [r](const std::string& ctx) {
        protocol::AgentBeforeStartParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.agent_path = r->delegated ? "agent/delegate" : "agent";
        // HOOK-32: {session_id, input, system_prompt, injected_messages}, the chain so far.
        json::Document pc(rapidjson::kObjectType);
        auto& a = pc.GetAllocator();
        pc.AddMember("session_id", json::str(r->session, a), a);
        pc.AddMember("input", json::str(r->input, a), a);
        pc.AddMember("system_prompt", json::str(r->system_prompt, a), a);
        json::Value inj(rapidjson::kArrayType);
        for (auto& m : r->injected) inj.PushBack(protocol::toJSON(m, a), a);
        pc.AddMember("injected_messages", inj, a);
        p.prompt_context = protocol::JsonValue(pc);
        return toJsonText(p);
      },
      [r](const std::string&, protocol::AgentBeforeStartResult& res) {
        // HOOK-30: replacement first, then the append (append_to_system_prompt, else addendum),
        // joined by LF; empty strings are ignored. The whole result is validated before it counts.
        std::string prompt = r->system_prompt;
        if (res.replace_system_prompt && !res.replace_system_prompt->empty()) prompt = *res.replace_system_prompt;
        std::optional<std::string> add = res.append_to_system_prompt ? res.append_to_system_prompt : res.addendum;
        if (add && !add->empty()) prompt += "\n" + *add;
        if (prompt.size() > kMaxSystemPromptBytes)
          return Step::invalid("the system prompt would be " + std::to_string(prompt.size()) +
                               " bytes, above 131072");
        if (res.inject_message) {
          // HOOK-32: blank content or role `tool` is invalid; the role is kept (HOOK-31).
          if (res.inject_message->role == protocol::MessageRole::Tool)
            return Step::invalid("inject_message may not have role `tool`");
          if (blank(res.inject_message->content)) return Step::invalid("inject_message content is blank");
        }
        r->system_prompt = prompt;
        if (res.inject_message) r->injected.push_back(*res.inject_message);
        return Step::next();
      },
      [this, r] {
        // HOOK-31: injections are committed during setup, before the submitted input.
        for (auto& m : r->injected) {
          append(r->session, Ev("message_injected").str("role", protocol::toString(m.role)).str("input", m.content).text());
          protocol::ModelMessage mm;
          mm.role = m.role;
          mm.content = protocol::JsonValue::fromText(quoteJson(m.content));
          r->history.push_back(std::move(mm));
        }
        Ev submitted("user_input_submitted");
        submitted.str("input", r->input);
        if (!r->queue_message.empty()) submitted.str("producer_message_id", r->queue_message).str("mode", "queue");
        append(r->session, submitted.text());
        // HOOK-40: only a real final change is audited, adjacent to the committed input.
        if (r->input != r->original_input)
          append(r->session, Ev("user_input_transformed")
                                 .str("original_input", r->original_input)
                                 .str("input", r->input)
                                 .text());
        protocol::ModelMessage um;
        um.role = protocol::MessageRole::User;
        um.content = protocol::JsonValue::fromText(quoteJson(r->input));
        r->history.push_back(std::move(um));
        SessionState& ss = sessions_[r->session];
        if (!r->delegated && !ss.titled) {
          // The internal title agent: a model call of its own that triggers no hook (HOOK-12).
          ss.titled = true;
          ++internal_model_calls_;
          std::string iid = engine_.newUuid();
          append(r->session, Ev("internal_agent_started").str("invocation_id", iid).str("kind", "title").text());
          append(r->session, Ev("internal_agent_completed").str("invocation_id", iid).str("kind", "title").text());
          append(r->session, Ev("session_title_committed")
                                 .raw("change", R"({"title":)" + quoteJson(titleOf(r->input)) + "}")
                                 .text());
        }
        attemptStep(r);
      });
}

// ---- model_before_request (HOOK-41…44) --------------------------------------------------------------

void Runtime::attemptStep(const std::shared_ptr<RunState>& r) {
  if (r->turn >= r->script.turns.size()) return finish(r, RunRecord::State::Completed, "");
  for (auto& text : r->pending_steer) {
    protocol::ModelMessage um;
    um.role = protocol::MessageRole::User;
    um.content = protocol::JsonValue::fromText(quoteJson(text));
    r->history.push_back(std::move(um));
  }
  r->pending_steer.clear();
  // PROD-43: a steering boundary. Waiting `steer` messages are claimed now, before the request is
  // prepared and before model_before_request (PROD-29), and join this attempt as user messages.
  if (producers_)
    while (auto id = producers_->claim(r->session, protocol::DeliveryMode::Steer)) {
      const ProducerMessage* pm = producers_->message(*id);
      protocol::ModelMessage um;
      um.role = protocol::MessageRole::User;
      um.content = protocol::JsonValue::fromText(quoteJson(pm->body));
      r->history.push_back(std::move(um));
      r->claimed.push_back(*id);
      runs_[r->id].producer_messages.push_back(*id);
    }
  r->attempt_id = engine_.newUuid();
  ++r->attempts;
  auto model = resolve(r->selection);
  append(r->session, Ev("model_attempt_started")
                         .str("attempt_id", r->attempt_id)
                         .num("attempt_ordinal", r->attempts)
                         .raw("resolved_model", toJsonText(model))
                         .text());
  r->messages.clear();
  protocol::ModelMessage sys;
  sys.role = protocol::MessageRole::System;
  sys.content = protocol::JsonValue::fromText(quoteJson(r->system_prompt));
  r->messages.push_back(std::move(sys));
  for (auto& m : r->history) r->messages.push_back(m);
  r->params = {};
  hooks_.runTyped<protocol::ModelBeforeRequestResult>(
      Hook::ModelBeforeRequest, r->session,
      [r, model](const std::string& ctx) {
        protocol::ModelBeforeRequestParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.attempt_id = r->attempt_id;
        p.messages = r->messages;
        p.model = model;
        p.params = r->params;
        return toJsonText(p);
      },
      [r](const std::string&, protocol::ModelBeforeRequestResult& res) {
        // HOOK-43: replace needs the complete list; adjustments apply with keep or replace; the
        // candidate is validated as a whole before the next plugin sees it.
        auto msgs = r->messages;
        if (res.action == protocol::KeepReplace::Replace) {
          if (!res.messages) return Step::invalid("replace without messages");
          msgs = *res.messages;
          if (auto bad = checkMessages(msgs)) return Step::invalid(*bad);
        }
        auto params = r->params;
        if (res.params_adjustments) {
          auto& adj = *res.params_adjustments;
          if (adj.max_tokens) params.max_tokens = adj.max_tokens;
          if (adj.temperature) params.temperature = adj.temperature;
          if (adj.top_p) params.top_p = adj.top_p;
          if (auto bad = checkParams(params)) return Step::invalid(*bad);
        }
        r->messages = std::move(msgs);
        r->params = params;
        return Step::next();
      },
      [this, r] { headersStep(r); });
}

// ---- provider_before_headers (HOOK-45) ---------------------------------------------------------------

void Runtime::headersStep(const std::shared_ptr<RunState>& r) {
  hooks_.runTyped<protocol::ProviderBeforeHeadersResult>(
      Hook::ProviderBeforeHeaders, r->session,
      [r](const std::string& ctx) {
        protocol::ProviderBeforeHeadersParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.attempt_id = r->attempt_id;  // headers: always {} in 0.0.6
        return toJsonText(p);
      },
      [this, r](const std::string& plugin, protocol::ProviderBeforeHeadersResult& res) {
        // HOOK-45: adapters expose no headers; a mutation is diagnosed and changes nothing.
        if (!res.set.empty() || !res.delete_.empty())
          hooks_.diagnose(r->session, plugin, "unsupported_capability",
                          "provider_before_headers cannot change HTTP headers in this engine");
        return Step::next();
      },
      [this, r] { providerRequestStep(r); });
}

// ---- provider_before_request (HOOK-46) ---------------------------------------------------------------

void Runtime::providerRequestStep(const std::shared_ptr<RunState>& r) {
  auto model = resolve(r->selection);
  r->payload = std::make_shared<json::Document>(normalizedRequest(model, r->messages, r->params));
  std::string model_id = model.model_id;
  hooks_.runTyped<protocol::ProviderBeforeRequestResult>(
      Hook::ProviderBeforeRequest, r->session,
      [r](const std::string& ctx) {
        protocol::ProviderBeforeRequestParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.attempt_id = r->attempt_id;
        p.payload = protocol::JsonValue(*r->payload);
        return toJsonText(p);
      },
      [r, model_id](const std::string&, protocol::ProviderBeforeRequestResult& res) {
        if (res.action == protocol::KeepReplace::Keep) return Step::next();
        if (!res.payload) return Step::invalid("replace without payload");
        if (auto bad = checkNormalizedRequest(res.payload->get(), model_id)) return Step::invalid(*bad);
        r->payload = std::make_shared<json::Document>(json::copy(res.payload->get()));
        return Step::next();
      },
      [this, r] {
        // HOOK-44: what the last hook left is what the provider receives and what prompt-size
        // accounting measures; the cache marker is placed only afterwards.
        runs_[r->id].requests.push_back(r->payload);
        // PROD-43: the request carrying the claimed messages is prepared: they are consumed
        // (journaled) and never return (PROD-30). Steered ones are recorded as submitted input.
        if (producers_)
          for (auto& id : r->claimed) {
            const ProducerMessage* pm = producers_->message(id);
            if (!pm || !producers_->consume(id)) continue;
            if (id != r->queue_message)
              append(r->session, Ev("user_input_submitted")
                                     .str("input", pm->body)
                                     .str("producer_message_id", id)
                                     .str("mode", "steer")
                                     .text());
          }
        r->claimed.clear();
        std::size_t prompt_bytes = json::compact((*r->payload)["messages"]).size();
        append(r->session, Ev("model_request_prepared")
                               .str("attempt_id", r->attempt_id)
                               .num("prompt_bytes", prompt_bytes)
                               .num("cache_marker_message", (*r->payload)["messages"].Size() - 1)
                               .text());
        responseStep(r);
      });
}

// ---- provider_after_response (HOOK-47) and fallback (HOOK-49…51) ------------------------------------

void Runtime::responseStep(const std::shared_ptr<RunState>& r) {
  const ScriptedTurn& turn = r->script.turns[r->turn];
  std::uint16_t status = r->turn_failed_over ? 200 : turn.status;
  hooks_.runTyped<protocol::ProviderAfterResponseResult>(
      Hook::ProviderAfterResponse, r->session,
      [r, status](const std::string& ctx) {
        protocol::ProviderAfterResponseParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.attempt_id = r->attempt_id;
        p.status = status;  // head only: no body data is ever sent
        return toJsonText(p);
      },
      [](const std::string&, protocol::Empty&) { return Step::next(); },  // observe-only
      [this, r, status] {
        if (status < 400) return streamStep(r);
        std::string error = "provider returned HTTP " + std::to_string(status);
        if (!opts_.fallback_model || *opts_.fallback_model == r->selection)
          return finish(r, RunRecord::State::Failed, error);
        // HOOK-49/51: ahead of a fallback switch, source fallback_restore.
        protocol::ModelSelection from = r->selection, to = *opts_.fallback_model;
        auto blocked = std::make_shared<std::optional<std::string>>();
        hooks_.runTyped<protocol::AllowBlockResult>(
            Hook::ModelBeforeSelect, r->session,
            [r, from, to](const std::string& ctx) {
              protocol::ModelBeforeSelectParams p;
              p.session_id = r->session;
              p.context_id = ctx;
              p.from = from;
              p.to = to;
              p.source = protocol::SelectSource::FallbackRestore;
              return toJsonText(p);
            },
            [this, r, blocked](const std::string& plugin, protocol::AllowBlockResult& res) {
              if (res.action == protocol::AllowBlock::Allow) return Step::next();
              *blocked = res.reason.value_or("model fallback blocked by " + plugin);
              hooks_.diagnose(r->session, plugin, "hook_blocked", **blocked);
              return Step::stop();
            },
            [this, r, from, to, error, blocked] {
              if (*blocked) return finish(r, RunRecord::State::Failed, **blocked);  // HOOK-50
              append(r->session, Ev("model_fallback")
                                     .raw("from", toJsonText(resolve(from)))
                                     .raw("to", toJsonText(resolve(to)))
                                     .str("error", error)
                                     .text());
              r->selection = to;
              sessions_[r->session].last_used = to;
              r->turn_failed_over = true;
              attemptStep(r);  // a new attempt of the same turn
            });
      });
}

// ---- streaming and message_end (HOOK-48) -------------------------------------------------------------

void Runtime::streamStep(const std::shared_ptr<RunState>& r) {
  const ScriptedTurn& turn = r->script.turns[r->turn];
  if (!turn.reasoning.empty())
    append(r->session, Ev("reasoning_delta").str("attempt_id", r->attempt_id).str("text", turn.reasoning).text());
  std::string text;
  for (auto& d : turn.deltas) {
    append(r->session, Ev("text_delta").str("attempt_id", r->attempt_id).str("text", d).text());
    text += d;
  }
  r->content.clear();
  auto part = [](const std::string& json_text) { return protocol::JsonValue::fromText(json_text); };
  if (!turn.reasoning.empty())
    r->content.push_back(part(R"({"type":"reasoning","text":)" + quoteJson(turn.reasoning) + R"(,"metadata":null})"));
  if (!text.empty()) r->content.push_back(part(R"({"type":"text","text":)" + quoteJson(text) + R"(,"metadata":null})"));
  for (std::size_t i = 0; i < turn.tool_calls.size(); ++i) {
    auto& c = turn.tool_calls[i];
    r->content.push_back(part(R"({"type":"tool_call","id":)" + quoteJson("call_" + std::to_string(r->attempts) + "_" + std::to_string(i)) +
                              R"(,"provider_item_id":null,"name":)" + quoteJson(c.tool) + R"(,"input":)" +
                              json::compact(*c.arguments) + R"(,"raw_input":null,"metadata":null})"));
  }
  if (r->content.empty()) r->content.push_back(part(R"({"type":"text","text":"","metadata":null})"));
  hooks_.runTyped<protocol::MessageEndResult>(
      Hook::MessageEnd, r->session,
      [r](const std::string& ctx) {
        protocol::MessageEndParams p;
        p.session_id = r->session;
        p.context_id = ctx;
        p.attempt_id = r->attempt_id;
        p.role = protocol::MessageRole::Assistant;
        p.content = r->content;  // the complete assembled content
        return toJsonText(p);
      },
      [r](const std::string&, protocol::MessageEndResult& res) {
        if (res.action == protocol::KeepReplace::Keep) return Step::next();
        if (!res.content) return Step::invalid("replace without content");
        if (auto bad = checkTurn(*res.content)) return Step::invalid(*bad);
        r->content = *res.content;  // the role cannot change: the result has none
        return Step::next();
      },
      [this, r] {
        // HOOK-48: the (possibly replaced) content is the durable turn; deltas stay as records.
        append(r->session, Ev("model_turn_committed")
                               .str("attempt_id", r->attempt_id)
                               .raw("turn", R"({"role":"assistant","content":)" + partsJson(r->content) + "}")
                               .text());
        RunRecord& rec = runs_[r->id];
        rec.final_text = textOf(r->content);
        protocol::ModelMessage am;
        am.role = protocol::MessageRole::Assistant;
        am.content = protocol::JsonValue::fromText(partsJson(r->content));
        r->history.push_back(std::move(am));
        r->calls.clear();
        for (auto& p : r->content) {
          auto t = json::stringMember(p.get(), "type");
          if (!t || *t != "tool_call") continue;
          r->calls.emplace_back(std::string(*json::stringMember(p.get(), "id")),
                                std::make_shared<json::Document>(json::copy(p.get()["input"])));
        }
        toolsStep(r, 0);
      });
}

// ---- tool calls: tool_before_call / tool_after_result run in the engine's tool path ---------------

void Runtime::toolsStep(const std::shared_ptr<RunState>& r, std::size_t next) {
  if (next >= r->calls.size()) return delegateStep(r);
  auto& [call_id, args] = r->calls[next];
  std::string name;
  for (auto& p : r->content)
    if (json::stringMember(p.get(), "id") == std::optional<std::string_view>(call_id))
      name = std::string(json::stringMember(p.get(), "name").value_or(""));
  std::string tcid = call_id;
  auto record = [this, r, next, tcid](const ToolCallStatus& c) {
    // The model-facing tool result: the content after tool_after_result, else the failure text
    // (a hook block's text, HOOK-18/19).
    bool is_error = c.state != CallState::Completed;
    std::string content = c.model_content ? *c.model_content
                          : c.output      ? renderModelContent(*c.output)
                                          : std::string();
    if (is_error && (content.empty() || c.hook_blocked)) content = c.reason;
    protocol::ModelMessage tm;
    tm.role = protocol::MessageRole::Tool;
    tm.content = protocol::JsonValue::fromText(R"({"tool_call_id":)" + quoteJson(tcid) + R"(,"content":)" +
                                               quoteJson(content) + R"(,"is_error":)" +
                                               (is_error ? "true" : "false") + "}");
    r->history.push_back(std::move(tm));
    toolsStep(r, next + 1);
  };
  auto id = engine_.callTool(r->session, name, *args);
  if (!id) {
    ToolCallStatus failed;
    failed.state = CallState::Failed;
    failed.reason = id.error();
    return record(failed);
  }
  runs_[r->id].tool_calls.push_back(*id);
  const ToolCallStatus* c = engine_.toolCall(*id);
  if (c->state != CallState::Pending) return record(*c);
  waiting_tools_[*id] = std::move(record);
}

// ---- delegation (HOOK-12, HOOK-36) ------------------------------------------------------------------

void Runtime::delegateStep(const std::shared_ptr<RunState>& r) {
  auto next_turn = [this, r] {
    ++r->turn;
    r->turn_failed_over = false;
    attemptStep(r);
  };
  const ScriptedTurn& turn = r->script.turns[r->turn];
  if (!turn.delegate) return next_turn();
  std::string child = engine_.createSession();
  SessionState& cs = sessions_[child];
  cs.delegated = true;
  cs.parent = r->session;
  runs_[r->id].child_sessions.push_back(child);
  std::string iid = engine_.newUuid();
  append(r->session, Ev("delegation_started").str("invocation_id", iid).str("child_session_id", child).text());
  auto started = begin(child, *turn.delegate, std::nullopt, [this, r, child, iid, next_turn](const RunRecord& cr) {
    append(r->session, Ev("delegation_finished")
                           .str("invocation_id", iid)
                           .str("child_session_id", child)
                           .str("child_run_id", cr.run_id)
                           .str("status", toString(cr.state))
                           .str("reason", cr.reason)
                           .text());
    protocol::ModelMessage tm;
    tm.role = protocol::MessageRole::Tool;
    tm.content = protocol::JsonValue::fromText(R"({"tool_call_id":)" + quoteJson(iid) + R"(,"content":)" +
                                               quoteJson(cr.final_text) + R"(,"is_error":)" +
                                               (cr.state == RunRecord::State::Completed ? "false" : "true") + "}");
    r->history.push_back(std::move(tm));
    next_turn();
  });
  if (!started) finish(r, RunRecord::State::Failed, started.error());
}

// ---- producer messages (PROD-43) ----------------------------------------------------------------------

void Runtime::setProducers(ProducerService* producers) {
  producers_ = producers;
  if (!producers_) return;
  std::weak_ptr<bool> alive = alive_;
  producers_->setAcceptedWatch([this, alive](const std::string& session) {
    if (!alive.expired()) postDeliverQueued(session);
  });
  // Queue messages accepted in an earlier lifetime (journal replay) wait for an idle session.
  for (auto& s : producers_->sessionsWaiting(protocol::DeliveryMode::Queue)) postDeliverQueued(s);
}

void Runtime::postDeliverQueued(const std::string& session) {
  // Posted, never inline: the acceptance path and finish() must not start a run re-entrantly.
  std::weak_ptr<bool> alive = alive_;
  engine_.post([this, alive, session] {
    if (!alive.expired()) deliverQueued(session);
  });
}

void Runtime::deliverQueued(const std::string& session) {
  if (!producers_) return;
  SessionState* ss = state(session);
  if (!ss || !ss->active_run.empty()) return;  // not idle: finish() tries again
  auto id = producers_->claim(session, protocol::DeliveryMode::Queue);
  if (!id) return;
  RunScript script;
  script.input = producers_->message(*id)->body;
  ScriptedTurn t;
  t.deltas = {"ok"};
  script.turns.push_back(std::move(t));
  auto run = begin(session, std::move(script), std::nullopt, {}, *id);
  if (!run) producers_->release(*id);
}

std::vector<const RunRecord*> Runtime::runsOf(const std::string& session) const {
  std::vector<const RunRecord*> out;
  for (auto& id : run_order_) {
    auto it = runs_.find(id);
    if (it != runs_.end() && it->second.session_id == session) out.push_back(&it->second);
  }
  return out;
}

// =================================================================================================
// Steering, model selection, compaction, fork, revert
// =================================================================================================

Expected<Ok, std::string> Runtime::steer(const std::string& session, const std::string& text, OpDone done) {
  SessionState* ss = state(session);
  if (!ss) return unexpected("unknown session `" + session + "`");
  if (ss->active_run.empty()) return unexpected("session `" + session + "` has no active run to steer");
  std::string run_id = ss->active_run;
  auto commit = [this, session, run_id, done](const std::string& original, const std::string& text) {
    auto it = active_.find(run_id);
    SessionOpResult res;
    if (it == active_.end()) {
      res.status = "failed";
      res.reason = "the run ended before the steering input was committed";
      return done(res);
    }
    append(session, Ev("user_input_submitted").str("input", text).text());
    if (text != original)
      append(session, Ev("user_input_transformed").str("original_input", original).str("input", text).text());
    it->second->pending_steer.push_back(text);
    runs_[run_id].steered.push_back(text);
    res.status = "steered";
    res.text = text;
    done(res);
  };
  if (ss->delegated) {  // HOOK-36: subagent steering never fires user_before_input
    commit(text, text);
    return Ok{};
  }
  auto st = std::make_shared<InputChain>();
  st->text = text;
  hooks_.runTyped<protocol::UserBeforeInputResult>(
      Hook::UserBeforeInput, session,
      [session, st](const std::string& ctx) {
        protocol::UserBeforeInputParams p;
        p.session_id = session;
        p.context_id = ctx;
        p.text = st->text;
        return toJsonText(p);
      },
      [st](const std::string& plugin, protocol::UserBeforeInputResult& res) {
        switch (res.action) {
          case protocol::InputAction::Allow: return Step::next();
          case protocol::InputAction::Handled:
            st->handled = res.reason.value_or("handled by " + plugin);
            return Step::stop();
          case protocol::InputAction::Transform:
            if (!res.new_text || blank(*res.new_text)) return Step::invalid("transform needs a non-blank new_text");
            st->text = *res.new_text;
            return Step::next();
        }
        return Step::next();
      },
      [st, text, commit, done] {
        if (st->handled) {  // HOOK-39: the run is not steered
          SessionOpResult res;
          res.status = "handled";
          res.reason = *st->handled;
          return done(res);
        }
        commit(text, st->text);
      });
  return Ok{};
}

Expected<Ok, std::string> Runtime::selectModel(const std::string& session, protocol::ModelSelection sel) {
  SessionState* ss = state(session);
  if (!ss) return unexpected("unknown session `" + session + "`");
  ss->draft = std::move(sel);  // HOOK-49: a draft before a run fires nothing
  return Ok{};
}

Expected<Ok, std::string> Runtime::compact(const std::string& session,
                                           std::optional<std::string> instructions, OpDone done) {
  if (!state(session)) return unexpected("unknown session `" + session + "`");
  struct St {
    std::optional<std::string> instructions;
    std::vector<std::string> additions;
    std::size_t additions_bytes = 0;
    std::optional<std::string> cancelled;
  };
  auto st = std::make_shared<St>();
  st->instructions = std::move(instructions);
  const Session* s = engine_.session(session);
  std::string checkpoint = session + ":" + std::to_string(s->next_seq - 1);  // R4 shape
  hooks_.runTyped<protocol::SessionBeforeCompactResult>(
      Hook::SessionBeforeCompact, session,
      [session, st, checkpoint](const std::string& ctx) {
        protocol::SessionBeforeCompactParams p;
        p.session_id = session;
        p.context_id = ctx;
        p.checkpoint_id = checkpoint;
        p.additions = st->additions;  // HOOK-35: accumulated so far
        p.instructions = st->instructions;
        return toJsonText(p);
      },
      [this, session, st](const std::string& plugin, protocol::SessionBeforeCompactResult& res) {
        if (res.cancel) {  // HOOK-34
          st->cancelled = res.reason.value_or("compaction cancelled by " + plugin);
          hooks_.diagnose(session, plugin, "hook_blocked", *st->cancelled);
          return Step::stop();
        }
        // HOOK-35: override before addendum, each bounded by 65,536 bytes.
        if (res.instructions_override && res.instructions_override->size() > kMaxCompactionTextBytes)
          return Step::invalid("instructions_override is above 65536 bytes");
        std::size_t add = res.addendum ? res.addendum->size() : 0;
        if (st->additions_bytes + add > kMaxCompactionTextBytes)
          return Step::invalid("compaction additions would exceed 65536 bytes");
        if (res.instructions_override) st->instructions = *res.instructions_override;
        if (res.addendum && !res.addendum->empty()) {
          st->additions.push_back(*res.addendum);
          st->additions_bytes += add;
        }
        return Step::next();
      },
      [this, session, st, checkpoint, done] {
        SessionOpResult res;
        res.checkpoint_id = checkpoint;
        res.instructions = st->instructions;
        res.additions = st->additions;
        if (st->cancelled) {
          res.status = "cancelled";  // the engine and the session stay usable
          res.reason = *st->cancelled;
          return done(res);
        }
        // The internal compaction agent: a model call that triggers no hook (HOOK-12).
        ++internal_model_calls_;
        std::string iid = engine_.newUuid();
        append(session, Ev("internal_agent_started").str("invocation_id", iid).str("kind", "compaction").text());
        append(session, Ev("internal_agent_completed").str("invocation_id", iid).str("kind", "compaction").text());
        std::string adds = "[";
        for (std::size_t i = 0; i < st->additions.size(); ++i) adds += (i ? "," : "") + quoteJson(st->additions[i]);
        adds += "]";
        append(session, Ev("context_checkpoint_committed")
                            .raw("checkpoint", R"({"id":)" + quoteJson(checkpoint) + R"(,"instructions":)" +
                                                   (st->instructions ? quoteJson(*st->instructions) : "null") +
                                                   R"(,"additions":)" + adds + "}")
                            .text());
        res.status = "compacted";
        done(res);
      });
  return Ok{};
}

Expected<Ok, std::string> Runtime::fork(const std::string& session, std::uint64_t through_seq, OpDone done) {
  if (!state(session)) return unexpected("unknown session `" + session + "`");
  if (through_seq >= engine_.session(session)->next_seq)
    return unexpected("through_seq " + std::to_string(through_seq) + " is beyond the session log");
  auto blocked = std::make_shared<std::optional<std::string>>();
  hooks_.runTyped<protocol::AllowBlockResult>(
      Hook::SessionBeforeFork, session,
      [session, through_seq](const std::string& ctx) {
        protocol::SessionBeforeForkParams p;
        p.session_id = session;
        p.context_id = ctx;
        p.through_seq = through_seq;
        return toJsonText(p);
      },
      [this, session, blocked](const std::string& plugin, protocol::AllowBlockResult& res) {
        if (res.action == protocol::AllowBlock::Allow) return Step::next();
        *blocked = res.reason.value_or("fork blocked by " + plugin);
        hooks_.diagnose(session, plugin, "hook_blocked", **blocked);
        return Step::stop();
      },
      [this, session, through_seq, blocked, done] {
        SessionOpResult res;
        if (*blocked) {  // HOOK-52
          res.status = "blocked";
          res.reason = **blocked;
          return done(res);
        }
        std::string child = engine_.createSession();
        sessions_[child].last_used = sessions_[session].last_used;
        sessions_[child].titled = true;
        if (const Session* s = engine_.session(session)) {
          std::vector<std::pair<std::shared_ptr<const std::string>, std::string>> copy;
          for (auto& rec : s->log)
            if (rec.seq <= through_seq) copy.emplace_back(rec.payload, rec.source_plugin);
          for (auto& [payload, source] : copy)
            if (auto p = json::parse(*payload)) (void)engine_.appendEvent(child, p->doc, source);
        }
        res.status = "forked";
        res.session_id = child;
        done(res);
      });
  return Ok{};
}

Expected<Ok, std::string> Runtime::revert(const std::string& session, std::uint64_t through_seq,
                                          std::optional<std::string> instructions, OpDone done) {
  if (!state(session)) return unexpected("unknown session `" + session + "`");
  if (through_seq >= engine_.session(session)->next_seq)
    return unexpected("through_seq " + std::to_string(through_seq) + " is beyond the session log");
  struct St {
    std::optional<std::string> instructions, blocked;
  };
  auto st = std::make_shared<St>();
  st->instructions = std::move(instructions);
  hooks_.runTyped<protocol::SessionBeforeRevertResult>(
      Hook::SessionBeforeRevert, session,
      [session, through_seq, st](const std::string& ctx) {
        protocol::SessionBeforeRevertParams p;
        p.session_id = session;
        p.context_id = ctx;
        p.through_seq = through_seq;
        p.instructions = st->instructions;  // including earlier overrides in this chain
        return toJsonText(p);
      },
      [this, session, st](const std::string& plugin, protocol::SessionBeforeRevertResult& res) {
        switch (res.action) {
          case protocol::RevertAction::Allow: return Step::next();
          case protocol::RevertAction::Block:
            st->blocked = res.reason.value_or("revert blocked by " + plugin);
            hooks_.diagnose(session, plugin, "hook_blocked", *st->blocked);
            return Step::stop();
          case protocol::RevertAction::Override:
            if (!res.instructions_override || blank(*res.instructions_override))
              return Step::invalid("override needs a non-blank instructions_override");
            st->instructions = *res.instructions_override;
            return Step::next();
        }
        return Step::next();
      },
      [this, session, through_seq, st, done] {
        SessionOpResult res;
        res.instructions = st->instructions;
        if (st->blocked) {  // HOOK-53
          res.status = "blocked";
          res.reason = *st->blocked;
          return done(res);
        }
        append(session, Ev("session_reverted")
                            .num("through_seq", through_seq)
                            .raw("instructions", st->instructions ? quoteJson(*st->instructions) : "null")
                            .text());
        res.status = "reverted";
        done(res);
      });
  return Ok{};
}

// =================================================================================================
// JSON
// =================================================================================================

std::string runJson(const RunRecord& r) {
  auto list = [](const std::vector<std::string>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + quoteJson(v[i]);
    return out + "]";
  };
  std::string reqs = "[";
  for (std::size_t i = 0; i < r.requests.size(); ++i) reqs += (i ? "," : "") + json::compact(*r.requests[i]);
  reqs += "]";
  return R"({"run_id":)" + quoteJson(r.run_id) + R"(,"session_id":)" + quoteJson(r.session_id) +
         R"(,"state":")" + toString(r.state) + R"(","reason":)" + quoteJson(r.reason) +
         R"(,"input":)" + quoteJson(r.input) + R"(,"system_prompt":)" + quoteJson(r.system_prompt) +
         R"(,"final_text":)" + quoteJson(r.final_text) + R"(,"model":)" + toJsonText(r.model) +
         R"(,"requests":)" + reqs + R"(,"tool_calls":)" + list(r.tool_calls) +
         R"(,"child_sessions":)" + list(r.child_sessions) + R"(,"steered":)" + list(r.steered) +
         R"(,"producer_messages":)" + list(r.producer_messages) + R"(,"origin":)" + quoteJson(r.origin) + "}";
}

std::string sessionOpJson(const SessionOpResult& r) {
  std::string adds = "[";
  for (std::size_t i = 0; i < r.additions.size(); ++i) adds += (i ? "," : "") + quoteJson(r.additions[i]);
  adds += "]";
  return R"({"status":)" + quoteJson(r.status) + R"(,"reason":)" + quoteJson(r.reason) +
         R"(,"session_id":)" + quoteJson(r.session_id) + R"(,"instructions":)" +
         (r.instructions ? quoteJson(*r.instructions) : "null") + R"(,"additions":)" + adds +
         R"(,"checkpoint_id":)" + quoteJson(r.checkpoint_id) + R"(,"text":)" + quoteJson(r.text) + "}";
}

}  // namespace conform::engine
