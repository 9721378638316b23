// The driver methods added in session 3 (docs/driver-protocol.md): `session.set_skill` (TOOL-25),
// `daemon.subscribe` / `daemon.read` / `daemon.unsubscribe` (BUS-04) and `runs.list` with the
// producer delivery of PROD-43 — driven through Driver::onFrame exactly as conform check-engine
// drives conform-engine, including the bad-params errors.
#include "mock_engine/driver.h"
#include "tests/engine/producer_rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

struct DriverRig : ProdRig {
  std::unique_ptr<Driver> drv;
  std::vector<std::string> replies;
  int next = 1;
  DriverRig() : ProdRig({"alpha", "beta"}) {}
  void up() {
    engine = std::make_unique<Engine>(cfg, host, clk);
    drv = std::make_unique<Driver>(*engine, &clk, [this](std::string f) { replies.push_back(std::move(f)); });
    engine->start();
    for (auto& p : cfg.plugins) {
      Caps c;
      c.producer_messaging = true;
      c.subscribe_bus = true;
      c.publish_bus = true;
      c.subscribe_events = true;
      answerInit(p.name, c, "[" + tool(p.name == "alpha" ? "aa_tool" : "bb_tool") + "]");
    }
    svc.reset();  // the driver owns the producer service
  }
  json::Document drive(const std::string& method, const std::string& params = "{}") {
    int id = next++;
    drv->onFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method + R"(","params":)" + params + "}");
    REQUIRE(!replies.empty());
    auto p = json::parse(replies.back());
    REQUIRE(p);
    REQUIRE(p->doc["id"].GetInt() == id);
    return std::move(p->doc);
  }
  static int err(const json::Value& reply) {
    const json::Value* e = json::member(reply, "error");
    return e ? (*e)["code"].GetInt() : 0;
  }
};

}  // namespace

TEST_CASE("TOOL-25 driver session.set_skill hides a disallowed plugin tool and tool.call reports it not enabled", "[engine][driver]") {
  DriverRig r;
  r.up();
  std::string s = str(r.drive("session.create")["result"], "session_id");
  CHECK(r.drive("tools.visible", R"({"session_id":")" + s + R"("})")["result"]["tools"].Size() >= 2);
  REQUIRE(DriverRig::err(r.drive("session.set_skill", R"({"session_id":")" + s + R"x(","allowed_tools":["Plugin(alpha:*)"]})x")) == 0);
  std::string visible = json::compact(r.drive("tools.visible", R"({"session_id":")" + s + R"("})")["result"]);
  CHECK(visible.find("aa_tool") != std::string::npos);
  CHECK(visible.find("bb_tool") == std::string::npos);
  auto call_doc = r.drive("tool.call", R"({"session_id":")" + s + R"(","tool":"bb_tool","arguments":{}})");
  const json::Value& call = call_doc["result"];
  CHECK(str(call, "state") == "denied");
  CHECK(str(call, "reason").find("not enabled") != std::string::npos);
  CHECK(DriverRig::err(r.drive("session.set_skill", R"({"session_id":")" + s + R"(","allowed_tools":null})")) == 0);
  CHECK(json::compact(r.drive("tools.visible", R"({"session_id":")" + s + R"("})")["result"]).find("bb_tool") != std::string::npos);
  CHECK(DriverRig::err(r.drive("session.set_skill", R"({"session_id":")" + s + R"(","allowed_tools":[1]})")) == -32602);
  CHECK(DriverRig::err(r.drive("session.set_skill", R"({"session_id":"nope","allowed_tools":[]})")) == -32602);
}

TEST_CASE("BUS-04 driver daemon.subscribe / daemon.read deliver events.plugin for the subscribed session only", "[engine][driver]") {
  DriverRig r;
  r.up();
  std::string s1 = str(r.drive("session.create")["result"], "session_id");
  std::string s2 = str(r.drive("session.create")["result"], "session_id");
  auto c1_doc = r.drive("daemon.subscribe", R"({"session_id":")" + s1 + R"("})");
  const std::uint64_t c1 = c1_doc["result"]["client_id"].GetUint64();
  auto c2_doc = r.drive("daemon.subscribe", R"({"session_id":")" + s2 + R"("})");
  const std::uint64_t c2 = c2_doc["result"]["client_id"].GetUint64();
  r.drive("event.produce", R"({"session_id":")" + s1 + R"(","class":"ordinary"})");
  auto token = str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id");
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s1 + R"(","context_id":")" + token +
                      R"(","name":"status","payload":{"ok":true}}})");
  auto read1_doc = r.drive("daemon.read", R"({"client_id":)" + std::to_string(c1) + "}");
  const json::Value& read1 = read1_doc["result"];
  REQUIRE(read1["notifications"].Size() == 1);
  CHECK(str(read1["notifications"][0], "method") == "events.plugin");
  CHECK(str(read1["notifications"][0]["params"], "plugin") == "alpha");
  CHECK(read1["dropped"].GetUint64() == 0);
  CHECK(r.drive("daemon.read", R"({"client_id":)" + std::to_string(c2) + "}")["result"]["notifications"].Size() == 0);
  CHECK(DriverRig::err(r.drive("daemon.unsubscribe", R"({"client_id":)" + std::to_string(c1) + "}")) == 0);
  CHECK(DriverRig::err(r.drive("daemon.read", R"({"client_id":)" + std::to_string(c1) + "}")) == -32602);
  CHECK(DriverRig::err(r.drive("daemon.subscribe", R"({"session_id":"nope"})")) == -32602);
}

TEST_CASE("PROD-43 driver runs.list shows the run a queue message started and the steer message the next run took", "[engine][driver][producer]") {
  DriverRig r;
  r.up();
  std::string s = str(r.drive("session.create")["result"], "session_id");
  auto p = r.registerProducer("alpha", s);
  REQUIRE(ProdRig::code(r.sendMsg("alpha", s, p, "q", "FROM-QUEUE", "queue")) == 0);
  REQUIRE(ProdRig::code(r.sendMsg("alpha", s, p, "st", "FROM-STEER", "steer")) == 0);
  r.drive("clock.advance", R"({"ms":0})");  // the queue message starts its turn; it takes the steer one too
  auto runs_doc = r.drive("runs.list", R"({"session_id":")" + s + R"("})");
  const json::Value& runs = runs_doc["result"]["runs"];
  REQUIRE(runs.Size() == 1);
  CHECK(str(runs[0], "origin") == "producer_queue");
  CHECK(str(runs[0], "input") == "FROM-QUEUE");
  CHECK(str(runs[0], "state") == "completed");
  CHECK(runs[0]["producer_messages"].Size() == 2);
  CHECK(json::compact(runs[0]["requests"][0]).find("FROM-STEER") != std::string::npos);
  auto msgs_doc = r.drive("producer.messages", R"({"session_id":")" + s + R"("})");
  const json::Value& msgs = msgs_doc["result"]["messages"];
  REQUIRE(msgs.Size() == 2);
  for (auto& m : msgs.GetArray()) CHECK(str(m, "state") == "consumed");
  CHECK(DriverRig::err(r.drive("runs.list", R"({"session_id":"nope"})")) == -32602);
}
