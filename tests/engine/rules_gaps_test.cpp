// Rule-named tests for engine-bound rules that had none (scripts/rule_tests.py): TOOL-13, TOOL-24,
// TOOL-25 (skill allowed-tools), EVT-18, BUS-04 (daemon clients), BUS-09 (bus unchanged from
// 0.0.4), HOOK-15 (hooks never wait for queue space), RECOV-13 (no completion by silence).
// In process on the virtual clock; the plugin side is played with raw frames. Each test shows the
// conforming behaviour and, where a fault is conceivable, the contrast that makes it fail.
#include <algorithm>

#include "tests/engine/hook_rig.h"
#include "tests/engine/producer_rig.h"

namespace {

Caps busCaps(bool subscribe_events, bool publish) {
  Caps c;
  c.subscribe_events = subscribe_events;
  c.subscribe_bus = true;
  c.publish_bus = publish;
  return c;
}

std::string emitFrame(const std::string& session, const std::string& token, const std::string& name,
                      const std::string& payload) {
  return R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + session +
         R"(","context_id":")" + token + R"(","name":)" + quoteJson(name) + R"(,"payload":)" + payload + "}}";
}

std::string lastToken(Rig& r, const std::string& plugin) {
  auto evs = r.framesOf(plugin, "plugin/event");
  REQUIRE(!evs.empty());
  return str(evs.back()["params"], "context_id");
}

}  // namespace

TEST_CASE("TOOL-13 display is UI-only: it never reaches the model's next request, success or error", "[engine][tools]") {
  for (bool is_error : {true, false}) {
    HookRig r;
    r.up({}, "[" + echoTool() + "]");
    auto s = r.engine->createSession();
    auto run = r.run(s, R"({"input":"go","turns":[{"tool_calls":[{"tool":"echo","arguments":{"path":"a"}}]},{"text":"done"}]})");
    auto calls = r.framesOf("alpha", "plugin/tools/call");
    REQUIRE(calls.size() == 1);
    r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(calls[0]["id"].GetInt64()) +
                        R"(,"result":{"output":{"kind":"single","text":"MODEL-TEXT"},"display":"UI-ONLY-7f3","is_error":)" +
                        (is_error ? "true" : "false") + "}}");
    const RunRecord& rec = r.record(run);
    REQUIRE(rec.state == RunRecord::State::Completed);
    REQUIRE(rec.requests.size() == 2);
    std::string next = json::compact(*rec.requests[1]);
    CHECK(next.find("MODEL-TEXT") != std::string::npos);  // the tool result did reach the model
    CHECK(next.find("UI-ONLY-7f3") == std::string::npos);
    const ToolCallStatus* c = r.engine->toolCall(rec.tool_calls.at(0));
    CHECK(c->display == std::optional<std::string>("UI-ONLY-7f3"));  // kept for the UI
    CHECK(c->reason.find("UI-ONLY-7f3") == std::string::npos);
    CHECK(c->is_error == is_error);
  }
}

TEST_CASE("TOOL-24 the approval display argument is the primary resource when present, else the tool name", "[engine][tools]") {
  Rig r;
  r.start();
  std::string plain = R"({"name":"plain","description":"d","parameters":{"type":"object"},"permission_name":"plain","primary_resource_param":null})";
  r.answerInit("alpha", {}, "[" + tool("echo") + "," + plain + "]");
  INFO(r.status("alpha").reason.value_or(""));
  REQUIRE(r.status("alpha").state == PluginState::Connected);
  auto s = r.engine->createSession();
  auto with = *r.engine->callTool(s, "echo", json::parse(R"({"path":"docs/readme.md"})")->doc);
  auto without = *r.engine->callTool(s, "echo", json::parse("{}")->doc);
  auto undeclared = *r.engine->callTool(s, "plain", json::parse(R"({"path":"ignored"})")->doc);
  INFO(r.engine->toolCall(with)->reason);
  CHECK(r.engine->toolCall(with)->approval_display == "docs/readme.md");
  CHECK(r.engine->toolCall(without)->approval_display == "echo");
  CHECK(r.engine->toolCall(undeclared)->approval_display == "plain");  // no primary_resource_param
}

TEST_CASE("TOOL-25 skill allowed-tools Plugin / Plugin(name:*) govern plugin tools — a disallowed pinned tool is not enabled, not unknown", "[engine][tools]") {
  Rig r({"alpha", "beta"});
  r.start();
  r.answerInit("alpha", {}, "[" + tool("aa_read") + "]");
  r.answerInit("beta", {}, "[" + tool("bb_write") + "]");
  auto s = r.engine->createSession();
  auto visible = [&] { return r.engine->visibleTools(s); };
  auto has = [&](const std::string& t) {
    auto v = visible();
    return std::find(v.begin(), v.end(), t) != v.end();
  };
  auto args = json::parse("{}");
  REQUIRE(args);
  SECTION("no skill: every permitted plugin tool") {
    CHECK((has("aa_read") && has("bb_write")));
  }
  SECTION("Plugin(alpha:*): alpha's tools only; a pinned bb_write is not enabled") {
    REQUIRE(r.engine->setSessionSkill(s, std::vector<std::string>{"read", "Plugin(alpha:*)"}));
    CHECK(has("aa_read"));
    CHECK_FALSE(has("bb_write"));
    auto id = *r.engine->callTool(s, "bb_write", args->doc);
    const ToolCallStatus* c = r.engine->toolCall(id);
    CHECK(c->state == CallState::Denied);
    CHECK(c->reason.find("not enabled") != std::string::npos);
    CHECK(c->reason.find("unknown") == std::string::npos);
    CHECK(r.framesOf("beta", "plugin/tools/call").empty());
    // An allowed tool runs; a name nobody claims stays unknown.
    auto ok = *r.engine->callTool(s, "aa_read", args->doc);
    CHECK(r.engine->toolCall(ok)->state == CallState::Pending);
    CHECK(r.framesOf("alpha", "plugin/tools/call").size() == 1);
    auto nobody = *r.engine->callTool(s, "zz_none", args->doc);
    CHECK(r.engine->toolCall(nobody)->reason.find("unknown tool") != std::string::npos);
  }
  SECTION("Plugin: every plugin tool") {
    REQUIRE(r.engine->setSessionSkill(s, std::vector<std::string>{"Plugin"}));
    CHECK((has("aa_read") && has("bb_write")));
  }
  SECTION("no plugin entry: no plugin tool; other sessions are unaffected") {
    REQUIRE(r.engine->setSessionSkill(s, std::vector<std::string>{"read", "Mcp", "Plugin(gamma:*)"}));
    CHECK_FALSE(has("aa_read"));
    CHECK_FALSE(has("bb_write"));
    auto other = r.engine->createSession();
    CHECK(r.engine->visibleTools(other).size() == visible().size() + 2);
    REQUIRE(r.engine->setSessionSkill(s, std::nullopt));  // the skill ends
    CHECK((has("aa_read") && has("bb_write")));
  }
  CHECK_FALSE(r.engine->setSessionSkill("no-such-session", std::nullopt));
}

TEST_CASE("EVT-18 records appended on behalf of a plugin (its plugin_diagnostic, its own records) are not delivered to it", "[engine][evt]") {
  Rig r({"alpha", "observer"});
  r.start();
  Caps c;
  c.subscribe_events = true;
  r.answerInit("alpha", c);
  r.answerInit("observer", c);
  auto s = r.engine->createSession();
  r.engine->recordPluginDiagnostic(s, "alpha", "hook_blocked", "about alpha");
  r.engine->flushDiagnostics();
  REQUIRE(r.engine->appendEvent(s, json::parse(R"({"type":"plugin_event_added","name":"x"})")->doc, "alpha"));
  REQUIRE(r.engine->appendEvent(s, json::parse(R"({"type":"plugin_event_added","name":"y"})")->doc, "observer"));
  auto types = [&](const std::string& plugin) {
    std::vector<std::string> out;
    for (auto& f : r.framesOf(plugin, "plugin/event")) out.push_back(str(f["params"], "event", "type") + ":" + str(f["params"], "event", "name"));
    return out;
  };
  auto alpha = types("alpha"), observer = types("observer");
  CHECK(std::count(observer.begin(), observer.end(), "plugin_diagnostic:<none>") == 1);
  CHECK(std::count(observer.begin(), observer.end(), "plugin_event_added:x") == 1);
  CHECK(std::count(alpha.begin(), alpha.end(), "plugin_diagnostic:<none>") == 0);
  CHECK(std::count(alpha.begin(), alpha.end(), "plugin_event_added:x") == 0);
  // The contrast: the observer's own record goes to alpha, not back to the observer.
  CHECK(std::count(alpha.begin(), alpha.end(), "plugin_event_added:y") == 1);
  CHECK(std::count(observer.begin(), observer.end(), "plugin_event_added:y") == 0);
}

TEST_CASE("BUS-04 a bus publication is an events.plugin notification to daemon clients of that session only", "[engine][bus]") {
  Rig r({"pub", "sub"});
  r.start();
  r.answerInit("pub", busCaps(true, true));
  r.answerInit("sub", busCaps(false, false));
  auto s1 = r.engine->createSession();
  auto s2 = r.engine->createSession();
  auto c1 = *r.engine->subscribeDaemon(s1);
  auto c2 = *r.engine->subscribeDaemon(s2);
  auto c3 = *r.engine->subscribeDaemon(s1);
  CHECK_FALSE(r.engine->subscribeDaemon("no-such-session"));
  (void)r.engine->produceEvent(s1, RecordClass::Ordinary);
  r.send("pub", emitFrame(s1, lastToken(r, "pub"), "note", R"({"k":[1,2]})"));
  REQUIRE(str(r.lastFrame("pub")["params"], "bus") == "published");
  CHECK(r.framesOf("sub", "plugin/bus_event").size() == 1);  // plugins get it as before
  for (auto c : {c1, c3}) {
    auto inbox = r.engine->readDaemon(c);
    REQUIRE(inbox);
    REQUIRE(inbox->notifications.size() == 1);
    auto n = json::parse(inbox->notifications[0]);
    REQUIRE(n);
    CHECK(str(n->doc, "method") == "events.plugin");
    CHECK(json::member(n->doc, "id") == nullptr);  // a notification
    CHECK(str(n->doc["params"], "session_id") == s1);
    CHECK(str(n->doc["params"], "plugin") == "pub");
    CHECK(str(n->doc["params"], "name") == "note");
    CHECK(json::compact(n->doc["params"]["payload"]) == R"({"k":[1,2]})");
    CHECK(r.engine->readDaemon(c)->notifications.empty());  // read once
  }
  CHECK(r.engine->readDaemon(c2)->notifications.empty());  // another session's client
  CHECK(r.engine->unsubscribeDaemon(c1));
  CHECK_FALSE(r.engine->readDaemon(c1));
  // Runtime events are not bus publications: no notification for them.
  (void)r.engine->produceEvent(s1, RecordClass::Ordinary);
  CHECK(r.engine->readDaemon(c3)->notifications.empty());
}

TEST_CASE("BUS-09 pure bus publication behaves exactly as in 0.0.4", "[engine][bus]") {
  // The same publication in a 0.0.4 and a 0.0.6 engine: the subscriber's bus_event (grant aside)
  // and the publisher's bus status are identical, and neither profile writes the session log.
  auto scenario = [](const std::string& profile) {
    Rig r({"pub", "sub"});
    r.cfg.protocol_version = profile;
    r.start();
    auto init = [&](const std::string& name, bool pub) {
      std::string caps = std::string(R"({"tools":false,"resources":false,"subscribe_events":)") + (pub ? "true" : "false") +
                         R"(,"subscribe_bus":true,"publish_bus":)" + (pub ? "true" : "false") +
                         R"(,"publish_session_events":false,)" + (profile == "0.0.6" ? R"("producer_messaging":false,)" : "") +
                         R"("intercept":[]})";
      r.send(name, R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":")" + profile + R"(","name":")" + name +
                       R"(","version":"1","capabilities":)" + caps + R"(,"tools":[]}})");
      REQUIRE(r.status(name).state == PluginState::Connected);
    };
    init("pub", true);
    init("sub", false);
    auto s = r.engine->createSession();
    (void)r.engine->produceEvent(s, RecordClass::Ordinary);
    auto log_size = r.engine->session(s)->log.size();
    r.send("pub", emitFrame(s, lastToken(r, "pub"), "ping", R"({"x":"y"})"));
    auto bus = r.framesOf("sub", "plugin/bus_event");
    REQUIRE(bus.size() == 1);
    json::Document& d = bus[0];
    d["params"]["context_id"].SetString("<grant>");
    d["params"]["session_id"].SetString("<session>");
    CHECK(r.engine->session(s)->log.size() == log_size);
    // The bus half of the emit_result (its `durable` half differs by design: DELTA-0.0.4 §3).
    return json::compact(d) + "\n" + str(r.lastFrame("pub")["params"], "bus");
  };
  std::string v004 = scenario("0.0.4"), v006 = scenario("0.0.6");
  CHECK(v004 == v006);
  CHECK(v006.find("\npublished") != std::string::npos);
}

TEST_CASE("HOOK-15 a hook never waits for queue space: a full 1024 queue fails open at once", "[engine][hooks]") {
  for (int queued : {1024, 1023}) {
    HookRig r;
    Caps base;
    base.subscribe_events = true;
    r.up({{"alpha", kUserInput}}, "[]", base);
    auto s = r.engine->createSession();
    r.host.procs[r.conn("alpha")].writable = false;
    for (int i = 0; i < queued; ++i) (void)r.engine->produceEvent(s, RecordClass::Terminal);
    REQUIRE(r.status("alpha").queued == static_cast<std::size_t>(queued));
    auto run = r.run(s, R"({"input":"hi"})");
    if (queued == 1024) {
      // Not asked, not waited for: the run went on with no time passing.
      CHECK(r.hookFrames("alpha", "user_before_input") == 0);
      CHECK(r.record(run).state == RunRecord::State::Completed);
      CHECK(r.status("alpha").diagnostics["interception_timeout"] == 1);
    } else {
      // One slot left: the hook is asked and the run waits for its answer.
      CHECK(r.record(run).state == RunRecord::State::Running);
      CHECK(r.status("alpha").diagnostics["interception_timeout"] == 0);
    }
  }
}

TEST_CASE("RECOV-13 silence is never completion: without recovery/complete the status stays starting, with or without pending work", "[engine][recovery]") {
  ProdRig r({"idle", "busy"});
  r.boot();
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("busy", s);
  REQUIRE(ProdRig::code(r.sendMsg("busy", s, p, "k1")) == 0);
  r.advance(std::chrono::hours(1));
  for (const char* name : {"idle", "busy"}) {
    CHECK(r.svc->recovery(name)->state == RecoveryState::Starting);
    CHECK(r.status(name).diagnostics["recovery_failed"] == 0);
  }
  CHECK(r.svc->messages(s)[0]->state == MessageState::Waiting);
  CHECK(r.svc->notices().empty());
  // Only an explicit completion changes it.
  CHECK(ProdRig::code(r.call("idle", "plugin/recovery/complete", R"({"outcome":{"status":"ready"}})")) == 0);
  CHECK(r.svc->recovery("idle")->state == RecoveryState::Ready);
  CHECK(r.svc->recovery("busy")->state == RecoveryState::Starting);
}

TEST_CASE("BUS-04 a daemon client that never reads keeps at most kMaxDaemonInbox notifications and counts the rest", "[engine][bus]") {
  Rig r({"pub"});
  r.start();
  r.answerInit("pub", busCaps(true, true));
  auto s = r.engine->createSession();
  auto c = *r.engine->subscribeDaemon(s);
  const std::size_t total = kMaxDaemonInbox + 5;
  for (std::size_t i = 0; i < total; ++i) {
    if (i % 40 == 0) r.advance(std::chrono::seconds(1));  // QUOTA-05: 40 emits per second
    (void)r.engine->produceEvent(s, RecordClass::Ordinary);
    // The token of the delivery just written (parse only the last frame: the loop is long).
    auto ev = r.lastFrame("pub");
    r.send("pub", emitFrame(s, str(ev["params"], "context_id"), "n" + std::to_string(i), "{}"));
    r.written("pub").clear();
  }
  auto inbox = r.engine->readDaemon(c);
  REQUIRE(inbox);
  CHECK(inbox->notifications.size() == kMaxDaemonInbox);
  CHECK(inbox->dropped == 5);
  // The oldest went first: the newest publication is the last notification.
  CHECK(inbox->notifications.back().find("\"n" + std::to_string(total - 1) + "\"") != std::string::npos);
  CHECK(inbox->notifications.front().find("\"n5\"") != std::string::npos);
}
