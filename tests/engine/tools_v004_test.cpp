// Reference engine, in process: the plugin/tools/call result per profile (DELTA §3.5, §4.3;
// TOOL-03, TOOL-09, TOOL-10, TOOL-14). 0.0.4 takes `{content, is_error}` and rejects the 0.0.6
// `output` shape; 0.0.6 is the mirror image. Both map an accepted result onto the call the same way
// (normalized single output, hooks, terminal event); only TOOL-14's is_error outcome differs.
// The second half checks the tool events of PROTOCOL §5.3 (tool_call_started, tool_call_terminated)
// in both profiles.
#include "tests/engine/rig.h"

using namespace enginetest;

namespace {

json::Document obj(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p);
  return std::move(p->doc);
}

// A 0.0.4 engine with `alpha` connected; the 0.0.4 plugin capability object has 7 members (no
// producer_messaging, DELTA §3.3), so the handshake is written out rather than taken from Caps.
struct V004Rig : Rig {
  explicit V004Rig(const std::string& tools) {
    cfg.protocol_version = "0.0.4";
    start();
    send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.4","name":"alpha","version":"1","capabilities":{"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"intercept":[]},"tools":)" +
                      tools + "}}");
  }
};

struct V006Rig : Rig {
  explicit V006Rig(const std::string& tools) {
    start();
    answerInit("alpha", {}, tools);
  }
};

// Calls `echo` and answers it with `result`; returns the call's final status.
const ToolCallStatus& callAndAnswer(Rig& r, const std::string& session, int rpc_id,
                                    const std::string& result) {
  auto id = r.engine->callTool(session, "echo", obj("{}"));
  REQUIRE(id);
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(rpc_id) + R"(,"result":)" + result + "}");
  return *r.engine->toolCall(*id);
}

}  // namespace

TEST_CASE("TOOL-09 TOOL-10 0.0.4: a {content, is_error} result completes the call with content as the output", "[engine][tools][v004]") {
  V004Rig r("[" + tool("echo") + "]");
  REQUIRE(r.status("alpha").state == PluginState::Connected);
  auto s = r.engine->createSession();
  const auto& c = callAndAnswer(r, s, 2, R"({"content":"hello","is_error":false})");
  CHECK(c.state == CallState::Completed);
  REQUIRE(c.output);
  CHECK(json::compact(*c.output) == R"({"kind":"single","text":"hello"})");
  CHECK_FALSE(c.display);  // 0.0.4 has no UI-only display
  CHECK_FALSE(c.is_error);
  CHECK_FALSE(c.incomplete);
}

TEST_CASE("TOOL-14 0.0.4: is_error is metadata only, the call still completes", "[engine][tools][v004]") {
  V004Rig r("[" + tool("echo") + "]");
  auto s = r.engine->createSession();
  const auto& c = callAndAnswer(r, s, 2, R"({"content":"it broke","is_error":true})");
  CHECK(c.state == CallState::Completed);  // DELTA §4.3: a 0.0.6 engine would mark it failed
  CHECK(c.is_error);
  CHECK_FALSE(c.incomplete);
  REQUIRE(c.output);
  CHECK((*c.output)["text"] == "it broke");
}

TEST_CASE("TOOL-10 0.0.4: the 0.0.6 output shape and other malformed results fail the call, not the connection", "[engine][tools][v004]") {
  V004Rig r("[" + tool("echo") + "]");
  auto s = r.engine->createSession();
  const std::vector<std::string> cases = {
      R"({"output":{"kind":"single","text":"x"},"is_error":false})",
      R"({"output":{"kind":"single","text":"x"},"display":"ui","is_error":false})",
      R"({"content":"x","display":"ui","is_error":false})",
      R"({"content":"x"})",
      R"({"content":7,"is_error":false})",
      R"({"content":"x","is_error":"no"})",
      R"("x")",
  };
  int rpc_id = 2;
  for (auto& res : cases) {
    INFO(res);
    const auto& c = callAndAnswer(r, s, rpc_id++, res);
    CHECK(c.state == CallState::Failed);
    CHECK(c.reason.find("malformed plugin tool call result") == 0);
    CHECK_FALSE(c.output);
  }
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("TOOL-03 0.0.4: a tool declaration with an output member fails the handshake", "[engine][tools][v004]") {
  V004Rig r("[" + tool("echo", R"(,"output":{"kind":"single"})") + "]");
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(r.status("alpha").reason.value_or("").find("output") != std::string::npos);
}

TEST_CASE("TOOL-09 TOOL-10 TOOL-14 0.0.6: the output shape is accepted and the 0.0.4 content shape is malformed", "[engine][tools]") {
  V006Rig r("[" + tool("echo") + "]");
  auto s = r.engine->createSession();
  const auto& ok = callAndAnswer(r, s, 2, R"({"output":{"kind":"single","text":"hello"},"is_error":false})");
  CHECK(ok.state == CallState::Completed);
  REQUIRE(ok.output);
  CHECK(json::compact(*ok.output) == R"({"kind":"single","text":"hello"})");
  const auto& err = callAndAnswer(r, s, 3, R"({"output":{"kind":"single","text":"x"},"is_error":true})");
  CHECK(err.state == CallState::Failed);  // TOOL-14 in 0.0.6, unlike 0.0.4
  const auto& old = callAndAnswer(r, s, 4, R"({"content":"hello","is_error":false})");
  CHECK(old.state == CallState::Failed);
  CHECK(old.reason.find("malformed plugin tool call result") == 0);
  CHECK(r.status("alpha").state == PluginState::Connected);
}

// ---- tool events (PROTOCOL §5.3) -------------------------------------------------------------------

namespace {

// The session's records of `type`, parsed.
std::vector<json::Document> recordsOf(Rig& r, const std::string& session, const std::string& type) {
  std::vector<json::Document> out;
  for (auto& e : r.engine->session(session)->log)
    if (e.type == type) out.push_back(obj(*e.payload));
  return out;
}

}  // namespace

TEST_CASE("TOOL-14 EVT-13 a started call appends tool_call_started, then tool_call_terminated with owner, outcome, result and error", "[engine][tools][evt]") {
  V006Rig r("[" + tool("echo") + "]");
  auto s = r.engine->createSession();
  r.engine->produceEvent(s, RecordClass::Ordinary);  // the turn that asks for the tool: seq 1
  auto id = *r.engine->callTool(s, "echo", obj("{}"));
  auto started = recordsOf(r, s, "tool_call_started");
  REQUIRE(started.size() == 1);
  CHECK(str(started[0], "tool_call_id") == id);
  CHECK(started[0]["owner"]["model_turn_seq"].GetUint64() == 1);
  CHECK(str(started[0], "tool") == "echo");
  CHECK(recordsOf(r, s, "tool_call_terminated").empty());
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"single","text":"hi"},"display":"UI","is_error":true}})");
  auto term = recordsOf(r, s, "tool_call_terminated");
  REQUIRE(term.size() == 1);
  const json::Value& t = term[0];
  CHECK(str(t, "tool_call_id") == id);
  CHECK(json::compact(t["owner"]) == json::compact(started[0]["owner"]));
  CHECK(str(t, "outcome") == "failed");  // TOOL-14 (0.0.6)
  CHECK(str(t["result"], "content", "type") == "text");
  CHECK(str(t["result"], "content", "text") == "hi");
  CHECK(t["result"]["is_error"].GetBool());
  CHECK(str(t["result"]["metadata"]["plugin"], "display") == "UI");
  CHECK(str(t, "error", "code") == "tool_error");
  CHECK(str(t, "error", "message").find("UI") == std::string::npos);  // TOOL-13: display stays UI-only
}

TEST_CASE("TOOL-16 RPC-20 TOOL-10 failed calls terminate with a null result and an {code, message} error", "[engine][tools][evt]") {
  V006Rig r("[" + tool("echo") + "]");
  auto s = r.engine->createSession();
  auto rejected = *r.engine->callTool(s, "echo", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"boom"}})");
  auto bad = *r.engine->callTool(s, "echo", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":3,"result":{"content":"x","is_error":false}})");
  auto slow = *r.engine->callTool(s, "echo", obj("{}"));
  r.advance(std::chrono::milliseconds(r.cfg.plugins[0].tool_timeout_ms));
  auto term = recordsOf(r, s, "tool_call_terminated");
  REQUIRE(term.size() == 3);
  const std::vector<std::pair<std::string, std::string>> want = {
      {rejected, "rejected"}, {bad, "malformed_result"}, {slow, "timeout"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO(want[i].second);
    CHECK(str(term[i], "tool_call_id") == want[i].first);
    CHECK(str(term[i], "outcome") == "failed");
    CHECK(term[i]["result"].IsNull());
    CHECK(str(term[i], "error", "code") == want[i].second);
    CHECK(str(term[i], "error", "message") == r.engine->toolCall(want[i].first)->reason);
  }
}

TEST_CASE("TOOL-09 TOOL-14 0.0.4: the terminal record keeps content as the result and {plugin:{content, is_error}} as metadata", "[engine][tools][evt][v004]") {
  V004Rig r("[" + tool("echo") + "]");
  auto s = r.engine->createSession();
  auto id = *r.engine->callTool(s, "echo", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"content":"it broke","is_error":true}})");
  auto term = recordsOf(r, s, "tool_call_terminated");
  REQUIRE(term.size() == 1);
  CHECK(str(term[0], "tool_call_id") == id);
  CHECK(str(term[0], "outcome") == "completed");
  CHECK(term[0]["error"].IsNull());
  CHECK(str(term[0]["result"], "content", "text") == "it broke");
  CHECK(json::compact(term[0]["result"]["metadata"]) == R"({"plugin":{"content":"it broke","is_error":true}})");
}

TEST_CASE("TOOL-22 a denied call never started: no tool event at all", "[engine][tools][evt]") {
  V006Rig r("[" + tool("echo") + "]");
  auto s = r.engine->createSession();
  r.engine->setSessionPermissions(s, {{"plugin", "echo secret/*", Decision::Deny}});
  auto id = *r.engine->callTool(s, "echo", obj(R"({"path":"secret/x"})"));
  REQUIRE(r.engine->toolCall(id)->state == CallState::Denied);
  CHECK(recordsOf(r, s, "tool_call_started").empty());
  CHECK(recordsOf(r, s, "tool_call_terminated").empty());
}
