// Reference engine, in process on the virtual clock: the hooks the simulated runtime fires —
// runs, steering, delegation, internal agents, model selection and fallback, compaction, fork and
// revert (HOOK-12, HOOK-28…53). The plugin side is played with raw frames (tests/engine/rig.h).
#include <set>

#include "core/protocol/hooks.h"
#include "mock_engine/runtime.h"
#include "tests/engine/rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

#include "tests/engine/hook_rig.h"

namespace {

// The pass-through answer of each hook (PROTOCOL §13.2).
std::string passThrough(const std::string& hook) {
  if (hook == "tool_before_call" || hook == "user_before_input" || hook == "model_before_select" ||
      hook == "session_before_fork" || hook == "session_before_revert")
    return R"({"action":"allow"})";
  if (hook == "tool_after_result" || hook == "model_before_request" || hook == "provider_before_request" ||
      hook == "message_end")
    return R"({"action":"keep"})";
  return "{}";
}

// Answers every open hook request of `plugins` with its pass-through result until none is left.
void pump(HookRig& r, const std::vector<std::string>& plugins) {
  for (bool any = true; any;) {
    any = false;
    for (auto& p : plugins) {
      auto open = r.open(p);
      if (open.empty()) continue;
      r.reply(p, passThrough(HookRig::hookOf(open.front())));
      any = true;
    }
  }
}

std::string allHooks() {
  std::string list = "[";
  for (auto h : protocol::allHooks()) list += std::string(list.size() > 1 ? "," : "") + "\"" + std::string(protocol::toString(h)) + "\"";
  return list + "]";
}

std::vector<std::string> hooksIn(HookRig& r, const std::string& session) {
  std::vector<std::string> out;
  for (auto& t : r.rt->hooks().trace())
    if (t.session == session) out.push_back(t.hook);
  return out;
}

std::size_t count(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<std::size_t>(std::count(v.begin(), v.end(), x));
}

std::uint64_t seqOf(HookRig& r, const std::string& session, const std::string& type) {
  for (auto& e : r.engine->session(session)->log)
    if (e.type == type) return e.seq;
  return 0;
}

}  // namespace

// ---- the documented order, delegation and internal agents ---------------------------------------

TEST_CASE("HOOK-12 HOOK-36 HOOK-41 delegated sessions get every agent hook but user_before_input — internal agents none", "[engine][hooks][runtime]") {
  HookRig r;
  r.up({{"alpha", allHooks()}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"go","turns":[{"text":"delegating","delegate":{"input":"child task","turns":[{"tool_calls":[{"tool":"echo","arguments":{"path":"c"}}]},{"text":"child done"}]}},{"text":"root done"}]})");
  pump(r, {"alpha"});
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(r.framesOf("alpha", "plugin/tools/call")[0]["id"].GetInt64()) +
                      R"(,"result":{"output":{"kind":"single","text":"ok"},"is_error":false}})");
  pump(r, {"alpha"});
  const RunRecord& rec = r.record(run);
  REQUIRE(rec.state == RunRecord::State::Completed);
  REQUIRE(rec.child_sessions.size() == 1);
  auto child = hooksIn(r, rec.child_sessions[0]);
  auto root = hooksIn(r, s);
  CHECK(count(child, "user_before_input") == 0);
  CHECK(count(root, "user_before_input") == 1);
  for (auto h : {"model_before_select", "agent_before_start", "model_before_request", "provider_before_headers",
                 "provider_before_request", "provider_after_response", "message_end", "tool_before_call",
                 "tool_after_result"})
    CHECK(count(child, h) >= 1);
  // HOOK-41: once per user-facing attempt (root 2 + child 2); the title agent's model call fires none.
  CHECK(count(root, "model_before_request") == 2);
  CHECK(count(child, "model_before_request") == 2);
  CHECK(r.rt->internalModelCalls() == 1);
  // The compaction agent fires nothing either: only the session_before_compact chain itself.
  auto before = r.rt->hooks().trace().size();
  REQUIRE(r.rt->compact(s, std::nullopt, [](const SessionOpResult&) {}));
  pump(r, {"alpha"});
  CHECK(r.rt->internalModelCalls() == 2);
  CHECK(r.rt->hooks().trace().size() == before + 1);
  CHECK(r.rt->hooks().trace().back().hook == "session_before_compact");
}

TEST_CASE("HOOK-36 steering an active root run fires user_before_input — subagent steering does not", "[engine][hooks][runtime]") {
  HookRig r;
  r.up({{"alpha", R"(["user_before_input","message_end"])"}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"go","turns":[{"text":"one"},{"text":"two"}]})");
  r.reply("alpha", R"({"action":"allow"})", "user_before_input");
  r.next("alpha", "message_end");  // the run is active, waiting for message_end
  SessionOpResult steered;
  REQUIRE(r.rt->steer(s, "faster", [&](const SessionOpResult& x) { steered = x; }));
  auto opened = r.open("alpha");
  REQUIRE(opened.size() == 2);
  CHECK(HookRig::hookOf(opened[1]) == "user_before_input");
  CHECK(str(opened[1]["params"], "text") == "faster");
  std::int64_t sid = opened[1]["id"].GetInt64();
  r.answered["alpha"].insert(sid);
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(sid) + R"(,"result":{"action":"allow"}})");
  CHECK(steered.status == "steered");
  pump(r, {"alpha"});
  CHECK(r.record(run).steered == std::vector<std::string>{"faster"});
  CHECK(r.record(run).requests.size() == 2);
  // No active run: nothing to steer.
  CHECK(!r.rt->steer(s, "late", [](const SessionOpResult&) {}));
}

TEST_CASE("HOOK-36 a delegated child's steering is committed without user_before_input", "[engine][hooks][runtime]") {
  HookRig r;
  r.up({{"alpha", R"(["user_before_input","message_end"])"}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"go","turns":[{"text":"x","delegate":{"input":"sub","turns":[{"text":"a"},{"text":"b"}]}}]})");
  r.reply("alpha", R"({"action":"allow"})", "user_before_input");
  r.reply("alpha", R"({"action":"keep"})", "message_end");  // the root turn
  r.next("alpha", "message_end");  // the child's first turn is waiting
  auto child = r.record(run).child_sessions.at(0);
  auto hooks_before = r.hookFrames("alpha", "user_before_input");
  SessionOpResult res;
  REQUIRE(r.rt->steer(child, "sub steer", [&](const SessionOpResult& x) { res = x; }));
  CHECK(res.status == "steered");
  CHECK(r.hookFrames("alpha", "user_before_input") == hooks_before);
  pump(r, {"alpha"});
  CHECK(r.record(run).state == RunRecord::State::Completed);
}

// ---- user_before_input ------------------------------------------------------------------------------

TEST_CASE("HOOK-37 HOOK-38 user_before_input params — a transform needs non-blank text and later plugins see it", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  r.up({{"alpha", kUserInput}, {"beta", kUserInput}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hello"})");
  auto req = r.next("alpha");
  auto p = json::decode<protocol::UserBeforeInputParams>(req["params"]);
  REQUIRE(p);
  CHECK(p->text == "hello");
  CHECK(p->session_id == s);
  SECTION("transform") {
    r.reply("alpha", R"({"action":"transform","new_text":"HELLO"})");
    CHECK(str(r.reply("beta", R"({"action":"allow"})")["params"], "text") == "HELLO");
    CHECK(r.record(run).input == "HELLO");
  }
  SECTION("transform without new_text is invalid") {
    r.reply("alpha", R"({"action":"transform"})");
    CHECK(str(r.reply("beta", R"({"action":"allow"})")["params"], "text") == "hello");
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  }
}

TEST_CASE("HOOK-39 handled consumes the input: no run starts and the chain ends", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  r.up({{"alpha", kUserInput}, {"beta", kUserInput}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"/help"})");
  r.reply("alpha", R"({"action":"handled"})");
  CHECK(r.open("beta").empty());
  CHECK(r.record(run).state == RunRecord::State::Handled);
  CHECK(r.record(run).reason == "handled by alpha");
  CHECK(seqOf(r, s, "run_started") == 0);
  CHECK(seqOf(r, s, "user_input_submitted") == 0);
  // Allowed, the same input does start a run.
  auto again = r.run(s, R"({"input":"/help"})");
  r.reply("alpha", R"({"action":"allow"})");
  r.reply("beta", R"({"action":"allow"})");
  CHECK(r.record(again).state == RunRecord::State::Completed);
  CHECK(seqOf(r, s, "run_started") != 0);
}

TEST_CASE("HOOK-40 a real final transform is committed with an adjacent audit event — A->B->A writes none", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  r.up({{"alpha", kUserInput}, {"beta", kUserInput}});
  auto s = r.engine->createSession();
  SECTION("A -> B") {
    r.run(s, R"({"input":"A"})");
    r.reply("alpha", R"({"action":"transform","new_text":"B"})");
    r.reply("beta", R"({"action":"allow"})");
    auto submitted = seqOf(r, s, "user_input_submitted");
    auto transformed = seqOf(r, s, "user_input_transformed");
    REQUIRE(transformed != 0);
    CHECK(transformed == submitted + 1);
    for (auto& e : r.engine->session(s)->log)
      if (e.type == "user_input_transformed")
        CHECK(*e.payload == R"({"type":"user_input_transformed","original_input":"A","input":"B"})");
  }
  SECTION("A -> B -> A") {
    r.run(s, R"({"input":"A"})");
    r.reply("alpha", R"({"action":"transform","new_text":"B"})");
    r.reply("beta", R"({"action":"transform","new_text":"A"})");
    CHECK(seqOf(r, s, "user_input_submitted") != 0);
    CHECK(seqOf(r, s, "user_input_transformed") == 0);
  }
}

// ---- agent_before_start -----------------------------------------------------------------------------

TEST_CASE("HOOK-28 HOOK-29 HOOK-32 prompt edits accumulate in plugin order — prompt_context reflects the chain", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string abs = R"(["agent_before_start"])";
  r.up({{"alpha", abs}, {"beta", abs}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hi"})");
  auto a = r.reply("alpha", R"({"append_to_system_prompt":"A","inject_message":{"role":"user","content":"note"}})");
  auto pa = json::decode<protocol::AgentBeforeStartParams>(a["params"]);
  REQUIRE(pa);
  CHECK(pa->agent_path == "agent");
  const json::Value& pc0 = pa->prompt_context.get();
  CHECK(str(pc0, "input") == "hi");
  CHECK(str(pc0, "session_id") == s);
  std::string base = str(pc0, "system_prompt");
  CHECK(pc0["injected_messages"].Size() == 0);
  auto b = r.reply("beta", R"({"append_to_system_prompt":"B"})");
  const json::Value& pc1 = b["params"]["prompt_context"];
  CHECK(str(pc1, "system_prompt") == base + "\nA");
  CHECK(pc1["injected_messages"].Size() == 1);
  const RunRecord& rec = r.record(run);
  CHECK(rec.system_prompt == base + "\nA\nB");
  // The scripted model received the final prompt.
  CHECK(str((*rec.requests[0])["messages"][0], "content") == base + "\nA\nB");
}

TEST_CASE("HOOK-30 replace applies before append, append_to_system_prompt beats addendum, empties are ignored, oversize is invalid", "[engine][hooks][runtime]") {
  HookRig r;
  r.up({{"alpha", R"(["agent_before_start"])"}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hi"})");
  std::string answer, expected;
  std::uint64_t invalid = 0;
  SECTION("replace then append") {
    answer = R"({"replace_system_prompt":"P","append_to_system_prompt":"X","addendum":"Y"})";
    expected = "P\nX";
  }
  SECTION("addendum when no append") {
    answer = R"({"replace_system_prompt":"P","addendum":"Y"})";
    expected = "P\nY";
  }
  SECTION("empty strings are ignored") {
    answer = R"({"replace_system_prompt":"","append_to_system_prompt":""})";
    expected = RuntimeOptions{}.system_prompt;
  }
  SECTION("above 131072 bytes") {
    answer = R"({"replace_system_prompt":")" + std::string(131'073, 'x') + R"("})";
    expected = RuntimeOptions{}.system_prompt;
    invalid = 1;
  }
  SECTION("exactly 131072 bytes is accepted") {
    answer = R"({"replace_system_prompt":")" + std::string(131'072, 'x') + R"("})";
    expected = std::string(131'072, 'x');
  }
  r.reply("alpha", answer);
  CHECK(r.record(run).system_prompt == expected);
  CHECK(r.status("alpha").diagnostics["invalid_modification"] == invalid);
}

TEST_CASE("HOOK-31 HOOK-32 an injection keeps its role and is committed before the submitted input — blank or tool is invalid", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta", "gamma"});
  std::string abs = R"(["agent_before_start"])";
  r.up({{"alpha", abs}, {"beta", abs}, {"gamma", abs}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hi"})");
  r.reply("alpha", R"({"inject_message":{"role":"assistant","content":"context"}})");
  r.reply("beta", R"({"inject_message":{"role":"tool","content":"x"}})");
  r.reply("gamma", R"({"inject_message":{"role":"user","content":"  "}})");
  CHECK(r.status("beta").diagnostics["invalid_modification"] == 1);
  CHECK(r.status("gamma").diagnostics["invalid_modification"] == 1);
  std::size_t injected = 0;
  for (auto& e : r.engine->session(s)->log)
    if (e.type == "message_injected") {
      ++injected;
      CHECK(*e.payload == R"({"type":"message_injected","role":"assistant","input":"context"})");
    }
  CHECK(injected == 1);
  CHECK(seqOf(r, s, "message_injected") < seqOf(r, s, "user_input_submitted"));
  const json::Value& msgs = (*r.record(run).requests[0])["messages"];
  CHECK(str(msgs[1], "role") == "assistant");
  CHECK(str(msgs[2], "role") == "user");
}

// ---- model_before_request / provider hooks ----------------------------------------------------------

TEST_CASE("HOOK-42 HOOK-43 HOOK-44 replace needs a complete valid list — adjustments apply with keep — the provider gets the result", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string mbr = R"(["model_before_request"])";
  r.up({{"alpha", mbr}, {"beta", mbr}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hi"})");
  auto req = r.next("alpha");
  auto p = json::decode<protocol::ModelBeforeRequestParams>(req["params"]);
  REQUIRE(p);
  CHECK(p->messages.size() == 2);
  CHECK(p->model.selection.model == "scripted/model-a");
  CHECK(p->params == protocol::ParamsAdjustments{});
  SECTION("replace without messages is skipped") {
    r.reply("alpha", R"({"action":"replace","params_adjustments":{"max_tokens":50}})");
    auto seen = r.reply("beta", R"({"action":"keep"})");
    CHECK(seen["params"]["messages"].Size() == 2);
    CHECK(seen["params"]["params"].MemberCount() == 0);
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  }
  SECTION("replace with a structurally invalid list is skipped") {
    r.reply("alpha", R"({"action":"replace","messages":[{"role":"user","content":"a"},{"role":"system","content":"late"}]})");
    CHECK(r.reply("beta", R"({"action":"keep"})")["params"]["messages"].Size() == 2);
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  }
  SECTION("adjustments beyond the model's capability are skipped") {
    r.reply("alpha", R"({"action":"keep","params_adjustments":{"max_tokens":1000000}})");
    CHECK(r.reply("beta", R"({"action":"keep"})")["params"]["params"].MemberCount() == 0);
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  }
  SECTION("a valid replacement and keep-adjustments reach the next plugin and the provider") {
    r.reply("alpha", R"({"action":"replace","messages":[{"role":"user","content":"rewritten"}]})");
    auto seen = r.reply("beta", R"({"action":"keep","params_adjustments":{"max_tokens":64,"temperature":0.5}})");
    CHECK(seen["params"]["messages"].Size() == 1);
    const json::Value& sent = *r.record(run).requests.at(0);
    CHECK(json::compact(sent["messages"]) == R"([{"role":"user","content":"rewritten"}])");
    CHECK(sent["max_tokens"].GetUint64() == 64);
    CHECK(sent["temperature"].GetDouble() == 0.5);
    // Prompt-size accounting measures the final request.
    for (auto& e : r.engine->session(s)->log)
      if (e.type == "model_request_prepared")
        CHECK(e.payload->find(R"("prompt_bytes":)" + std::to_string(json::compact(sent["messages"]).size())) != std::string::npos);
  }
}

TEST_CASE("HOOK-45 provider_before_headers gets {} — a mutation is unsupported_capability and changes nothing", "[engine][hooks][runtime]") {
  HookRig r;
  r.up({{"alpha", R"(["provider_before_headers"])"}});
  auto s = r.engine->createSession();
  auto plain = r.run(s, R"({"input":"hi"})");
  auto req = r.reply("alpha", "{}");
  CHECK(json::compact(req["params"]["headers"]) == "{}");
  CHECK(r.status("alpha").diagnostics["unsupported_capability"] == 0);
  auto mutated = r.run(s, R"({"input":"hi"})");
  r.reply("alpha", R"({"set":{"x-api-key":"k"},"delete":["authorization"]})");
  CHECK(r.status("alpha").diagnostics["unsupported_capability"] == 1);
  CHECK(json::compact(*r.record(mutated).requests[0]) == json::compact(*r.record(plain).requests[0]));
}

TEST_CASE("HOOK-46 provider_before_request gets the normalized request — a replacement must keep the model invariants", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string pbr = R"(["provider_before_request"])";
  r.up({{"alpha", pbr}, {"beta", pbr}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hi"})");
  auto req = r.next("alpha");
  const json::Value& payload = req["params"]["payload"];
  CHECK(str(payload, "model") == "model-a");
  CHECK(payload["messages"].Size() == 2);
  CHECK(payload["stream"].GetBool());
  std::string good = R"({"model":"model-a","messages":[{"role":"user","content":"x"}],"max_tokens":10,"stream":true})";
  SECTION("another model is refused") {
    r.reply("alpha", R"({"action":"replace","payload":{"model":"other","messages":[{"role":"user","content":"x"}],"max_tokens":10}})");
    CHECK(str(r.reply("beta", R"({"action":"keep"})")["params"]["payload"]["messages"][1], "content") == "hi");
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  }
  SECTION("an unknown member does not deserialize") {
    r.reply("alpha", R"({"action":"replace","payload":{"model":"model-a","messages":[{"role":"user","content":"x"}],"max_tokens":10,"raw_body":"…"}})");
    r.reply("beta", R"({"action":"keep"})");
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  }
  SECTION("a valid replacement is what the provider receives") {
    r.reply("alpha", R"({"action":"replace","payload":)" + good + "}");
    CHECK(json::compact(r.reply("beta", R"({"action":"keep"})")["params"]["payload"]) == good);
    CHECK(json::compact(*r.record(run).requests[0]) == good);
  }
}

TEST_CASE("HOOK-47 provider_after_response sees the status and {} headers, no body, and must answer exactly {}", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string par = R"(["provider_after_response","message_end"])";
  r.up({{"alpha", par}, {"beta", R"(["provider_after_response"])"}});
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"hi"})");
  auto req = r.next("alpha", "provider_after_response");
  auto p = json::decode<protocol::ProviderAfterResponseParams>(req["params"]);  // closed: no body
  REQUIRE(p);
  CHECK(p->status == 200);
  CHECK(p->headers.empty());
  // Before any stream data: no text_delta yet.
  CHECK(seqOf(r, s, "text_delta") == 0);
  r.reply("alpha", R"({"status":500})");  // not exactly {}: malformed, fails open
  r.reply("beta", "{}");
  CHECK(r.status("alpha").diagnostics["interception_timeout"] == 1);
  CHECK(r.status("beta").diagnostics["interception_timeout"] == 0);
  CHECK(seqOf(r, s, "text_delta") != 0);
}

// ---- message_end --------------------------------------------------------------------------------------

TEST_CASE("HOOK-48 message_end gets the assembled turn before commit — a valid swap is stored, deltas stay", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string me = R"(["message_end"])";
  r.up({{"alpha", me}, {"beta", me}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hi","turns":[{"deltas":["Hel","lo"],"reasoning":"think"}]})");
  auto req = r.next("alpha");
  auto p = json::decode<protocol::MessageEndParams>(req["params"]);
  REQUIRE(p);
  CHECK(p->role == protocol::MessageRole::Assistant);
  CHECK(json::compact(req["params"]["content"]) ==
        R"([{"type":"reasoning","text":"think","metadata":null},{"type":"text","text":"Hello","metadata":null}])");
  CHECK(seqOf(r, s, "model_turn_committed") == 0);  // not committed yet
  SECTION("a valid replacement becomes the durable turn") {
    r.reply("alpha", R"({"action":"replace","content":[{"type":"text","text":"Bye","metadata":null}]})");
    auto seen = r.reply("beta", R"({"action":"keep"})");
    CHECK(json::compact(seen["params"]["content"]) == R"([{"type":"text","text":"Bye","metadata":null}])");
    CHECK(r.record(run).final_text == "Bye");
    std::size_t deltas = 0;
    for (auto& e : r.engine->session(s)->log) {
      if (e.type == "text_delta") ++deltas;
      if (e.type == "model_turn_committed") CHECK(e.payload->find(R"("text":"Bye")") != std::string::npos);
    }
    CHECK(deltas == 2);  // the emitted deltas stay as stream records
  }
  SECTION("an invalid turn is skipped") {
    // Well-formed result (the decoder accepts it), but not a valid turn: HOOK-48 skips it. A part
    // that misses a member is a malformed result instead, and fails open (HOOK-13).
    r.reply("alpha", R"({"action":"replace","content":[]})");
    r.reply("beta", R"({"action":"keep"})");
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
    CHECK(r.record(run).final_text == "Hello");
  }
  SECTION("the role cannot be changed: a role member is malformed") {
    r.reply("alpha", R"({"action":"replace","role":"user","content":[{"type":"text","text":"x","metadata":null}]})");
    r.reply("beta", R"({"action":"keep"})");
    CHECK(r.status("alpha").diagnostics["interception_timeout"] == 1);
    CHECK(r.record(run).final_text == "Hello");
  }
}

// ---- model_before_select ------------------------------------------------------------------------------

TEST_CASE("HOOK-49 HOOK-51 model_before_select fires for first use, a change and a fallback, never for repeats or drafts", "[engine][hooks][runtime]") {
  HookRig r;
  r.up({{"alpha", R"(["model_before_select"])"}});
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"1"})");
  auto first = r.reply("alpha", R"({"action":"allow"})");
  auto p = json::decode<protocol::ModelBeforeSelectParams>(first["params"]);
  REQUIRE(p);
  CHECK(!p->from);
  CHECK(p->to.model == "scripted/model-a");
  CHECK(p->source == protocol::SelectSource::Config);
  r.run(s, R"({"input":"2"})");  // the same selection: no hook
  CHECK(r.open("alpha").empty());
  CHECK(r.hookFrames("alpha", "model_before_select") == 1);
  REQUIRE(r.rt->selectModel(s, {"scripted/model-c", std::nullopt}));  // a draft: no hook yet
  CHECK(r.hookFrames("alpha", "model_before_select") == 1);
  r.run(s, R"({"input":"3"})");
  auto change = r.reply("alpha", R"({"action":"allow"})");
  CHECK(str(change["params"], "source") == "user");
  CHECK(str(change["params"], "from", "model") == "scripted/model-a");
  CHECK(str(change["params"], "to", "model") == "scripted/model-c");
  // Fallback: the provider fails with 503 on model-c; the switch to model-b asks first.
  auto run = r.run(s, R"({"input":"4","turns":[{"text":"x","status":503}]})");
  auto fb = r.reply("alpha", R"({"action":"allow"})");
  CHECK(str(fb["params"], "source") == "fallback_restore");
  CHECK(str(fb["params"], "to", "model") == "scripted/model-b");
  CHECK(r.record(run).state == RunRecord::State::Completed);
  CHECK(r.record(run).model.model == "scripted/model-b");
  CHECK(seqOf(r, s, "model_fallback") != 0);
}

TEST_CASE("HOOK-50 a block keeps the selection, ends the chain, records hook_blocked and fails the start or fallback", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string mbs = R"(["model_before_select"])";
  r.up({{"alpha", mbs}, {"beta", mbs}});
  auto s = r.engine->createSession();
  SECTION("run start") {
    auto run = r.run(s, R"({"input":"1"})", protocol::ModelSelection{"scripted/model-x", std::nullopt});
    r.reply("alpha", R"({"action":"block"})");
    CHECK(r.open("beta").empty());
    CHECK(r.record(run).state == RunRecord::State::Blocked);
    CHECK(r.record(run).reason == "model selection blocked by alpha");
    CHECK(r.status("alpha").diagnostics["hook_blocked"] == 1);
    CHECK(seqOf(r, s, "run_started") == 0);
    // The selection was kept (still unused): the next run asks again as a first use.
    r.run(s, R"({"input":"2"})", protocol::ModelSelection{"scripted/model-x", std::nullopt});
    auto again = r.next("alpha");
    CHECK(str(again["params"], "source") == "config");
  }
  SECTION("fallback") {
    auto run = r.run(s, R"({"input":"1","turns":[{"text":"x","status":500}]})");
    r.reply("alpha", R"({"action":"allow"})");
    r.reply("beta", R"({"action":"allow"})");
    r.reply("alpha", R"({"action":"block","reason":"stay on a"})");
    CHECK(r.open("beta").empty());
    CHECK(r.record(run).state == RunRecord::State::Failed);
    CHECK(r.record(run).reason == "stay on a");
    CHECK(r.record(run).model.model == "scripted/model-a");
    CHECK(seqOf(r, s, "model_fallback") == 0);
  }
}

// ---- compaction, fork, revert -----------------------------------------------------------------------

TEST_CASE("HOOK-33 HOOK-35 compaction: params, override before addendum, accumulated additions for later plugins", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta", "gamma"});
  std::string sbc = R"(["session_before_compact"])";
  r.up({{"alpha", sbc}, {"beta", sbc}, {"gamma", sbc}});
  auto s = r.engine->createSession();
  r.engine->produceEvent(s, RecordClass::Ordinary);
  SessionOpResult res;
  REQUIRE(r.rt->compact(s, std::string("focus"), [&](const SessionOpResult& x) { res = x; }));
  auto a = r.reply("alpha", R"({"instructions_override":"new focus","addendum":"keep tests"})");
  auto pa = json::decode<protocol::SessionBeforeCompactParams>(a["params"]);
  REQUIRE(pa);
  CHECK(pa->checkpoint_id == s + ":1");
  CHECK(pa->additions.empty());
  CHECK(pa->instructions == std::optional<std::string>("focus"));
  auto b = r.reply("beta", R"({"addendum":")" + std::string(65'537, 'x') + R"("})");
  CHECK(str(b["params"], "instructions") == "new focus");
  CHECK(b["params"]["additions"].Size() == 1);
  auto g = r.reply("gamma", R"({"addendum":"and docs"})");
  CHECK(g["params"]["additions"].Size() == 1);  // beta's oversize addendum was skipped
  CHECK(r.status("beta").diagnostics["invalid_modification"] == 1);
  CHECK(res.status == "compacted");
  CHECK(res.instructions == std::optional<std::string>("new focus"));
  CHECK(res.additions == std::vector<std::string>{"keep tests", "and docs"});
  CHECK(seqOf(r, s, "context_checkpoint_committed") != 0);
}

TEST_CASE("HOOK-34 a cancel ends the chain, returns the reason and leaves the session usable", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string sbc = R"(["session_before_compact"])";
  r.up({{"alpha", sbc}, {"beta", sbc}});
  auto s = r.engine->createSession();
  SessionOpResult res;
  REQUIRE(r.rt->compact(s, std::nullopt, [&](const SessionOpResult& x) { res = x; }));
  r.reply("alpha", R"({"cancel":true,"reason":"not now"})");
  CHECK(r.open("beta").empty());
  CHECK(res.status == "cancelled");
  CHECK(res.reason == "not now");
  CHECK(r.status("alpha").diagnostics["hook_blocked"] == 1);
  CHECK(seqOf(r, s, "context_checkpoint_committed") == 0);
  auto run = r.run(s, R"({"input":"still works"})");
  CHECK(r.record(run).state == RunRecord::State::Completed);
  SessionOpResult again;
  REQUIRE(r.rt->compact(s, std::nullopt, [&](const SessionOpResult& x) { again = x; }));
  r.reply("alpha", "{}");
  r.reply("beta", "{}");
  CHECK(again.status == "compacted");
}

TEST_CASE("HOOK-52 session_before_fork params — a block fails the fork with the reason", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta"});
  std::string sbf = R"(["session_before_fork"])";
  r.up({{"alpha", sbf}, {"beta", sbf}});
  auto s = r.engine->createSession();
  for (int i = 0; i < 3; ++i) r.engine->produceEvent(s, RecordClass::Ordinary);
  SessionOpResult res;
  REQUIRE(r.rt->fork(s, 2, [&](const SessionOpResult& x) { res = x; }));
  auto req = r.next("alpha");
  auto p = json::decode<protocol::SessionBeforeForkParams>(req["params"]);
  REQUIRE(p);
  CHECK(p->through_seq == 2);
  SECTION("block") {
    r.reply("alpha", R"({"action":"block","reason":"no forks"})");
    CHECK(r.open("beta").empty());
    CHECK(res.status == "blocked");
    CHECK(res.reason == "no forks");
    CHECK(r.status("alpha").diagnostics["hook_blocked"] == 1);
  }
  SECTION("allow") {
    r.reply("alpha", R"({"action":"allow"})");
    r.reply("beta", R"({"action":"allow"})");
    CHECK(res.status == "forked");
    REQUIRE(r.engine->session(res.session_id));
    CHECK(r.engine->session(res.session_id)->log.size() == 2);
  }
  CHECK(!r.rt->fork(s, 99, [](const SessionOpResult&) {}));
}

TEST_CASE("HOOK-53 session_before_revert: block fails with the reason — override replaces instructions — blank is invalid", "[engine][hooks][runtime]") {
  HookRig r({"alpha", "beta", "gamma"});
  std::string sbr = R"(["session_before_revert"])";
  r.up({{"alpha", sbr}, {"beta", sbr}, {"gamma", sbr}});
  auto s = r.engine->createSession();
  r.engine->produceEvent(s, RecordClass::Ordinary);
  SessionOpResult res;
  REQUIRE(r.rt->revert(s, 1, std::string("orig"), [&](const SessionOpResult& x) { res = x; }));
  auto a = r.reply("alpha", R"({"action":"override","instructions_override":"mine"})");
  auto pa = json::decode<protocol::SessionBeforeRevertParams>(a["params"]);
  REQUIRE(pa);
  CHECK(pa->through_seq == 1);
  CHECK(pa->instructions == std::optional<std::string>("orig"));
  auto b = r.reply("beta", R"({"action":"override","instructions_override":" "})");
  CHECK(str(b["params"], "instructions") == "mine");
  CHECK(r.status("beta").diagnostics["invalid_modification"] == 1);
  SECTION("allow: the revert uses the override") {
    CHECK(str(r.reply("gamma", R"({"action":"allow"})")["params"], "instructions") == "mine");
    CHECK(res.status == "reverted");
    CHECK(res.instructions == std::optional<std::string>("mine"));
    CHECK(seqOf(r, s, "session_reverted") != 0);
  }
  SECTION("block: the revert fails with the reason") {
    r.reply("gamma", R"({"action":"block","reason":"keep history"})");
    CHECK(res.status == "blocked");
    CHECK(res.reason == "keep history");
    CHECK(seqOf(r, s, "session_reverted") == 0);
  }
}
