// Reference engine, in process on the virtual clock: the generic interception chain (HOOK-01…15)
// and the tool gate (HOOK-16…27). The plugin side is played with raw frames (tests/engine/rig.h).
#include <set>

#include "core/protocol/hooks.h"
#include "mock_engine/runtime.h"
#include "tests/engine/rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

#include "tests/engine/hook_rig.h"

// ---- the chain -------------------------------------------------------------------------------------

TEST_CASE("HOOK-01 HOOK-02 a hook reaches only plugins that list it, as plugin/intercept/<hook>", "[engine][hooks]") {
  HookRig r({"alpha", "beta"});
  r.up({{"alpha", R"(["message_end"])"}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"hi"})");
  auto req = r.reply("alpha", R"({"action":"keep"})", "message_end");
  CHECK(str(req, "method") == "plugin/intercept/message_end");
  CHECK(r.record(run).state == RunRecord::State::Completed);
  // alpha got exactly that one hook; beta (no intercept list) got none.
  std::size_t alpha_hooks = 0, beta_hooks = 0;
  for (auto& f : r.written("alpha")) alpha_hooks += f.find("plugin/intercept/") != std::string::npos;
  for (auto& f : r.written("beta")) beta_hooks += f.find("plugin/intercept/") != std::string::npos;
  CHECK(alpha_hooks == 1);
  CHECK(beta_hooks == 0);
}

TEST_CASE("HOOK-03 a hook name outside the 13 fails the handshake", "[engine][hooks]") {
  HookRig r;
  r.start();
  Caps c;
  c.intercept = R"(["tool_before_exec"])";
  r.answerInit("alpha", c);
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(r.status("alpha").reason->find("unknown hook `tool_before_exec`") != std::string::npos);
  HookRig ok;
  ok.start();
  Caps all;
  std::string list = "[";
  for (auto h : protocol::allHooks()) list += std::string(list.size() > 1 ? "," : "") + "\"" + std::string(protocol::toString(h)) + "\"";
  all.intercept = list + "]";
  ok.answerInit("alpha", all);
  CHECK(ok.status("alpha").state == PluginState::Connected);
  CHECK(ok.status("alpha").capabilities.intercept.size() == 13);
}

TEST_CASE("HOOK-04 plugins of one hook point are called one at a time, in registration order", "[engine][hooks]") {
  HookRig r({"zeta", "alpha"});
  r.up({{"zeta", kUserInput}, {"alpha", kUserInput}});
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"hi"})");
  CHECK(r.open("zeta").size() == 1);
  CHECK(r.open("alpha").empty());  // not before zeta answered
  r.reply("zeta", R"({"action":"allow"})");
  CHECK(r.open("alpha").size() == 1);
}

TEST_CASE("HOOK-05 registration order keeps user order, workspace entries replace in place, new ones follow", "[engine][hooks]") {
  auto cfg = parseConfig(R"({"plugins":{"b":{"command":"/b"},"a":{"command":"/a"}},
                             "workspace_plugins":{"c":{"command":"/c"},"b":{"command":"/b2"}},
                             "permissions":{"plugin":{"*":"allow"}}})", "t.json");
  REQUIRE(cfg);
  HookRig r;
  r.cfg.plugins = cfg->plugins;
  r.up({{"a", kUserInput}, {"b", kUserInput}, {"c", kUserInput}});
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"hi"})");
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i)
    for (auto name : {"a", "b", "c"})
      if (!r.open(name).empty()) { order.push_back(name); r.reply(name, R"({"action":"allow"})"); }
  CHECK(order == std::vector<std::string>{"b", "a", "c"});
  CHECK(r.engine->config().plugins[0].command == "/b2");
}

TEST_CASE("HOOK-06 each hook call is bounded by that plugin's interception_timeout_ms", "[engine][hooks]") {
  HookRig r({"alpha", "beta"});
  r.cfg.plugins[0].interception_timeout_ms = 500;
  r.up({{"alpha", kUserInput}, {"beta", kUserInput}});
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"hi"})");
  r.advance(499ms);
  CHECK(r.open("beta").empty());
  r.advance(1ms);
  CHECK(r.open("beta").size() == 1);
  CHECK(r.status("alpha").diagnostics["interception_timeout"] == 1);
  // The default is 2000 ms.
  r.advance(1999ms);
  CHECK(r.status("beta").diagnostics["interception_timeout"] == 0);
  r.advance(1ms);
  CHECK(r.status("beta").diagnostics["interception_timeout"] == 1);
}

TEST_CASE("HOOK-07 HOOK-08 HOOK-13 every failure fails open with the unchanged state and its diagnostic kind", "[engine][hooks]") {
  HookRig r({"alpha", "beta"});
  Caps base;
  base.subscribe_events = true;
  r.up({{"alpha", kUserInput}, {"beta", kUserInput}}, "[]", base);
  auto s = r.engine->createSession();
  std::string kind;
  SECTION("timeout") {
    r.run(s, R"({"input":"original"})");
    r.advance(2000ms);
    kind = "interception_timeout";
  }
  SECTION("error answer") {
    r.run(s, R"({"input":"original"})");
    r.replyError("alpha");
    kind = "interception_timeout";
  }
  SECTION("malformed: a member outside the closed result shape (HOOK-13)") {
    r.run(s, R"({"input":"original"})");
    r.reply("alpha", R"({"action":"transform","new_text":"changed","extra":1})");
    kind = "interception_timeout";
  }
  SECTION("malformed: a value of the wrong type") {
    r.run(s, R"({"input":"original"})");
    r.reply("alpha", R"({"action":"transform","new_text":7})");
    kind = "interception_timeout";
  }
  SECTION("crash mid-call") {
    r.run(s, R"({"input":"original"})");
    REQUIRE(r.open("alpha").size() == 1);
    r.engine->onExited(r.conn("alpha"), "exit 1");
    kind = "interception_crash";
  }
  SECTION("full queue (HOOK-15): alpha is not even asked") {
    r.host.procs[r.conn("alpha")].writable = false;
    for (int i = 0; i < 1024; ++i) r.engine->produceEvent(s, RecordClass::Terminal);
    REQUIRE(r.status("alpha").queued == 1024);
    r.run(s, R"({"input":"original"})");
    CHECK(r.hookFrames("alpha", "user_before_input") == 0);
    kind = "interception_timeout";
  }
  // The chain went on: beta sees the original text; the diagnostic names alpha.
  auto req = r.reply("beta", R"({"action":"allow"})");
  CHECK(str(req["params"], "text") == "original");
  CHECK(r.status("alpha").diagnostics[kind] == 1);
  std::string other = kind == "interception_crash" ? "interception_timeout" : "interception_crash";
  CHECK(r.status("alpha").diagnostics[other] == 0);
}

TEST_CASE("HOOK-09 an invalid mutation is diagnosed and skipped — the next plugin sees the last valid state", "[engine][hooks]") {
  HookRig r({"alpha", "beta", "gamma"});
  r.up({{"alpha", kUserInput}, {"beta", kUserInput}, {"gamma", kUserInput}});
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"original"})");
  r.reply("alpha", R"({"action":"transform","new_text":"valid"})");
  r.reply("beta", R"({"action":"transform","new_text":"   "})");  // invalid: blank
  auto req = r.reply("gamma", R"({"action":"allow"})");
  CHECK(str(req["params"], "text") == "valid");
  CHECK(r.status("beta").diagnostics["invalid_modification"] == 1);
  CHECK(r.status("alpha").diagnostics["invalid_modification"] == 0);
  CHECK(r.record(run).input == "valid");
}

TEST_CASE("HOOK-10 a hook request carries a request grant usable for one emit until the call ends", "[engine][hooks]") {
  HookRig r;
  Caps base;
  base.publish_bus = true;
  r.up({{"alpha", kUserInput}}, "[]", base);
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"hi"})");
  auto req = r.next("alpha");
  std::string token = str(req["params"], "context_id");
  auto emit = [&](const std::string& name) -> json::Document {
    r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s +
                        R"(","context_id":")" + token + R"(","name":")" + name + R"(","payload":{}}})");
    return std::move(r.framesOf("alpha", "plugin/emit_result").back());
  };
  CHECK(str(emit("during")["params"], "bus") == "published");
  r.reply("alpha", R"({"action":"allow"})");
  auto after = emit("after");
  CHECK(str(after["params"], "bus") != "published");
  CHECK(str(after["params"], "reason") == "context_id was already consumed, expired, or revoked");
}

TEST_CASE("HOOK-10 the grant of an unused hook call is revoked when the call ends", "[engine][hooks]") {
  HookRig r;
  Caps base;
  base.publish_bus = true;
  r.up({{"alpha", kUserInput}}, "[]", base);
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"hi"})");
  std::string token = str(r.reply("alpha", R"({"action":"allow"})")["params"], "context_id");
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s +
                      R"(","context_id":")" + token + R"(","name":"late","payload":{}}})");
  CHECK(str(r.framesOf("alpha", "plugin/emit_result").back()["params"], "bus") != "published");
}

TEST_CASE("HOOK-11 one fresh context_id per chain, shared by all of its plugins", "[engine][hooks]") {
  HookRig r({"alpha", "beta"});
  std::string two = R"(["user_before_input","agent_before_start"])";
  r.up({{"alpha", two}, {"beta", two}});
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"hi"})");
  auto a1 = str(r.reply("alpha", R"({"action":"allow"})", "user_before_input")["params"], "context_id");
  auto b1 = str(r.reply("beta", R"({"action":"allow"})", "user_before_input")["params"], "context_id");
  auto a2 = str(r.reply("alpha", "{}", "agent_before_start")["params"], "context_id");
  auto b2 = str(r.reply("beta", "{}", "agent_before_start")["params"], "context_id");
  CHECK(a1 == b1);
  CHECK(a2 == b2);
  CHECK(a1 != a2);
}

// ---- tool_before_call -----------------------------------------------------------------------------

TEST_CASE("HOOK-16 tool_before_call runs only after policy and approval — denied calls are never shown", "[engine][hooks][tools]") {
  HookRig r;
  r.cfg.permissions = {{"plugin", "echo*", Decision::Allow}, {"plugin", "echo secret*", Decision::Deny}};
  r.up({{"alpha", R"(["tool_before_call"])"}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  auto denied = *r.engine->callTool(s, "echo", obj(R"({"path":"secret/x"})"));
  CHECK(r.engine->toolCall(denied)->state == CallState::Denied);
  CHECK(r.hookFrames("alpha", "tool_before_call") == 0);
  auto allowed = *r.engine->callTool(s, "echo", obj(R"({"path":"docs/x"})"));
  CHECK(r.hookFrames("alpha", "tool_before_call") == 1);
  CHECK(r.framesOf("alpha", "plugin/tools/call").empty());  // not before the hook answered
  r.reply("alpha", R"({"action":"allow"})");
  CHECK(r.framesOf("alpha", "plugin/tools/call").size() == 1);
  CHECK(r.engine->toolCall(allowed)->state == CallState::Pending);
  // An `ask` answered "no" by the simulated user is a denial too.
  HookRig q;
  q.cfg.permissions = {{"plugin", "*", Decision::Ask}};
  q.cfg.approve_asks = false;
  q.up({{"alpha", R"(["tool_before_call"])"}}, "[" + echoTool() + "]");
  auto qs = q.engine->createSession();
  (void)q.engine->callTool(qs, "echo", obj(R"({"path":"a"})"));
  CHECK(q.hookFrames("alpha", "tool_before_call") == 0);
}

TEST_CASE("HOOK-17 tool_before_call params are {session_id, context_id, tool, arguments, permission_name, resource}", "[engine][hooks][tools]") {
  HookRig r;
  r.up({{"alpha", R"(["tool_before_call"])"}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  (void)r.engine->callTool(s, "echo", obj(R"({"path":"docs/a","n":1})"));
  auto req = r.next("alpha", "tool_before_call");
  auto p = json::decode<protocol::ToolBeforeCallParams>(req["params"]);  // closed shape
  REQUIRE(p);
  CHECK(p->session_id == s);
  CHECK(p->tool == "echo");
  CHECK(p->permission_name == "echo");
  CHECK(p->resource == std::optional<std::string>("docs/a"));
  CHECK(json::compact(p->arguments.get()) == R"({"path":"docs/a","n":1})");
  (void)r.engine->callTool(s, "echo", obj(R"({"n":2})"));
  r.reply("alpha", R"({"action":"allow"})");
  CHECK(r.next("alpha", "tool_before_call")["params"]["resource"].IsNull());
}

TEST_CASE("HOOK-18 a block ends the chain, the tool does not run, the model gets a tool error and the turn goes on", "[engine][hooks][tools]") {
  HookRig r({"alpha", "beta", "observer"});
  std::string tbc = R"(["tool_before_call"])";
  r.up({{"alpha", tbc}, {"beta", tbc}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"go","turns":[{"tool_calls":[{"tool":"echo","arguments":{"path":"a"}}]},{"text":"after"}]})");
  r.reply("alpha", R"({"action":"block","message_to_model":"not today"})");
  CHECK(r.open("beta").empty());  // the chain ended
  CHECK(r.framesOf("alpha", "plugin/tools/call").empty());
  const RunRecord& rec = r.record(run);
  REQUIRE(rec.tool_calls.size() == 1);
  auto* call = r.engine->toolCall(rec.tool_calls[0]);
  CHECK(call->state == CallState::Failed);
  CHECK(call->hook_blocked);
  CHECK(rec.state == RunRecord::State::Completed);  // the turn went on
  REQUIRE(rec.requests.size() == 2);
  const json::Value& msgs = (*rec.requests[1])["messages"];
  const json::Value& last = msgs[msgs.Size() - 1];
  CHECK(str(last, "role") == "tool");
  CHECK(str(last["content"], "content") == "not today");
  CHECK(last["content"]["is_error"].GetBool());
  CHECK(r.status("alpha").diagnostics["hook_blocked"] == 1);
}

TEST_CASE("HOOK-19 the block text is message_to_model, else reason, else the default", "[engine][hooks][tools]") {
  HookRig r;
  r.up({{"alpha", R"(["tool_before_call"])"}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  std::string answer, expected;
  SECTION("message_to_model wins") {
    answer = R"({"action":"block","reason":"r","message_to_model":"m"})";
    expected = "m";
  }
  SECTION("reason") {
    answer = R"({"action":"block","reason":"r"})";
    expected = "r";
  }
  SECTION("default") {
    answer = R"({"action":"block"})";
    expected = "plugin `alpha` blocked the tool call";
  }
  auto id = *r.engine->callTool(s, "echo", obj(R"({"path":"a"})"));
  r.reply("alpha", answer);
  CHECK(r.engine->toolCall(id)->reason == expected);
}

TEST_CASE("HOOK-20 valid modified_arguments are what later plugins and the execution see", "[engine][hooks][tools]") {
  HookRig r({"alpha", "beta"});
  std::string tbc = R"(["tool_before_call"])";
  r.up({{"alpha", tbc}, {"beta", tbc}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  auto id = *r.engine->callTool(s, "echo", obj(R"({"path":"a","n":1})"));
  r.reply("alpha", R"({"action":"allow","modified_arguments":{"path":"a","n":2}})");
  auto seen = r.reply("beta", R"({"action":"allow"})");
  CHECK(json::compact(seen["params"]["arguments"]) == R"({"path":"a","n":2})");
  auto call = r.framesOf("alpha", "plugin/tools/call");
  REQUIRE(call.size() == 1);
  CHECK(json::compact(call[0]["params"]["arguments"]) == R"({"path":"a","n":2})");
  CHECK(json::compact(*r.engine->toolCall(id)->arguments) == R"({"path":"a","n":2})");
}

TEST_CASE("HOOK-21 hooks cannot change the permission resource, and allow never grants permission", "[engine][hooks][tools]") {
  HookRig r;
  r.cfg.permissions = {{"plugin", "echo a", Decision::Allow}};
  r.up({{"alpha", R"(["tool_before_call"])"}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  (void)r.engine->callTool(s, "echo", obj(R"({"path":"a"})"));
  r.reply("alpha", R"({"action":"allow","modified_arguments":{"path":"b"}})");
  auto call = r.framesOf("alpha", "plugin/tools/call");
  REQUIRE(call.size() == 1);
  CHECK(str(call[0]["params"], "resource") == "a");
  CHECK(str(call[0]["params"]["arguments"], "path") == "a");
  CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  // A denied call never reaches the hook, so no answer can allow it.
  auto denied = *r.engine->callTool(s, "echo", obj(R"({"path":"b"})"));
  CHECK(r.engine->toolCall(denied)->state == CallState::Denied);
  CHECK(r.open("alpha").empty());
}

TEST_CASE("HOOK-22 an invalid modification is skipped in 0.0.6 and fails the call in 0.0.4", "[engine][hooks][tools]") {
  SECTION("0.0.6: diagnosed, skipped, previous arguments kept") {
    HookRig r({"alpha", "beta"});
    std::string tbc = R"(["tool_before_call"])";
    r.up({{"alpha", tbc}, {"beta", tbc}}, "[" + echoTool() + "]");
    auto s = r.engine->createSession();
    auto id = *r.engine->callTool(s, "echo", obj(R"({"path":"a"})"));
    r.reply("alpha", R"({"action":"allow","modified_arguments":{"path":"a","n":"not an integer"}})");
    auto seen = r.reply("beta", R"({"action":"allow"})");
    CHECK(json::compact(seen["params"]["arguments"]) == R"({"path":"a"})");
    CHECK(r.framesOf("alpha", "plugin/tools/call").size() == 1);
    CHECK(r.engine->toolCall(id)->state == CallState::Pending);
    CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  }
  SECTION("0.0.4: the tool call fails") {
    HookRig r;
    r.cfg.protocol_version = "0.0.4";
    r.start();
    r.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.4","name":"alpha","version":"1","capabilities":{"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"intercept":["tool_before_call"]},"tools":[)" + echoTool() + "]}}");
    REQUIRE(r.status("alpha").state == PluginState::Connected);
    r.rt = std::make_unique<Runtime>(*r.engine);
    auto s = r.engine->createSession();
    auto id = *r.engine->callTool(s, "echo", obj(R"({"path":"a"})"));
    r.reply("alpha", R"({"action":"allow","modified_arguments":[1]})");
    CHECK(r.engine->toolCall(id)->state == CallState::Failed);
    CHECK(r.framesOf("alpha", "plugin/tools/call").empty());
  }
}

// ---- tool_after_result ----------------------------------------------------------------------------

TEST_CASE("HOOK-23 HOOK-24 tool_after_result runs before the termination is committed — a replacement is what the next plugin sees", "[engine][hooks][tools]") {
  HookRig r({"alpha", "beta"});
  std::string tar = R"(["tool_after_result"])";
  r.up({{"alpha", tar}, {"beta", tar}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  auto id = *r.engine->callTool(s, "echo", obj(R"({"path":"a"})"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"single","text":"raw"},"is_error":false}})");
  auto req = r.next("alpha", "tool_after_result");
  auto p = json::decode<protocol::ToolAfterResultParams>(req["params"]);
  REQUIRE(p);
  CHECK(p->result_content == "raw");
  CHECK(p->is_error == false);
  CHECK(json::compact(p->arguments.get()) == R"({"path":"a"})");
  // Not committed yet: still pending, no tool_call_terminated.
  CHECK(r.engine->toolCall(id)->state == CallState::Pending);
  auto before = r.types(s);
  CHECK(std::find(before.begin(), before.end(), "tool_call_terminated") == before.end());
  r.reply("alpha", R"({"action":"replace","replacement_content":"first"})");
  auto seen = r.reply("beta", R"({"action":"keep","note":"ignored"})");
  CHECK(str(seen["params"], "result_content") == "first");
  CHECK(r.engine->toolCall(id)->state == CallState::Completed);
  CHECK(*r.engine->toolCall(id)->model_content == "first");
  CHECK(r.types(s).back() == "tool_call_terminated");
}

TEST_CASE("HOOK-25 a 0.0.6 replacement changes only the model-facing content", "[engine][hooks][tools]") {
  HookRig r;
  r.up({{"alpha", R"(["tool_after_result"])"}}, "[" + echoTool() + "]");
  auto s = r.engine->createSession();
  auto run = r.run(s, R"({"input":"go","turns":[{"tool_calls":[{"tool":"echo","arguments":{"path":"a"}}]},{"text":"done"}]})");
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"single","text":"raw"},"display":"UI view","is_error":false}})");
  r.reply("alpha", R"({"action":"replace","replacement_content":"for the model"})");
  const RunRecord& rec = r.record(run);
  auto* call = r.engine->toolCall(rec.tool_calls[0]);
  CHECK(*call->model_content == "for the model");
  CHECK(str(*call->output, "text") == "raw");  // retained original
  CHECK(*call->display == "UI view");          // the UI display
  // The committed termination keeps the original output.
  for (auto& e : r.engine->session(s)->log)
    if (e.type == "tool_call_terminated") CHECK(e.payload->find("\"raw\"") != std::string::npos);
  // The model's next request shows the replacement.
  const json::Value& msgs = (*rec.requests.at(1))["messages"];
  CHECK(str(msgs[msgs.Size() - 1]["content"], "content") == "for the model");
}

TEST_CASE("HOOK-26 a replacement above the tool-output byte limit is skipped — note is ignored", "[engine][hooks][tools]") {
  HookRig r({"alpha", "beta"});
  std::string tar = R"(["tool_after_result"])";
  r.up({{"alpha", tar}, {"beta", tar}}, "[" + echoTool() + "]");
  r.rt->hooks().setToolOutputByteLimit(8);
  auto s = r.engine->createSession();
  auto id = *r.engine->callTool(s, "echo", obj(R"({"path":"a"})"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"single","text":"raw"},"is_error":false}})");
  r.reply("alpha", R"({"action":"replace","replacement_content":"123456789","note":"too long"})");
  auto seen = r.reply("beta", R"({"action":"replace","replacement_content":"12345678"})");
  CHECK(str(seen["params"], "result_content") == "raw");
  CHECK(r.status("alpha").diagnostics["invalid_modification"] == 1);
  CHECK(*r.engine->toolCall(id)->model_content == "12345678");  // exactly at the limit is fine
}

TEST_CASE("HOOK-27 with named output, result_content is the engine's rendering of all streams", "[engine][hooks][tools]") {
  HookRig r;
  std::string named = R"({"name":"report","description":"d","permission_name":"report","primary_resource_param":null,"parameters":{"type":"object"},"output":{"kind":"named","streams":["results","errors"]}})";
  r.up({{"alpha", R"(["tool_after_result"])"}}, "[" + named + "]");
  auto s = r.engine->createSession();
  auto id = *r.engine->callTool(s, "report", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"named","streams":[{"stream":"errors","text":"E"},{"stream":"results","text":"R"}]},"is_error":false}})");
  auto req = r.reply("alpha", R"({"action":"replace","replacement_content":"whole"})");
  CHECK(str(req["params"], "result_content") == "[results]\nR\n[errors]\nE");
  CHECK(*r.engine->toolCall(id)->model_content == "whole");
}
