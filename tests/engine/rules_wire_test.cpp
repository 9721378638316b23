// Reference engine, in process on the virtual clock: the remaining engine-bound FRAME, RPC, INIT and
// LIFE rules of issue 4, one test per rule ID (the rules already covered live in
// lifecycle_test.cpp). Each test fails when the engine breaks its rule; rules that only state what
// does NOT exist (INIT-28) are tested through the observable consequence.
#include <set>

#include "mock_engine/config.h"
#include "mock_engine/driver.h"
#include "mock_engine/runtime.h"
#include "tests/engine/producer_rig.h"
#include "tests/engine/rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

json::Document doc(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p);
  return std::move(p->doc);
}

// A host that records each write() call as it was made (FRAME-03/15: one whole frame per write).
struct WriteLogHost : ScriptedHost {
  std::vector<std::string> calls;
  void write(ConnId c, std::string_view bytes) override {
    calls.emplace_back(bytes);
    ScriptedHost::write(c, bytes);
  }
};

// A busy conversation: handshake with tools and events, a tool call, deliveries, a bus emit and a
// ping, all on one connection. Returns the session id.
std::string busy(Rig& r) {
  auto& e = *r.engine;
  Caps c;
  c.subscribe_events = c.subscribe_bus = c.publish_bus = true;
  r.answerInit("alpha", c, "[" + tool("echo") + "]");
  auto s = e.createSession();
  for (int i = 0; i < 3; ++i) (void)e.produceEvent(s, static_cast<RecordClass>(i));
  auto call = e.callTool(s, "echo", doc(R"({"path":"a"})"));
  REQUIRE(call);
  auto ev = r.framesOf("alpha", "plugin/event");
  REQUIRE(!ev.empty());
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s +
                      R"(","context_id":")" + str(ev[0]["params"], "context_id") + R"(","name":"n","payload":{}}})");
  (void)e.ping("alpha");
  return s;
}

}  // namespace

TEST_CASE("FRAME-01 every engine frame is one JSON-RPC 2.0 object on one line of the plugin's stdin", "[engine][frame]") {
  Rig r;
  r.start();
  busy(r);
  auto& w = r.written("alpha");
  REQUIRE(w.size() >= 6);
  for (auto& f : w) {
    INFO(f);
    auto p = json::parse(f);
    REQUIRE(p);
    CHECK(p->doc.IsObject());
    CHECK(str(p->doc, "jsonrpc") == "2.0");
  }
  CHECK(r.host.procs[r.conn("alpha")].partial.empty());
}

TEST_CASE("FRAME-02 stderr carries no protocol: JSON on stderr changes nothing and ping still succeeds", "[engine][frame]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha");
  auto n = r.written("alpha").size();
  e.onStderr(r.conn("alpha"), R"({"jsonrpc":"2.0","id":9,"method":"plugin/unknown","params":{}})");
  e.onStderr(r.conn("alpha"), R"({"jsonrpc":"2.0","method":"plugin/emit","params":{}})");
  e.onStderr(r.conn("alpha"), "\x01 not even text");
  CHECK(r.written("alpha").size() == n);  // nothing answered, nothing rejected
  CHECK(r.status("alpha").state == PluginState::Connected);
  auto h = e.ping("alpha");
  auto ping = r.lastFrame("alpha");
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(ping["id"].GetInt64()) + R"(,"result":{}})");
  CHECK(e.pingStatus(h)->state == PingStatus::State::Ok);
}

TEST_CASE("FRAME-03 each frame is written whole with exactly one trailing LF", "[engine][frame]") {
  Rig r;
  WriteLogHost host;
  r.engine = std::make_unique<Engine>(r.cfg, host, r.clk);
  r.engine->start();
  Caps c;
  c.subscribe_events = c.publish_bus = true;
  r.engine->onBytes(r.engine->connection("alpha"),
                    R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" +
                        c.json() + R"(,"tools":[]}})" + std::string("\n"));
  auto s = r.engine->createSession();
  for (int i = 0; i < 5; ++i) (void)r.engine->produceEvent(s, RecordClass::Ordinary);
  (void)r.engine->ping("alpha");
  REQUIRE(host.calls.size() >= 7);
  for (auto& w : host.calls) {
    INFO(w);
    REQUIRE(!w.empty());
    CHECK(w.back() == '\n');
    CHECK(std::count(w.begin(), w.end(), '\n') == 1);
    CHECK((w.size() < 2 || w[w.size() - 2] != '\r'));
  }
}

TEST_CASE("FRAME-15 under concurrent tool calls, events and emits every write is one whole parseable frame", "[engine][frame]") {
  Rig r;
  WriteLogHost host;
  r.engine = std::make_unique<Engine>(r.cfg, host, r.clk);
  r.engine->start();
  auto conn = r.engine->connection("alpha");
  Caps c;
  c.subscribe_events = c.publish_bus = true;
  r.engine->onBytes(conn, R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" +
                              c.json() + R"(,"tools":[)" + tool("echo") + "]}}\n");
  auto s = r.engine->createSession();
  for (int i = 0; i < 20; ++i) {
    (void)r.engine->callTool(s, "echo", doc("{}"));
    (void)r.engine->produceEvent(s, static_cast<RecordClass>(i % 3));
    r.engine->onBytes(conn, R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s +
                                R"(","context_id":"bogus","name":"n","payload":{}}})" + std::string("\n"));
  }
  std::size_t frames = 0;
  for (auto& w : host.calls) {
    REQUIRE(!w.empty());
    CHECK(w.back() == '\n');
    CHECK(std::count(w.begin(), w.end(), '\n') == 1);
    auto p = json::parse(std::string_view(w).substr(0, w.size() - 1));
    CHECK((p && p->doc.IsObject()));
    ++frames;
  }
  CHECK(frames >= 61);  // initialize + 20 calls + 20 events + 20 emit results
}

TEST_CASE("FRAME-19 a repeated member name keeps the last value, as R4's generic JSON decoding does", "[engine][frame]") {
  Rig r;
  r.start();
  // The first `name` is wrong: an engine that reads the first copy fails the handshake (INIT-13).
  r.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"Wrong","name":"alpha","version":"1","capabilities":)" +
                      Caps{}.json() + R"(,"tools":[]}})");
  CHECK(r.status("alpha").state == PluginState::Connected);
  Rig q({"beta"});
  q.start();
  q.send("beta", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"beta","name":"Wrong","version":"1","capabilities":)" +
                     Caps{}.json() + R"(,"tools":[]}})");
  CHECK(q.status("beta").state == PluginState::Failed);
}

TEST_CASE("RPC-02 method+id is a request, method alone a notification, no method a response", "[engine][rpc]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto n = r.written("alpha").size();
  r.send("alpha", R"({"jsonrpc":"2.0","id":"q","method":"plugin/nope","params":{}})");  // request: answered
  REQUIRE(r.written("alpha").size() == n + 1);
  CHECK(r.lastFrame("alpha")["error"]["code"].GetInt() == -32601);
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/nope","params":{}})");  // notification: silent
  CHECK(r.written("alpha").size() == n + 1);
  auto id = e.callTool(e.createSession(), "echo", doc("{}"));
  auto call_id = r.lastFrame("alpha")["id"].GetInt64();
  // No method: a response, correlated by id.
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(call_id) +
                      R"(,"result":{"output":{"kind":"single","text":"ok"},"is_error":false}})");
  CHECK(e.toolCall(*id)->state == CallState::Completed);
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("RPC-10 responses may come in any order — correlation is by id only", "[engine][rpc]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto s = e.createSession();
  auto a = *e.callTool(s, "echo", doc(R"({"path":"a"})"));
  auto ida = r.lastFrame("alpha")["id"].GetInt64();
  auto b = *e.callTool(s, "echo", doc(R"({"path":"b"})"));
  auto idb = r.lastFrame("alpha")["id"].GetInt64();
  auto result = [](std::int64_t id, const char* text) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{"output":{"kind":"single","text":")" + text +
           R"("},"is_error":false}})";
  };
  r.send("alpha", result(idb, "for-b"));
  r.send("alpha", result(ida, "for-a"));
  REQUIRE(e.toolCall(a)->state == CallState::Completed);
  REQUIRE(e.toolCall(b)->state == CallState::Completed);
  CHECK(json::compact(*e.toolCall(a)->output).find("for-a") != std::string::npos);
  CHECK(json::compact(*e.toolCall(b)->output).find("for-b") != std::string::npos);
}

TEST_CASE("RPC-11 every method the engine sends carries params as an object", "[engine][rpc]") {
  Rig r;
  auto& e = r.start();
  busy(r);
  e.shutdown();
  std::set<std::string> methods;
  for (auto& f : r.written("alpha")) {
    auto p = json::parse(f);
    REQUIRE(p);
    auto m = json::stringMember(p->doc, "method");
    if (!m) continue;
    methods.insert(std::string(*m));
    INFO(f);
    const json::Value* params = json::member(p->doc, "params");
    REQUIRE(params);
    CHECK(params->IsObject());
  }
  for (auto m : {"plugin/initialize", "plugin/event", "plugin/tools/call", "plugin/emit_result", "plugin/ping", "plugin/shutdown"})
    CHECK(methods.count(m) == 1);
}

TEST_CASE("RPC-12 params and results are decoded strictly: a missing, mistyped or unknown member is rejected", "[engine][rpc]") {
  auto handshake = [](const std::string& result) {
    Rig r;
    r.start();
    r.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":)" + result + "}");
    return r.status("alpha").state;
  };
  const std::string caps = Caps{}.json();
  CHECK(handshake(R"({"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" + caps + R"(,"tools":[]})") ==
        PluginState::Connected);
  CHECK(handshake(R"({"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" + caps + R"(,"tools":[],"extra":1})") ==
        PluginState::Failed);
  CHECK(handshake(R"({"protocol_version":"0.0.6","name":"alpha","capabilities":)" + caps + R"(,"tools":[]})") == PluginState::Failed);
  CHECK(handshake(R"({"protocol_version":"0.0.6","name":"alpha","version":1,"capabilities":)" + caps + R"(,"tools":[]})") ==
        PluginState::Failed);
  // A plugin->engine notification with an unknown member in its params is malformed (EMIT-22).
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = c.publish_bus = true;
  r.answerInit("alpha", c);
  auto s = e.createSession();
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s +
                      R"(","context_id":"t","name":"n","payload":{},"colour":"red"}})");
  CHECK(r.status("alpha").state == PluginState::Failed);
}

TEST_CASE("RPC-16 notifications are never answered: emit gets only its emit_result, unknown notifications nothing", "[engine][rpc]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = c.publish_bus = true;
  r.answerInit("alpha", c);
  auto s = e.createSession();
  (void)e.produceEvent(s, RecordClass::Ordinary);
  auto token = str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id");
  auto n = r.written("alpha").size();
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s + R"(","context_id":")" + token +
                      R"(","name":"n","payload":{}}})");
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/whatever","params":{}})");
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
  REQUIRE(r.written("alpha").size() == n + 1);
  auto f = r.lastFrame("alpha");
  CHECK(str(f, "method") == "plugin/emit_result");
  CHECK(json::member(f, "id") == nullptr);
  CHECK(json::member(f, "result") == nullptr);
}

TEST_CASE("RPC-18 engine and plugin request ids are independent: equal numbers do not collide", "[engine][rpc]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto call = *e.callTool(e.createSession(), "echo", doc("{}"));
  auto engine_id = r.lastFrame("alpha")["id"].GetInt64();
  // The plugin's own request with the same number is a request, answered with that id.
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(engine_id) + R"(,"method":"plugin/nope","params":{}})");
  auto err = r.lastFrame("alpha");
  CHECK(err["id"].GetInt64() == engine_id);
  CHECK(err["error"]["code"].GetInt() == -32601);
  CHECK(e.toolCall(call)->state == CallState::Pending);  // the engine's request is still open
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(engine_id) +
                      R"(,"result":{"output":{"kind":"single","text":"x"},"is_error":false}})");
  CHECK(e.toolCall(call)->state == CallState::Completed);
}

TEST_CASE("INIT-04 the engine advertises ping, shutdown, tools, event_streaming, event_publishing and interception", "[engine][init]") {
  Rig r;
  r.start();
  auto f = r.lastFrame("alpha");
  const auto& caps = f["params"]["capabilities"];
  for (auto k : {"ping", "shutdown", "tools", "event_streaming", "event_publishing", "interception"}) {
    INFO(k);
    REQUIRE(caps.HasMember(k));
    CHECK(caps[k].IsTrue());
  }
}

TEST_CASE("INIT-05 producer_messaging is advertised only with the config opt-in AND the runtime handler", "[engine][init]") {
  auto advertised = [](bool handler, bool opt_in) {
    Rig r;
    r.cfg.producer_handler = handler;
    r.cfg.plugins[0].producer_messaging = opt_in;
    r.start();
    return r.lastFrame("alpha")["params"]["capabilities"]["producer_messaging"].GetBool();
  };
  CHECK(advertised(true, true));
  CHECK_FALSE(advertised(true, false));
  CHECK_FALSE(advertised(false, true));
  CHECK_FALSE(advertised(false, false));
}

TEST_CASE("INIT-06 the handler is installed before plugins start: the advertised flag holds for the connection", "[engine][init]") {
  ProdRig r;
  auto& e = r.boot();
  CHECK(r.framesOf("alpha", "plugin/initialize").front()["params"]["capabilities"]["producer_messaging"].IsTrue());
  CHECK(r.status("alpha").producer_enabled);
  // Traffic and time do not change it; there is never a second initialize.
  auto s = e.createSession();
  (void)r.registerProducer("alpha", s);
  r.advance(60s);
  CHECK(r.status("alpha").producer_enabled);
  CHECK(r.framesOf("alpha", "plugin/initialize").size() == 1);
}

TEST_CASE("INIT-15 capabilities are fixed: exactly one plugin/initialize per process", "[engine][init]") {
  Rig r;
  auto& e = r.start();
  busy(r);
  r.advance(30s);
  (void)e.produceEvent(e.createSession(), RecordClass::Ordinary);
  CHECK(r.framesOf("alpha", "plugin/initialize").size() == 1);
  // A second initialize result (an unsolicited response with id 1) does not re-negotiate.
  Caps more;
  more.publish_session_events = true;  // busy() declared it false
  r.answerInit("alpha", more);
  CHECK_FALSE(r.status("alpha").capabilities.publish_session_events);
}

TEST_CASE("INIT-24 a one-sided producer opt-in connects — producer requests are refused with -32040", "[engine][init]") {
  ProdRig r({"alpha"}, /*opt_in=*/false);
  auto& e = r.boot(/*plugin_caps=*/true);
  CHECK(r.status("alpha").state == PluginState::Connected);
  CHECK_FALSE(r.status("alpha").producer_enabled);
  auto resp = r.call("alpha", "plugin/producer/register", R"({"session_id":")" + e.createSession() + R"("})");
  CHECK(ProdRig::code(resp) == -32040);
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("INIT-25 resources:true still connects and the engine sends no resource method", "[engine][init]") {
  Rig r;
  auto& e = r.start();
  std::string caps = Caps{}.json();
  caps.replace(caps.find(R"("resources":false)"), 17, R"("resources":true)");
  r.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" + caps +
                      R"(,"tools":[]}})");
  REQUIRE(r.status("alpha").state == PluginState::Connected);
  (void)e.produceEvent(e.createSession(), RecordClass::Ordinary);
  e.shutdown();
  for (auto& f : r.written("alpha")) CHECK(f.find("plugin/resources") == std::string::npos);
}

TEST_CASE("INIT-28 the protocol version is independent of the engine and session versions", "[engine][init]") {
  Rig r;
  r.cfg.engine_version = "19.0.6";
  r.start();
  auto f = r.lastFrame("alpha");
  CHECK(str(f["params"], "protocol_version") == "0.0.6");
  CHECK(str(f["params"], "engine_version") == "19.0.6");
  auto cfg = parseConfig(R"({"protocol_version":"0.0.6","engine_version":"0.0.4","plugins":{}})", "t.json");
  REQUIRE(cfg);
  CHECK(cfg->protocol_version == "0.0.6");
  CHECK(cfg->engine_version == "0.0.4");
}

TEST_CASE("LIFE-01 each plugin is its own process: the engine asks the host to spawn its configured command", "[engine][life]") {
  Rig r({"alpha", "beta"});
  r.cfg.plugins[1].args = {"--flag", "x"};
  r.start();
  REQUIRE(r.host.procs.size() == 2);
  CHECK(r.host.procs[r.conn("alpha")].cfg.command == "/bin/alpha");
  CHECK(r.host.procs[r.conn("beta")].cfg.command == "/bin/beta");
  CHECK(r.host.procs[r.conn("beta")].cfg.args == std::vector<std::string>{"--flag", "x"});
  CHECK(r.conn("alpha") != r.conn("beta"));
}

TEST_CASE("LIFE-07 configuration: name 1-128 control-free characters, command, cwd and timeouts checked — defaults", "[engine][life]") {
  auto parse = [](const std::string& plugins) { return parseConfig(R"({"plugins":)" + plugins + "}", "t.json"); };
  auto ok = parse(R"({"p":{"command":"/bin/p"}})");
  REQUIRE(ok);
  const auto& p = ok->plugins.at(0);
  CHECK(p.interception_timeout_ms == 2000);
  CHECK(p.startup_timeout_ms == 10000);
  CHECK(p.shutdown_grace_ms == 3000);
  CHECK(p.tool_timeout_ms == 30000);
  CHECK(parse("{\"" + std::string(128, 'n') + R"(":{"command":"x"}})"));
  auto check_bad = [&](const std::string& plugins, const std::string& key) {
    auto c = parse(plugins);
    INFO(plugins);
    REQUIRE_FALSE(c);
    CHECK(c.error().find(key) != std::string::npos);
  };
  check_bad("{\"" + std::string(129, 'n') + R"(":{"command":"x"}})", "plugins");
  check_bad(R"({"":{"command":"x"}})", "plugins");
  check_bad(R"({"a\tb":{"command":"x"}})", "plugins");
  check_bad(R"({"p":{"command":""}})", "command");
  check_bad(R"({"p":{}})", "command");
  check_bad(R"({"p":{"command":"x","cwd":""}})", "cwd");
  for (auto k : {"interception_timeout_ms", "startup_timeout_ms", "shutdown_grace_ms", "tool_timeout_ms"})
    check_bad(R"({"p":{"command":"x",")" + std::string(k) + R"(":0}})", k);
}

TEST_CASE("LIFE-08 plugins.<name>.producer_messaging defaults to false and is read from the entry", "[engine][life]") {
  auto a = parseConfig(R"({"plugins":{"p":{"command":"x"}}})", "t.json");
  REQUIRE(a);
  CHECK_FALSE(a->plugins.at(0).producer_messaging);
  auto b = parseConfig(R"({"plugins":{"p":{"command":"x","producer_messaging":true}}})", "t.json");
  REQUIRE(b);
  CHECK(b->plugins.at(0).producer_messaging);
  CHECK_FALSE(parseConfig(R"({"plugins":{"p":{"command":"x","producer_messaging":"yes"}}})", "t.json"));
}

TEST_CASE("LIFE-10 a status record holds plugin, state, reason, tools and dropped_events", "[engine][life]") {
  Rig r;
  r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto j = doc(statusJson(r.status("alpha")));
  CHECK(str(j, "plugin") == "alpha");
  CHECK(str(j, "state") == "connected");
  CHECK(j["reason"].IsNull());
  REQUIRE(j["tools"].IsArray());
  CHECK(j["tools"][0] == "echo");
  CHECK(j["dropped_events"].IsUint64());
  Rig f;
  f.host.fail_spawn = {"alpha"};
  f.start();
  auto k = doc(statusJson(f.status("alpha")));
  CHECK(str(k, "state") == "failed");
  CHECK(str(k, "reason").find("failed to start") != std::string::npos);
}

TEST_CASE("LIFE-12 user_before_input waits until every enabled plugin is connected or failed", "[engine][life][hooks]") {
  Rig r({"fast", "slow"});
  auto& e = r.start();
  Caps c;
  c.intercept = R"(["user_before_input"])";
  r.answerInit("fast", c);
  Runtime rt(e);
  auto s = e.createSession();
  auto script = parseRunScript(doc(R"({"input":"hello"})"));
  REQUIRE(script);
  REQUIRE(rt.startRun(s, std::move(*script), std::nullopt));
  r.advance(0ms);
  // `slow` is still in its handshake: the first input's hook is not sent yet.
  CHECK(r.framesOf("fast", "plugin/intercept/user_before_input").empty());
  CHECK(r.framesOf("slow", "plugin/intercept/user_before_input").empty());
  r.answerInit("slow", c);
  r.advance(0ms);
  // Now the chain runs, in order, and reaches the late plugin too.
  CHECK(r.framesOf("fast", "plugin/intercept/user_before_input").size() == 1);
  SECTION("a failed handshake also settles the wait") {
    Rig q({"fast", "slow"});
    auto& e2 = q.start();
    q.answerInit("fast", c);
    Runtime rt2(e2);
    auto s2 = e2.createSession();
    auto sc = parseRunScript(doc(R"({"input":"hello"})"));
    REQUIRE(rt2.startRun(s2, std::move(*sc), std::nullopt));
    q.advance(0ms);
    CHECK(q.framesOf("fast", "plugin/intercept/user_before_input").empty());
    q.advance(10s);  // slow: handshake timeout (INIT-18)
    CHECK(q.status("slow").state == PluginState::Failed);
    CHECK(q.framesOf("fast", "plugin/intercept/user_before_input").size() == 1);
  }
}

TEST_CASE("LIFE-13 an engine-forced failure (MCP preemption) ends the connection and kills the process", "[engine][life]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("shared_name") + "]");
  auto conn = r.conn("alpha");
  e.claimMcpTool("shared_name");
  auto st = r.status("alpha");
  CHECK(st.state == PluginState::Failed);
  CHECK(st.reason->find("preempted") != std::string::npos);
  CHECK(r.host.procs[conn].killed);
  CHECK(st.tools.empty());
}
