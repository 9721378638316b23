// The engine fault gallery (mock_engine/faults.h): every fault names a real rule, and each one
// changes the engine's wire behaviour in one scripted conversation that triggers all of them
// (differential against the conforming engine, which must itself be deterministic).
#include <fstream>
#include <set>
#include <sstream>

#include "reports/rule_catalog.h"
#include "mock_engine/driver.h"
#include "mock_engine/faults.h"
#include "mock_engine/producer.h"
#include "mock_engine/runtime.h"
#include "tests/engine/hook_rig.h"
#include "tests/engine/rig.h"

using namespace enginetest;

namespace {

std::string emitFrame(const std::string& session, const std::string& token, const std::string& name) {
  return R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + session +
         R"(","context_id":")" + token + R"(","name":")" + name + R"(","payload":{}}})";
}

// (session, token) of every delivery written to `plugin` from frame index `from` on.
std::vector<std::pair<std::string, std::string>> grantsOf(Rig& r, const std::string& plugin,
                                                          std::size_t from = 0) {
  std::vector<std::pair<std::string, std::string>> out;
  auto& w = r.written(plugin);
  for (std::size_t i = from; i < w.size(); ++i) {
    auto p = json::parse(w[i]);
    REQUIRE(p);
    auto m = json::stringMember(p->doc, "method");
    if (!m || (*m != "plugin/event" && *m != "plugin/bus_event")) continue;
    out.emplace_back(str(p->doc, "params", "session_id"), str(p->doc, "params", "context_id"));
  }
  return out;
}

// Plays one conversation that triggers every fault of the gallery; returns everything observable.
std::string transcript(EngineFault fault) {
  Rig r({"alpha", "beta", "gamma", "delta"});
  r.cfg.plugins[0].tool_timeout_ms = 1000;
  r.engine = std::make_unique<Engine>(r.cfg, r.host, r.clk);
  r.engine->setFault(fault);
  r.engine->start();
  Engine& e = *r.engine;
  std::ostringstream t;
  auto mark = [&](const char* step) {
    t << step << ":";
    for (auto n : {"alpha", "beta", "gamma", "delta"}) t << " " << r.written(n).size();
    t << "\n";
  };
  // INIT-07: a request before the handshake is answered only after it.
  r.send("alpha", R"({"jsonrpc":"2.0","id":"early","method":"plugin/unknown_thing","params":{}})");
  mark("early request");
  Caps a;
  a.subscribe_events = a.subscribe_bus = a.publish_bus = true;
  r.answerInit("alpha", a, "[" + tool("read_file") + "]");
  Caps b;
  b.subscribe_bus = true;
  r.answerInit("beta", b);
  r.answerInit("gamma", Caps{}, "[]", "Gamma");          // INIT-13
  r.answerInit("delta", Caps{}, "[]", "", "0.0.5");      // INIT-11
  r.send("alpha", R"({"jsonrpc":"2.0","id":7,"method":"plugin/unknown_thing","params":{}})");  // RPC-13
  mark("handshakes");
  std::string s = e.createSession();
  std::string buffered = e.createSession(false);
  auto delta = json::parse(R"({"type":"text_delta","delta":"x"})");
  (void)e.appendEvent(s, delta->doc);  // EVT-08
  auto run = json::parse(R"({"type":"run_started"})");
  (void)e.appendEvent(buffered, run->doc);  // EVT-04
  mark("buffered append");
  for (int i = 0; i < 41; ++i) (void)e.produceEvent(s, RecordClass::Ordinary);
  (void)e.persistSession(buffered);
  mark("41 events");
  auto grants = grantsOf(r, "alpha");
  REQUIRE(grants.size() >= 42);
  // EMIT-06 (reuse), EMIT-02 (results), QUOTA-05 (41 admitted attempts), BUS-01 (own bus).
  std::size_t used = 0;
  r.send("alpha", emitFrame(grants[0].first, grants[0].second, "first"));
  r.send("alpha", emitFrame(grants[0].first, grants[0].second, "reuse"));
  for (used = 1; used <= 40; ++used)
    r.send("alpha", emitFrame(grants[used].first, grants[used].second, "n" + std::to_string(used)));
  mark("emits");
  e.flushDiagnostics();  // EVT-18: alpha's diagnostics are not delivered to alpha
  mark("diagnostics");
  // EMIT-10: a token used 5.5 s after its write.
  std::size_t before = r.written("alpha").size();
  (void)e.produceEvent(s, RecordClass::Ordinary);
  auto late = grantsOf(r, "alpha", before);
  REQUIRE(!late.empty());
  r.advance(std::chrono::milliseconds(5500));
  r.send("alpha", emitFrame(late[0].first, late[0].second, "late"));
  mark("late emit");
  // EMIT-11: 6 s in the queue do not shorten the grant.
  r.host.procs[r.conn("alpha")].writable = false;
  before = r.written("alpha").size();
  (void)e.produceEvent(s, RecordClass::Ordinary);
  r.advance(std::chrono::seconds(6));
  r.host.procs[r.conn("alpha")].writable = true;
  e.onWritable(r.conn("alpha"));
  auto queued = grantsOf(r, "alpha", before);
  REQUIRE(!queued.empty());
  r.send("alpha", emitFrame(queued[0].first, queued[0].second, "queued"));
  mark("queued emit");
  // EVT-14/16 and EVT-05: 1 terminal + 1023 chunks + 1 terminal into a blocked queue, then drain.
  r.host.procs[r.conn("alpha")].writable = false;
  (void)e.produceEvent(s, RecordClass::Terminal);
  for (int i = 0; i < 1023; ++i) (void)e.produceEvent(s, RecordClass::Chunk);
  (void)e.produceEvent(s, RecordClass::Terminal);
  r.host.procs[r.conn("alpha")].writable = true;
  e.onWritable(r.conn("alpha"));
  mark("eviction");
  // TOOL-05/19/16: a call that is never answered.
  auto args = json::parse(R"({"path":"a.txt"})");
  auto call = e.callTool(s, "read_file", args->doc);
  REQUIRE(call);
  r.advance(std::chrono::milliseconds(1500));
  t << toolCallJson(*e.toolCall(*call)) << "\n";
  // SHUT-01/02 and INIT-01/RPC-07 show in the frames.
  e.shutdown();
  mark("shutdown");
  for (auto n : {"alpha", "beta", "gamma", "delta"}) {
    t << statusJson(r.status(n)) << "\n";
    t << n << " stdin_closed=" << r.host.procs[r.conn(n)].stdin_closed << "\n";
    for (auto& f : r.written(n)) t << n << " <- " << f << "\n";
  }
  for (auto& ev : e.session(s)->log) t << ev.seq << " " << *ev.payload << "\n";
  return t.str();
}

// The hook, producer and recovery part: one producer-enabled plugin that intercepts
// user_before_input (HOOK-06/07, PROD-18/19, RECOV-02/10).
std::string transcriptIssue5(EngineFault fault) {
  Rig r({"alpha"});
  r.cfg.producer_handler = true;
  r.cfg.plugins[0].producer_messaging = true;
  r.engine = std::make_unique<Engine>(r.cfg, r.host, r.clk);
  r.engine->setFault(fault);
  ProducerService svc(*r.engine, std::nullopt);
  r.engine->start();
  Engine& e = *r.engine;
  Runtime rt(e);
  // LIFE-12: a run started while alpha is still in its handshake.
  std::string s0 = svc.createSession();
  auto early = parseRunScript(json::parse(R"({"input":"early"})")->doc);
  REQUIRE(early);
  REQUIRE(rt.startRun(s0, std::move(*early), std::nullopt));
  Caps c;
  c.producer_messaging = true;
  c.intercept = R"(["user_before_input"])";
  r.answerInit("alpha", c);
  r.advance(std::chrono::milliseconds(0));
  const std::size_t early_hooks = r.framesOf("alpha", "plugin/intercept/user_before_input").size();
  if (early_hooks == 1) {
    auto frames = r.framesOf("alpha", "plugin/intercept/user_before_input");
    const json::Value& req = frames.front();
    r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(req["id"].GetInt64()) + R"(,"result":{"action":"allow"}})");
  }
  std::int64_t next = 500;
  auto request = [&](const std::string& method, const std::string& params) {
    r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(next++) + R"(,"method":")" + method + R"(","params":)" + params + "}");
    auto p = json::parse(r.written("alpha").back());
    REQUIRE(p);
    return json::compact(p->doc);
  };
  auto lastHookId = [&] {
    for (auto it = r.written("alpha").rbegin(); it != r.written("alpha").rend(); ++it)
      if (it->find("plugin/intercept/") != std::string::npos) return json::parse(*it)->doc["id"].GetInt64();
    FAIL("no hook request");
    return std::int64_t{0};
  };
  std::string s1 = svc.createSession(), s2 = svc.createSession(), s = svc.createSession();
  auto run = [&](const std::string& session) {
    auto script = parseRunScript(json::parse(R"({"input":"x"})")->doc);
    REQUIRE(script);
    auto id = rt.startRun(session, std::move(*script), std::nullopt);
    REQUIRE(id);
    return *id;
  };
  auto r1 = run(s1);  // HOOK-07: an error answer
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(lastHookId()) + R"(,"error":{"code":-32000,"message":"x"}})");
  auto r2 = run(s2);  // HOOK-06: no answer within 2 s
  r.advance(std::chrono::milliseconds(2000));
  std::ostringstream t;
  t << "early hooks " << early_hooks << "\n";
  t << "runs " << static_cast<int>(rt.run(r1)->state) << " " << static_cast<int>(rt.run(r2)->state) << "\n";
  auto reg = [&] {
    auto d = json::parse(request("plugin/producer/register", R"({"session_id":")" + s + R"("})"));
    REQUIRE(d);
    return str(d->doc["result"], "producer_id");
  };
  auto send = [&](const std::string& producer, const std::string& body) {
    return request("plugin/producer/send", R"({"session_id":")" + s + R"(","producer_id":")" + producer +
                                               R"(","mode":"steer","idempotency_key":"k1","description":"d","body":")" + body + R"("})");
  };
  std::string p1 = reg();
  auto first = send(p1, "b");
  std::string p2 = reg();
  auto mid = [](const std::string& frame) {
    auto d = json::parse(frame);
    REQUIRE(d);
    return str(d->doc["result"], "message_id");
  };
  t << (mid(send(p2, "b")) == mid(first) ? "same" : "different") << "\n";  // PROD-18
  t << send(p2, "c") << "\n";                                      // PROD-19
  t << request("plugin/recovery/complete", R"({"outcome":{"status":"ready"}})") << "\n";
  t << request("plugin/recovery/complete", R"({"outcome":{"status":"ready"}})") << "\n";  // RECOV-10
  t << "recovery/start x" << r.framesOf("alpha", "plugin/recovery/start").size() << "\n";  // RECOV-02
  return t.str();
}

}  // namespace

TEST_CASE("engine fault gallery: unique names, known rule IDs, at least 25 faults", "[engine][faults]") {
  const auto& table = engineFaultTable();
  CHECK(table.size() >= 25);
  // Rule IDs are checked against the rule catalogue compiled into conform (reports/rule_catalog.cpp,
  // generated from RULES.md and kept fresh by its own test), so this test needs no ../shared.
  std::set<std::string> names;
  std::set<EngineFault> ids;
  for (auto& f : table) {
    CHECK(names.insert(f.name).second);
    CHECK(ids.insert(f.id).second);
    INFO(f.name << " " << f.rule);
    CHECK(conform::reports::findRule(f.rule) != nullptr);
    CHECK(findEngineFault(f.name) == &f);
  }
  CHECK(findEngineFault("no_such_fault") == nullptr);
}

// The hook-chain faults need several plugins on one hook point (HOOK-04 order, HOOK-09 only
// validated state reaches the next plugin, HOOK-11 one context per chain): a three-plugin
// user_before_input chain where the second answer is an invalid (blank) transform.
std::string transcriptChain(EngineFault fault) {
  HookRig r({"zeta", "alpha", "mid"});
  r.engine = std::make_unique<Engine>(r.cfg, r.host, r.clk);
  r.engine->setFault(fault);
  r.engine->start();
  for (auto& p : r.cfg.plugins) {
    Caps c;
    c.intercept = kUserInput;
    r.answerInit(p.name, c, "[]");
  }
  r.rt = std::make_unique<Runtime>(*r.engine);
  auto s = r.engine->createSession();
  r.run(s, R"({"input":"original"})");
  std::ostringstream t;
  std::string first_ctx;
  const char* answers[] = {R"({"action":"transform","new_text":"valid"})", R"({"action":"transform","new_text":"   "})",
                           R"({"action":"allow"})"};
  for (const char* answer : answers)
    for (const char* n : {"zeta", "alpha", "mid"}) {
      auto open = r.open(n);
      if (open.empty()) continue;
      const std::string ctx = str(open.front()["params"], "context_id");
      if (first_ctx.empty()) first_ctx = ctx;
      t << n << " text=" << str(open.front()["params"], "text") << " same_context=" << (ctx == first_ctx) << "\n";
      r.reply(n, answer);
      break;
    }
  return t.str();
}

TEST_CASE("engine fault gallery: every fault changes the engine's wire behaviour", "[engine][faults]") {
  auto all = [](EngineFault f) { return transcript(f) + transcriptIssue5(f) + transcriptChain(f); };
  const std::string baseline = all(EngineFault::None);
  // The comparison is meaningful only if the conforming run is reproducible.
  REQUIRE(all(EngineFault::None) == baseline);
  for (auto& f : engineFaultTable()) {
    INFO("fault " << f.name << " (" << f.rule << ")");
    CHECK(all(f.id) != baseline);
  }
}
