// Reference engine, in process on a VirtualClock: framing, envelopes, handshake, ping, shutdown and
// lifecycle rules (FRAME, RPC, INIT, PING, SHUT, LIFE). The plugin side is scripted with raw frames.
#include "tests/engine/rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

TEST_CASE("INIT-01 INIT-02 INIT-03 the first frame is plugin/initialize with id 1 and seven engine capabilities", "[engine][init]") {
  Rig r;
  r.start();
  REQUIRE(r.written("alpha").size() == 1);
  auto f = r.lastFrame("alpha");
  CHECK(str(f, "method") == "plugin/initialize");
  CHECK(f["id"].GetInt() == 1);
  CHECK(str(f, "params", "protocol_version") == "0.0.6");
  const auto& caps = f["params"]["capabilities"];
  CHECK(caps.MemberCount() == 7);
  CHECK(caps["producer_messaging"].IsFalse());
  CHECK(caps["ping"].IsTrue());
  CHECK(r.status("alpha").state == PluginState::Connecting);
}

TEST_CASE("LIFE-02 INIT-23 a valid handshake connects the plugin and claims its tools", "[engine][init]") {
  Rig r;
  r.start();
  r.answerInit("alpha", {}, "[" + tool("issue_read") + "]");
  auto s = r.status("alpha");
  CHECK(s.state == PluginState::Connected);
  CHECK(s.tools == std::vector<std::string>{"issue_read"});
  CHECK_FALSE(s.reason.has_value());
}

TEST_CASE("INIT-11 a version mismatch fails the plugin and names the version found", "[engine][init]") {
  Rig r;
  r.start();
  r.answerInit("alpha", {}, "[]", "", "0.0.5");
  auto s = r.status("alpha");
  CHECK(s.state == PluginState::Failed);
  CHECK(s.reason->find("0.0.5") != std::string::npos);
  CHECK(r.host.procs[r.conn("alpha")].killed);
}

TEST_CASE("INIT-12 a non-string protocol_version fails before decoding the rest", "[engine][init]") {
  Rig r;
  r.start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":6}})");
  CHECK(r.status("alpha").reason->find("must be a string") != std::string::npos);
}

TEST_CASE("INIT-13 the reported name must equal the configured name byte for byte", "[engine][init]") {
  Rig r;
  r.start();
  r.answerInit("alpha", {}, "[]", "Alpha");
  auto s = r.status("alpha");
  CHECK(s.state == PluginState::Failed);
  CHECK(s.reason->find("`alpha`") != std::string::npos);
  CHECK(s.reason->find("`Alpha`") != std::string::npos);
}

TEST_CASE("INIT-16 an unknown hook name makes the result malformed", "[engine][init]") {
  Rig r;
  r.start();
  Caps c;
  c.intercept = R"(["tool_before_run"])";
  r.answerInit("alpha", c);
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(r.status("alpha").reason->find("malformed handshake result") == 0);
}

TEST_CASE("INIT-17 plugin capabilities without producer_messaging are malformed in 0.0.6", "[engine][init]") {
  Rig r;
  r.start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":{"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"intercept":[]},"tools":[]}})");
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(r.status("alpha").reason->find("producer_messaging") != std::string::npos);
}

TEST_CASE("INIT-18 no initialize result within startup_timeout_ms fails with handshake timeout", "[engine][init]") {
  Rig r;
  r.cfg.plugins[0].startup_timeout_ms = 500;
  r.start();
  r.advance(499ms);
  CHECK(r.status("alpha").state == PluginState::Connecting);
  r.advance(1ms);
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(*r.status("alpha").reason == "handshake timeout");
  // A late answer is ignored.
  r.answerInit("alpha");
  CHECK(r.status("alpha").state == PluginState::Failed);
}

TEST_CASE("INIT-19 an error response to initialize fails the plugin", "[engine][init]") {
  Rig r;
  r.start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"nope"}})");
  CHECK(*r.status("alpha").reason == "handshake rejected: nope");
}

TEST_CASE("INIT-20 duplicate or non-snake_case tool names fail the handshake", "[engine][init]") {
  for (std::string tools : {"[" + tool("echo") + "," + tool("echo") + "]", "[" + tool("EchoTool") + "]"}) {
    Rig r;
    r.start();
    r.answerInit("alpha", {}, tools);
    CHECK(r.status("alpha").state == PluginState::Failed);
    CHECK(r.status("alpha").reason->find("invalid or duplicate tool name") != std::string::npos);
  }
}

TEST_CASE("INIT-21 description, permission name, schema and primary parameter are validated", "[engine][init]") {
  struct Case { std::string decl, needle; };
  std::vector<Case> cases = {
      {R"({"name":"t","description":"","parameters":{"type":"object"},"permission_name":"t","primary_resource_param":null})", "description"},
      {R"({"name":"t","description":"d","parameters":{"type":"object"},"permission_name":"T-x","primary_resource_param":null})", "permission_name"},
      {R"({"name":"t","description":"d","parameters":{"type":"objekt"},"permission_name":"t","primary_resource_param":null})", "invalid JSON Schema"},
      {R"({"name":"t","description":"d","parameters":{"type":"object","properties":{}},"permission_name":"t","primary_resource_param":"path"})", "not declared in properties"},
      {R"({"name":"t","description":"d","parameters":{"type":"object"},"permission_name":"t"})", "primary_resource_param"},
  };
  for (auto& c : cases) {
    Rig r;
    r.start();
    r.answerInit("alpha", {}, "[" + c.decl + "]");
    INFO(c.decl);
    CHECK(r.status("alpha").state == PluginState::Failed);
    CHECK(r.status("alpha").reason->find(c.needle) != std::string::npos);
  }
  Rig ok;
  ok.start();
  ok.answerInit("alpha", {}, R"([{"name":"t","description":"d","parameters":{"type":"object"},"permission_name":"t","primary_resource_param":null}])");
  CHECK(ok.status("alpha").state == PluginState::Connected);
}

TEST_CASE("TOOL-03 TOOL-04 output declarations: absent means single, named needs 1-8 distinct URI-safe streams", "[engine][tools]") {
  auto decl = [](const std::string& output) {
    return "[" + tool("t", R"(,"output":)" + output) + "]";
  };
  for (std::string good : {std::string(R"({"kind":"single"})"), std::string(R"({"kind":"named","streams":["results","errors.v1~x"]})")}) {
    Rig r;
    r.start();
    r.answerInit("alpha", {}, decl(good));
    CHECK(r.status("alpha").state == PluginState::Connected);
  }
  for (std::string bad : {std::string(R"({"kind":"named","streams":[]})"), std::string(R"({"kind":"named","streams":["a","a"]})"),
                          std::string(R"({"kind":"named","streams":["a b"]})"), std::string(R"({"kind":"named","streams":["1","2","3","4","5","6","7","8","9"]})"),
                          std::string(R"({"kind":"single","streams":["a"]})"), std::string(R"({"kind":"many"})")}) {
    Rig r;
    r.start();
    r.answerInit("alpha", {}, decl(bad));
    INFO(bad);
    CHECK(r.status("alpha").state == PluginState::Failed);
    CHECK(r.status("alpha").reason->find("invalid output declaration") != std::string::npos);
  }
}

TEST_CASE("INIT-22 LIFE-03 one plugin's failure never touches another", "[engine][life]") {
  Rig r({"alpha", "beta", "gamma"});
  r.host.fail_spawn = {"gamma"};
  r.start();
  r.answerInit("alpha", {}, "[]", "wrong");
  r.answerInit("beta");
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(r.status("beta").state == PluginState::Connected);
  CHECK(r.status("gamma").state == PluginState::Failed);
  CHECK(r.status("gamma").reason->find("failed to start") == 0);
}

TEST_CASE("LIFE-05 disabled entries are never started", "[engine][life]") {
  Rig r({"alpha", "beta"});
  r.cfg.plugins[1].enabled = false;
  r.start();
  CHECK(r.status("beta").state == PluginState::Disabled);
  CHECK(r.conn("beta") == 0);
  CHECK(r.host.procs.size() == 1);
}

TEST_CASE("INIT-07 INIT-08 nothing but initialize is written before the handshake — earlier events are never delivered", "[engine][init]") {
  Rig r;
  auto& e = r.start();
  auto s = e.createSession();
  REQUIRE(e.produceEvent(s, RecordClass::Ordinary));
  r.send("alpha", R"({"jsonrpc":"2.0","id":7,"method":"plugin/future","params":{}})");
  CHECK(r.written("alpha").size() == 1);
  Caps c;
  c.subscribe_events = true;
  r.answerInit("alpha", c);
  CHECK(r.framesOf("alpha", "plugin/event").empty());
  // The deferred answer to the early request is written after acceptance.
  CHECK(r.written("alpha").size() == 2);
}

TEST_CASE("FRAME-04 a frame that is not valid UTF-8 is fatal", "[engine][frame]") {
  Rig r;
  r.start();
  r.answerInit("alpha");
  r.engine->onBytes(r.conn("alpha"), "\xFF\n");
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(r.status("alpha").reason->find("UTF-8") != std::string::npos);
  CHECK(r.host.procs[r.conn("alpha")].killed);
}

TEST_CASE("FRAME-06 a frame of exactly 4,194,304 bytes is accepted and one more byte is fatal", "[engine][frame]") {
  auto padded = [](std::size_t total) {
    std::string head = R"({"jsonrpc":"2.0","method":"plugin/future_notice","params":{"pad":")";
    std::string tail = R"("}})";
    return head + std::string(total - head.size() - tail.size(), 'x') + tail;
  };
  Rig r;
  r.start();
  r.answerInit("alpha");
  r.send("alpha", padded(4'194'304));
  CHECK(r.status("alpha").state == PluginState::Connected);
  r.send("alpha", padded(4'194'305));
  CHECK(r.status("alpha").state == PluginState::Failed);
}

TEST_CASE("FRAME-08 a CR before the LF is stripped", "[engine][frame]") {
  Rig r;
  r.start();
  r.engine->onBytes(r.conn("alpha"), R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" + Caps{}.json() + R"(,"tools":[]}})" "\r\n");
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("FRAME-10 FRAME-11 FRAME-13 FRAME-14 empty lines, arrays, scalars, bad JSON and a BOM are fatal without a reply", "[engine][frame]") {
  for (std::string bad : {std::string(""), std::string("[]"), std::string("42"), std::string("{bad"), std::string("\xEF\xBB\xBF{}")}) {
    Rig r;
    r.start();
    r.answerInit("alpha");
    auto before = r.written("alpha").size();
    r.send("alpha", bad);
    INFO(bad);
    CHECK(r.status("alpha").state == PluginState::Failed);
    CHECK(r.status("alpha").reason->find("malformed plugin message") == 0);
    CHECK(r.written("alpha").size() == before);
  }
}

TEST_CASE("FRAME-09 FRAME-17 an unterminated last fragment is processed, then EOF fails the plugin", "[engine][frame]") {
  Rig r;
  r.start();
  r.engine->onBytes(r.conn("alpha"), R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" + Caps{}.json() + R"(,"tools":[]}})");
  CHECK(r.status("alpha").state == PluginState::Connecting);
  r.engine->onStdoutEof(r.conn("alpha"));
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(*r.status("alpha").reason == "plugin stdout reached EOF");
  CHECK(r.host.procs[r.conn("alpha")].killed);
}

TEST_CASE("RPC-01 RPC-03 RPC-04 RPC-05 RPC-19 malformed envelopes are fatal", "[engine][rpc]") {
  for (std::string bad : {std::string(R"({"jsonrpc":"2","id":5,"result":{}})"), std::string(R"({"jsonrpc":"2.0","id":5,"result":{},"x":1})"),
                          std::string(R"({"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"m"}})"), std::string(R"({"jsonrpc":"2.0","id":5})"),
                          std::string(R"({"jsonrpc":"2.0","id":1.5,"method":"x","params":{}})"), std::string(R"({"jsonrpc":"2.0","id":{},"method":"x"})"),
                          std::string(R"({"jsonrpc":"2.0","id":5,"error":{"code":"x","message":"m"}})")}) {
    Rig r;
    r.start();
    r.answerInit("alpha");
    r.send("alpha", bad);
    INFO(bad);
    CHECK(r.status("alpha").state == PluginState::Failed);
  }
}

TEST_CASE("RPC-09 responses with string, unknown or late ids are ignored", "[engine][rpc]") {
  Rig r;
  r.start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":"1","result":{}})");
  CHECK(r.status("alpha").state == PluginState::Connecting);
  r.answerInit("alpha");
  r.send("alpha", R"({"jsonrpc":"2.0","id":999,"result":{}})");
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("RPC-13 RPC-17 RPC-14 unknown requests get -32601 with the id echoed — unknown notifications are ignored", "[engine][rpc]") {
  Rig r;
  r.start();
  r.answerInit("alpha");
  r.send("alpha", R"({"jsonrpc":"2.0","id":"r-1","method":"plugin/future_request","params":{}})");
  auto f = r.lastFrame("alpha");
  CHECK(f["id"] == "r-1");
  CHECK(f["error"]["code"].GetInt() == -32601);
  auto n = r.written("alpha").size();
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/future_notice","params":{}})");
  CHECK(r.written("alpha").size() == n);
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("RPC-06 RPC-07 engine request ids are 1 for initialize, then 2, 3, ...", "[engine][rpc]") {
  Rig r;
  r.start();
  r.answerInit("alpha");
  r.engine->ping("alpha");
  r.engine->ping("alpha");
  auto pings = r.framesOf("alpha", "plugin/ping");
  REQUIRE(pings.size() == 2);
  CHECK(pings[0]["id"].GetInt() == 2);
  CHECK(pings[1]["id"].GetInt() == 3);
}

TEST_CASE("PING-01 PING-02 PING-03 ping only when connected — result exactly {} — failures fail the ping only", "[engine][ping]") {
  Rig r;
  r.cfg.plugins[0].interception_timeout_ms = 100;
  r.start();
  auto early = r.engine->ping("alpha");
  CHECK(r.engine->pingStatus(early)->state == PingStatus::State::Failed);
  CHECK(r.framesOf("alpha", "plugin/ping").empty());
  r.answerInit("alpha");
  auto ok = r.engine->ping("alpha");
  CHECK(r.lastFrame("alpha")["params"].ObjectEmpty());
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{}})");
  CHECK(r.engine->pingStatus(ok)->state == PingStatus::State::Ok);
  auto bad = r.engine->ping("alpha");
  r.send("alpha", R"({"jsonrpc":"2.0","id":3,"result":{"x":1}})");
  CHECK(r.engine->pingStatus(bad)->state == PingStatus::State::Failed);
  auto late = r.engine->ping("alpha");
  r.advance(100ms);
  CHECK(r.engine->pingStatus(late)->reason == "ping timed out");
  r.send("alpha", R"({"jsonrpc":"2.0","id":4,"result":{}})");
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("PING-05 frames interleaved before a ping answer are handled normally", "[engine][ping]") {
  Rig r;
  r.start();
  r.answerInit("alpha");
  auto h = r.engine->ping("alpha");
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/x","params":{}})");
  r.send("alpha", R"({"jsonrpc":"2.0","id":40,"method":"plugin/y","params":{}})");
  CHECK(r.lastFrame("alpha")["error"]["code"].GetInt() == -32601);
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{}})");
  CHECK(r.engine->pingStatus(h)->state == PingStatus::State::Ok);
}

TEST_CASE("SHUT-01 SHUT-02 SHUT-05 SHUT-06 shutdown notification, stdin close, exit within grace is disconnected", "[engine][shut]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha");
  e.shutdown();
  auto f = r.lastFrame("alpha");
  CHECK(str(f, "method") == "plugin/shutdown");
  CHECK(f["params"].ObjectEmpty());
  CHECK(!f.HasMember("id"));
  CHECK(r.host.procs[r.conn("alpha")].stdin_closed);
  auto n = r.written("alpha").size();
  e.ping("alpha");
  CHECK(r.written("alpha").size() == n);
  CHECK_FALSE(e.shutdownComplete());
  r.advance(1s);
  e.onExited(r.conn("alpha"), "exit 0");
  CHECK(r.status("alpha").state == PluginState::Disconnected);
  CHECK(e.shutdownComplete());
}

TEST_CASE("SHUT-03 SHUT-06 SHUT-07 grace expiry kills the process group and fails the plugin — reaping is bounded", "[engine][shut]") {
  Rig r;
  r.cfg.plugins[0].shutdown_grace_ms = 300;
  auto& e = r.start();
  r.answerInit("alpha");
  e.shutdown();
  r.advance(299ms);
  CHECK_FALSE(r.host.procs[r.conn("alpha")].killed);
  r.advance(1ms);
  CHECK(r.host.procs[r.conn("alpha")].killed);
  CHECK(*r.status("alpha").reason == "plugin shutdown grace period expired");
  CHECK_FALSE(e.shutdownComplete());
  r.advance(5s);  // never reaped: the engine stops waiting after 5 s
  CHECK(e.shutdownComplete());
}

TEST_CASE("SHUT-04 shutdown stays bounded while initialize is unanswered", "[engine][shut]") {
  Rig r;
  r.cfg.plugins[0].shutdown_grace_ms = 200;
  auto& e = r.start();
  e.shutdown();
  CHECK(str(r.lastFrame("alpha"), "method") == "plugin/shutdown");
  r.advance(200ms);
  CHECK(r.host.procs[r.conn("alpha")].killed);
  e.onExited(r.conn("alpha"), "killed by signal 9 (SIGKILL)");
  CHECK(e.shutdownComplete());
  CHECK(r.status("alpha").state == PluginState::Failed);
}

TEST_CASE("LIFE-04 a crashed plugin stays failed and is never respawned", "[engine][life]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha");
  e.onExited(r.conn("alpha"), "exit 3");
  CHECK(r.status("alpha").state == PluginState::Failed);
  CHECK(r.status("alpha").reason->find("exit 3") != std::string::npos);
  r.advance(60s);
  CHECK(r.host.procs.size() == 1);
  CHECK(r.status("alpha").spawn_count == 1);
}
