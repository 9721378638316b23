// The driver's hooks for conform check (docs/driver-protocol.md): `plugin.inject` with base64 bytes
// written exactly, and `trace.start` / `trace.read` / `trace.stop` observing every frame and
// lifecycle event of a plugin connection, timed on the engine clock.
#include "core/trace/trace.h"
#include "mock_engine/driver.h"
#include "tests/engine/rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

struct DriverTap : Rig {
  std::unique_ptr<Driver> drv;
  std::vector<std::string> replies;
  int next = 1;
  DriverTap() : Rig({"alpha", "beta"}) {
    engine = std::make_unique<Engine>(cfg, host, clk);
    drv = std::make_unique<Driver>(*engine, &clk, [this](std::string f) { replies.push_back(std::move(f)); });
  }
  json::Document call(const std::string& method, const std::string& params = "{}") {
    int id = next++;
    drv->onFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method + R"(","params":)" + params + "}");
    REQUIRE(!replies.empty());
    auto p = json::parse(replies.back());
    REQUIRE(p);
    REQUIRE(p->doc["id"].GetInt() == id);
    return std::move(p->doc);
  }
};

}  // namespace

TEST_CASE("driver plugin.inject writes base64 bytes exactly, text with an LF unless raw", "[engine][driver]") {
  DriverTap r;
  r.engine->start();
  r.answerInit("alpha");
  auto& proc = r.host.procs[r.conn("alpha")];
  std::string bytes("\xff\x00{\"a\":1}", 8);
  auto ok = r.call("plugin.inject", R"({"plugin":"alpha","base64":")" + trace::base64Encode(bytes) + R"("})");
  CHECK(json::member(ok, "result"));
  CHECK(proc.partial == bytes);  // no LF added: the bytes are still an unterminated line
  r.call("plugin.inject", R"({"plugin":"alpha","bytes":"tail"})");
  REQUIRE(!proc.written.empty());
  CHECK(proc.written.back() == bytes + "tail");
  auto bad = r.call("plugin.inject", R"({"plugin":"alpha","base64":"***"})");
  CHECK(bad["error"]["code"].GetInt() == -32602);
  auto none = r.call("plugin.inject", R"({"plugin":"nobody","base64":"AA=="})");
  CHECK(none["error"]["code"].GetInt() == -32000);
}

TEST_CASE("driver trace.start records every frame and lifecycle event of one plugin, timed", "[engine][driver]") {
  DriverTap r;
  r.call("trace.start", R"({"plugin":"alpha"})");
  r.engine->start();
  r.answerInit("alpha");
  r.answerInit("beta");
  r.advance(250ms);
  r.engine->ping("alpha");
  auto got = r.call("trace.read");
  const auto& recs = got["result"]["records"];
  REQUIRE(recs.IsArray());
  bool init_out = false, init_in = false, spawn = false, ping_at_250 = false;
  for (auto& rec : recs.GetArray()) {
    CHECK(str(rec, "plugin") == "alpha");  // beta's traffic is not recorded
    std::string frame = str(rec, "frame");
    if (str(rec, "dir") == "to_plugin" && frame.find("plugin/initialize") != std::string::npos) init_out = true;
    if (str(rec, "dir") == "from_plugin" && frame.find("protocol_version") != std::string::npos) init_in = true;
    if (str(rec, "event") == "spawn") spawn = true;
    if (frame.find("plugin/ping") != std::string::npos) ping_at_250 = rec["t_ms"].GetInt64() == 250;
  }
  CHECK(init_out);
  CHECK(init_in);
  CHECK(spawn);
  CHECK(ping_at_250);
  // read() drains; stop() returns the rest and detaches.
  CHECK(r.call("trace.read")["result"]["records"].Size() == 0);
  r.engine->ping("alpha");
  CHECK(r.call("trace.stop")["result"]["records"].Size() == 1);
  CHECK(r.call("trace.read")["error"]["code"].GetInt() == -32000);
}
