// Reference engine, in process: the plugin/tools/call result per profile (DELTA §3.5, §4.3;
// TOOL-03, TOOL-09, TOOL-10, TOOL-14). 0.0.4 takes `{content, is_error}` and rejects the 0.0.6
// `output` shape; 0.0.6 is the mirror image. Both map an accepted result onto the call the same way
// (normalized single output, hooks, terminal event); only TOOL-14's is_error outcome differs.
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
