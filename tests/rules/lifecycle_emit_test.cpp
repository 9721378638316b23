// INIT/PING/SHUT/RECOV, EMIT/QUOTA, EVT/BUS/TOOL/HOOK and PROD monitors, and Lint.
#include <catch2/catch.hpp>

#include "harness/rules/lint.h"
#include "tests/rules/script.h"

using namespace conform::rules;
using namespace conform::rules::test;
using V = std::vector<std::string>;

namespace {
const std::string kS1 = "0191c0de-0000-7000-8000-000000000001";
const std::string kS2 = "0191c0de-0000-7000-8000-000000000002";
std::string event(int seq, const std::string& token, const std::string& session = kS1,
                  const std::string& type = "run_started") {
  return R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":")" + session +
         R"(","context_id":")" + token + R"(","seq":)" + std::to_string(seq) + R"(,"event":{"type":")" + type +
         R"("},"timestamp":"2026-01-01T00:00:00Z"}})";
}
std::string emit(const std::string& token, const std::string& session = kS1, const std::string& name = "n") {
  return R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + session + R"(","context_id":")" +
         token + R"(","name":")" + name + R"(","payload":{}}})";
}
std::string result(const std::string& bus, const std::string& name = "n") {
  return R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":")" + name + R"(","bus":")" + bus +
         R"(","durable":"rejected"}})";
}
}  // namespace

TEST_CASE("INIT-01 the first engine frame must be plugin/initialize", "[rules][init]") {
  Script s;
  s.e2p(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{}})");
  auto f = s.run();
  REQUIRE(!f.empty());
  CHECK(f[0].rule_id == "INIT-01");
}

TEST_CASE("INIT-07 nothing but shutdown before the initialize result", "[rules][init]") {
  Script bad, good;
  bad.e2p(kInit).e2p(event(1, "t1")).p2e(initResult());
  CHECK(ids(bad.run()) == V{"INIT-07"});
  good.e2p(kInit).e2p(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})").p2e(initResult());
  CHECK(good.run().empty());
}

TEST_CASE("INIT-10 / INIT-11 a wrong result version is the plugin's fault and must end the connection",
          "[rules][init]") {
  Script s;
  s.e2p(kInit).p2e(initResult("", "[]", "0.0.4")).e2p(event(1, "t1"));
  auto f = ids(s.run());
  CHECK(std::find(f.begin(), f.end(), "INIT-10") != f.end());
  CHECK(std::find(f.begin(), f.end(), "INIT-11") != f.end());
}

TEST_CASE("INIT-15 a second plugin/initialize is reported", "[rules][init]") {
  Script s;
  s.handshake().e2p(R"({"jsonrpc":"2.0","id":2,"method":"plugin/initialize","params":{"protocol_version":"0.0.6","engine_version":"1","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true,"producer_messaging":false}}})");
  CHECK(ids(s.run()) == V{"INIT-15"});
}

TEST_CASE("SHUT-05 the engine writes after plugin/shutdown", "[rules][shut]") {
  Script s;
  s.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})").e2p(event(1, "t"));
  auto f = s.run();
  REQUIRE(ids(f) == V{"SHUT-05"});
  CHECK(f[0].verdict == conform::reports::Verdict::NonStrict);
}

TEST_CASE("SHUT-08 a plugin killed after the grace did not exit by itself", "[rules][shut]") {
  Script bad, good;
  // stdin closed right after the notification (SHUT-02 holds), so only the plugin is at fault.
  bad.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})", 100).eof(Dir::EngineToPlugin, 101).exitSignal(9, 3200);
  CHECK(ids(bad.run()) == V{"SHUT-08"});
  good.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})", 100).eof(Dir::EngineToPlugin, 101).exitSignal(9, 600);
  CHECK(good.run().empty());
}

TEST_CASE("clean: events with increasing seq, emits answered in order", "[rules][clean]") {
  Script s;
  s.handshake().e2p(event(1, "t1")).e2p(event(2, "t2")).p2e(emit("t1")).p2e(emit("t2"))
      .e2p(result("published")).e2p(result("published"));
  auto f = s.run();
  INFO((f.empty() ? "" : f[0].rule_id + ": " + f[0].message + " / " + f[0].actual));
  CHECK(f.empty());
}

TEST_CASE("EVT-05 seq must increase per session — other sessions are independent", "[rules][evt]") {
  Script bad, good;
  bad.handshake().e2p(event(2, "a")).e2p(event(2, "b"));
  CHECK(ids(bad.run()) == V{"EVT-05"});
  good.handshake().e2p(event(5, "a")).e2p(event(1, "b", kS2)).e2p(event(6, "c"));
  CHECK(good.run().empty());
}

TEST_CASE("EVT-08 text deltas are never delivered", "[rules][evt]") {
  Script s;
  s.handshake().e2p(event(1, "a", kS1, "text_delta"));
  CHECK(ids(s.run()) == V{"EVT-08"});
}

TEST_CASE("EVT-01 events only to subscribers", "[rules][evt]") {
  Script s;
  s.handshake(initResult(R"({"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"producer_messaging":false,"intercept":[]})"))
      .e2p(event(1, "a"));
  CHECK(ids(s.run()) == V{"EVT-01"});
}

TEST_CASE("HOOK-01 only hooks listed in intercept are sent", "[rules][hook]") {
  Script s;
  s.handshake().e2p(R"({"jsonrpc":"2.0","id":2,"method":"plugin/intercept/message_end","params":{}})");
  auto f = ids(s.run());
  CHECK(std::find(f.begin(), f.end(), "HOOK-01") != f.end());
}

TEST_CASE("EMIT-04 an emit with a token never delivered must not be published", "[rules][emit]") {
  Script bad, good;
  bad.handshake().p2e(emit("nope")).e2p(result("published"));
  CHECK(engineIds(bad.run()) == V{"EMIT-04"});
  good.handshake().p2e(emit("nope")).e2p(result("rejected"));
  // The engine did right; the plugin still used a token it was never given (advisory).
  CHECK(engineIds(good.run()).empty());
  CHECK(pluginIds(good.run()) == V{"EMIT-04"});
  CHECK(good.run()[0].verdict == conform::reports::Verdict::NonStrict);
}

TEST_CASE("EMIT-06 a token used twice must be rejected the second time", "[rules][emit]") {
  Script s;
  s.handshake().e2p(event(1, "t1")).p2e(emit("t1")).p2e(emit("t1")).e2p(result("published")).e2p(result("published"));
  CHECK(engineIds(s.run()) == V{"EMIT-06"});
  CHECK(pluginIds(s.run()) == V{"EMIT-06"});
}

TEST_CASE("EMIT-06 a reuse after the engine delivered the spent token again is not the plugin's fault",
          "[rules][emit]") {
  Script s, once;
  s.handshake().e2p(event(1, "t1")).p2e(emit("t1")).e2p(result("published")).e2p(event(2, "t1"))
      .p2e(emit("t1")).e2p(result("rejected"));
  CHECK(s.run().empty());
  once.handshake().e2p(event(1, "t1")).p2e(emit("t1")).e2p(result("published"));
  CHECK(once.run().empty());
}

TEST_CASE("EMIT-10 a notification token expires 5 s after its frame", "[rules][emit]") {
  Script bad, edge;
  bad.handshake().e2p(event(1, "t1"), 1000).p2e(emit("t1"), 6500).e2p(result("published"), 6501);
  CHECK(engineIds(bad.run()) == V{"EMIT-10"});
  CHECK(pluginIds(bad.run()) == V{"EMIT-10"});
  // Within the ±250 ms tolerance nothing is claimed either way.
  edge.handshake().e2p(event(1, "t1"), 1000).p2e(emit("t1"), 6100).e2p(result("published"), 6101);
  CHECK(edge.run().empty());
}

TEST_CASE("EMIT-05 an emit for another session must be rejected", "[rules][emit]") {
  Script s;
  s.handshake().e2p(event(1, "t1")).p2e(emit("t1", kS2)).e2p(result("published"));
  CHECK(engineIds(s.run()) == V{"EMIT-05"});
  CHECK(pluginIds(s.run()) == V{"EMIT-05"});
}

TEST_CASE("EMIT-08 a request token ends with its response", "[rules][emit]") {
  Script s;
  s.handshake(initResult("", R"([{"name":"echo","description":"d","parameters":{"type":"object"},"permission_name":"echo","primary_resource_param":null}])"))
      .e2p(R"({"jsonrpc":"2.0","id":2,"method":"plugin/tools/call","params":{"tool":"echo","session_id":")" + kS1 +
           R"(","context_id":"rq","invocation_id":"0191c0de-0000-7000-8000-0000000000aa","arguments":{},"resource":null}})")
      .p2e(R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"single","text":"x"},"is_error":false}})")
      .p2e(emit("rq", kS1, "m")).e2p(result("published", "m"));
  auto f = s.run();
  INFO((f.empty() ? "" : f[0].rule_id + ": " + f[0].message + " / " + f[0].actual));
  CHECK(engineIds(f) == V{"EMIT-08"});
  CHECK(pluginIds(f) == V{"EMIT-08"});
}

TEST_CASE("EMIT-02 results answer emits one to one, in order", "[rules][emit]") {
  Script extra, order;
  extra.handshake().e2p(result("rejected"));
  CHECK(ids(extra.run()) == V{"EMIT-02"});
  order.handshake().e2p(event(1, "a")).e2p(event(2, "b")).p2e(emit("a", kS1, "x")).p2e(emit("b", kS1, "y"))
      .e2p(result("published", "y")).e2p(result("published", "x"));
  CHECK(ids(order.run()) == V{"EMIT-02"});
}

TEST_CASE("EMIT-15 context rejections use the profile's bus status", "[rules][emit]") {
  Script s;
  s.handshake().p2e(emit("nope")).e2p(result("dropped"));
  CHECK(engineIds(s.run()) == V{"EMIT-15"});
}

TEST_CASE("QUOTA-05 a 41st emit certainly inside one window must not be published", "[rules][quota]") {
  Script bad, spread;
  bad.handshake();
  for (int i = 0; i < 41; ++i) bad.e2p(event(i + 1, "k" + std::to_string(i)), 100 + i);
  for (int i = 0; i < 41; ++i) bad.p2e(emit("k" + std::to_string(i)), 200 + i).e2p(result("published"), 200 + i);
  CHECK(engineIds(bad.run()) == V{"QUOTA-05"});
  CHECK(pluginIds(bad.run()) == V{"QUOTA-05"});  // 41 emits within 750 ms (advisory)
  // 41 emits whose windows may have restarted (spread over more than one second): silence.
  spread.handshake();
  for (int i = 0; i < 41; ++i) spread.e2p(event(i + 1, "k" + std::to_string(i)), 100 + i * 30);
  for (int i = 0; i < 41; ++i)
    spread.p2e(emit("k" + std::to_string(i)), 150 + i * 30).e2p(result("published"), 151 + i * 30);
  CHECK(spread.run().empty());
}

TEST_CASE("PROD-01 producer requests fail on a connection that is not producer-enabled", "[rules][prod]") {
  Script s;
  s.handshake().p2e(R"({"jsonrpc":"2.0","id":1,"method":"plugin/producer/register","params":{"session_id":")" + kS1 + R"("}})")
      .e2p(R"({"jsonrpc":"2.0","id":1,"result":{"producer_id":"0191c0de-0000-7000-8000-0000000000bb"}})");
  CHECK(ids(s.run()) == V{"PROD-01"});
}

TEST_CASE("RECOV-03 recovery/start only on producer-enabled connections", "[rules][recov]") {
  Script s;
  s.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  CHECK(ids(s.run()) == V{"RECOV-03"});
}

TEST_CASE("lint: reads a trace, reports findings with line numbers", "[rules][lint]") {
  std::string t = R"({"conform_trace":1,"started":"2026-01-01T00:00:00.000000Z","profile":"0.0.6","role":"engine","peer":[],"clock":"virtual"})"
                  "\n";
  t += R"({"t":1,"dir":"e2p","frame":)" + std::string(kInit) + "}\n";
  t += R"({"t":2,"dir":"p2e","frame":)" + initResult() + "}\n";
  t += R"({"t":3,"dir":"p2e","frame":{"jsonrpc":"2.0","id":999,"result":{}}})" "\n";
  auto reader = conform::trace::TraceReader::fromString(t);
  auto r = lint(*reader);
  REQUIRE(r.has_value());
  REQUIRE(ids(r->findings) == V{"RPC-08"});
  CHECK(r->findings[0].evidence[0].line == 4);
  CHECK(r->profile == "v006");
  CHECK(r->toCase().verdict == conform::reports::Verdict::Fail);
}

TEST_CASE("lint: an unreadable trace is an error value naming the line", "[rules][lint]") {
  auto reader = conform::trace::TraceReader::fromString("not a trace\n");
  auto r = lint(*reader);
  REQUIRE(!r.has_value());
  CHECK(r.error().line == 1);
}

// FRAME-19 [impl]: which of two "name" members a receiver keeps is its own choice, so the result may
// echo either; any other name still breaks the one-to-one correlation. (The emit monitor only
// collects the other names when the reader listed a repeated member: this pins that path.)
TEST_CASE("EMIT-02 an emit with a repeated name may be answered with either value", "[rules][emit]") {
  const std::string twice = R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + kS1 +
                            R"(","context_id":"a","name":"x","payload":{},"name":"y"}})";
  for (const char* echoed : {"x", "y"}) {
    Script s;
    s.handshake().e2p(event(1, "a")).p2e(twice).e2p(result("published", echoed));
    INFO(echoed);
    CHECK(engineIds(s.run()).empty());
  }
  Script bad;
  bad.handshake().e2p(event(1, "a")).p2e(twice).e2p(result("published", "z"));
  CHECK(engineIds(bad.run()) == V{"EMIT-02"});
}
