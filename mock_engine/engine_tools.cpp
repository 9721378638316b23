// mock_engine/engine_tools — tool declarations, the shared namespace, deny-by-default permissions
// and plugin/tools/call (PROTOCOL §8; INIT-20/21, TOOL-02…29).
#include <algorithm>
#include <set>

#include "core/json/schema.h"
#include "core/protocol/tools.h"
#include "mock_engine/engine_impl.h"

namespace conform::engine {

namespace {

// TOOL-04: named output streams are 1–64 characters from the URI-unreserved set [chosen C4].
constexpr std::size_t kMaxStreams = 8;       // S6 §Tools: 1–8 stream names
constexpr std::size_t kMaxStreamNameChars = 64;  // PROTOCOL §8.1 [chosen]

bool uriUnreserved(std::string_view s) {
  if (s.empty() || s.size() > kMaxStreamNameChars) return false;
  for (char ch : s) {
    bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '.' || ch == '_' || ch == '~';
    if (!ok) return false;
  }
  return true;
}

// Sends plugin/tools/call for a call that passed policy, approval and the hooks (engine4 split it
// out of callTool so the tool_before_call chain can finish later).
void dispatchToolCall(Engine::Impl& m, ToolCallStatus& call, std::size_t pi);

// PROTOCOL §5.3 `owner`: an AssistantToolCallRef, the same shape produceEvent() writes for its
// terminal records, so every tool_call_* record of a session has one owner shape. The simulated
// runtime has no provider items; the model call id is the invocation id [chosen].
rapidjson::Value ownerRef(const ToolCallStatus& call, json::Allocator& a) {
  rapidjson::Value owner(rapidjson::kObjectType);
  owner.AddMember("model_turn_seq", call.model_turn_seq, a);
  owner.AddMember("content_index", 0, a);
  owner.AddMember("model_call_id", json::str(call.invocation_id, a), a);
  owner.AddMember("provider_item_id", rapidjson::Value(), a);
  return owner;
}

// The `code` of the terminal `error` ({code, message}, PROTOCOL §5.3), one per row of the §8.4
// outcome table [chosen names]; `message` carries the R4 reason text.
const char* errorCode(const ToolCallStatus& call) {
  auto starts = [&](std::string_view p) { return call.reason.rfind(p, 0) == 0; };
  if (call.state == CallState::Cancelled) return "cancelled";
  if (call.state == CallState::Denied) return "permission_denied";
  if (call.is_error) return "tool_error";  // TOOL-14 (0.0.6)
  if (starts("plugin tool call rejected")) return "rejected";          // RPC-20
  if (starts("malformed plugin tool call result")) return "malformed_result";  // TOOL-10/12
  if (starts("plugin tool call timed out")) return "timeout";          // TOOL-16
  if (call.reason.find("stopped during tool call") != std::string::npos) return "plugin_stopped";
  return "failed";
}

}  // namespace

Expected<std::vector<ToolDeclaration>, std::string> Engine::Impl::validateTools(
    const json::Value& tools, const std::string& plugin) {
  (void)plugin;
  std::vector<ToolDeclaration> out;
  std::set<std::string> seen;
  for (rapidjson::SizeType i = 0; i < tools.Size(); ++i) {
    const json::Value& t = tools[i];
    std::string label = "#" + std::to_string(i);
    if (auto n = json::stringMember(t, "name")) label = "`" + std::string(*n) + "`";
    json::Path::Root root("tools[" + std::to_string(i) + "]");
    json::Path p(root);
    ToolDeclaration d;
    std::optional<std::string> primary;
    const json::Value* params = nullptr;
    const json::Value* output = nullptr;
    {
      json::ObjectMapper o(t, p);
      bool ok = o && o.map("name", d.name) && o.map("description", d.description) &&
                o.map("permission_name", d.permission_name) &&
                o.mapNullable("primary_resource_param", primary);
      if (ok) {
        params = o.get("parameters");
        output = o.get("output");
        ok = o.closed();
        if (ok && (!params || params->IsNull()))
          ok = p.field("parameters").report("required member is missing");
        if (ok && output && output->IsNull())
          ok = p.field("output").report("member may be omitted but must not be null");
        // TOOL-03 (DELTA §3.4): a 0.0.4 declaration has no `output`; an unknown member is malformed.
        if (ok && output && cfg.protocol_version == "0.0.4")
          ok = p.field("output").report("unknown member (no output declaration in protocol 0.0.4)");
      }
      if (!ok)
        return unexpected("plugin tool " + label + " is malformed: " + root.error().value_or(""));
    }
    // INIT-20: snake_case, unique within the plugin.
    if (!isSnakeCase(d.name) || !seen.insert(d.name).second)
      return unexpected("plugin declared invalid or duplicate tool name `" + d.name + "`");
    // INIT-21: description, permission name, schema, primary parameter.
    if (d.description.empty())
      return unexpected("plugin tool `" + d.name + "` is malformed: description must not be empty");
    if (!isSnakeCase(d.permission_name))
      return unexpected("plugin tool `" + d.name + "` is malformed: permission_name `" +
                        d.permission_name + "` is not snake_case");
    // INIT-21: parameters is a schema object passing draft 2020-12 structural meta-validation.
    if (!params->IsObject())
      return unexpected("plugin tool `" + d.name +
                        "` has invalid JSON Schema: parameters must be a schema object");
    if (auto v = json::checkSchemaDocument(*params))
      return unexpected("plugin tool `" + d.name + "` has invalid JSON Schema: parameters." +
                        v->str());
    if (primary) {
      const json::Value* props = json::member(*params, "properties");
      if (!props || !props->IsObject() || !json::member(*props, *primary))
        return unexpected("plugin tool `" + d.name + "` primary_resource_param `" + *primary +
                          "` is not declared in properties");
    }
    d.primary_resource_param = primary;
    d.parameters = std::make_shared<json::Document>(json::copy(*params));
    // TOOL-03/04: output declaration.
    if (output) {
      auto bad = [&](const std::string& why) {
        return unexpected("plugin tool `" + d.name + "` has an invalid output declaration: " + why);
      };
      if (!output->IsObject()) return bad("expected an object");
      auto kind = json::stringMember(*output, "kind");
      if (!kind) return bad("kind must be \"single\" or \"named\"");
      const json::Value* streams = json::member(*output, "streams");
      for (auto& m : output->GetObject()) {
        std::string_view k(m.name.GetString(), m.name.GetStringLength());
        if (k != "kind" && k != "streams") return bad("unknown member `" + std::string(k) + "`");
      }
      if (*kind == "single") {
        if (streams) return bad("streams is only allowed with kind \"named\"");
      } else if (*kind == "named") {
        if (!streams || !streams->IsArray()) return bad("named output needs a streams array");
        if (streams->Empty() || streams->Size() > kMaxStreams) return bad("1-8 streams are required");
        std::set<std::string> stream_names;
        for (auto& s : streams->GetArray()) {
          if (!s.IsString() || !uriUnreserved(std::string_view(s.GetString(), s.GetStringLength())))
            return bad("stream names are 1-64 characters from A-Z a-z 0-9 - . _ ~");
          if (!stream_names.insert(s.GetString()).second)
            return bad("duplicate stream `" + std::string(s.GetString()) + "`");
          d.streams.emplace_back(s.GetString(), s.GetStringLength());
        }
        d.named_output = true;
      } else {
        return bad("kind must be \"single\" or \"named\"");
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

Expected<Ok, std::string> Engine::Impl::claimTools(std::size_t pi) {
  PluginSlot& p = plugins[pi];
  // TOOL-26/27: built-in names are reserved; MCP claims win.
  for (auto& d : p.decls) {
    auto it = names.find(d.name);
    if (it == names.end()) continue;
    if (it->second.kind == ToolClaim::Kind::Builtin)
      return unexpected("plugin tool `" + d.name + "` uses a reserved built-in tool name");
    if (it->second.kind == ToolClaim::Kind::Mcp)
      return unexpected("plugin tool `" + d.name + "` collides with a tool claimed by MCP");
  }
  // TOOL-28: the plugin finishing registration last wins; the earlier owner keeps its other tools.
  for (std::size_t di = 0; di < p.decls.size(); ++di) {
    auto& d = p.decls[di];
    auto it = names.find(d.name);
    if (it != names.end() && it->second.kind == ToolClaim::Kind::Plugin && it->second.plugin != pi) {
      PluginSlot& loser = plugins[it->second.plugin];
      std::string note = "tool `" + d.name + "` was replaced by later plugin `" + p.cfg.name + "`";
      loser.status.notes.push_back(note);
      loser.status.reason = note;
      std::size_t li = it->second.plugin;
      names[d.name] = ToolClaim{ToolClaim::Kind::Plugin, pi, di};
      refreshToolList(li);
    } else {
      names[d.name] = ToolClaim{ToolClaim::Kind::Plugin, pi, di};
    }
  }
  return Ok{};
}

void Engine::Impl::releaseTools(std::size_t pi) {
  // TOOL-29 / LIFE-11: claims vanish at once when the connection ends.
  for (auto it = names.begin(); it != names.end();) {
    if (it->second.kind == ToolClaim::Kind::Plugin && it->second.plugin == pi) it = names.erase(it);
    else ++it;
  }
  plugins[pi].status.tools.clear();
}

void Engine::Impl::refreshToolList(std::size_t pi) {
  auto& list = plugins[pi].status.tools;
  list.clear();
  for (auto& d : plugins[pi].decls) {
    auto it = names.find(d.name);
    if (it != names.end() && it->second.kind == ToolClaim::Kind::Plugin && it->second.plugin == pi)
      list.push_back(d.name);
  }
}

Decision Engine::Impl::decide(const std::string& session, const std::string& resource) const {
  // PROTOCOL §8.5 (TOOL-22): deny by default; the last matching rule decides, agent policy first,
  // then the session overlay (so the overlay overrides).
  Decision d = Decision::Deny;
  auto apply = [&](const std::vector<PermissionRule>& rules) {
    for (auto& r : rules)
      if (r.action == "plugin" && globMatch(r.pattern, resource)) d = r.decision;
  };
  apply(cfg.permissions);
  auto s = sessions.find(session);
  if (s != sessions.end()) apply(s->second.overlay);
  return d;
}

bool Engine::Impl::pluginToolsVisible(const std::string& session) const {
  // TOOL-21: visible once any allow/ask rule for the `plugin` action exists.
  auto any = [](const std::vector<PermissionRule>& rules) {
    for (auto& r : rules)
      if (r.action == "plugin" && r.decision != Decision::Deny) return true;
    return false;
  };
  if (any(cfg.permissions)) return true;
  auto s = sessions.find(session);
  return s != sessions.end() && any(s->second.overlay);
}

bool Engine::Impl::skillAllows(const std::string& session, const std::string& plugin) const {
  auto s = sessions.find(session);
  if (s == sessions.end() || !s->second.skill_allowed_tools) return true;
  for (const std::string& e : *s->second.skill_allowed_tools)
    if (e == "Plugin" || e == "Plugin(" + plugin + ":*)") return true;
  return false;
}

Expected<Ok, std::string> Engine::setSessionSkill(const std::string& session,
                                                  std::optional<std::vector<std::string>> allowed_tools) {
  auto it = impl_->sessions.find(session);
  if (it == impl_->sessions.end()) return unexpected("unknown session `" + session + "`");
  it->second.skill_allowed_tools = std::move(allowed_tools);
  return Ok{};
}

std::vector<std::string> Engine::visibleTools(const std::string& session) const {
  std::vector<std::string> out;
  bool plugin_ok = impl_->pluginToolsVisible(session);
  for (auto& [name, claim] : impl_->names) {
    if (claim.kind == ToolClaim::Kind::Plugin && !plugin_ok) continue;
    if (claim.kind == ToolClaim::Kind::Plugin &&
        !impl_->skillAllows(session, impl_->plugins[claim.plugin].cfg.name))
      continue;  // TOOL-25
    out.push_back(name);  // TOOL-02: verbatim, never prefixed
  }
  return out;
}

void Engine::claimMcpTool(const std::string& name) {
  Impl& m = *impl_;
  auto it = m.names.find(name);
  if (it != m.names.end() && it->second.kind == ToolClaim::Kind::Plugin) {
    PluginSlot& p = m.plugins[it->second.plugin];
    // TOOL-27 / LIFE-13: forced failure, the process is killed.
    if (Conn* c = m.conn(p.conn))
      m.endConnection(*c, PluginState::Failed,
                      "plugin `" + p.cfg.name + "` tool `" + name + "` was preempted by MCP", true);
  }
  m.names[name] = ToolClaim{ToolClaim::Kind::Mcp, 0, 0};
}

Expected<std::string, std::string> Engine::callTool(const std::string& session,
                                                     const std::string& tool,
                                                     const json::Value& arguments) {
  Impl& m = *impl_;
  if (!m.sessions.count(session)) return unexpected("unknown session `" + session + "`");
  std::string id = newUuid();
  ToolCallStatus& call = m.calls[id];
  call.invocation_id = id;
  call.session_id = session;
  call.tool = tool;
  auto fail = [&](CallState st, std::string reason) {
    m.finishCall(call, st, std::move(reason), nullptr);
    return id;
  };
  if (m.shutting_down) return fail(CallState::Failed, "engine is shutting down");
  auto it = m.names.find(tool);
  if (it == m.names.end()) return fail(CallState::Failed, "unknown tool `" + tool + "`");
  if (it->second.kind != ToolClaim::Kind::Plugin)
    return fail(CallState::Failed, "tool `" + tool + "` is not a plugin tool (not simulated)");
  std::size_t pi = it->second.plugin;
  PluginSlot& p = m.plugins[pi];
  const ToolDeclaration decl = p.decls[it->second.decl];
  call.plugin = p.cfg.name;
  call.model_turn_seq = m.sessions[session].next_seq - 1;
  // TOOL-21: hidden tools are not offered at all.
  if (!m.pluginToolsVisible(session))
    return fail(CallState::Denied, "tool `" + tool + "` is not enabled (no plugin permission rule)");
  // TOOL-25: a pinned tool of a connected plugin that the active skill does not allow.
  if (!m.skillAllows(session, p.cfg.name))
    return fail(CallState::Denied, "tool `" + tool + "` is not enabled by the active skill's allowed-tools");
  // TOOL-07: only object arguments are sent.
  if (!arguments.IsObject()) return fail(CallState::Failed, "tool arguments must be a JSON object");
  // TOOL-06: the primary resource.
  if (decl.primary_resource_param) {
    const json::Value* v = json::member(arguments, *decl.primary_resource_param);
    if (v && !v->IsNull())
      call.resource = v->IsString() ? std::string(v->GetString(), v->GetStringLength())
                                    : json::compact(*v);
  }
  // TOOL-23/24.
  call.permission_resource = decl.permission_name + (call.resource ? " " + *call.resource : "");
  call.approval_display = call.resource ? *call.resource : tool;
  Decision d = m.decide(session, call.permission_resource);
  if (d == Decision::Deny)
    return fail(CallState::Denied, "permission denied for `" + call.permission_resource + "`");
  if (d == Decision::Ask && !m.cfg.approve_asks)
    return fail(CallState::Denied, "the user denied `" + call.permission_resource + "`");
  call.arguments = std::make_shared<json::Document>(json::copy(arguments));
  // Issue 5 (engine4): the tool_before_call chain runs here, after policy and approval (HOOK-16);
  // denied calls never reached this point. A block ends the call as a tool error (HOOK-18).
  if (tool_hooks_) {
    tool_hooks_->beforeCall(call, decl, [&m, id, pi](ToolHooks::BeforeOutcome o) {
      auto cit = m.calls.find(id);
      if (cit == m.calls.end() || cit->second.state != CallState::Pending) return;  // cancelled
      if (o.blocked) {
        cit->second.hook_blocked = true;
        m.finishCall(cit->second, CallState::Failed, o.block_text, nullptr);
        return;
      }
      if (o.arguments) cit->second.arguments = std::move(o.arguments);
      dispatchToolCall(m, cit->second, pi);
    });
    return id;
  }
  dispatchToolCall(m, call, pi);
  return id;
}

namespace {
void dispatchToolCall(Engine::Impl& m, ToolCallStatus& call, std::size_t pi) {
  PluginSlot& p = m.plugins[pi];
  const std::string& tool = call.tool;
  const std::string& id = call.invocation_id;
  // TOOL-08/29: revalidate ownership right before sending.
  Conn* c = m.conn(p.conn);
  auto owner = m.names.find(tool);
  if (!c || c->ended || !c->handshake_done || c->shutdown_sent || owner == m.names.end() ||
      owner->second.kind != ToolClaim::Kind::Plugin || owner->second.plugin != pi)
    return m.finishCall(call, CallState::Failed, "tool `" + tool + "` is no longer available", nullptr);
  // TOOL-05/19/20: the request grant lives until the call ends.
  call.context_id = m.self.newUuid();
  auto timeout = std::chrono::milliseconds(p.cfg.tool_timeout_ms);
  c->grants.mint(call.context_id, call.session_id, GrantKind::Request, timeout);
  std::string params = R"({"tool":)" + quoteJson(tool) + R"(,"session_id":)" +
                       quoteJson(call.session_id) + R"(,"context_id":)" +
                       quoteJson(call.context_id) + R"(,"invocation_id":)" + quoteJson(id) +
                       R"(,"arguments":)" + json::compact(*call.arguments) + R"(,"resource":)" +
                       (call.resource ? quoteJson(*call.resource) : std::string("null")) +
                       R"(,"cancellation_token":)" + quoteJson(id) + "}";
  // PROTOCOL §5.3: the call starts here (policy, approval and tool_before_call are behind it), so
  // tool_call_started is appended before the request is written and every started call gets
  // exactly one tool_call_terminated (finishCall, keyed on frame_sent).
  {
    rapidjson::Document ev(rapidjson::kObjectType);
    auto& a = ev.GetAllocator();
    ev.AddMember("type", "tool_call_started", a);
    ev.AddMember("tool_call_id", json::str(id, a), a);
    ev.AddMember("owner", ownerRef(call, a), a);
    ev.AddMember("tool", json::str(tool, a), a);
    ev.AddMember("plugin", json::str(call.plugin, a), a);
    (void)m.append(call.session_id, ev, "");
  }
  PendingRequest pr;
  pr.kind = PendingRequest::Kind::ToolCall;
  pr.ref = id;
  call.frame_sent = true;
  m.sendRequest(*c, "plugin/tools/call", params, pr, timeout);
  c->grants.activate(call.context_id, m.clk.now());  // EMIT-11: activated at the write
}
}  // namespace

bool Engine::cancelToolCall(const std::string& id) {
  Impl& m = *impl_;
  auto it = m.calls.find(id);
  if (it == m.calls.end() || it->second.state != CallState::Pending) return false;
  Conn* c = nullptr;
  for (auto& p : m.plugins)
    if (p.cfg.name == it->second.plugin) c = m.conn(p.conn);
  // TOOL-18: nothing is written; the grant is revoked and a late answer ignored.
  m.finishCall(it->second, CallState::Cancelled, "tool call cancelled", c);
  return true;
}

const ToolCallStatus* Engine::toolCall(const std::string& id) const {
  auto it = impl_->calls.find(id);
  return it == impl_->calls.end() ? nullptr : &it->second;
}

void Engine::Impl::finishCall(ToolCallStatus& call, CallState st, std::string reason, Conn* c) {
  if (call.state != CallState::Pending) return;
  call.state = st;
  call.reason = std::move(reason);
  if (st != CallState::Completed && call.output) call.incomplete = true;  // TOOL-15
  if (c) {
    // EMIT-08: the request grant ends with the request.
    if (!call.context_id.empty()) c->grants.revoke(call.context_id, clk.now());
    for (auto it = c->pending.begin(); it != c->pending.end(); ++it) {
      if (it->second.kind == PendingRequest::Kind::ToolCall && it->second.ref == call.invocation_id) {
        timers.cancel(it->second.timer);
        c->pending.erase(it);
        break;
      }
    }
  }
  if (call.frame_sent) {
    // The simulated runtime records the termination (terminal class, EVT-13; PROTOCOL §5.3):
    // tool_call_id, owner, outcome, result (or null), error (or null).
    rapidjson::Document ev(rapidjson::kObjectType);
    auto& a = ev.GetAllocator();
    ev.AddMember("type", "tool_call_terminated", a);
    ev.AddMember("tool_call_id", json::str(call.invocation_id, a), a);
    ev.AddMember("owner", ownerRef(call, a), a);
    ev.AddMember("outcome", json::str(toString(st), a), a);
    if (call.output) {
      // A persisted tool result (the `tool_result` part of §5.3): model-facing content plus the
      // plugin's own result as metadata. R4 PluginExecutor keeps `{"plugin":{content, is_error}}`
      // for 0.0.4 (DELTA §3.5); 0.0.6 keeps its members the same way [chosen]. Accepted output of
      // a call that did not complete stays here too (TOOL-15: retained, flagged incomplete).
      const json::Value& out = *call.output;
      const bool single = json::stringMember(out, "kind").value_or("") == "single";
      rapidjson::Value content(rapidjson::kObjectType);
      if (single) {
        content.AddMember("type", "text", a);
        content.AddMember("text", rapidjson::Value(out["text"], a), a);
      } else {
        content.AddMember("type", "json", a);
        content.AddMember("value", rapidjson::Value(out, a), a);
      }
      rapidjson::Value plugin_meta(rapidjson::kObjectType);
      if (cfg.protocol_version == "0.0.4" && single) {
        plugin_meta.AddMember("content", rapidjson::Value(out["text"], a), a);
      } else {
        plugin_meta.AddMember("output", rapidjson::Value(out, a), a);
        if (call.display) plugin_meta.AddMember("display", json::str(*call.display, a), a);
      }
      plugin_meta.AddMember("is_error", call.is_error, a);
      rapidjson::Value meta(rapidjson::kObjectType);
      meta.AddMember("plugin", plugin_meta, a);
      rapidjson::Value result(rapidjson::kObjectType);
      result.AddMember("tool_call_id", json::str(call.invocation_id, a), a);
      result.AddMember("content", content, a);
      result.AddMember("is_error", call.is_error, a);
      result.AddMember("incomplete", call.incomplete, a);
      result.AddMember("metadata", meta, a);
      ev.AddMember("result", result, a);
    } else {
      ev.AddMember("result", rapidjson::Value(), a);
    }
    if (st != CallState::Completed) {
      // A SafeToolError: {code, message}. The UI-only display never enters it (TOOL-13).
      rapidjson::Value err(rapidjson::kObjectType);
      err.AddMember("code", rapidjson::StringRef(errorCode(call)), a);
      err.AddMember("message", json::str(call.reason, a), a);
      ev.AddMember("error", err, a);
    } else {
      ev.AddMember("error", rapidjson::Value(), a);
    }
    (void)append(call.session_id, ev, "");
  }
  if (tool_done) tool_done(call);
  if (self.tool_hooks_) self.tool_hooks_->finished(call);  // engine4: the runtime waits on it
}

void Engine::Impl::failCallsOf(Conn& c, const std::string& reason) {
  const std::string& name = plugins[c.plugin].cfg.name;
  std::vector<std::string> ids;
  for (auto& [id, call] : calls)
    if (call.state == CallState::Pending && call.plugin == name) ids.push_back(id);
  for (auto& id : ids) finishCall(calls[id], CallState::Failed, reason, &c);
}

void Engine::Impl::handleToolResult(Conn& c, const PendingRequest& pr, const json::Value& msg) {
  auto cit = calls.find(pr.ref);
  if (cit == calls.end() || cit->second.state != CallState::Pending) return;
  ToolCallStatus& call = cit->second;
  // RPC-20: an error fails the call only.
  if (const json::Value* err = json::member(msg, "error")) {
    finishCall(call, CallState::Failed,
               "plugin tool call rejected: " +
                   std::string(json::stringMember(*err, "message").value_or("")),
               &c);
    return;
  }
  const ToolDeclaration* decl = nullptr;
  for (auto& d : plugins[c.plugin].decls)
    if (d.name == call.tool) decl = &d;
  const json::Value& r = msg["result"];
  auto malformed = [&](const std::string& why) {
    finishCall(call, CallState::Failed, "malformed plugin tool call result: " + why, &c);
  };
  if (!decl) return malformed("the tool is no longer declared");
  if (cfg.protocol_version == "0.0.4") {
    // DELTA §3.5/§4.3 (TOOL-09/TOOL-10 under v004): the result is the closed `{content, is_error}`;
    // the 0.0.6 members `output`/`display` are unknown there, so such a result is malformed and
    // fails the call like any malformed result (PROTOCOL §8.4).
    protocol::v004::ToolCallResult res;
    json::Path::Root root("result");
    if (!protocol::v004::fromJSON(r, res, json::Path(root)))
      return malformed(root.error().value_or(""));
    // R4 PluginExecutor (DELTA §3.5): the persisted output is `content`. It is normalized to the
    // single-output object so the hooks, the terminal event and the driver see one shape in both
    // profiles; 0.0.4 has no UI-only display.
    auto doc = std::make_shared<json::Document>(rapidjson::kObjectType);
    doc->AddMember("kind", "single", doc->GetAllocator());
    doc->AddMember("text", json::str(res.content, doc->GetAllocator()), doc->GetAllocator());
    call.output = doc;
    call.display.reset();
    call.is_error = res.is_error;
    return commitToolResult(c, call);
  }
  // TOOL-09/10/12: {output, display?, is_error}, closed; output kind matches the declaration.
  json::Path::Root root("result");
  json::Path p(root);
  json::ObjectMapper o(r, p);
  std::optional<std::string> display;
  bool is_error = false;
  const json::Value* output = nullptr;
  bool ok = o && o.mapOptional("display", display) && o.map("is_error", is_error);
  if (ok) {
    output = o.get("output");
    ok = o.closed();
    if (ok && (!output || !output->IsObject()))
      ok = p.field("output").report("required member must be an object");
  }
  if (!ok) return malformed(root.error().value_or(""));
  auto kind = json::stringMember(*output, "kind");
  auto doc = std::make_shared<json::Document>(rapidjson::kObjectType);
  auto& a = doc->GetAllocator();
  if (!decl->named_output) {
    auto text = json::stringMember(*output, "text");
    if (!kind || *kind != "single" || !text || output->MemberCount() != 2)
      return malformed("output must be {\"kind\":\"single\",\"text\":string} for this tool");
    doc->AddMember("kind", "single", a);
    doc->AddMember("text", json::str(*text, a), a);
  } else {
    const json::Value* streams = json::member(*output, "streams");
    if (!kind || *kind != "named" || !streams || !streams->IsArray() || output->MemberCount() != 2)
      return malformed("output must be {\"kind\":\"named\",\"streams\":[…]} for this tool");
    std::map<std::string, std::string> got;
    for (auto& s : streams->GetArray()) {
      auto sn = json::stringMember(s, "stream");
      auto st = json::stringMember(s, "text");
      if (!sn || !st || s.MemberCount() != 2)
        return malformed("each stream must be {\"stream\":string,\"text\":string}");
      if (std::find(decl->streams.begin(), decl->streams.end(), *sn) == decl->streams.end())
        return malformed("undeclared stream `" + std::string(*sn) + "`");
      if (!got.emplace(std::string(*sn), std::string(*st)).second)
        return malformed("stream `" + std::string(*sn) + "` appears twice");
    }
    if (got.size() != decl->streams.size()) return malformed("a declared stream is missing");
    doc->AddMember("kind", "named", a);
    rapidjson::Value arr(rapidjson::kArrayType);
    for (auto& name : decl->streams) {  // normalized to declaration order
      rapidjson::Value e(rapidjson::kObjectType);
      e.AddMember("stream", json::str(name, a), a);
      e.AddMember("text", json::str(got[name], a), a);
      arr.PushBack(e, a);
    }
    doc->AddMember("streams", arr, a);
  }
  call.output = doc;
  call.display = display;
  call.is_error = is_error;
  commitToolResult(c, call);
}

void Engine::Impl::commitToolResult(Conn& c, ToolCallStatus& call) {
  // EMIT-08: the request token ends with the request — here, its answer — even though the engine
  // still runs tool_after_result before it commits the termination (an emit with the token that
  // arrived while those hooks ran used to be published; found by `conform fuzz --role plugin`).
  if (!call.context_id.empty()) c.grants.revoke(call.context_id, clk.now());
  // TOOL-14: in 0.0.6 is_error marks the call failed (the output is kept); in 0.0.4 the flag is
  // metadata only and the call completes (DELTA §4.3, §8 "is_error ⇒ completed").
  const bool is_error_fails = cfg.protocol_version != "0.0.4";
  auto commit = [this, is_error_fails](ToolCallStatus& done_call, Conn* cc) {
    if (done_call.is_error && is_error_fails)
      finishCall(done_call, CallState::Failed, "the tool reported an error", cc);
    else finishCall(done_call, CallState::Completed, "", cc);
  };
  // Issue 5 (engine4): tool_after_result runs before the termination is committed (HOOK-24).
  if (self.tool_hooks_) {
    std::string id = call.invocation_id;
    ConnId cid = c.id;
    self.tool_hooks_->afterResult(call, [this, id, cid, commit](ToolHooks::AfterOutcome o) {
      auto cit = calls.find(id);
      if (cit == calls.end() || cit->second.state != CallState::Pending) return;
      ToolCallStatus& hc = cit->second;
      if (o.supersede_output) {  // 0.0.4 (HOOK-25 DELTA): the replacement is the content
        auto out = std::make_shared<json::Document>(rapidjson::kObjectType);
        out->AddMember("kind", "single", out->GetAllocator());
        out->AddMember("text", json::str(o.model_content, out->GetAllocator()), out->GetAllocator());
        hc.output = out;
        hc.display = o.model_content;
      }
      hc.model_content = std::move(o.model_content);
      commit(hc, conn(cid));
    });
    return;
  }
  commit(call, &c);
}

}  // namespace conform::engine
