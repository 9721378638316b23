// mock_engine/cognipeer/loop — the scripted agent loop of the reference Cognipeer host: fake model
// turns and fake tools from a script (docs/cognipeer.md "Run scripts"), every hook fired at its point
// (COGNIPEER-0.10.2.md hook table and "What a deny does"), for both createAgent and createSmartAgent.
// The run outcome is a JSON object the scenarios and unit tests read.
#include <set>

#include <fmt/format.h>

#include "mock_engine/cognipeer/host.h"
#include "mock_engine/cognipeer/jsonx.h"

namespace conform::cognipeer {

namespace {

const json::Value& nullValue() {
  static const json::Value v;
  return v;
}
const json::Value& memberOr(const json::Value& o, std::string_view k) {
  const json::Value* m = json::member(o, k);
  return m ? *m : nullValue();
}

json::Document message(std::string_view role, const json::Value& content) {
  json::Document m = jx::obj();
  jx::set(m, "role", role);
  jx::set(m, "content", content);
  return m;
}

json::Document blocked(std::string_view phase, const GateResult& g) {
  json::Document b = jx::obj();
  jx::set(b, "phase", phase);
  json::Document inc = jx::obj();
  jx::set(inc, "reason", g.reason);
  jx::set(inc, "deniedBy", g.denied_by);
  jx::set(b, "incident", inc);
  return b;
}

}  // namespace

Expected<json::Document, std::string> Host::run(const json::Value& script) {
  if (!script.IsObject()) return unexpected(std::string("run script: expected an object"));
  return runLoop(script, false, 0, nullptr);
}

Expected<json::Document, std::string> Host::snapshot() const {
  // captureSnapshot strips the plugin bookkeeping (and, 0.10.2, __guardrailBlocked); ctx.store is
  // never serialised (it lives in the runner). CG-16 as reworded.
  json::Document s = json::copy(state_);
  for (const char* k : {"__plugins", "__pluginState", "__pluginRunStarted", "__pluginRunEnded", "__guardrailBlocked"})
    jx::remove(s, k);
  if (json::Value* ctx = s.HasMember("ctx") ? &s["ctx"] : nullptr; ctx && ctx->IsObject())
    ctx->RemoveMember("__guardrailBlocked");
  return s;
}

Expected<json::Document, std::string> Host::resume(const json::Value& snap, const json::Value& script) {
  if (!snap.IsObject() || !json::member(snap, "messages")) return unexpected(std::string("resume: not a snapshot"));
  state_ = json::copy(snap);
  jx::set(state_, "__plugins", jx::arr());
  for (const PluginShape& p : order_) state_["__plugins"].PushBack(json::str(p.name, state_.GetAllocator()), state_.GetAllocator());
  jx::set(state_, "__pluginState", jx::obj());
  return runLoop(script, true, 0, nullptr);
}

Expected<json::Document, std::string> Host::runLoop(const json::Value& script, bool resumed, int depth,
                                                    const std::vector<PluginShape>*) {
  if (depth > kMaxDepth) return unexpected(fmt::format("run script: subagents nest deeper than {}", kMaxDepth));
  json::Document out = jx::obj();
  json::Document model_calls = jx::arr();
  const bool smart = opt_.smart || jx::getStr(script, "agent") == "smart";
  auto& sa = state_.GetAllocator();
  if (!state_.HasMember("ctx") || !state_["ctx"].IsObject()) jx::set(state_, "ctx", jx::obj());
  state_["ctx"].RemoveMember("__guardrailBlocked");  // 0.10.2: never leaks into the next turn
  state_["ctx"].RemoveMember("__awaitingApproval");
  if (!state_.HasMember("messages") || !state_["messages"].IsArray()) jx::set(state_, "messages", jx::arr());
  if (!state_.HasMember("toolHistory") || !state_["toolHistory"].IsArray()) jx::set(state_, "toolHistory", jx::arr());
  jx::setBool(state_, "__pluginRunStarted", true);

  auto finishRun = [&](std::string_view status, const json::Value* final_content) {
    json::Document end = jx::obj();
    jx::set(end, "status", status);
    if (depth == 0) runObservers("sessionEnd", end, depth);
    jx::setBool(state_, "__pluginRunEnded", true);
    jx::set(out, "status", status);
    if (final_content) jx::set(out, "final", *final_content);
    jx::set(out, "messages", state_["messages"]);
    jx::set(out, "modelCalls", model_calls);
    jx::set(out, "toolHistory", state_["toolHistory"]);
    jx::set(out, "ctx", state_["ctx"]);
    jx::set(out, "agent", smart ? "smart" : "base");
    return std::move(out);
  };

  // setup() on the first invoke (facts "Contribution kinds"): closed failure -> the invoke throws.
  if (depth == 0) {
    if (auto s = ensureSetup(); !s) {
      jx::set(out, "error", s.error());
      return finishRun("threw", nullptr);
    }
  }
  const json::Value& agent_tools = memberOr(script, "tools");
  const json::Document no_tools = jx::arr();
  json::Document contrib = contributions(agent_tools.IsArray() ? agent_tools : static_cast<const json::Value&>(no_tools));
  json::Document tool_names = jx::arr();
  for (const auto& t : contrib["tools"].GetArray())
    jx::pushTo(tool_names, t.IsString() ? static_cast<const json::Value&>(t) : memberOr(t, "name"));
  std::string persona = jx::getStr(script, "persona");

  // sessionStart (gate): messages replace, systemPromptAppend collect.
  {
    json::Document in = jx::obj();
    jx::set(in, "messages", state_["messages"]);
    jx::setBool(in, "resumed", resumed);
    json::Document cfg = jx::obj();
    jx::set(cfg, "agent", smart ? "smart" : "base");
    jx::set(cfg, "depth", static_cast<std::int64_t>(depth));
    jx::set(in, "config", cfg);
    GateResult g = runGate("sessionStart", in, depth);
    if (g.decision == "deny") {
      state_["ctx"].AddMember("__guardrailBlocked", json::Value(blocked("session", g), sa), sa);
      return finishRun("success", nullptr);
    }
    if (const json::Value* m = json::member(g.value, "messages"); m && m->IsArray()) jx::set(state_, "messages", *m);
    if (const json::Value* c = json::member(g.collected, "systemPromptAppend")) jx::set(out, "systemPromptAppend", *c);
  }
  std::string sys_append;
  if (const json::Value* c = json::member(out, "systemPromptAppend"); c && c->IsArray())
    for (const auto& s : c->GetArray())
      if (s.IsString()) sys_append += std::string("\n") + s.GetString();

  // userPromptSubmit (gate): before any model call (CG-07); skipped on a resume without a new prompt.
  const json::Value* prompt = json::member(script, "prompt");
  const json::Value* content = json::member(script, "content");
  if (prompt || content) {
    json::Document in = jx::obj();
    std::string text = prompt && prompt->IsString() ? prompt->GetString() : "";
    json::Document parts = jx::arr();
    if (content && content->IsArray()) {
      parts = json::copy(*content);
      if (!prompt)
        for (const auto& p : content->GetArray())
          if (jx::getStr(p, "type") == "text") text += jx::getStr(p, "text");
    } else {
      jx::pushTo(parts, jx::lit(fmt::format(R"({{"type":"text","text":{}}})", json::compact(jx::strDoc(text)))));
    }
    json::Document atts = jx::arr();
    for (const auto& p : parts.GetArray())
      if (jx::getStr(p, "type") != "text") jx::pushTo(atts, p);
    jx::set(in, "text", text);
    jx::set(in, "content", parts);
    jx::set(in, "attachments", atts);
    jx::set(in, "message", message("user", parts));
    GateResult g = runGate("userPromptSubmit", in, depth);
    if (g.decision == "deny") {
      // CG-08: the run ends before any model call, with __guardrailBlocked (0.10.1: also on the smart agent).
      state_["ctx"].AddMember("__guardrailBlocked", json::Value(blocked("request", g), sa), sa);
      return finishRun("success", nullptr);
    }
    json::Document um = message("user", memberOr(g.value, "content"));
    if (const json::Value* ac = json::member(g.collected, "additionalContext")) jx::set(um, "additionalContext", *ac);
    jx::push(state_, "messages", um);
  }

  const json::Value& turns = memberOr(script, "turns");
  rapidjson::SizeType next_turn = 0;
  const std::set<int> compact_at = [&] {
    std::set<int> s;
    if (const json::Value* c = json::member(script, "compactAt"); c && c->IsArray())
      for (const auto& v : c->GetArray())
        if (v.IsInt()) s.insert(v.GetInt());
    return s;
  }();
  const bool structured = jx::getBool(script, "structuredOutput");
  std::set<std::string> executed;  // tool+args already run: a cacheable tool's cache

  for (int it = 0; it < kMaxIterations; ++it) {
    if (compact_at.count(it)) {
      json::Document in = jx::obj();
      jx::set(in, "reason", "threshold");
      jx::set(in, "messages", state_["messages"]);
      jx::set(in, "tokenCount", static_cast<std::int64_t>(state_["messages"].Size() * 100));
      jx::set(in, "threshold", std::int64_t{100});
      GateResult g = runGate("preCompact", in, depth);
      if (g.decision != "deny" && !jx::getBool(g.value, "skip")) {
        auto before = static_cast<std::int64_t>(state_["messages"].Size() * 100);
        if (const json::Value* m = json::member(g.value, "messages"); m && m->IsArray() && json::compact(*m) != json::compact(state_["messages"]))
          jx::set(state_, "messages", *m);
        else
          jx::set(state_, "messages", jx::lit(R"J([{"role":"user","content":[{"type":"text","text":"(summary)"}]}])J"));
        json::Document pc = jx::obj();
        jx::set(pc, "summary", "(summary)");
        jx::set(pc, "tokensBefore", before);
        jx::set(pc, "tokensAfter", static_cast<std::int64_t>(state_["messages"].Size() * 100));
        jx::set(pc, "strategy", "summarize");
        runObservers("postCompact", pc, depth);
      }
    }
    // preModelCall (gate): deny -> no model call, one assistant turn carries the reason.
    json::Document in = jx::obj();
    jx::set(in, "messages", state_["messages"]);
    jx::set(in, "tools", tool_names);
    jx::set(in, "params", jx::obj());
    jx::set(in, "model", smart ? "fake-smart" : "fake");
    jx::set(in, "iteration", static_cast<std::int64_t>(it));
    GateResult pre = runGate("preModelCall", in, depth);
    if (pre.decision == "deny") {
      jx::push(state_, "messages", message("assistant", jx::strDoc(pre.reason)));
      state_["ctx"].AddMember("__guardrailBlocked", json::Value(blocked("model", pre), sa), sa);
      return finishRun("success", nullptr);
    }
    json::Document turn;
    bool short_circuited = false;
    int retries = 0;
    auto callModel = [&] {
      json::Document call = jx::obj();
      jx::set(call, "iteration", static_cast<std::int64_t>(it));
      // CG-19: the persona is applied on the wire per call, never written into the transcript.
      jx::set(call, "system", persona + sys_append);
      jx::set(call, "messages", static_cast<std::int64_t>(state_["messages"].Size()));
      jx::set(call, "agent", smart ? "smart" : "base");
      jx::set(call, "persona", persona);
      jx::pushTo(model_calls, call);
      json::Document t = turns.IsArray() && next_turn < turns.Size() ? json::copy(turns[next_turn++]) : jx::lit(R"({"content":""})");
      // The fake model's calls are in the hook log too, so a case can order hooks against model calls.
      log_.push_back({"(model)", "modelCall", fmt::format("{{\"iteration\":{}}}", it), "returned", json::compact(t), ""});
      return t;
    };
    if (const json::Value* sc = json::member(pre.value, "shortCircuit")) {
      turn = json::copy(*sc);
      short_circuited = true;
    } else {
      turn = callModel();
    }
    for (;;) {  // postModelCall (gate): message replace, retry flag (≤ maxModelRetries), deny replaces.
      json::Document pin = jx::obj();
      jx::set(pin, "message", turn);
      jx::set(pin, "usage", jx::lit(R"({"inputTokens":10,"outputTokens":5})"));
      jx::set(pin, "durationMs", std::int64_t{0});
      jx::set(pin, "iteration", static_cast<std::int64_t>(it));
      jx::setBool(pin, "shortCircuited", short_circuited);
      GateResult post = runGate("postModelCall", pin, depth);
      if (post.decision == "deny") {
        jx::push(state_, "messages", message("assistant", jx::strDoc(post.reason)));
        state_["ctx"].AddMember("__guardrailBlocked", json::Value(blocked("response", post), sa), sa);
        return finishRun("success", nullptr);
      }
      if (jx::getBool(post.value, "retry") && retries < kMaxModelRetries && !short_circuited) {
        ++retries;
        turn = callModel();
        continue;
      }
      if (const json::Value* m = json::member(post.value, "message")) turn = json::copy(*m);
      break;
    }
    if (const json::Value* h = json::member(turn, "handoff"); h && h->IsObject()) {
      persona = jx::getStr(*h, "persona", persona);  // the target's persona, never stored (CG-19)
      jx::push(state_, "messages", message("assistant", jx::strDoc("(handoff)")));
      continue;
    }
    const json::Value* calls = json::member(turn, "toolCalls");
    if (!calls || !calls->IsArray() || calls->Empty()) {
      // preFinalAnswer (gate): content replace; continueWith not implemented in 0.10.x.
      json::Document fin = jx::obj();
      jx::set(fin, "content", memberOr(turn, "content"));
      GateResult g = runGate("preFinalAnswer", fin, depth);
      json::Document final_content = json::copy(memberOr(g.value, "content"));
      if (g.decision == "deny") final_content = jx::strDoc(g.reason);
      jx::push(state_, "messages", message("assistant", final_content));
      return finishRun("success", &final_content);
    }
    jx::push(state_, "messages", message("assistant", memberOr(turn, "content")));
    state_["messages"][state_["messages"].Size() - 1].AddMember("toolCalls", json::Value(*calls, sa), sa);
    rapidjson::SizeType k = 0;
    for (const auto& c : calls->GetArray()) {
      std::string name = jx::getStr(c, "name");
      std::string id = jx::getStr(c, "id", fmt::format("call-{}-{}", it, k++));
      const json::Value& args = memberOr(c, "args");
      json::Document output;
      std::string source = "tool", status = "executed";
      if (name == "subagent") {
        // subagentStart (gate) -> the child loop at depth+1 (inheritToSubagents) -> subagentStop (observer).
        std::string sub = jx::getStr(args, "name");
        json::Document sin = jx::obj();
        jx::set(sin, "name", sub);
        jx::set(sin, "task", memberOr(args, "task"));
        jx::set(sin, "depth", static_cast<std::int64_t>(depth + 1));
        GateResult g = runGate("subagentStart", sin, depth + 1);
        if (g.decision == "deny") {
          output = jx::strDoc(g.reason);
          status = "rejected";
        } else {
          const json::Value* subs = json::member(script, "subagents");
          const json::Value* child = subs ? json::member(*subs, sub) : nullptr;
          json::Document saved = json::copy(state_["messages"]);
          jx::set(state_, "messages", jx::arr());
          json::Document child_script = child ? json::copy(*child) : jx::lit(R"J({"turns":[{"content":"(subagent done)"}]})J");
          jx::set(child_script, "prompt", jx::getStr(g.value, "task"));
          auto r = runLoop(child_script, false, depth + 1, nullptr);
          jx::set(state_, "messages", saved);
          if (!r) return unexpected(r.error());
          output = json::copy(memberOr(*r, "final"));
          json::Document stop = jx::obj();
          jx::set(stop, "name", sub);
          jx::set(stop, "result", output);
          jx::set(stop, "depth", static_cast<std::int64_t>(depth + 1));
          runObservers("subagentStop", stop, depth + 1);
        }
      } else {
        json::Document tin = jx::obj();
        jx::set(tin, "toolName", name);
        jx::set(tin, "toolCallId", id);
        jx::set(tin, "args", args);
        json::Document tool = jx::obj();
        jx::set(tool, "name", name);
        jx::set(tin, "tool", tool);
        jx::set(tin, "executionCount", static_cast<std::int64_t>(state_["toolHistory"].Size()));
        GateResult g = runGate("preToolUse", tin, depth);
        if (g.decision == "deny") {
          // The tool does not run; the reason becomes the tool message; toolHistory: rejected.
          json::Document rec = jx::obj();
          jx::set(rec, "toolName", name);
          jx::set(rec, "status", "rejected");
          jx::push(state_, "toolHistory", rec);
          json::Document tm = message("tool", jx::strDoc(g.reason));
          jx::set(tm, "toolCallId", id);
          jx::push(state_, "messages", tm);
          if (structured) {  // CG-10 (0.10.2): under tool-based structured output a deny ends the run
            jx::set(out, "endedBy", "preToolUse deny (structured output)");
            return finishRun("success", nullptr);
          }
          continue;
        }
        if (g.decision == "ask") {
          // ask parks the run: pendingApprovals, ctx.__awaitingApproval, notification{kind:"approval"}.
          json::Document pend = jx::obj();
          jx::set(pend, "toolName", name);
          jx::set(pend, "toolCallId", id);
          jx::set(pend, "args", memberOr(g.value, "args"));
          if (g.approval_prompt) jx::set(pend, "prompt", *g.approval_prompt);
          jx::push(state_, "pendingApprovals", pend);
          state_["ctx"].AddMember("__awaitingApproval", json::Value(pend, sa), sa);
          json::Document note = jx::obj();
          jx::set(note, "kind", "approval");
          jx::set(note, "toolName", name);
          runObservers("notification", note, depth);
          jx::set(out, "pendingApprovals", state_["pendingApprovals"]);
          return finishRun("paused", nullptr);
        }
        const json::Value& eff_args = memberOr(g.value, "args");
        std::string key = name + json::canonical(eff_args);
        const json::Value* tools = json::member(script, "tools");
        const json::Value* def = nullptr;
        if (tools && tools->IsArray())
          for (const auto& t : tools->GetArray())
            if (jx::getStr(t, "name") == name) def = &t;
        if (const json::Value* r = json::member(g.value, "result")) {
          output = json::copy(*r);  // preToolUse short-circuit
          source = "hook";
        } else if (def && jx::getBool(*def, "cache") && executed.count(key)) {
          output = json::copy(memberOr(*def, "result"));
          source = "cache";
        } else if (def) {
          output = json::copy(memberOr(*def, "result"));
          executed.insert(key);
        } else {
          const json::Value& owner = memberOr(contrib["toolOwners"], name);
          const PluginShape* op = nullptr;
          for (const PluginShape& p : order_)
            if (owner.IsString() && p.name == owner.GetString()) op = &p;
          if (op) {  // a plugin-contributed tool runs in the guest
            InvokeRequest rq;
            rq.plugin = op->index;
            rq.target = "tool";
            rq.name = name;
            rq.input = json::copy(eff_args);
            rq.ctx = makeCtx(*op, "tool", depth);
            rq.timeout_ms = op->timeout_ms;
            std::vector<InvokeRequest> b;
            b.push_back(std::move(rq));
            InvokeResult tr = std::move(guest_->invokeAll(std::move(b)).at(0));
            const bool ok = tr.outcome == InvokeResult::Outcome::Returned;
            log_.push_back({op->name, "tool:" + name, json::compact(eff_args), ok ? "returned" : "threw",
                            ok ? json::compact(tr.value) : tr.error_message, ""});
            output = ok ? std::move(tr.value) : jx::strDoc("error: " + tr.error_message);
            executed.insert(key);
          } else {
            output = jx::strDoc(fmt::format("error: unknown tool {}", name));
          }
        }
        // postToolUse (gate): after execution, a short-circuit and a cache hit (0.10.2, CG-11).
        json::Document pin = jx::obj();
        jx::set(pin, "toolName", name);
        jx::set(pin, "toolCallId", id);
        jx::set(pin, "args", eff_args);
        jx::set(pin, "output", output);
        jx::set(pin, "durationMs", std::int64_t{0});
        jx::set(pin, "executionId", fmt::format("exec-{}", state_["toolHistory"].Size()));
        jx::set(pin, "source", source);
        GateResult post = runGate("postToolUse", pin, depth);
        if (const json::Value* o = json::member(post.value, "output")) output = json::copy(*o);  // CG-12 masking
        if (post.decision == "deny") output = jx::strDoc(post.reason);
      }
      json::Document rec = jx::obj();
      jx::set(rec, "toolName", name);
      jx::set(rec, "status", status);
      jx::set(rec, "source", source);
      jx::push(state_, "toolHistory", rec);
      json::Document tm = message("tool", output);
      jx::set(tm, "toolCallId", id);
      jx::push(state_, "messages", tm);
    }
  }
  jx::set(out, "error", fmt::format("the script ran past {} iterations", kMaxIterations));
  return finishRun("error", nullptr);
}

}  // namespace conform::cognipeer
