// Reference engine, in process: the driver's `engine.restart` (docs/driver-protocol.md). The plugin
// side is played with raw frames on the rig; the engine side only through driver requests.
#include "mock_engine/driver.h"
#include "tests/engine/producer_rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

// The rig plus a Driver that owns the producer service and the journal, like conform-engine.
struct DriverRig : ProdRig {
  TempDir dir;
  std::unique_ptr<Driver> drv;
  std::vector<std::string> replies;
  int next_driver_id = 1;

  DriverRig() {
    journal_dir = dir.path;
    cfg.journal_dir = dir.path;
    engine = std::make_unique<Engine>(cfg, host, clk);
    drv = std::make_unique<Driver>(*engine, &clk, [this](std::string f) { replies.push_back(std::move(f)); });
    REQUIRE(drv->startupError().empty());
    engine->start();
  }
  // Sends a driver request; returns its id.
  int request(const std::string& method, const std::string& params = "{}") {
    int id = next_driver_id++;
    drv->onFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
                 R"(","params":)" + params + "}");
    return id;
  }
  // The driver's reply to `id`, if sent yet.
  std::optional<json::Document> reply(int id) {
    for (auto& f : replies) {
      auto p = json::parse(f);
      REQUIRE(p);
      const json::Value* i = json::member(p->doc, "id");
      if (i && i->IsInt() && i->GetInt() == id) return std::move(p->doc);
    }
    return std::nullopt;
  }
  json::Document drive(const std::string& method, const std::string& params = "{}") {
    auto r = reply(request(method, params));
    REQUIRE(r);
    REQUIRE(json::member(*r, "result"));
    return std::move(*r);
  }
  void up() {
    Caps c;
    c.producer_messaging = true;
    answerInit("alpha", c);
    REQUIRE(status("alpha").state == PluginState::Connected);
    REQUIRE(status("alpha").producer_enabled);
  }
};

}  // namespace

TEST_CASE("PROD-17 PROD-18 PROD-20 PROD-04 engine.restart: a send ACKed before the restart is found again by its key after it", "[engine][producer][restart]") {
  DriverRig r;
  r.up();
  CHECK(r.drive("recovery.status")["result"]["journal"]["records"].GetUint64() == 0);
  std::string s = str(r.drive("session.create")["result"], "session_id");
  std::string p1 = r.registerProducer("alpha", s);
  auto ack = r.sendMsg("alpha", s, p1, "job-42", "build finished");
  REQUIRE(ProdRig::code(ack) == 0);
  std::string mid = ack["result"]["message_id"].GetString();
  ConnId old_conn = r.conn("alpha");

  // The restart runs the shutdown sequence and answers only once the plugin is down.
  int rid = r.request("engine.restart");
  CHECK(str(r.lastFrame("alpha"), "method") == "plugin/shutdown");
  CHECK(r.host.procs[old_conn].stdin_closed);
  CHECK_FALSE(r.reply(rid));
  CHECK_FALSE(r.engine->shuttingDown());  // the engine keeps running (the IO loop must not exit)
  r.engine->onExited(old_conn, "exit 0");
  r.drv->poll();
  auto done = r.reply(rid);
  REQUIRE(done);
  REQUIRE(json::member(*done, "result"));

  // The journal was opened again and replayed: the session and the acceptance (the in-memory
  // producer state is gone, so the retry below can only be answered from the journal).
  CHECK(r.drive("recovery.status")["result"]["journal"]["records"].GetUint64() == 2);
  // Fresh epoch, new handshake; the old registration died with the old epoch.
  ConnId new_conn = r.conn("alpha");
  CHECK(new_conn > old_conn);
  CHECK(r.status("alpha").epoch == new_conn);
  CHECK(r.status("alpha").spawn_count == 2);
  CHECK(str((*done)["result"]["plugins"][0], "state") == "connecting");
  CHECK(str(r.lastFrame("alpha"), "method") == "plugin/initialize");
  r.up();
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p1, "job-43")) != 0);

  // Commit-uncertain retry (PROD-21): same key, same body, new registration -> the original id,
  // and no second message.
  std::string p2 = r.registerProducer("alpha", s);
  CHECK(p2 != p1);
  auto retry = r.sendMsg("alpha", s, p2, "job-42", "build finished");
  REQUIRE(ProdRig::code(retry) == 0);
  CHECK(str(retry["result"], "message_id") == mid);
  auto listed = r.drive("producer.messages", R"({"session_id":")" + s + R"("})");
  const json::Value& msgs = listed["result"]["messages"];
  REQUIRE(msgs.Size() == 1);
  CHECK(str(msgs[0], "message_id") == mid);
  CHECK(str(msgs[0], "state") == "waiting");
  // The same key with another body is still an idempotency conflict after the restart.
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p2, "job-42", "other body")) == prodcode::kIdempotency);
}

TEST_CASE("SHUT-03 SHUT-06 engine.restart: a plugin that ignores plugin/shutdown is killed after the grace period, then started again", "[engine][restart]") {
  DriverRig r;
  r.up();
  ConnId old_conn = r.conn("alpha");
  int rid = r.request("engine.restart");
  r.advance(std::chrono::milliseconds(r.cfg.plugins[0].shutdown_grace_ms));
  CHECK(r.host.procs[old_conn].killed);
  r.drv->poll();
  CHECK_FALSE(r.reply(rid));  // not reaped yet
  r.engine->onExited(old_conn, "killed by signal 9 (SIGKILL)");
  r.drv->poll();
  REQUIRE(r.reply(rid));
  CHECK(r.conn("alpha") > old_conn);
  r.up();
}

TEST_CASE("SHUT-01 engine.shutdown during engine.restart wins: the restart fails and nothing is started", "[engine][restart]") {
  DriverRig r;
  r.up();
  ConnId old_conn = r.conn("alpha");
  int rid = r.request("engine.restart");
  int sid = r.request("engine.shutdown");
  r.drv->poll();
  auto failed = r.reply(rid);
  REQUIRE(failed);
  CHECK(json::member(*failed, "error"));
  r.engine->onExited(old_conn, "exit 0");
  r.drv->poll();
  CHECK(r.reply(sid));
  CHECK(r.engine->shuttingDown());
  CHECK(r.conn("alpha") == old_conn);
  CHECK(r.status("alpha").spawn_count == 1);
}
