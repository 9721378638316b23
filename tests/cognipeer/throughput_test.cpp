// tests/cognipeer/throughput_test — figures through the whole stack (C++ host -> GuestClient -> Node
// runner -> worker -> plugin and back): plugin load time, gate-hook invocations per second, and a batch
// of concurrent observer invokes. Printed for the record; the only hard bounds are sanity bounds (a
// regression by an order of magnitude), so a loaded CI machine does not fail it. Skips loudly without Node.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "mock_engine/cognipeer/guest_client.h"
#include "mock_engine/cognipeer/host.h"

using namespace conform;
using namespace conform::cognipeer;

namespace {
// Hook invocations timed; enough for a stable rate, small enough for CTest's 120 s on a busy machine.
constexpr int kInvocations = 300;
}  // namespace

TEST_CASE("cognipeer e2e: load time and hook invocations per second through the whole stack", "[cognipeer][e2e]") {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    WARN("node is not installed: the cognipeer throughput test is SKIPPED (run `make deps`)");
    return;
  }
  wire::Reactor reactor;
  GuestClient client(reactor, {});
  std::string plugin = std::string(CONFORM_SOURCE_DIR) + "/tests/cognipeer_plugins/conforming.mjs";
  REQUIRE(client.start(runnerDir(""), std::string(CONFORM_SOURCE_DIR) + "/tests/cognipeer_plugins"));
  auto t0 = std::chrono::steady_clock::now();
  auto loaded = client.load(plugin);
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(loaded);
  auto shapes = parseShapes(*loaded);
  REQUIRE(shapes);
  auto host = Host::create(std::move(*shapes), client);
  REQUIRE(host);
  json::Document input;
  input.Parse(R"({"toolName":"conform_echo","toolCallId":"c1","args":{"q":1},"tool":{"name":"conform_echo"},"executionCount":0})");
  (void)host->runGate("preToolUse", input);  // warm-up (JIT, first-call paths)
  auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < kInvocations; ++i) CHECK(host->runGate("preToolUse", input).decision == "allow");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  json::Document end;
  end.Parse(R"({"status":"success"})");
  auto t2 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) host->runObservers("sessionEnd", end);
  double obs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t2).count() / 50;
  std::cout << fmt::format("cognipeer: plugin load through the stack {:.1f} ms (runner load_ms {:.1f}); "
                           "{} gate invocations in {:.2f} s = {:.0f} invocations/s ({:.2f} ms each); observer batch {:.2f} ms\n",
                           load_ms, (*loaded)["load_ms"].IsNumber() ? (*loaded)["load_ms"].GetDouble() : -1.0, kInvocations, s,
                           kInvocations / s, 1000 * s / kInvocations, obs);
  CHECK(load_ms < 15000);        // kLoadDeadline: the load completed within its own bound
  CHECK(kInvocations / s > 10);  // sanity: an order of magnitude below any measured rate
  client.shutdown();
}

TEST_CASE("CG-17 observers through the real runner: both invokes are written before either reply is read", "[cognipeer][e2e]") {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    WARN("node is not installed: SKIPPED (run `make deps`)");
    return;
  }
  wire::Reactor reactor;
  std::vector<std::string> seq;  // "out invoke" / "in reply", in wire order
  GuestClient::Tap tap;
  tap.out = [&](std::string_view b) {
    if (b.find("\"method\":\"invoke\"") != std::string_view::npos) seq.push_back("out");
  };
  tap.in = [&](const wire::ChannelEvent& ev) {
    if (ev.kind == wire::ChannelEvent::Kind::Frame && ev.frame.bytes.find("\"outcome\"") != std::string::npos) seq.push_back("in");
  };
  GuestClient client(reactor, tap);
  // helpers/recorders.mjs: two recording plugins A and B, every hook (tests/cognipeer_plugins/manifest.json).
  std::string plugin = std::string(CONFORM_SOURCE_DIR) + "/tests/cognipeer_plugins/helpers/recorders.mjs";
  REQUIRE(client.start(runnerDir(""), std::string(CONFORM_SOURCE_DIR) + "/tests/cognipeer_plugins"));
  auto loaded = client.load(plugin);
  REQUIRE(loaded);
  auto shapes = parseShapes(*loaded);
  REQUIRE(shapes);
  REQUIRE(shapes->size() == 2);
  auto host = Host::create(std::move(*shapes), client);
  REQUIRE(host);
  json::Document end;
  end.Parse(R"({"status":"success"})");
  host->runObservers("sessionEnd", end);
  CHECK(seq == std::vector<std::string>{"out", "out", "in", "in"});
  CHECK(host->log().size() == 2);
  client.shutdown();
}
