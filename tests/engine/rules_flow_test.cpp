// Reference engine, in process on the virtual clock: the remaining engine-bound TOOL, EVT, BUS,
// EMIT and QUOTA rules of issue 4, one test per rule ID (tools_events_test.cpp holds the others).
// The plugin side is played with raw frames (tests/engine/rig.h).
#include <set>

#include "mock_engine/quota.h"
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

std::string emitFrame(const std::string& session, const std::string& token, const std::string& name = "n",
                      const std::string& payload = "{}") {
  return R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + session + R"(","context_id":")" + token +
         R"(","name":)" + quoteJson(name) + R"(,"payload":)" + payload + "}}";
}

std::string okResult(std::int64_t id, const std::string& text = "ok") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{"output":{"kind":"single","text":")" + text +
         R"("},"is_error":false}})";
}

Caps subscriber(bool publish = true) {
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = publish;
  return c;
}

std::string lastToken(Rig& r, const std::string& plugin) {
  return str(r.framesOf(plugin, "plugin/event").back()["params"], "context_id");
}

}  // namespace

TEST_CASE("TOOL-02 tool and permission names are used verbatim, never prefixed or rewritten", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  std::string decl = R"({"name":"issue_read","description":"d","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"permission_name":"issue_reader_v2","primary_resource_param":"path"})";
  r.answerInit("alpha", {}, "[" + decl + "]");
  auto s = e.createSession();
  auto visible = e.visibleTools(s);
  CHECK(std::find(visible.begin(), visible.end(), "issue_read") != visible.end());
  for (auto& v : visible) CHECK(v.find("alpha") == std::string::npos);  // no plugin prefix
  CHECK(r.status("alpha").tools == std::vector<std::string>{"issue_read"});
  auto id = e.callTool(s, "issue_read", doc(R"({"path":"x"})"));
  REQUIRE(id);
  CHECK(str(r.lastFrame("alpha")["params"], "tool") == "issue_read");
  CHECK(e.toolCall(*id)->permission_resource == "issue_reader_v2 x");
}

TEST_CASE("TOOL-08 the engine only calls tools the plugin declared and still owns", "[engine][tools]") {
  Rig r({"alpha", "beta"});
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("shared") + "," + tool("mine") + "]");
  auto s = e.createSession();
  auto before = r.written("alpha").size();
  auto undeclared = e.callTool(s, "not_declared", doc("{}"));
  CHECK((!undeclared || e.toolCall(*undeclared)->state == CallState::Failed));
  CHECK(r.written("alpha").size() == before);
  // beta registers last and wins `shared` (TOOL-28): alpha no longer owns it and is never asked.
  r.answerInit("beta", {}, "[" + tool("shared") + "]");
  auto a = e.callTool(s, "shared", doc("{}"));
  REQUIRE(a);
  CHECK(e.toolCall(*a)->plugin == "beta");
  CHECK(r.written("alpha").size() == before);
  CHECK(str(r.lastFrame("beta")["params"], "tool") == "shared");
}

TEST_CASE("TOOL-15 every failure cause ends the call failed or cancelled — accepted output is kept and flagged", "[engine][tools]") {
  Rig r;
  r.cfg.plugins[0].tool_timeout_ms = 1000;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto s = e.createSession();
  auto start = [&] {
    auto id = *e.callTool(s, "echo", doc("{}"));
    return std::make_pair(id, r.lastFrame("alpha")["id"].GetInt64());
  };
  auto [err, err_id] = start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(err_id) + R"(,"error":{"code":-32000,"message":"nope"}})");
  CHECK(e.toolCall(err)->state == CallState::Failed);
  auto [bad, bad_id] = start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(bad_id) + R"(,"result":{"output":"not an object","is_error":false}})");
  CHECK(e.toolCall(bad)->state == CallState::Failed);
  auto [flagged, flagged_id] = start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(flagged_id) + R"(,"result":{"output":{"kind":"single","text":"partial"},"is_error":true}})");
  CHECK(e.toolCall(flagged)->state == CallState::Failed);
  CHECK(e.toolCall(flagged)->output);
  CHECK(e.toolCall(flagged)->incomplete);
  auto [slow, slow_id] = start();
  (void)slow_id;
  r.advance(1000ms);
  CHECK(e.toolCall(slow)->state == CallState::Failed);
  auto [cancel, cancel_id] = start();
  (void)cancel_id;
  CHECK(e.cancelToolCall(cancel));
  CHECK(e.toolCall(cancel)->state == CallState::Cancelled);
  auto [gone, gone_id] = start();
  (void)gone_id;
  e.onStdoutEof(r.conn("alpha"));
  CHECK(e.toolCall(gone)->state == CallState::Failed);
  CHECK(r.status("alpha").state == PluginState::Failed);  // one cause per call; none left pending
}

TEST_CASE("TOOL-30 several tool calls may be outstanding on one connection", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto s = e.createSession();
  std::vector<std::string> calls;
  for (int i = 0; i < 3; ++i) calls.push_back(*e.callTool(s, "echo", doc("{}")));
  auto frames = r.framesOf("alpha", "plugin/tools/call");
  REQUIRE(frames.size() == 3);  // all three written before any answer
  std::set<std::int64_t> ids;
  for (auto& f : frames) ids.insert(f["id"].GetInt64());
  CHECK(ids.size() == 3);
  for (auto id : ids) r.send("alpha", okResult(id));
  for (auto& c : calls) CHECK(e.toolCall(c)->state == CallState::Completed);
}

TEST_CASE("TOOL-32 the protocol has no member for plugin-supplied capture, previews or read hints", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto s = e.createSession();
  for (auto extra : {R"("preview":"p")", R"("capture":{})", R"("read_hint":"x")", R"("manifest":[])"}) {
    INFO(extra);
    auto id = *e.callTool(s, "echo", doc("{}"));
    auto rid = r.lastFrame("alpha")["id"].GetInt64();
    r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(rid) +
                        R"(,"result":{"output":{"kind":"single","text":"x"},"is_error":false,)" + extra + "}}");
    CHECK(e.toolCall(id)->state == CallState::Failed);
  }
}

TEST_CASE("EVT-03 delivery starts after the handshake — earlier events are never replayed", "[engine][evt]") {
  Rig r;
  auto& e = r.start();
  auto s = e.createSession();
  for (int i = 0; i < 3; ++i) (void)e.produceEvent(s, RecordClass::Ordinary);
  r.answerInit("alpha", subscriber());
  CHECK(r.framesOf("alpha", "plugin/event").empty());
  auto seq = *e.produceEvent(s, RecordClass::Ordinary);
  auto evs = r.framesOf("alpha", "plugin/event");
  REQUIRE(evs.size() == 1);
  CHECK(evs[0]["params"]["seq"].GetUint64() == seq);
}

TEST_CASE("EVT-07 durable tool_call_progress events with output_chunk are delivered", "[engine][evt]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  (void)e.produceEvent(s, RecordClass::Chunk);
  auto evs = r.framesOf("alpha", "plugin/event");
  REQUIRE(evs.size() == 1);
  const auto& ev = evs[0]["params"]["event"];
  CHECK(str(ev, "type") == "tool_call_progress");
  CHECK(json::member(ev, "output_chunk") != nullptr);
}

TEST_CASE("EVT-09 no event-type filter and no replay: every durable type is delivered, filter/replay methods do not exist", "[engine][evt]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  for (auto t : {R"({"type":"run_started"})", R"({"type":"custom_thing","x":1})", R"({"type":"message_end"})"})
    REQUIRE(e.appendEvent(s, doc(t)));
  CHECK(r.framesOf("alpha", "plugin/event").size() == 3);
  for (auto m : {"plugin/events/replay", "plugin/events/subscribe", "plugin/event/filter"}) {
    r.send("alpha", R"({"jsonrpc":"2.0","id":"x","method":")" + std::string(m) + R"(","params":{"types":["run_started"]}})");
    CHECK(r.lastFrame("alpha")["error"]["code"].GetInt() == -32601);
  }
  // A filter member in the capabilities is not part of the closed shape.
  Rig q;
  q.start();
  std::string caps = subscriber().json();
  caps.insert(caps.size() - 1, R"(,"event_types":["run_started"])");
  q.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"alpha","version":"1","capabilities":)" + caps +
                      R"(,"tools":[]}})");
  CHECK(q.status("alpha").state == PluginState::Failed);
}

TEST_CASE("EVT-17 a full or slow plugin never delays persistence or the other plugins", "[engine][evt]") {
  Rig r({"slow", "fast"});
  auto& e = r.start();
  r.answerInit("slow", subscriber());
  r.answerInit("fast", subscriber());
  r.host.procs[r.conn("slow")].writable = false;
  auto s = e.createSession();
  for (int i = 0; i < 3000; ++i) REQUIRE(e.produceEvent(s, RecordClass::Ordinary));
  CHECK(e.session(s)->log.size() == 3000);                    // every append persisted at once
  CHECK(r.framesOf("fast", "plugin/event").size() == 3000);   // the other plugin got every one
  CHECK(r.status("slow").queued == 1024);
  CHECK(r.status("slow").dropped_events == 3000 - 1024);
}

TEST_CASE("EVT-20 deliveries, including chunk floods, do not consume publication quotas", "[engine][evt][quota]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  for (int i = 0; i < 2000; ++i) (void)e.produceEvent(s, RecordClass::Chunk);
  auto evs = r.framesOf("alpha", "plugin/event");
  REQUIRE(evs.size() == 2000);
  // The newest 40 grants (at most 1,024 are active per R4, grants.h): 2,000 chunk deliveries cost
  // the plugin no quota.
  for (std::size_t i = evs.size() - 40; i < evs.size(); ++i) r.send("alpha", emitFrame(s, str(evs[i]["params"], "context_id")));
  auto results = r.framesOf("alpha", "plugin/emit_result");
  REQUIRE(results.size() == 40);
  for (auto& res : results) CHECK(str(res["params"], "bus") == "published");
}

TEST_CASE("EVT-21 each plugin/event carries its own fresh grant, valid for 5 s from its write", "[engine][evt][emit]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  for (int i = 0; i < 5; ++i) (void)e.produceEvent(s, RecordClass::Ordinary);
  std::set<std::string> tokens;
  for (auto& ev : r.framesOf("alpha", "plugin/event")) tokens.insert(str(ev["params"], "context_id"));
  CHECK(tokens.size() == 5);
  r.advance(4999ms);
  r.send("alpha", emitFrame(s, *tokens.begin()));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
  r.advance(1ms);
  r.send("alpha", emitFrame(s, *std::next(tokens.begin())));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "rejected");
}

TEST_CASE("EVT-22 the delivery queue is cleared when the connection ends — nothing is redelivered", "[engine][evt]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto conn = r.conn("alpha");
  r.host.procs[conn].writable = false;
  auto s = e.createSession();
  for (int i = 0; i < 10; ++i) (void)e.produceEvent(s, RecordClass::Ordinary);
  CHECK(r.status("alpha").queued == 10);
  auto written = r.written("alpha").size();
  e.onStdoutEof(conn);
  e.onExited(conn, "exit 0");
  CHECK(r.status("alpha").queued == 0);
  r.host.procs[conn].writable = true;
  e.onWritable(conn);
  CHECK(r.host.procs[conn].written.size() == written);
}

TEST_CASE("BUS-03 bus events are non-durable: never in the session history", "[engine][bus]") {
  Rig r({"pub", "sub"});
  auto& e = r.start();
  Caps pub = subscriber();
  r.answerInit("pub", pub);
  Caps sub;
  sub.subscribe_bus = true;
  r.answerInit("sub", sub);
  auto s = e.createSession();
  (void)e.produceEvent(s, RecordClass::Ordinary);
  auto size = e.session(s)->log.size();
  r.send("pub", emitFrame(s, lastToken(r, "pub"), "note", R"({"a":1})"));
  CHECK(str(r.lastFrame("pub")["params"], "bus") == "published");
  CHECK(r.framesOf("sub", "plugin/bus_event").size() == 1);
  CHECK(e.session(s)->log.size() == size);
  for (auto& rec : e.session(s)->log) CHECK(rec.type != "plugin_event_added");
}

TEST_CASE("BUS-08 bus deliveries use the per-plugin 1024 queue as ordinary records", "[engine][bus][evt]") {
  Rig r({"pub", "sub"});
  auto& e = r.start();
  r.answerInit("pub", subscriber());
  Caps sub;
  sub.subscribe_bus = true;
  sub.subscribe_events = true;
  r.answerInit("sub", sub);
  auto s = e.createSession();
  r.host.procs[r.conn("sub")].writable = false;
  for (int i = 0; i < 1024; ++i) (void)e.produceEvent(s, RecordClass::Chunk);
  (void)e.produceEvent(s, RecordClass::Ordinary);  // the publisher's token (evicts one chunk)
  auto token = lastToken(r, "pub");
  CHECK(r.status("sub").queued == 1024);
  auto before = r.status("sub").dropped_by_class;
  r.send("pub", emitFrame(s, token));
  REQUIRE(str(r.lastFrame("pub")["params"], "bus") == "published");
  // As an ordinary record the bus delivery evicts the oldest chunk and is kept.
  CHECK(r.status("sub").dropped_by_class[0] == before[0] + 1);
  CHECK(r.status("sub").dropped_by_class[1] == before[1]);
  r.host.procs[r.conn("sub")].writable = true;
  e.onWritable(r.conn("sub"));
  CHECK(r.framesOf("sub", "plugin/bus_event").size() == 1);
}

TEST_CASE("EMIT-03 emit_result is the closed {name, bus, durable, reason?} with the name echoed verbatim", "[engine][emit]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  const std::set<std::string> statuses = {"published", "dropped", "rejected"};
  for (std::string name : {std::string("Ünïcode name/with spaces"), std::string(""), std::string("x")}) {
    (void)e.produceEvent(s, RecordClass::Ordinary);
    r.send("alpha", emitFrame(s, lastToken(r, "alpha"), name));
    auto f = r.lastFrame("alpha");
    REQUIRE(str(f, "method") == "plugin/emit_result");
    const json::Value& p = f["params"];
    CHECK(str(p, "name") == name);
    CHECK(statuses.count(str(p, "bus")) == 1);
    CHECK(statuses.count(str(p, "durable")) == 1);
    for (auto& m : p.GetObject()) {
      std::string k = m.name.GetString();
      CHECK((k == "name" || k == "bus" || k == "durable" || k == "reason"));
    }
  }
}

TEST_CASE("EMIT-18 an emit creates no producer registration and no model-visible message", "[engine][emit]") {
  ProdRig r;
  r.boot();
  auto s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  REQUIRE(!p.empty());
  // A bus emit on a producer-enabled connection: nothing enters the producer store.
  r.send("alpha", emitFrame(s, "no-such-token"));
  CHECK(r.svc->messages(s).empty());
  auto resp = r.call("alpha", "plugin/producer/send", ProdRig::sendParams(s, "never-registered", "k"));
  CHECK(ProdRig::code(resp) != 0);  // the emit did not register anything implicitly
  CHECK(r.svc->messages(s).empty());
}

TEST_CASE("EMIT-19 existing plugin_event_added history is delivered like any durable record", "[engine][emit][evt]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  auto seq = e.appendEvent(s, doc(R"({"type":"plugin_event_added","plugin":"old","name":"n","payload":{"v":1}})"));
  REQUIRE(seq);
  auto evs = r.framesOf("alpha", "plugin/event");
  REQUIRE(evs.size() == 1);
  CHECK(evs[0]["params"]["seq"].GetUint64() == *seq);
  CHECK(str(evs[0]["params"], "event", "type") == "plugin_event_added");
  CHECK(evs[0]["params"]["event"]["payload"]["v"] == 1);
}

TEST_CASE("EMIT-23 checks run in order: token before size, size before quota", "[engine][emit]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  std::string big = "\"" + std::string(300'000, 'x') + "\"";
  r.send("alpha", emitFrame(s, "not-a-token", "n", big));
  auto f = r.lastFrame("alpha");
  CHECK(str(f["params"], "bus") == "rejected");  // the token reason, not the size drop
  CHECK(r.status("alpha").diagnostics["oversized_event"] == 0);
  (void)e.produceEvent(s, RecordClass::Ordinary);
  r.send("alpha", emitFrame(s, lastToken(r, "alpha"), "n", big));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "dropped");
  CHECK(r.status("alpha").diagnostics["oversized_event"] == 1);
}

TEST_CASE("QUOTA-03 the largest admitted emit serialises to a plugin_event_added record within 272 KiB", "[engine][quota]") {
  // PROTOCOL §11.4: the record check cannot fail on the wire once QUOTA-01/02 passed; the test
  // proves the arithmetic the engine relies on with the largest admitted payload and name.
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  (void)e.produceEvent(s, RecordClass::Ordinary);
  std::string name(128, 'n');
  std::string payload = "\"" + std::string(262'142, 'x') + "\"";
  r.send("alpha", emitFrame(s, lastToken(r, "alpha"), name, payload));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
  std::string record = R"({"type":"plugin_event_added","plugin":")" + std::string(128, 'p') + R"(","name":")" + name +
                       R"(","payload":)" + payload + "}";
  CHECK(record.size() <= 278'528u);
}

TEST_CASE("QUOTA-13 diagnostics flush every 100 ms off the append path — no increment is lost", "[engine][quota]") {
  Rig r({"alpha", "observer"});
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  Caps obs;
  obs.subscribe_events = true;
  r.answerInit("observer", obs);
  auto s = e.createSession();
  (void)e.produceEvent(s, RecordClass::Ordinary);
  auto token = lastToken(r, "alpha");
  r.send("alpha", emitFrame(s, token));  // consumes it
  auto before = r.framesOf("observer", "plugin/event").size();
  for (int i = 0; i < 500; ++i) r.send("alpha", emitFrame(s + "-other", token));  // context mismatch, counted
  r.advance(99ms);
  CHECK(r.framesOf("observer", "plugin/event").size() == before);  // not on the append path
  r.advance(1ms);
  std::uint64_t total = 0;
  auto all = r.framesOf("observer", "plugin/event");
  for (std::size_t i = before; i < all.size(); ++i)
    if (str(all[i]["params"], "event", "type") == "plugin_diagnostic") total += all[i]["params"]["event"]["count"].GetUint64();
  CHECK(total == r.status("alpha").diagnostics.begin()->second);
  CHECK(total >= 1);
}

TEST_CASE("QUOTA-15 at shutdown the diagnostic drain takes at most 5 s, then plugins are marked incomplete", "[engine][quota][shut]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  auto s = e.createSession();
  r.send("alpha", emitFrame(s, "unknown"));
  (void)e.produceEvent(s, RecordClass::Ordinary);
  auto token = lastToken(r, "alpha");
  r.send("alpha", emitFrame(s, token));
  r.send("alpha", emitFrame(s, token));  // a diagnostic to drain (token reuse in s)
  REQUIRE(e.setSessionStalled(s, true));
  e.shutdown();
  r.advance(5s);
  CHECK(r.framesOf("alpha", "plugin/shutdown").size() == 1);  // the drain did not block shutdown
  bool noted = false;
  for (auto& n : r.status("alpha").notes) noted = noted || n.find("incomplete") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("QUOTA-16 a diagnostic is the session event plugin_diagnostic {plugin, kind, message, count}", "[engine][quota]") {
  Rig r({"alpha", "observer"});
  auto& e = r.start();
  r.answerInit("alpha", subscriber());
  Caps obs;
  obs.subscribe_events = true;
  r.answerInit("observer", obs);
  auto s = e.createSession();
  (void)e.produceEvent(s, RecordClass::Ordinary);
  std::string big = "\"" + std::string(262'200, 'x') + "\"";
  r.send("alpha", emitFrame(s, lastToken(r, "alpha"), "n", big));
  r.advance(100ms);
  bool found = false;
  for (auto& rec : e.session(s)->log) {
    if (rec.type != "plugin_diagnostic") continue;
    auto ev = doc(*rec.payload);
    std::set<std::string> keys;
    const json::Value& cev = ev;
    for (auto& m : cev.GetObject()) keys.insert(m.name.GetString());
    CHECK(keys == std::set<std::string>{"type", "plugin", "kind", "message", "count"});
    CHECK(str(ev, "plugin") == "alpha");
    CHECK(str(ev, "kind") == "oversized_event");
    CHECK(ev["count"].GetUint64() == 1);
    found = true;
  }
  CHECK(found);
}

TEST_CASE("QUOTA-17 recovery_failed and recovery_disabled are diagnostic kinds", "[engine][quota][recovery]") {
  ProdRig r;
  r.boot();
  auto s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  REQUIRE(ProdRig::code(r.sendMsg("alpha", s, p, "k1")) == 0);
  REQUIRE(ProdRig::code(r.call("alpha", "plugin/recovery/complete", R"({"outcome":{"status":"failed","message":"down"}})")) == 0);
  r.advance(100ms);
  bool failed = false;
  for (auto& rec : r.engine->session(s)->log)
    if (rec.type == "plugin_diagnostic") failed = failed || rec.payload->find(R"("kind":"recovery_failed")") != std::string::npos;
  CHECK(failed);
}
