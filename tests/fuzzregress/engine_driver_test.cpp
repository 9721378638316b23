// tests/fuzzregress/engine_driver_test — findings of fuzz/fuzz_engine_state.cpp whose fix belongs to
// the reference engine (mock_engine/driver.cpp), each kept as a regression test once fixed.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "mock_engine/driver.h"
#include "mock_engine/engine.h"

using namespace conform;

namespace {

struct NullHost final : engine::Host {
  bool spawn(engine::ConnId, const engine::PluginConfig&, std::string&) override { return true; }
  void write(engine::ConnId, std::string_view) override {}
  void closeStdin(engine::ConnId) override {}
  void kill(engine::ConnId c) override { killed.push_back(c); }
  std::vector<engine::ConnId> killed;
};

}  // namespace

// Found by fuzz_engine_state (10-minute campaign, crash-8c7caa75…): `engine.shutdown` with
// "wait":true twice before the shutdown completed — the driver keeps one waiting id, so the first
// request is never answered (JSON-RPC: every request gets exactly one response).
TEST_CASE("fuzz engine_state: two engine.shutdown requests with wait are both answered", "[fuzzregress][engine]") {
  clock::VirtualClock clk;
  NullHost host;
  engine::EngineConfig cfg;
  engine::PluginConfig p;
  p.name = "alpha";
  p.command = "/bin/alpha";
  p.shutdown_grace_ms = 1000;
  cfg.plugins.push_back(p);
  engine::Engine e(cfg, host, clk);
  std::map<std::int64_t, int> answers;
  engine::Driver d(e, &clk, [&](std::string frame) {
    auto j = json::parse(frame);
    REQUIRE(j);
    ++answers[json::member(j->doc, "id")->GetInt64()];
  });
  e.start();
  d.onFrame(R"({"jsonrpc":"2.0","id":1,"method":"engine.shutdown","params":{"wait":true}})");
  d.onFrame(R"({"jsonrpc":"2.0","id":2,"method":"engine.shutdown","params":{"wait":true}})");
  for (int i = 0; i < 20; ++i) {
    clk.advance(std::chrono::milliseconds(500));
    e.tick();
    for (auto c : host.killed) {
      e.onStdoutEof(c);
      e.onExited(c, "killed by signal 9 (SIGKILL)");
    }
    host.killed.clear();
    d.poll();
  }
  CHECK(answers[2] == 1);
  CHECK(answers[1] == 1);
}
