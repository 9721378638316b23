// mock_engine/hooks — the generic interception chain and the tool gate (see hooks.h).
#include "mock_engine/hooks.h"

#include <algorithm>

#include "core/json/schema.h"
#include "mock_engine/engine_impl.h"

namespace conform::engine {

using protocol::Hook;

std::string renderModelContent(const json::Value& output) {
  auto kind = json::stringMember(output, "kind");
  if (kind && *kind == "single") return std::string(json::stringMember(output, "text").value_or(""));
  std::string out;
  const json::Value* streams = json::member(output, "streams");
  if (!streams || !streams->IsArray()) return out;
  for (auto& s : streams->GetArray()) {
    if (!out.empty()) out += "\n";
    out += "[" + std::string(json::stringMember(s, "stream").value_or("")) + "]\n" +
           std::string(json::stringMember(s, "text").value_or(""));
  }
  return out;
}

// =================================================================================================
// The chain
// =================================================================================================

struct HookRunner::Chain {
  Hook hook;
  std::string method, session, context_id;
  std::vector<std::string> plugins;
  std::size_t next = 0;
  ParamsFn params;
  ApplyFn apply;
  std::function<void()> done;
};

HookRunner::HookRunner(Engine& engine) : engine_(engine) { engine_.setToolHooks(this); }
HookRunner::~HookRunner() { engine_.setToolHooks(nullptr); }

std::vector<std::string> HookRunner::subscribers(Hook hook) const {
  std::vector<std::string> out;
  std::string_view name = protocol::toString(hook);
  // statuses() is in registration order (config merge of §1.6, HOOK-05).
  for (auto& s : engine_.statuses()) {
    if (s.state != PluginState::Connected) continue;
    for (auto& h : s.capabilities.intercept)
      if (h == name) { out.push_back(s.plugin); break; }
  }
  // EngineFault::HooksByName: name order instead of registration order (HOOK-04/05 broken).
  if (engine_.fault() == EngineFault::HooksByName) std::sort(out.begin(), out.end());
  return out;
}

void HookRunner::diagnose(const std::string& session, const std::string& plugin,
                          const std::string& kind, const std::string& message) {
  engine_.recordPluginDiagnostic(session, plugin, kind, message);
}

std::chrono::milliseconds HookRunner::timeoutOf(const std::string& plugin) const {
  for (auto& p : engine_.config().plugins)
    if (p.name == plugin) return std::chrono::milliseconds(p.interception_timeout_ms);
  return std::chrono::milliseconds(kDefaultInterceptionTimeoutMs);
}

void HookRunner::run(Hook hook, const std::string& session, ParamsFn params, ApplyFn apply,
                     std::function<void()> done) {
  auto c = std::make_shared<Chain>();
  c->hook = hook;
  c->method = std::string(protocol::hookMethod(hook));
  c->session = session;
  c->plugins = subscribers(hook);
  c->params = std::move(params);
  c->apply = std::move(apply);
  c->done = std::move(done);
  // §13.1 rule 2 / HOOK-11: one fresh token per chain, shared by all of its plugins.
  if (!c->plugins.empty()) c->context_id = engine_.newUuid();
  step(c);
}

void HookRunner::step(const std::shared_ptr<Chain>& c) {
  if (c->next >= c->plugins.size()) {
    auto done = std::move(c->done);
    c->done = nullptr;
    if (done) done();
    return;
  }
  const std::string plugin = c->plugins[c->next++];
  // EngineFault::ContextPerPlugin: a fresh token per plugin call (HOOK-11's shared token broken).
  if (engine_.fault() == EngineFault::ContextPerPlugin && c->next > 1) c->context_id = engine_.newUuid();
  std::string hook_name(protocol::toString(c->hook));
  std::size_t at = trace_.size();
  trace_.push_back({hook_name, plugin, c->session, c->context_id, "pending"});
  auto fail_open = [this, c, plugin, hook_name, at](const char* outcome, const char* kind,
                                                    const std::string& text) {
    // HOOK-07/08: diagnose, keep the current state, go on with the next plugin.
    trace_[at].outcome = outcome;
    diagnose(c->session, plugin, kind, "plugin `" + plugin + "` " + hook_name + ": " + text);
    step(c);
  };
  std::string params = c->params(c->context_id);
  auto timeout = timeoutOf(plugin);
  // EngineFault::IgnoreHookTimeout: a day instead of interception_timeout_ms (HOOK-06 broken).
  if (engine_.fault() == EngineFault::IgnoreHookTimeout) timeout = std::chrono::hours(24);
  auto answered = [this, c, plugin, at, fail_open, timeout](const json::Value* response,
                                                             const std::string& why) {
    if (!response) {
      if (why == "timed out")
        return fail_open("timeout", "interception_timeout",
                         "timed out after " + std::to_string(timeout.count()) + " ms");
      return fail_open("crash", "interception_crash", why);  // disconnected mid-call
    }
    if (const json::Value* err = json::member(*response, "error")) {
      if (engine_.fault() == EngineFault::HookFailClosed) {  // the chain never goes on
        trace_[at].outcome = "error";
        return;
      }
      return fail_open("error", "interception_timeout",
                       "answered with an error: " +
                           std::string(json::stringMember(*err, "message").value_or("")));
    }
    const json::Value* result = json::member(*response, "result");
    Step s = result ? c->apply(plugin, *result) : Step::malformed("no result");
    switch (s.kind) {
      case Step::Kind::Malformed:
        return fail_open("malformed", "interception_timeout", "malformed result: " + s.why);
      case Step::Kind::Invalid:
        // HOOK-09: the invalid mutation is skipped; the chain goes on with the previous state.
        trace_[at].outcome = "invalid";
        diagnose(c->session, plugin, "invalid_modification",
                 "plugin `" + plugin + "` " + trace_[at].hook + ": " + s.why);
        return step(c);
      case Step::Kind::Stop:
        trace_[at].outcome = "stop";  // §13.1 rule 6: later plugins are not called
        c->next = c->plugins.size();
        return step(c);
      case Step::Kind::Continue:
        trace_[at].outcome = "continue";
        return step(c);
    }
  };
  switch (engine_.requestHook(plugin, c->method, params, c->session, c->context_id, timeout,
                              std::move(answered))) {
    case Engine::HookSend::Sent: return;
    case Engine::HookSend::QueueFull:
      // HOOK-15: never wait for queue space.
      return fail_open("queue_full", "interception_timeout", "queue is full");
    case Engine::HookSend::NotConnected:
      return fail_open("crash", "interception_crash", "plugin is not connected");
  }
}

// =================================================================================================
// The tool gate (HOOK-16…27)
// =================================================================================================

namespace {

// TOOL-06: the primary resource as the engine derives it from the arguments.
std::optional<std::string> resourceOf(const ToolDeclaration& decl, const json::Value& args) {
  if (!decl.primary_resource_param) return std::nullopt;
  const json::Value* v = json::member(args, *decl.primary_resource_param);
  if (!v || v->IsNull()) return std::nullopt;
  return v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : json::compact(*v);
}

}  // namespace

void HookRunner::beforeCall(const ToolCallStatus& call, const ToolDeclaration& decl,
                            std::function<void(BeforeOutcome)> done) {
  struct State {
    std::shared_ptr<json::Document> args;  // current, validated
    bool modified = false;
    BeforeOutcome out;
  };
  auto st = std::make_shared<State>();
  st->args = call.arguments;
  std::string session = call.session_id, tool = call.tool, permission = decl.permission_name;
  std::optional<std::string> resource = call.resource;
  ToolDeclaration d = decl;  // the pinned declaration (schema, primary parameter)
  bool v004 = profile004();
  runTyped<protocol::ToolBeforeCallResult>(
      Hook::ToolBeforeCall, session,
      [st, session, tool, permission, resource](const std::string& ctx) {
        protocol::ToolBeforeCallParams p;
        p.session_id = session;
        p.context_id = ctx;
        p.tool = tool;
        p.arguments = protocol::JsonValue(*st->args);  // current, possibly modified (§13.2)
        p.permission_name = permission;                // HOOK-21: never changes
        p.resource = resource;
        return toJsonText(p);
      },
      [this, st, d, resource, v004, session](const std::string& plugin,
                                             protocol::ToolBeforeCallResult& r) {
        if (r.action == protocol::AllowBlock::Block) {
          // HOOK-18/19: the tool does not run; the model gets this text as a tool error.
          st->out.blocked = true;
          st->out.block_text = r.message_to_model ? *r.message_to_model
                               : r.reason         ? *r.reason
                                                  : "plugin `" + plugin + "` blocked the tool call";
          diagnose(session, plugin, "hook_blocked", st->out.block_text);
          return Step::stop();
        }
        if (!r.modified_arguments) return Step::next();  // HOOK-21: allow grants nothing
        const json::Value& m = r.modified_arguments->get();
        // HOOK-20: an object, valid against the pinned schema, and re-preparation must give the
        // same permission and resource (labels: the reference engine has none).
        std::string why;
        if (!m.IsObject()) why = "modified_arguments must be an object";
        if (why.empty()) {
          auto schema = json::Schema::compile(*d.parameters);
          if (!schema) why = "the tool schema does not compile: " + schema.error();
          else if (auto v = schema->validate(m)) why = "modified_arguments do not match the tool schema: " + v->str();
        }
        if (why.empty() && resourceOf(d, m) != resource)
          why = "modified_arguments change the permission resource (HOOK-21)";
        if (!why.empty()) {
          if (v004) {
            // HOOK-22 / DELTA D1: 0.0.4 (R4) fails the tool call instead of skipping.
            diagnose(session, plugin, "invalid_modification", why);
            st->out.blocked = true;
            st->out.block_text = "plugin `" + plugin + "` returned invalid tool arguments: " + why;
            return Step::stop();
          }
          return Step::invalid(why);  // 0.0.6: skipped, previous arguments kept
        }
        st->args = std::make_shared<json::Document>(json::copy(m));
        st->modified = true;
        return Step::next();
      },
      [st, done = std::move(done)] {
        if (st->modified && !st->out.blocked) st->out.arguments = st->args;
        done(std::move(st->out));
      });
}

void HookRunner::afterResult(const ToolCallStatus& call, std::function<void(AfterOutcome)> done) {
  struct State {
    std::string content;
  };
  auto st = std::make_shared<State>();
  // HOOK-27: result_content is the model-facing text derived from the output.
  st->content = call.output ? renderModelContent(*call.output) : std::string();
  std::string original = st->content;
  std::string session = call.session_id, tool = call.tool;
  auto args = call.arguments;
  bool is_error = call.is_error;
  bool v004 = profile004();
  std::size_t limit = tool_output_limit_;
  runTyped<protocol::ToolAfterResultResult>(
      Hook::ToolAfterResult, session,
      [st, session, tool, args, is_error](const std::string& ctx) {
        protocol::ToolAfterResultParams p;
        p.session_id = session;
        p.context_id = ctx;
        p.tool = tool;
        if (args) p.arguments = protocol::JsonValue(*args);  // the arguments actually executed
        p.result_content = st->content;  // HOOK-24: an earlier replacement
        p.is_error = is_error;
        return toJsonText(p);
      },
      [st, limit](const std::string&, protocol::ToolAfterResultResult& r) {
        if (r.action == protocol::KeepReplace::Keep) return Step::next();  // `note` is ignored
        if (!r.replacement_content) return Step::invalid("replace without replacement_content");
        if (r.replacement_content->size() > limit)  // HOOK-26
          return Step::invalid("replacement_content is " + std::to_string(r.replacement_content->size()) +
                               " bytes, above the tool-output limit of " + std::to_string(limit));
        st->content = *r.replacement_content;
        return Step::next();
      },
      [st, original, v004, done = std::move(done)] {
        AfterOutcome o;
        o.supersede_output = v004 && st->content != original;  // HOOK-25 (DELTA §4.5)
        o.model_content = std::move(st->content);
        done(std::move(o));
      });
}

void HookRunner::finished(const ToolCallStatus& call) {
  if (tool_finished_) tool_finished_(call);
}

// =================================================================================================
// Engine additions (engine4): the hook request and the tool gate slot
// =================================================================================================

void Engine::setToolHooks(ToolHooks* hooks) { tool_hooks_ = hooks; }

Engine::HookSend Engine::requestHook(const std::string& plugin, const std::string& method,
                                     const std::string& params_json, const std::string& session,
                                     const std::string& context_id, clock::Duration timeout,
                                     ResponseFn done) {
  Impl& m = *impl_;
  for (auto& p : m.plugins) {
    if (p.cfg.name != plugin) continue;
    Conn* c = m.conn(p.conn);
    if (!c || c->ended || !c->handshake_done || c->shutdown_sent || c->stdin_closed)
      return HookSend::NotConnected;
    // HOOK-15 / PROTOCOL §18: the per-plugin 1024 queue is full -> fail open at once.
    if (c->queue.size() >= c->queue.capacity()) return HookSend::QueueFull;
    // HOOK-10: the same kind of request grant as a tool call, revoked when the hook call ends.
    c->grants.mint(context_id, session, GrantKind::Request, timeout);
    ConnId cid = c->id;
    std::string token = context_id;
    PendingRequest pr;
    pr.kind = PendingRequest::Kind::Custom;
    pr.done = std::make_shared<ResponseFn>(
        [&m, cid, token, done = std::move(done)](const json::Value* response, const std::string& why) {
          if (Conn* cc = m.conn(cid)) cc->grants.revoke(token, m.clk.now());
          done(response, why);
        });
    m.sendRequest(*c, method, params_json, pr, timeout);
    c->grants.activate(context_id, m.clk.now());  // EMIT-11: active from the write
    return HookSend::Sent;
  }
  return HookSend::NotConnected;
}

}  // namespace conform::engine
