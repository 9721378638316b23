// mock_engine/cognipeer/host — registration, ordering, gate chains (R1–R6), observers (R7),
// setup(), contributions and the capability table. Every rule cites COGNIPEER-0.10.2.md ("facts").
#include "mock_engine/cognipeer/host.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "mock_engine/cognipeer/jsonx.h"

namespace conform::cognipeer {

namespace {

template <std::size_t N>
bool inList(const char* const (&list)[N], std::string_view s) {
  for (const char* x : list)
    if (s == x) return true;
  return false;
}

// The per-hook merge rules of the facts' hook table. Fields not listed are ignored (noted).
enum class Merge { Replace, Collect, ShallowMerge, FirstWins, Flag, Ignored };
Merge mergeOf(std::string_view hook, std::string_view field) {
  static const std::map<std::string, std::map<std::string, Merge, std::less<>>, std::less<>> table = {
      {"sessionStart", {{"messages", Merge::Replace}, {"systemPromptAppend", Merge::Collect}}},
      {"userPromptSubmit", {{"text", Merge::Replace}, {"content", Merge::Replace}, {"additionalContext", Merge::Collect}}},
      {"preModelCall", {{"messages", Merge::Replace}, {"tools", Merge::Replace}, {"params", Merge::ShallowMerge},
                        {"shortCircuit", Merge::FirstWins}}},
      {"postModelCall", {{"message", Merge::Replace}, {"retry", Merge::Flag}}},
      {"preToolUse", {{"args", Merge::Replace}, {"approvalPrompt", Merge::Replace}, {"result", Merge::FirstWins}}},
      {"postToolUse", {{"output", Merge::Replace}}},
      {"preCompact", {{"messages", Merge::Replace}, {"skip", Merge::Flag}}},
      // continueWith is accepted but not implemented in 0.10.x (facts): ignored.
      {"preFinalAnswer", {{"content", Merge::Replace}, {"output", Merge::Replace}, {"message", Merge::Replace}}},
      {"subagentStart", {{"task", Merge::Replace}}},
  };
  auto h = table.find(hook);
  if (h == table.end()) return Merge::Ignored;
  auto f = h->second.find(field);
  return f == h->second.end() ? Merge::Ignored : f->second;
}

bool isAttachment(const json::Value& part) {
  auto t = json::stringMember(part, "type");
  return !t || *t != "text";
}

// The non-text parts of a content array, compact, in order (CG-13's "attachments").
std::vector<std::string> attachments(const json::Value* content) {
  std::vector<std::string> out;
  if (!content || !content->IsArray()) return out;
  for (const auto& p : content->GetArray())
    if (isAttachment(p)) out.push_back(json::canonical(p));
  return out;
}

}  // namespace

bool isGate(std::string_view h) { return inList(kGateHooks, h); }
bool isObserver(std::string_view h) { return inList(kObserverHooks, h); }
bool isHook(std::string_view h) { return isGate(h) || isObserver(h); }
bool isSlot(std::string_view s) { return inList(kWiredSlots, s) || inList(kDeclaredSlots, s); }

bool PluginShape::hasHook(std::string_view h) const { return std::find(hooks.begin(), hooks.end(), h) != hooks.end(); }

PluginShape PluginShape::clone() const {
  PluginShape c;
  c.index = index;
  c.name = name;
  c.version = version;
  c.priority = priority;
  c.closed = closed;
  c.timeout_ms = timeout_ms;
  c.inherit_to_subagents = inherit_to_subagents;
  c.may_require_approval = may_require_approval;
  c.hooks = hooks;
  c.non_function_hooks = non_function_hooks;
  c.provides = provides;
  c.setup = setup;
  c.dispose = dispose;
  c.tools = json::copy(tools);
  c.system_prompt = json::copy(system_prompt);
  c.tool_descriptions = json::copy(tool_descriptions);
  c.wrap_model = wrap_model;
  c.guardrails = json::copy(guardrails);
  return c;
}

bool InvokeResult::undefinedValue() const {
  if (outcome != Outcome::Returned) return false;
  auto t = json::stringMember(value, "$type");
  return t && *t == "undefined";
}

std::string HookCall::str() const {
  std::string s = fmt::format("{} {} {} -> {}", plugin, hook, input, outcome);
  if (!output.empty()) s += " " + output;
  if (!effect.empty()) s += " [" + effect + "]";
  return s;
}

Expected<std::vector<PluginShape>, std::string> parseShapes(const json::Value& load) {
  const json::Value* list = json::member(load, "plugins");
  if (!list || !list->IsArray()) return unexpected(std::string("load result: expected {\"plugins\": [ … ]}"));
  std::vector<PluginShape> out;
  rapidjson::SizeType i = 0;
  for (const auto& s : list->GetArray()) {
    std::string at = fmt::format("plugins[{}]", i);
    if (!s.IsObject()) return unexpected(at + ": expected an object");
    PluginShape p;
    const json::Value* idx = json::member(s, "index");
    p.index = idx && idx->IsInt() ? idx->GetInt() : static_cast<int>(i);
    const json::Value* name = json::member(s, "name");
    if (name && name->IsString()) p.name.assign(name->GetString(), name->GetStringLength());
    else if (name && !name->IsNull()) return unexpected(at + ".name: expected a string");
    p.version = jx::getStr(s, "version");
    if (const json::Value* v = json::member(s, "priority"); v && !v->IsNull()) {
      if (!v->IsNumber()) return unexpected(at + ".priority: expected a number");
      p.priority = static_cast<std::int64_t>(v->GetDouble());
    }
    if (const json::Value* v = json::member(s, "failureMode"); v && !v->IsNull()) {
      auto fm = v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
      if (fm != "open" && fm != "closed")  // facts: only "open" (default) and "closed"
        return unexpected(fmt::format("{}.failureMode: expected \"open\" or \"closed\", found {}", at, json::compact(*v)));
      p.closed = fm == "closed";
    }
    if (const json::Value* v = json::member(s, "timeoutMs"); v && !v->IsNull()) {
      if (!v->IsNumber() || v->GetDouble() <= 0) return unexpected(at + ".timeoutMs: expected a positive number");
      p.timeout_ms = static_cast<std::uint64_t>(v->GetDouble());
    }
    if (const json::Value* v = json::member(s, "inheritToSubagents"); v && v->IsBool()) p.inherit_to_subagents = v->GetBool();
    p.may_require_approval = jx::getBool(s, "mayRequireApproval");
    const json::Value* types = json::member(s, "hook_types");
    if (const json::Value* h = json::member(s, "hooks"); h && h->IsArray())
      for (const auto& n : h->GetArray()) {
        if (!n.IsString()) continue;
        std::string hn(n.GetString(), n.GetStringLength());
        // hook_types (runner): typeof each member; a non-function is declared but not implemented.
        auto ty = types ? json::stringMember(*types, hn) : std::nullopt;
        if (ty && *ty != "function") p.non_function_hooks.push_back(hn);
        else p.hooks.push_back(hn);
      }
    if (const json::Value* h = json::member(s, "provides"); h && h->IsArray())
      for (const auto& n : h->GetArray())
        if (n.IsString()) p.provides.emplace_back(n.GetString(), n.GetStringLength());
    // Declared = present and not an explicit undefined (the runner encodes a function as a marker).
    auto declared = [&](std::string_view k) {
      const json::Value* v = json::member(s, k);
      if (!v || v->IsNull() || (v->IsBool() && !v->GetBool())) return false;
      auto t = json::stringMember(*v, "$type");
      return !(t && *t == "undefined");
    };
    p.setup = declared("setup");
    p.dispose = declared("dispose");
    if (auto t = json::stringMember(s, "type"); t && *t != "object")
      return unexpected(fmt::format("{}: a plugin must be an object, found {}", at, *t));
    if (const json::Value* c = json::member(s, "contributions"); c && c->IsObject()) {
      if (const json::Value* t = json::member(*c, "tools"); t && t->IsArray()) p.tools = json::copy(*t);
      if (const json::Value* t = json::member(*c, "systemPrompt"); t && !t->IsNull() && !(t->IsBool() && !t->GetBool()))
        p.system_prompt = json::copy(*t);
      if (const json::Value* t = json::member(*c, "toolDescriptions"); t && t->IsObject()) p.tool_descriptions = json::copy(*t);
      if (const json::Value* t = json::member(*c, "wrapModel"); t && !t->IsNull() && !(t->IsBool() && !t->GetBool()))
        p.wrap_model = true;
      if (const json::Value* t = json::member(*c, "guardrails"); t && !t->IsNull() && !(t->IsBool() && !t->GetBool()))
        p.guardrails = json::copy(*t);
    }
    out.push_back(std::move(p));
    ++i;
  }
  return out;
}

Expected<Host, std::string> Host::create(std::vector<PluginShape> plugins, Guest& guest, HostOptions opt) {
  // createPluginHost throws on a duplicate or empty name and on a slot claimed twice (facts).
  std::set<std::string> names;
  std::map<std::string, std::string> slot_owner;
  for (const PluginShape& p : plugins) {
    if (p.name.empty()) return unexpected(fmt::format("plugin #{}: a plugin needs a non-empty name", p.index));
    if (!names.insert(p.name).second) return unexpected(fmt::format("duplicate plugin name \"{}\"", p.name));
    for (const std::string& s : p.provides) {
      auto [it, fresh] = slot_owner.emplace(s, p.name);
      if (!fresh)
        return unexpected(fmt::format("strategy slot \"{}\" is already provided by \"{}\"; \"{}\" cannot claim it (CG-05)",
                                      s, it->second, p.name));
    }
  }
  Host h(guest, std::move(opt));
  h.order_ = std::move(plugins);
  // priority ascending, then declaration order (stable): CG-03 as reworded.
  std::stable_sort(h.order_.begin(), h.order_.end(), [](const PluginShape& a, const PluginShape& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.index < b.index;
  });
  for (const PluginShape& p : h.order_) {
    for (const std::string& hk : p.hooks)
      if (!isHook(hk))
        h.finding("CG-06", p.name, fmt::format("plugin \"{}\" declares hook \"{}\", which is not one of the 13 hooks: it never fires",
                                       p.name, hk));
    for (const std::string& hk : p.non_function_hooks)
      h.finding("CG-14", p.name, fmt::format("plugin \"{}\" declares hook \"{}\" but it is not a function: the extension "
                                             "point is not implemented", p.name, hk));
    for (const std::string& s : p.provides)
      if (!isSlot(s))
        h.finding("CG-05", p.name, fmt::format("plugin \"{}\" provides \"{}\", which is not one of the 10 strategy slots", p.name, s));
  }
  h.state_ = jx::lit(R"({"messages":[],"ctx":{},"toolHistory":[],"__plugins":[],"__pluginState":{}})");
  for (const PluginShape& p : h.order_) h.state_["__plugins"].PushBack(json::str(p.name, h.state_.GetAllocator()), h.state_.GetAllocator());
  return h;
}

void Host::finding(std::string rule, const std::string& plugin, std::string message) {
  for (const HostFinding& f : findings_)
    if (f.rule == rule && f.message == message) return;
  findings_.push_back({std::move(rule), plugin, std::move(message)});
}

std::string Host::logText() const {
  std::string s;
  for (const HookCall& c : log_) s += c.str() + "\n";
  return s;
}

json::Document Host::makeCtx(const PluginShape& p, const std::string& hook, int depth) const {
  json::Document c = jx::obj();
  jx::set(c, "runId", opt_.run_id);
  jx::set(c, "agentName", opt_.agent_name);
  jx::set(c, "hookName", hook);
  json::Document st = jx::obj();  // the readonly state the plugin sees (the runner freezes it)
  if (const json::Value* m = json::member(state_, "messages")) jx::set(st, "messages", *m);
  jx::set(c, "state", st);
  jx::set(c, "depth", static_cast<std::int64_t>(depth));
  jx::set(c, "plugin", p.name);
  return c;
}

GateResult Host::runGate(const std::string& hook, const json::Value& input, int depth) {
  GateResult g;
  g.value = json::copy(input);
  bool ask = false;
  bool short_circuited = false;
  for (const PluginShape& p : order_) {
    if (!p.hasHook(hook)) continue;
    if (depth > 0 && !p.inherit_to_subagents) continue;
    InvokeRequest rq;
    rq.plugin = p.index;
    rq.target = "hook";
    rq.name = hook;
    rq.input = json::copy(g.value);  // R2: each handler sees the previous output
    rq.ctx = makeCtx(p, hook, depth);
    rq.timeout_ms = p.timeout_ms;
    HookCall call{p.name, hook, json::compact(rq.input), "", "", ""};
    std::vector<InvokeRequest> batch;
    batch.push_back(std::move(rq));
    InvokeResult r = std::move(guest_->invokeAll(std::move(batch)).at(0));
    std::string error;  // R5: a throw, a timeout (R6), an invalid output or decision
    switch (r.outcome) {
      case InvokeResult::Outcome::Returned: call.outcome = "returned"; call.output = json::compact(r.value); break;
      case InvokeResult::Outcome::Threw:
        call.outcome = "threw";
        call.output = r.error_name + ": " + r.error_message;
        error = r.error_message;
        break;
      case InvokeResult::Outcome::Timeout:
        call.outcome = "timeout";
        error = fmt::format("timed out after {} ms", p.timeout_ms);
        break;
      case InvokeResult::Outcome::Failed:
        call.outcome = "failed";
        call.output = r.error_message;
        error = r.error_message;
        break;
    }
    if (!r.mutated_input.IsNull()) {
      // An in-place edit reaches an in-process runtime directly: attachments must survive it (CG-13).
      if (attachments(json::member(r.mutated_input, "content")) != attachments(json::member(g.value, "content")))
        finding("CG-13", p.name, fmt::format("plugin \"{}\" changed an attachment of its {} input in place (only text parts "
                                             "may change); the host keeps the originals", p.name, hook));
      call.effect = "mutated its input in place";
    }
    const json::Value& out = r.value;
    bool undefined = r.outcome == InvokeResult::Outcome::Returned && (r.undefinedValue() || out.IsNull());
    std::string decision;
    if (error.empty() && !undefined) {
      if (!out.IsObject()) {
        error = fmt::format("a {} handler must return an object or undefined, returned {}", hook, json::compact(out));
      } else if (const json::Value* d = json::member(out, "decision")) {
        decision = d->IsString() ? std::string(d->GetString(), d->GetStringLength()) : json::compact(*d);
        if (!d->IsString() || (decision != "allow" && decision != "deny" && decision != "ask")) {
          // 0.10.2: an unknown decision string is an error handled under R5.
          error = fmt::format("unknown decision {}", json::compact(*d));
          finding("CG-09", p.name, fmt::format("plugin \"{}\" returned decision {} from {} (allow, deny or ask only)", p.name,
                                       json::compact(*d), hook));
        }
      }
    }
    if (r.outcome == InvokeResult::Outcome::Threw) {
      std::string m = r.error_name + ": " + r.error_message;
      if (r.error_name == "TypeError" && (m.find("read only") != std::string::npos || m.find("read-only") != std::string::npos ||
                                          m.find("not extensible") != std::string::npos || m.find("frozen") != std::string::npos))
        finding("CG-16", p.name, fmt::format("plugin \"{}\" tried to mutate the readonly ctx.state in {}: {}", p.name, hook, m));
    }
    if (!error.empty()) {
      finding("CG-18", p.name, fmt::format("plugin \"{}\" {}: {} ({} failure)", p.name, hook, error, p.closed ? "closed" : "open"));
      if (p.closed) {
        // R5 + facts: closed turns the error into a deny with this exact reason.
        g.decision = "deny";
        g.reason = fmt::format("{}: hook error (fail-closed) — {}", p.name, error);
        g.denied_by = p.name;
        call.effect = "deny(closed)";
        log_.push_back(std::move(call));
        return g;
      }
      call.effect = "error(open)";  // open: the plugin's work is skipped, the chain continues
      log_.push_back(std::move(call));
      continue;
    }
    if (undefined) {  // undefined = no change
      log_.push_back(std::move(call));
      continue;
    }
    if (decision == "deny" || (decision == "ask" && hook != "preToolUse")) {
      if (decision == "ask")  // 0.10.2: ask from any hook other than preToolUse is read as deny
        finding("CG-09", p.name, fmt::format("plugin \"{}\" answered ask from {} (ask is honoured only on preToolUse; read as deny)",
                                     p.name, hook));
      g.decision = "deny";  // R3: the first deny ends the chain
      g.reason = jx::getStr(out, "reason", fmt::format("denied by {}", p.name));
      g.denied_by = p.name;
      call.effect = decision == "ask" ? "deny(ask outside preToolUse)" : "deny";
      log_.push_back(std::move(call));
      return g;
    }
    if (decision == "ask") {
      ask = true;
      call.effect = "ask";
    }
    // Merge the output fields into the chained value (per-hook rules).
    for (const auto& m : out.GetObject()) {
      std::string_view f(m.name.GetString(), m.name.GetStringLength());
      if (f == "decision" || f == "reason" || f == "metadata") continue;
      switch (mergeOf(hook, f)) {
        case Merge::Replace:
          if (hook == "userPromptSubmit" && (f == "text" || f == "content")) {
            // Normalised: a rewrite touches text parts only; attachments survive (CG-13).
            const json::Value* before = json::member(g.value, "content");
            auto kept = attachments(before);
            if (f == "text" && m.value.IsString()) {
              jx::set(g.value, "text", m.value);
              json::Document content = jx::arr();
              json::Document part = jx::obj();
              jx::set(part, "type", "text");
              jx::set(part, "text", m.value);
              jx::pushTo(content, part);
              if (before && before->IsArray())
                for (const auto& p2 : before->GetArray())
                  if (isAttachment(p2)) jx::pushTo(content, p2);
              jx::set(g.value, "content", content);
            } else if (f == "content" && m.value.IsArray()) {
              if (attachments(&m.value) != kept) {
                finding("CG-13", p.name, fmt::format("plugin \"{}\" changed or dropped an attachment in userPromptSubmit "
                                             "(only text parts may change); the host keeps the originals",
                                             p.name));
                json::Document content = jx::arr();
                for (const auto& p2 : m.value.GetArray())
                  if (!isAttachment(p2)) jx::pushTo(content, p2);
                if (before && before->IsArray())
                  for (const auto& p2 : before->GetArray())
                    if (isAttachment(p2)) jx::pushTo(content, p2);
                jx::set(g.value, "content", content);
              } else {
                jx::set(g.value, "content", m.value);
              }
              std::string text;
              for (const auto& p2 : g.value["content"].GetArray())
                if (!isAttachment(p2)) text += jx::getStr(p2, "text");
              jx::set(g.value, "text", text);
            }
          } else {
            jx::set(g.value, f, m.value);
          }
          break;
        case Merge::Collect: {
          if (!g.collected.HasMember(rapidjson::StringRef(m.name.GetString(), m.name.GetStringLength())))
            jx::set(g.collected, f, jx::arr());
          jx::push(g.collected, f, m.value);
          break;
        }
        case Merge::ShallowMerge: {
          const json::Value* cur = json::member(g.value, f);
          json::Document merged = cur && cur->IsObject() ? json::copy(*cur) : jx::obj();
          if (m.value.IsObject())
            for (const auto& kv : m.value.GetObject())
              jx::set(merged, std::string_view(kv.name.GetString(), kv.name.GetStringLength()), kv.value);
          jx::set(g.value, f, merged);
          break;
        }
        case Merge::FirstWins:  // R4: the first short-circuit wins; later ones are ignored
          if (!short_circuited) {
            short_circuited = true;
            jx::set(g.value, f, m.value);
          } else {
            call.effect += call.effect.empty() ? "short-circuit ignored" : ", short-circuit ignored";
          }
          break;
        case Merge::Flag:
          if (m.value.IsBool() && m.value.GetBool()) jx::setBool(g.value, f, true);
          break;
        case Merge::Ignored: break;
      }
      if (hook == "preToolUse" && f == "approvalPrompt" && m.value.IsString())
        g.approval_prompt = std::string(m.value.GetString(), m.value.GetStringLength());
    }
    log_.push_back(std::move(call));
  }
  if (ask) g.decision = "ask";  // R3: deny > ask > allow
  return g;
}

void Host::runObservers(const std::string& hook, const json::Value& input, int depth) {
  std::vector<InvokeRequest> batch;
  std::vector<const PluginShape*> who;
  for (const PluginShape& p : order_) {
    if (!p.hasHook(hook) || (depth > 0 && !p.inherit_to_subagents)) continue;
    InvokeRequest rq;
    rq.plugin = p.index;
    rq.target = "hook";
    rq.name = hook;
    rq.input = json::copy(input);
    rq.ctx = makeCtx(p, hook, depth);
    rq.timeout_ms = p.timeout_ms;
    batch.push_back(std::move(rq));
    who.push_back(&p);
  }
  if (batch.empty()) return;
  std::string in = json::compact(input);
  // R7: Promise.allSettled — every invoke is sent before any reply is awaited.
  auto results = guest_->invokeAll(std::move(batch));
  for (std::size_t i = 0; i < results.size() && i < who.size(); ++i) {
    const InvokeResult& r = results[i];
    HookCall call{who[i]->name, hook, in, "", "", ""};
    switch (r.outcome) {
      case InvokeResult::Outcome::Returned:
        call.outcome = "returned";
        call.output = json::compact(r.value);
        if (!r.undefinedValue() && !r.value.IsNull()) call.effect = "ignored (observer)";
        break;
      case InvokeResult::Outcome::Threw:
        call.outcome = "threw";
        call.output = r.error_name + ": " + r.error_message;
        call.effect = "swallowed (observer)";
        break;
      case InvokeResult::Outcome::Timeout: call.outcome = "timeout"; call.effect = "swallowed (observer)"; break;
      case InvokeResult::Outcome::Failed:
        call.outcome = "failed";
        call.output = r.error_message;
        call.effect = "swallowed (observer)";
        break;
    }
    if (r.outcome != InvokeResult::Outcome::Returned)
      finding("CG-18", who[i]->name, fmt::format("plugin \"{}\" observer {} failed ({}); swallowed, the run goes on", who[i]->name, hook,
                                   call.outcome));
    log_.push_back(std::move(call));
  }
}

Expected<Ok, std::string> Host::ensureSetup() {
  if (setup_done_) return Ok{};
  setup_done_ = true;
  for (const PluginShape& p : order_) {
    if (!p.setup) continue;
    InvokeRequest rq;
    rq.plugin = p.index;
    rq.target = "setup";
    rq.input = jx::obj();
    rq.ctx = makeCtx(p, "setup", 0);
    rq.timeout_ms = p.timeout_ms;
    HookCall call{p.name, "setup", "{}", "", "", ""};
    std::vector<InvokeRequest> batch;
    batch.push_back(std::move(rq));
    InvokeResult r = std::move(guest_->invokeAll(std::move(batch)).at(0));
    if (r.outcome == InvokeResult::Outcome::Returned) {
      call.outcome = "returned";
      log_.push_back(std::move(call));
      continue;
    }
    call.outcome = r.outcome == InvokeResult::Outcome::Timeout ? "timeout" : r.outcome == InvokeResult::Outcome::Threw ? "threw" : "failed";
    call.output = r.error_message;
    finding("CG-18", p.name, fmt::format("plugin \"{}\" setup() failed ({}: {})", p.name, call.outcome, r.error_message));
    if (p.closed) {  // facts: closed -> the invoke throws
      call.effect = "invoke throws (closed)";
      log_.push_back(std::move(call));
      return unexpected(fmt::format("{}: setup failed (fail-closed) — {}", p.name, r.error_message));
    }
    call.effect = "contributions skipped (open)";  // its hooks still fire
    setup_failed_.push_back(p.name);
    log_.push_back(std::move(call));
  }
  return Ok{};
}

json::Document Host::contributions(const json::Value& agent_tools) {
  json::Document c = jx::obj();
  // tools: merged by name — the agent's own win, then the first plugin.
  json::Document tools = jx::arr();
  std::set<std::string> seen;
  json::Document owners = jx::obj();
  auto toolName = [](const json::Value& t) {
    if (t.IsString()) return std::string(t.GetString(), t.GetStringLength());
    return jx::getStr(t, "name");
  };
  if (agent_tools.IsArray())
    for (const auto& t : agent_tools.GetArray())
      if (auto n = toolName(t); !n.empty() && seen.insert(n).second) {
        jx::pushTo(tools, t);
        jx::set(owners, n, "agent");
      }
  json::Document prompts = jx::arr();
  json::Document descriptions = jx::obj();
  json::Document wraps = jx::arr();
  json::Document guardrails = jx::arr();
  for (const PluginShape& p : order_) {
    if (std::find(setup_failed_.begin(), setup_failed_.end(), p.name) != setup_failed_.end()) continue;
    if (p.tools.IsArray())
      for (const auto& t : p.tools.GetArray())
        if (auto n = toolName(t); !n.empty() && seen.insert(n).second) {
          jx::pushTo(tools, t);
          jx::set(owners, n, p.name);
        }
    if (!p.system_prompt.IsNull()) {
      json::Document e = jx::obj();
      jx::set(e, "plugin", p.name);
      jx::set(e, "value", p.system_prompt);
      jx::pushTo(prompts, e);
    }
    if (p.tool_descriptions.IsObject())  // Object.assign: last wins
      for (const auto& kv : p.tool_descriptions.GetObject())
        jx::set(descriptions, std::string_view(kv.name.GetString(), kv.name.GetStringLength()), kv.value);
    if (p.wrap_model) jx::pushTo(wraps, jx::strDoc(p.name));  // nested: first in chain order is outermost
    if (!p.guardrails.IsNull()) {
      json::Document e = jx::obj();
      jx::set(e, "plugin", p.name);
      jx::set(e, "value", p.guardrails);
      jx::pushTo(guardrails, e);
    }
  }
  jx::set(c, "tools", tools);
  jx::set(c, "toolOwners", owners);
  jx::set(c, "systemPrompt", prompts);
  jx::set(c, "toolDescriptions", descriptions);
  jx::set(c, "wrapModel", wraps);
  jx::set(c, "guardrails", guardrails);
  return c;
}

json::Document Host::capabilities() {
  // Hand-maintained per build, module-level, not per agent (facts "pluginCapabilities()"). The
  // seven feature names are ours (the facts give the count only); docs/cognipeer.md lists them.
  json::Document c = jx::obj();
  jx::set(c, "hookContractVersion", std::int64_t{1});
  json::Document hooks = jx::obj();
  for (const char* h : kGateHooks) {
    json::Document e = jx::lit(R"({"implemented":true})");
    if (std::string_view(h) == "preFinalAnswer") jx::set(e, "notes", "continueWith is accepted but not implemented");
    jx::set(hooks, h, e);
  }
  for (const char* h : kObserverHooks) jx::set(hooks, h, jx::lit(R"({"implemented":true,"notes":"observer"})"));
  jx::set(c, "hooks", hooks);
  json::Document slots = jx::obj();
  for (const char* s : kWiredSlots) jx::set(slots, s, jx::lit(R"({"implemented":true})"));
  for (const char* s : kDeclaredSlots) jx::set(slots, s, jx::lit(R"({"implemented":false,"notes":"declared, not wired"})"));
  jx::set(c, "slots", slots);
  json::Document features = jx::obj();
  for (const char* f : {"failureMode", "timeouts", "priorities", "snapshotStrip", "approvalAsk", "structuredOutputDeny",
                        "postToolUseSource"})
    jx::set(features, f, jx::lit(R"({"implemented":true})"));
  jx::set(c, "features", features);
  return c;
}

}  // namespace conform::cognipeer
