// The plugin's side of rules the monitors used to judge only on the engine's side (issue 6, lint
// matrix): each test breaks one rule once, and shows the conforming neighbour that stays silent.
#include <catch2/catch.hpp>

#include "tests/rules/script.h"

using namespace conform::rules;
using namespace conform::rules::test;
using conform::reports::Verdict;
using V = std::vector<std::string>;

namespace {
const std::string kS1 = "0191c0de-0000-7000-8000-000000000001";
const std::string kP9 = "0191c0de-0000-7000-8000-0000000000ff";
const std::string kInitProducer =
    R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{"protocol_version":"0.0.6","engine_version":"1","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true,"producer_messaging":true}}})";
const std::string kCapsProducer =
    R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":true,"publish_bus":true,"publish_session_events":false,"producer_messaging":true,"intercept":[]})";
const std::string kRecoveryStart = R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})";
const std::string kShutdown = R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})";
const std::string kPing2 = R"({"jsonrpc":"2.0","id":2,"method":"plugin/ping","params":{}})";
const std::string kPong2 = R"({"jsonrpc":"2.0","id":2,"result":{}})";

std::string event(int seq, const std::string& token) {
  return R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":")" + kS1 + R"(","context_id":")" + token +
         R"(","seq":)" + std::to_string(seq) + R"(,"event":{"type":"run_started"},"timestamp":"2026-01-01T00:00:00Z"}})";
}
std::string emit(const std::string& token, const std::string& name = "n", const std::string& payload = "{}") {
  return R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + kS1 + R"(","context_id":")" + token +
         R"(","name":")" + name + R"(","payload":)" + payload + "}}";
}
std::string emitResult(const std::string& bus, const std::string& name = "n") {
  return R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":")" + name + R"(","bus":")" + bus +
         R"(","durable":"rejected"}})";
}
std::string tools(const std::string& output_or_params) {
  return R"([{"name":"echo","description":"d",)" + output_or_params +
         R"(,"permission_name":"echo","primary_resource_param":null}])";
}
std::string complete(int id, const std::string& outcome) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"plugin/recovery/complete","params":{"outcome":)" + outcome + "}}";
}
std::string ok(int id) { return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{}})"; }
Script producerConnection() {
  Script s;
  s.e2p(kInitProducer).p2e(initResult(kCapsProducer)).e2p(kRecoveryStart);
  return s;
}
bool allAdvisory(const std::vector<conform::reports::Finding>& fs) {
  for (auto& f : fs)
    if (f.verdict != Verdict::NonStrict) return false;
  return !fs.empty();
}
}  // namespace

TEST_CASE("RPC-16 a success response with id null answers a notification", "[rules][rpc]") {
  Script bad, parse_error;
  bad.handshake().e2p(event(1, "t1")).p2e(R"({"jsonrpc":"2.0","id":null,"result":{}})");
  CHECK(ids(bad.run()) == V{"RPC-16"});
  // An error with id null is how a receiver reports an undecodable frame: not judged here.
  parse_error.handshake().e2p(event(1, "t1"))
      .p2e(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}})");
  CHECK(ids(parse_error.run()) == V{"RPC-08"});
}

TEST_CASE("RECOV-01 plugin/recovery/start gets no response", "[rules][recov]") {
  Script bad = producerConnection(), good = producerConnection();
  bad.p2e(R"({"jsonrpc":"2.0","id":null,"result":{}})");
  CHECK(ids(bad.run()) == V{"RECOV-01"});
  good.p2e(complete(1, R"({"status":"ready"})")).e2p(ok(1));
  CHECK(good.run().empty());
}

TEST_CASE("RPC-08 a ping unanswered past its deadline before the shutdown (advisory)", "[rules][rpc]") {
  Script bad, answered, young;
  bad.handshake().e2p(kPing2, 1000).e2p(kShutdown, 3500);
  CHECK(ids(bad.run()) == V{"RPC-08"});
  CHECK(allAdvisory(bad.run()));
  answered.handshake().e2p(kPing2, 1000).p2e(kPong2, 1001).e2p(kShutdown, 3500);
  CHECK(answered.run().empty());
  // 2,000 ms + 250 ms tolerance not yet over when the engine shut down: no claim.
  young.handshake().e2p(kPing2, 1000).e2p(kShutdown, 3100);
  CHECK(young.run().empty());
}

TEST_CASE("TOOL-03 a named output of 9 streams or a repeated stream — TOOL-04 the stream characters",
          "[rules][tool]") {
  Script nine, dup, chars, good;
  nine.e2p(kInit).p2e(initResult("", tools(R"("parameters":{"type":"object"},"output":{"kind":"named","streams":["a","b","c","d","e","f","g","h","i"]})")));
  CHECK(ids(nine.run()) == V{"TOOL-03"});
  dup.e2p(kInit).p2e(initResult("", tools(R"("parameters":{"type":"object"},"output":{"kind":"named","streams":["a","a"]})")));
  CHECK(ids(dup.run()) == V{"TOOL-03"});
  chars.e2p(kInit).p2e(initResult("", tools(R"("parameters":{"type":"object"},"output":{"kind":"named","streams":["a b"]})")));
  CHECK(ids(chars.run()) == V{"TOOL-04"});
  good.e2p(kInit).p2e(initResult("", tools(R"("parameters":{"type":"object"},"output":{"kind":"named","streams":["out","err"]})")));
  CHECK(good.run().empty());
}

TEST_CASE("INIT-21 parameters that are not a usable JSON Schema — the engine must then refuse", "[rules][init]") {
  Script bad, good;
  bad.e2p(kInit).p2e(initResult("", tools(R"("parameters":{"type":12})"))).e2p(event(1, "t1"));
  auto f = bad.run();
  CHECK(pluginIds(f) == V{"INIT-21", "TOOL-01"});
  CHECK(engineIds(f) == V{"INIT-21"});  // it kept talking to a plugin it must refuse
  good.e2p(kInit).p2e(initResult("", tools(R"("parameters":{"type":"object","properties":{"a":{"type":["string","null"]}}})")))
      .e2p(event(1, "t1"));
  CHECK(good.run().empty());
}

TEST_CASE("INIT-25 SDKs report resources:false (advisory) — engines send no resource method", "[rules][init]") {
  const std::string caps_res = R"({"tools":true,"resources":true,"subscribe_events":true,"subscribe_bus":true,"publish_bus":true,"publish_session_events":false,"producer_messaging":false,"intercept":[]})";
  Script plugin, engine;
  plugin.handshake(initResult(caps_res));
  CHECK(ids(plugin.run()) == V{"INIT-25"});
  CHECK(allAdvisory(plugin.run()));
  engine.handshake().e2p(R"({"jsonrpc":"2.0","id":2,"method":"plugin/resources/list","params":{}})");
  CHECK(engineIds(engine.run()) == V{"INIT-25"});
}

TEST_CASE("INIT-14 an emit without publish_bus uses an undeclared capability", "[rules][init]") {
  const std::string no_publish = R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":true,"publish_bus":false,"publish_session_events":false,"producer_messaging":false,"intercept":[]})";
  Script bad, good;
  bad.handshake(initResult(no_publish)).e2p(event(1, "t1")).p2e(emit("t1")).e2p(emitResult("rejected"));
  CHECK(ids(bad.run()) == V{"INIT-14"});
  good.handshake().e2p(event(1, "t1")).p2e(emit("t1")).e2p(emitResult("published"));
  CHECK(good.run().empty());
}

TEST_CASE("INIT-14 a hook listed in intercept answered -32601 (advisory)", "[rules][init][hook]") {
  const std::string hook = R"({"jsonrpc":"2.0","id":2,"method":"plugin/intercept/tool_before_call","params":{"session_id":")" +
                           kS1 + R"(","context_id":"h1","tool":"echo","arguments":{},"permission_name":"echo","resource":null}})";
  Script bad, good;
  bad.handshake().e2p(hook).p2e(R"({"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}})");
  CHECK(ids(bad.run()) == V{"INIT-14"});
  CHECK(allAdvisory(bad.run()));
  good.handshake().e2p(hook).p2e(R"({"jsonrpc":"2.0","id":2,"result":{"action":"allow"}})");
  CHECK(good.run().empty());
}

TEST_CASE("QUOTA-01 QUOTA-02 the plugin's payload and name out of limits (advisory)", "[rules][quota]") {
  Script big, name, fine;
  // 262,143 characters and two quotes: 262,145 bytes, one over (strings are counted exactly).
  big.handshake().e2p(event(1, "t1")).p2e(emit("t1", "n", "\"" + std::string(262'143, 'p') + "\""))
      .e2p(emitResult("dropped"));
  CHECK(ids(big.run()) == V{"QUOTA-01"});
  CHECK(allAdvisory(big.run()));
  name.handshake().e2p(event(1, "t1")).p2e(emit("t1", std::string(129, 'n'))).e2p(emitResult("dropped", std::string(129, 'n')));
  CHECK(ids(name.run()) == V{"QUOTA-02"});
  fine.handshake().e2p(event(1, "t1")).p2e(emit("t1", std::string(128, 'n'), "\"" + std::string(262'142, 'p') + "\""))
      .e2p(emitResult("published", std::string(128, 'n')));
  CHECK(fine.run().empty());
}

TEST_CASE("PROD-06 a producer_id this connection never registered", "[rules][prod]") {
  const std::string send = R"({"jsonrpc":"2.0","id":5,"method":"plugin/producer/send","params":{"session_id":")" + kS1 +
                           R"(","producer_id":")" + kP9 + R"(","mode":"steer","idempotency_key":"k","description":"d","body":"b"}})";
  Script bad = producerConnection(), good = producerConnection();
  bad.p2e(send).e2p(R"({"jsonrpc":"2.0","id":5,"error":{"code":-32043,"message":"unknown"}})");
  CHECK(ids(bad.run()) == V{"PROD-06"});
  good.p2e(R"({"jsonrpc":"2.0","id":4,"method":"plugin/producer/register","params":{"session_id":")" + kS1 + R"("}})")
      .e2p(R"({"jsonrpc":"2.0","id":4,"result":{"producer_id":")" + kP9 + R"("}})")
      .p2e(send).e2p(R"({"jsonrpc":"2.0","id":5,"result":{"message_id":"0191c0de-0000-7000-8000-0000000000d1"}})");
  CHECK(good.run().empty());
}

TEST_CASE("RECOV-10 the plugin completes again with another outcome (advisory)", "[rules][recov]") {
  Script bad = producerConnection(), same = producerConnection();
  bad.p2e(complete(1, R"({"status":"ready"})")).p2e(complete(2, R"({"status":"failed","message":"m"})"))
      .e2p(ok(1)).e2p(R"({"jsonrpc":"2.0","id":2,"error":{"code":-32048,"message":"conflict"}})");
  CHECK(ids(bad.run()) == V{"RECOV-10"});
  CHECK(allAdvisory(bad.run()));
  same.p2e(complete(1, R"({"status":"ready"})")).p2e(complete(2, R"({"status":"ready"})")).e2p(ok(1)).e2p(ok(2));
  CHECK(same.run().empty());
}

TEST_CASE("RECOV-06 a plugin that kept answering but never completed recovery (advisory)", "[rules][recov]") {
  Script bad = producerConnection(), silent = producerConnection(), good = producerConnection();
  bad.e2p(kPing2).p2e(kPong2).e2p(kShutdown);
  CHECK(ids(bad.run()) == V{"RECOV-06"});
  CHECK(allAdvisory(bad.run()));
  // No request answered after recovery/start: nothing shows the plugin was reading.
  silent.e2p(kShutdown);
  CHECK(silent.run().empty());
  good.p2e(complete(1, R"({"status":"ready"})")).e2p(ok(1)).e2p(kPing2).p2e(kPong2).e2p(kShutdown);
  CHECK(good.run().empty());
}
