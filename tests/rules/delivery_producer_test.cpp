// The monitors added for issue 6 item 1: each rule with a dirty trace that breaks it and a clean
// one that does not (PROD, RECOV-18, TOOL, HOOK, EVT/BUS, INIT-21, SDK-05, EMIT-17, SHUT-02).
#include <catch2/catch.hpp>

#include <set>

#include "tests/rules/script.h"

using namespace conform::rules;
using namespace conform::rules::test;
using conform::reports::Level;
using V = std::vector<std::string>;

namespace {
const std::string kS1 = "0191c0de-0000-7000-8000-000000000001";
const std::string kS2 = "0191c0de-0000-7000-8000-000000000002";
const std::string kP1 = "0191c0de-0000-7000-8000-0000000000c1";
const std::string kP2 = "0191c0de-0000-7000-8000-0000000000c2";
const std::string kM1 = "0191c0de-0000-7000-8000-0000000000d1";
const std::string kM2 = "0191c0de-0000-7000-8000-0000000000d2";
const std::string kInv = "0191c0de-0000-7000-8000-0000000000a1";

const std::string kInitProducer =
    R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{"protocol_version":"0.0.6","engine_version":"1","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true,"producer_messaging":true}}})";
const std::string kCapsProducer =
    R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":true,"publish_bus":true,"publish_session_events":false,"producer_messaging":true,"intercept":["tool_before_call","provider_before_headers","session_before_revert","user_before_input"]})";
const std::string kTools =
    R"([{"name":"echo","description":"d","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"permission_name":"echo","primary_resource_param":"path"}])";

// Handshake of a producer-enabled connection, recovery started.
Script producer() {
  Script s;
  s.e2p(kInitProducer).p2e(initResult(kCapsProducer, kTools)).e2p(
      R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  return s;
}
std::string reg(int id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/producer/register","params":{"session_id":")" + kS1 + R"("}})";
}
std::string send(int id, const std::string& producer, const std::string& key = "k1", const std::string& body = "b",
                 const std::string& session = kS1) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/producer/send","params":{"session_id":")" +
         session + R"(","producer_id":")" + producer + R"(","mode":"queue","idempotency_key":")" + key +
         R"(","description":"d","body":")" + body + R"("}})";
}
std::string unreg(int id, const std::string& producer) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/producer/unregister","params":{"session_id":")" +
         kS1 + R"(","producer_id":")" + producer + R"("}})";
}
std::string discard(int id, const std::string& message, const std::string& session = kS1) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/producer/discard","params":{"session_id":")" +
         session + R"(","message_id":")" + message + R"("}})";
}
std::string ok(int id, const std::string& result) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":)" + result + "}";
}
std::string err(int id, int code) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"error":{"code":)" + std::to_string(code) +
         R"(,"message":"x"}})";
}
std::string pid(const std::string& p) { return R"({"producer_id":")" + p + R"("})"; }
std::string mid(const std::string& m) { return R"({"message_id":")" + m + R"("})"; }
std::string call(int id, const std::string& extra, const std::string& tool = "echo",
                 const std::string& args = R"({"path":"a.txt"})", const std::string& resource = R"("a.txt")") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/tools/call","params":{"tool":")" + tool +
         R"(","session_id":")" + kS1 + R"(","context_id":"c","invocation_id":")" + kInv + R"(","arguments":)" + args +
         R"(,"resource":)" + resource + extra + "}}";
}
const std::string kSingle = R"({"output":{"kind":"single","text":"x"},"is_error":false})";
std::string hookReq(int id, const std::string& hook, const std::string& params) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/intercept/)" + hook +
         R"(","params":{"session_id":")" + kS1 + R"(","context_id":"h")" + params + "}}";
}
std::string describe(const std::vector<conform::reports::Finding>& fs) {
  std::string s;
  for (const auto& f : fs) s += f.rule_id + ": " + f.message + " / " + f.actual + "\n";
  return s;
}
}  // namespace

TEST_CASE("clean: producer register/send/retry/discard/unregister round", "[rules][prod][clean]") {
  Script s = producer();
  s.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1)).e2p(ok(2, mid(kM1))).p2e(send(3, kP1)).e2p(ok(3, mid(kM1)))
      .p2e(discard(4, kM1)).e2p(ok(4, "{}")).p2e(discard(5, kM1)).e2p(ok(5, "{}"))
      .p2e(send(6, kP1, "k2")).e2p(ok(6, mid(kM2)))
      .p2e(unreg(7, kP1)).e2p(ok(7, "{}")).p2e(unreg(8, kP1)).e2p(ok(8, "{}"))
      .p2e(send(9, kP1, "k3")).e2p(err(9, -32043)).p2e(discard(10, kM2)).e2p(ok(10, "{}"));
  auto f = s.run();
  INFO(describe(f));
  CHECK(f.empty());
}

TEST_CASE("PROD-05 register returns a fresh producer_id", "[rules][prod]") {
  Script s = producer();
  s.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(reg(2)).e2p(ok(2, pid(kP1)));
  CHECK(ids(s.run()) == V{"PROD-05"});
}

TEST_CASE("PROD-16 a send for another session than the registration's must be rejected", "[rules][prod]") {
  Script bad = producer(), good = producer();
  bad.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1, "k", "b", kS2)).e2p(ok(2, mid(kM1)));
  CHECK(ids(bad.run()) == V{"PROD-16"});
  good.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1, "k", "b", kS2)).e2p(err(2, -32043));
  CHECK(good.run().empty());
}

TEST_CASE("PROD-18 an identical retry is never a key conflict — PROD-19 a changed body is", "[rules][prod]") {
  Script bad = producer(), good = producer(), changed = producer();
  bad.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1)).e2p(ok(2, mid(kM1))).p2e(send(3, kP1)).e2p(err(3, -32045));
  CHECK(ids(bad.run()) == V{"PROD-18"});
  // Re-registered producer, same key and body: still the original receipt (PROD-18 "whatever producer id").
  good.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1)).e2p(ok(2, mid(kM1))).p2e(reg(3)).e2p(ok(3, pid(kP2)))
      .p2e(send(4, kP2)).e2p(ok(4, mid(kM1)));
  CHECK(good.run().empty());
  changed.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1)).e2p(ok(2, mid(kM1))).p2e(send(3, kP1, "k1", "other"))
      .e2p(err(3, -32045));
  // The engine refused correctly; the plugin reused the key with other content (advisory).
  CHECK(engineIds(changed.run()).empty());
  CHECK(pluginIds(changed.run()) == V{"PROD-19"});
}

TEST_CASE("PROD-23 / PROD-24 unregister outcomes on one connection", "[rules][prod]") {
  Script live = producer(), again = producer(), unknown = producer();
  live.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(unreg(2, kP1)).e2p(err(2, -32043));
  CHECK(ids(live.run()) == V{"PROD-23"});
  again.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(unreg(2, kP1)).e2p(ok(2, "{}")).p2e(unreg(3, kP1)).e2p(err(3, -32043));
  CHECK(ids(again.run()) == V{"PROD-24"});
  unknown.p2e(unreg(1, kP2)).e2p(ok(1, "{}"));
  CHECK(engineIds(unknown.run()) == V{"PROD-24"});
  CHECK(pluginIds(unknown.run()) == V{"PROD-06"});  // an id this connection never registered
}

TEST_CASE("PROD-26 a discard unregisters nothing — PROD-27 discard needs no registration", "[rules][prod]") {
  Script after_discard = producer(), reg_code = producer();
  after_discard.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1)).e2p(ok(2, mid(kM1))).p2e(discard(3, kM1))
      .e2p(ok(3, "{}")).p2e(send(4, kP1, "k2")).e2p(err(4, -32043));
  CHECK(ids(after_discard.run()) == V{"PROD-26"});
  reg_code.p2e(discard(1, kM1)).e2p(err(1, -32043));
  CHECK(ids(reg_code.run()) == V{"PROD-27"});
}

TEST_CASE("PROD-28 a receipt is not discardable through another session — PROD-31 repeat discard", "[rules][prod]") {
  Script other = producer(), twice = producer(), unknown = producer();
  other.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1)).e2p(ok(2, mid(kM1))).p2e(discard(3, kM1, kS2))
      .e2p(ok(3, "{}"));
  CHECK(ids(other.run()) == V{"PROD-28"});
  twice.p2e(reg(1)).e2p(ok(1, pid(kP1))).p2e(send(2, kP1)).e2p(ok(2, mid(kM1))).p2e(discard(3, kM1))
      .e2p(ok(3, "{}")).p2e(discard(4, kM1)).e2p(err(4, -32046));
  CHECK(ids(twice.run()) == V{"PROD-31"});
  // A receipt from an earlier connection is unknown here: any outcome is possible.
  unknown.p2e(discard(1, kM2)).e2p(err(1, -32046));
  CHECK(unknown.run().empty());
}

TEST_CASE("RECOV-18 producer operations are never rejected with the recovery code", "[rules][recov]") {
  Script s = producer();
  s.p2e(reg(1)).e2p(err(1, -32048));
  CHECK(ids(s.run()) == V{"RECOV-18"});
}

TEST_CASE("RECOV-10 only -32048 for an identical outcome is a breach", "[rules][recov]") {
  const std::string done = R"({"jsonrpc":"2.0","id":1,"method":"plugin/recovery/complete","params":{"outcome":{"status":"ready"}}})";
  const std::string again = R"({"jsonrpc":"2.0","id":2,"method":"plugin/recovery/complete","params":{"outcome":{"status":"ready"}}})";
  Script bad = producer(), busy = producer();
  bad.p2e(done).e2p(ok(1, "{}")).p2e(again).e2p(err(2, -32048));
  CHECK(ids(bad.run()) == V{"RECOV-10"});
  busy.p2e(done).e2p(ok(1, "{}")).p2e(again).e2p(err(2, -32041));
  CHECK(busy.run().empty());
}

TEST_CASE("TOOL-06 TOOL-07 TOOL-19 the engine's tools/call request", "[rules][tool]") {
  Script good, res, args, token;
  good.handshake(initResult("", kTools)).e2p(call(2, R"(,"cancellation_token":")" + kInv + "\"")).p2e(ok(2, kSingle));
  auto f = good.run();
  INFO(describe(f));
  CHECK(f.empty());
  res.handshake(initResult("", kTools)).e2p(call(2, "", "echo", R"({"path":"a.txt"})", R"("b.txt")"));
  CHECK(ids(res.run()) == V{"TOOL-06"});
  token.handshake(initResult("", kTools)).e2p(call(2, R"(,"cancellation_token":"other")"));
  CHECK(ids(token.run()) == V{"TOOL-19"});
  args.handshake(initResult("", kTools)).e2p(call(2, "", "echo", "[1]", "null"));
  auto a = ids(args.run());
  CHECK(std::find(a.begin(), a.end(), "TOOL-07") != a.end());
}

TEST_CASE("TOOL-17 no partial-output frame tied to an outstanding call", "[rules][tool]") {
  Script bad, good;
  bad.handshake(initResult("", kTools)).e2p(call(2, ""))
      .p2e(R"({"jsonrpc":"2.0","method":"plugin/tools/progress","params":{"invocation_id":")" + kInv + R"(","text":"50%"}})")
      .p2e(ok(2, kSingle));
  auto f = ids(bad.run());
  CHECK(std::find(f.begin(), f.end(), "TOOL-17") != f.end());
  // An emit on the call's grant is not partial output.
  good.handshake(initResult("", kTools)).e2p(call(2, ""))
      .p2e(R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + kS1 +
           R"(","context_id":"c","name":"p","payload":{}}})")
      .e2p(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"p","bus":"published","durable":"rejected"}})")
      .p2e(ok(2, kSingle));
  auto g = good.run();
  INFO(describe(g));
  CHECK(g.empty());
}

TEST_CASE("TOOL-31 an undeclared tool gets -32601 from the SDK", "[rules][tool]") {
  Script bad;
  bad.handshake(initResult("", kTools)).e2p(call(2, "", "ghost", "{}", "null")).p2e(err(2, -32000));
  CHECK(ids(bad.run()) == V{"TOOL-08", "TOOL-31"});
}

TEST_CASE("HOOK-02 HOOK-14 HOOK-45 hook calls and unregistered hooks", "[rules][hook]") {
  Script note, unregistered, headers, clean;
  note.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/intercept/tool_before_call","params":{}})");
  auto n = ids(note.run());
  CHECK(std::find(n.begin(), n.end(), "HOOK-02") != n.end());
  unregistered.handshake().e2p(hookReq(2, "message_end", R"(,"attempt_id":")" + kInv +
                                                             R"(","role":"assistant","content":[])"))
      .p2e(ok(2, R"({"action":"keep"})"));
  CHECK(ids(unregistered.run()) == V{"HOOK-01", "HOOK-14"});
  headers.e2p(kInitProducer).p2e(initResult(kCapsProducer, kTools))
      .e2p(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})")
      .e2p(hookReq(2, "provider_before_headers", R"(,"attempt_id":")" + kInv + R"(","headers":{"authorization":"x"})"))
      .p2e(ok(2, "{}"));
  CHECK(ids(headers.run()) == V{"HOOK-45"});
  Script c = producer();
  c.e2p(hookReq(2, "provider_before_headers", R"(,"attempt_id":")" + kInv + R"(","headers":{})")).p2e(ok(2, "{}"));
  CHECK(c.run().empty());
}

TEST_CASE("HOOK-53 HOOK-38 invalid modifications are advisory findings against the plugin", "[rules][hook]") {
  Script blank = producer(), good = producer(), transform = producer();
  blank.e2p(hookReq(2, "session_before_revert", R"(,"through_seq":3)")).p2e(ok(2, R"({"action":"override","instructions_override":"  "})"));
  auto f = blank.run();
  REQUIRE(ids(f) == V{"HOOK-53"});
  CHECK(f[0].level != Level::Must);
  CHECK(f[0].binds == conform::reports::kBindsPlugin);
  good.e2p(hookReq(2, "session_before_revert", R"(,"through_seq":3)")).p2e(ok(2, R"({"action":"override","instructions_override":"redo"})"));
  CHECK(good.run().empty());
  transform.e2p(hookReq(2, "user_before_input", R"(,"text":"hi")")).p2e(ok(2, R"({"action":"transform"})"));
  CHECK(ids(transform.run()) == V{"HOOK-38"});
}

TEST_CASE("EVT-19 BUS-05 own publications and bus grants", "[rules][evt][bus]") {
  Script own, token, diag;
  own.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":")" + kS1 +
                      R"(","context_id":"a","seq":1,"event":{"type":"plugin_event_added","plugin":"fx","name":"n","payload":{}},"timestamp":"2026-01-01T00:00:00Z"}})");
  CHECK(ids(own.run()) == V{"EVT-19"});
  token.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/bus_event","params":{"session_id":")" + kS1 +
                        R"(","plugin":"other","name":"n","payload":{}}})");
  auto t = token.run();
  REQUIRE(ids(t) == V{"BUS-05"});
  CHECK(t[0].level != Level::Must);  // [impl]
  diag.handshake().e2p(R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":")" + kS1 +
                       R"(","context_id":"a","seq":1,"event":{"type":"plugin_diagnostic","plugin":"fx","kind":"rate_limited","message":"m","count":1},"timestamp":"2026-01-01T00:00:00Z"}})");
  CHECK(ids(diag.run()) == V{"EVT-18"});
}

TEST_CASE("INIT-21 a declaration problem is the plugin's, and the engine must then refuse", "[rules][init]") {
  const std::string bad_tools =
      R"([{"name":"echo","description":"","parameters":{"type":"object"},"permission_name":"echo","primary_resource_param":null}])";
  Script s;
  s.handshake(initResult("", bad_tools)).e2p(R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":")" + kS1 +
                                             R"(","context_id":"a","seq":1,"event":{"type":"run_started"},"timestamp":"2026-01-01T00:00:00Z"}})");
  auto f = s.run();
  INFO(describe(f));
  REQUIRE(ids(f) == V{"INIT-21", "INIT-21"});
  CHECK(f[0].binds == conform::reports::kBindsPlugin);
  CHECK(f[1].binds == conform::reports::kBindsEngine);
}

TEST_CASE("SDK-05 a 0.0.6 plugin reporting publish_session_events is flagged as advisory", "[rules][sdk]") {
  Script s;
  s.handshake(initResult(R"({"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":true,"producer_messaging":false,"intercept":[]})"));
  auto f = s.run();
  REQUIRE(ids(f) == V{"SDK-05"});
  CHECK(f[0].level != Level::Must);
}

TEST_CASE("EMIT-17 the published result explains the rejected durable route", "[rules][emit]") {
  const std::string caps =
      R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":false,"publish_bus":true,"publish_session_events":true,"producer_messaging":false,"intercept":[]})";
  const std::string ev = R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":")" + kS1 +
                         R"(","context_id":"a","seq":1,"event":{"type":"run_started"},"timestamp":"2026-01-01T00:00:00Z"}})";
  const std::string em = R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + kS1 +
                         R"(","context_id":"a","name":"n","payload":{}}})";
  Script bad, good;
  bad.handshake(initResult(caps)).e2p(ev).p2e(em).e2p(
      R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"n","bus":"published","durable":"rejected"}})");
  auto f = ids(bad.run());
  CHECK(std::find(f.begin(), f.end(), "EMIT-17") != f.end());
  good.handshake(initResult(caps)).e2p(ev).p2e(em).e2p(
      R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"n","bus":"published","durable":"rejected","reason":"durable session publication is not supported; use plugin/producer/send"}})");
  auto g = ids(good.run());
  CHECK(std::find(g.begin(), g.end(), "EMIT-17") == g.end());
}

TEST_CASE("SHUT-02 the engine closes stdin after plugin/shutdown", "[rules][shut]") {
  const std::string shut = R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})";
  Script bad, good, race;
  bad.handshake().e2p(shut, 100).exitSignal(9, 1200);
  CHECK(ids(bad.run()) == V{"SHUT-02"});
  good.handshake().e2p(shut, 100).eof(Dir::EngineToPlugin, 101).exitSignal(9, 1200);
  CHECK(good.run().empty());
  race.handshake().e2p(shut, 100).exitSignal(9, 200);  // within the tolerance: nothing claimed
  CHECK(race.run().empty());
}

// Rule-named tests for monitor judgements that had none (each proves both ways: the conforming
// trace is clean, the fault is caught under its rule).

TEST_CASE("TOOL-08 the engine calls only tools the plugin declared", "[rules][tool]") {
  Script good, bad;
  good.handshake(initResult("", kTools)).e2p(call(2, "")).p2e(ok(2, kSingle));
  CHECK(good.run().empty());
  bad.handshake(initResult("", kTools)).e2p(call(2, "", "undeclared_tool")).p2e(err(2, -32601));
  CHECK(engineIds(bad.run()) == V{"TOOL-08"});
}

TEST_CASE("BUS-01 bus events only to plugins that subscribed to the bus", "[rules][bus]") {
  const std::string bus_event = R"({"jsonrpc":"2.0","method":"plugin/bus_event","params":{"session_id":")" + kS1 +
                                R"(","context_id":"c-bus","plugin":"other","name":"x","payload":{}}})";
  Script good, bad;
  good.handshake().e2p(bus_event);
  CHECK(good.run().empty());
  bad.handshake(initResult(R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":false,"publish_bus":true,"publish_session_events":false,"producer_messaging":false,"intercept":["tool_before_call"]})"))
      .e2p(bus_event);
  CHECK(engineIds(bad.run()) == V{"BUS-01"});
}

TEST_CASE("RPC-07 engine request ids count 1, 2, 3, … from initialize", "[rules][rpc]") {
  auto ping = [](int id) { return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/ping","params":{}})"; };
  Script good, bad;
  good.handshake().e2p(ping(2)).p2e(ok(2, "{}")).e2p(ping(3)).p2e(ok(3, "{}"));
  CHECK(good.run().empty());
  bad.handshake().e2p(ping(2)).p2e(ok(2, "{}")).e2p(ping(7)).p2e(ok(7, "{}"));
  CHECK(engineIds(bad.run()) == V{"RPC-07"});
}

TEST_CASE("INIT-02 the engine offers the profile's protocol version", "[rules][init]") {
  std::string other = kInit;
  other.replace(other.find("\"0.0.6\""), 7, "\"0.0.5\"");
  Script good, bad;
  good.handshake();
  CHECK(good.run().empty());
  bad.e2p(other).p2e(initResult());
  // Both the version check and the params shape (the schema's const) name INIT-02.
  const V f = engineIds(bad.run(&conform::protocol::profileV006()));
  CHECK(std::set<std::string>(f.begin(), f.end()) == std::set<std::string>{"INIT-02"});
}

TEST_CASE("EMIT-16 the legacy durable route is always rejected in 0.0.6", "[rules][emit]") {
  const std::string bus_event = R"({"jsonrpc":"2.0","method":"plugin/bus_event","params":{"session_id":")" + kS1 +
                                R"(","context_id":"tok","plugin":"other","name":"x","payload":{}}})";
  const std::string emit = R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + kS1 +
                           R"(","context_id":"tok","name":"n","payload":{}}})";
  auto result = [](const char* durable) {
    return std::string(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"n","bus":"published","durable":")") +
           durable + R"("}})";
  };
  Script good, bad;
  good.handshake().e2p(bus_event).p2e(emit).e2p(result("rejected"));
  CHECK(good.run().empty());
  bad.handshake().e2p(bus_event).p2e(emit).e2p(result("published"));
  CHECK(engineIds(bad.run()) == V{"EMIT-16"});
}
