// More SDK rules in-process on the VirtualClock (SDK-04, SDK-08, SDK-23 retry, SDK-26, SDK-27,
// EVT-23), and behaviour-file decoding (docs/reference-plugin.md).
#include <catch2/catch.hpp>

#include "mock_plugin/behaviour.h"
#include "tests/plugin/harness.h"

using namespace conform;
using namespace conform::plugin;
using namespace conform::plugin::test;

namespace {
const std::string kProducerId = uuid(501);
const std::string kMessageId = uuid(502);
const char* kRecoveryStart = R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})";
const char* kPing = R"({"jsonrpc":"2.0","id":77,"method":"plugin/ping","params":{}})";

std::string answer(const json::Value& request, std::string_view result) {
  return R"({"jsonrpc":"2.0","id":)" + json::compact(*json::member(request, "id")) + R"(,"result":)" +
         std::string(result) + "}";
}
std::string answerError(const json::Value& request, int code, std::string_view message) {
  return R"({"jsonrpc":"2.0","id":)" + json::compact(*json::member(request, "id")) + R"(,"error":{"code":)" +
         std::to_string(code) + R"(,"message":")" + std::string(message) + R"("}})";
}
// Plays the engine for producer requests until the plugin has nothing more to say; returns the
// methods (and params) it asked for, in order. `override` may answer a request itself.
struct Served {
  std::vector<std::string> methods;
  std::vector<std::string> params;
};
Served serveProducer(Engine& e, std::function<std::optional<std::string>(const json::Value&)> override = {}) {
  Served s;
  for (int round = 0; round < 16; ++round) {
    auto out = e.drain();
    if (out.empty()) break;
    for (auto& f : out) {
      std::string m = method(f);
      s.methods.push_back(m);
      s.params.push_back(at(f, "params") ? json::compact(*at(f, "params")) : "");
      if (override) {
        if (auto a = override(f)) {  // an empty answer: say nothing
          if (!a->empty()) e.send(*a);
          continue;
        }
      }
      if (m == "plugin/producer/register") e.send(answer(f, R"({"producer_id":")" + kProducerId + R"("})"));
      else if (m == "plugin/producer/send") e.send(answer(f, R"({"message_id":")" + kMessageId + R"("})"));
      else if (json::member(f, "id")) e.send(answer(f, "{}"));
    }
  }
  return s;
}
}  // namespace

TEST_CASE("SDK-04 bus publishing is off by default and enabled by enableBusPublishing", "[sdk]") {
  Engine off(PluginBuilder("p", "1"));
  CHECK(at(off.handshake(), "result", "capabilities")->GetObject()["publish_bus"].GetBool() == false);
  Engine on(PluginBuilder("p", "1").enableBusPublishing());
  CHECK(at(on.handshake(), "result", "capabilities")->GetObject()["publish_bus"].GetBool() == true);
}

TEST_CASE("SDK-08 the engine's timing rejection of a locally valid emit is reported as Rejected", "[sdk][grant]") {
  auto ctxs = std::make_shared<std::vector<Context>>();
  PluginBuilder b("p", "1");
  b.onEvent([ctxs](Context c, const EventDelivery&, Completion) { ctxs->push_back(c); }).enableBusPublishing();
  Engine e(std::move(b));
  e.handshake();
  e.send(event(1, "tok-late"));
  e.advance(std::chrono::milliseconds(3900));  // still inside the SDK's 4 s margin: written
  std::optional<Result<EmitResult>> got;
  json::Document payload;
  payload.SetObject();
  ctxs->at(0).emitBus(kSession, "late", payload, [&](Result<EmitResult> r) { got = std::move(r); });
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(method(out[0]) == "plugin/emit");
  // The engine judged the grant expired on its own clock: the SDK does not second-guess it.
  e.send(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"late","bus":"rejected","durable":"rejected","reason":"context_expired"}})");
  REQUIRE(got);
  REQUIRE(got->has_value());
  CHECK((*got)->bus == EmitStatus::Rejected);
  CHECK((*got)->reason == std::optional<std::string>("context_expired"));
}

TEST_CASE("SDK-26 event and bus handler panics go to stderr — no frame — the connection continues", "[sdk][panic]") {
  PluginBuilder b("p", "1");
  b.onEvent([](Context, const EventDelivery&, Completion) { throw std::runtime_error("boom"); });
  b.onBusEvent([](Context, const BusDelivery&, Completion) { throw 42; });
  Engine e(std::move(b));
  e.handshake();
  e.send(event(1));
  e.send(std::string(R"({"jsonrpc":"2.0","method":"plugin/bus_event","params":{"session_id":")") + kSession +
         R"(","plugin":"other","name":"x","payload":{}}})");
  CHECK(e.drain().empty());
  CHECK(e.logged("event handler panicked"));
  CHECK(e.logged("bus handler panicked"));
  CHECK(e.srv->activeCallbacks() == 0);  // the slots were released with the unwound completions
  e.send(kPing);
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(out[0]) == R"({"jsonrpc":"2.0","id":77,"result":{}})");
  CHECK(e.srv->state() == ServerState::Running);
}

TEST_CASE("EVT-23 an event-handler panic is logged, sends nothing, and ping still answers", "[sdk][panic][events]") {
  int calls = 0;
  PluginBuilder b("p", "1");
  b.onEvent([&calls](Context, const EventDelivery&, Completion) {
    if (++calls == 1) throw std::logic_error("first event panics");
  });
  Engine e(std::move(b));
  e.handshake();
  e.send(event(1));
  e.send(event(2));
  CHECK(calls == 2);  // the next event is still delivered
  CHECK(e.drain().empty());
  CHECK(e.logged("EVT-23"));
  e.send(kPing);
  CHECK(e.drain().size() == 1);
}

// ---------------------------------------------------------------------------------------------
// SDK-27: the producer example, and SDK-23: its retry after a reconnect
// ---------------------------------------------------------------------------------------------

TEST_CASE("SDK-27 the producer example registers, steers with a stable key, unregisters and completes", "[sdk][example]") {
  Engine e(producerExample({kSession, std::nullopt}));
  auto init = e.handshake();
  CHECK(at(init, "result", "capabilities")->GetObject()["producer_messaging"].GetBool());
  e.send(kRecoveryStart);
  auto s = serveProducer(e);
  CHECK(s.methods == std::vector<std::string>{"plugin/producer/register", "plugin/producer/send",
                                              "plugin/producer/unregister", "plugin/recovery/complete"});
  CHECK(s.params[0] == std::string(R"({"session_id":")") + kSession + R"("})");
  CHECK(s.params[1].find(R"("mode":"steer","idempotency_key":")" + producerExampleKey(kSession) + "\"") !=
        std::string::npos);
  CHECK(s.params[3] == R"({"outcome":{"status":"ready"}})");
}

TEST_CASE("SDK-27 with COOKIE_DISCARD_MESSAGE_ID the example only discards that receipt during recovery", "[sdk][example]") {
  Engine e(producerExample({kSession, kMessageId}));
  e.handshake();
  e.send(kRecoveryStart);
  auto s = serveProducer(e);
  CHECK(s.methods == std::vector<std::string>{"plugin/producer/discard", "plugin/recovery/complete"});
  CHECK(s.params[0] == std::string(R"({"session_id":")") + kSession + R"(","message_id":")" + kMessageId + R"("})");
  CHECK(s.params[1] == R"({"outcome":{"status":"ready"}})");
}

TEST_CASE("SDK-27 a consumed or claimed receipt makes the example's recovery report failed", "[sdk][example]") {
  for (const char* why : {"message already consumed", "message is claimed"}) {
    INFO(why);
    Engine e(producerExample({kSession, kMessageId}));
    e.handshake();
    e.send(kRecoveryStart);
    auto s = serveProducer(e, [why](const json::Value& f) -> std::optional<std::string> {
      if (method(f) == "plugin/producer/discard") return answerError(f, -32602, why);
      return std::nullopt;
    });
    REQUIRE(s.methods.size() == 2);
    CHECK(s.methods[1] == "plugin/recovery/complete");
    CHECK(s.params[1].find(R"("status":"failed")") != std::string::npos);
    CHECK(s.params[1].find(why) != std::string::npos);  // visible, not a silent success
  }
}

TEST_CASE("SDK-27 without COOKIE_SESSION_ID recovery is ready at once and the first event's session is used",
          "[sdk][example]") {
  Engine e(producerExample({std::nullopt, std::nullopt}));
  e.handshake();
  e.send(kRecoveryStart);
  auto s = serveProducer(e);
  CHECK(s.methods == std::vector<std::string>{"plugin/recovery/complete"});
  e.send(event(1));
  e.send(event(2));  // same session: produces once
  s = serveProducer(e);
  CHECK(s.methods == std::vector<std::string>{"plugin/producer/register", "plugin/producer/send",
                                              "plugin/producer/unregister"});
}

TEST_CASE("SDK-23 SDK-28 after a disconnect mid-send the example re-registers and retries the same body, mode and key",
          "[sdk][example][producer]") {
  std::string first_send;
  {
    Engine e(producerExample({kSession, std::nullopt}));
    e.handshake();
    e.send(kRecoveryStart);
    auto s = serveProducer(e, [&](const json::Value& f) -> std::optional<std::string> {
      if (method(f) == "plugin/producer/send") {
        first_send = json::compact(*at(f, "params"));
        e.srv->disconnect();  // the ACK never arrives: commit-uncertain (SDK-23)
        return std::string();  // nothing to send
      }
      return std::nullopt;
    });
    CHECK(e.srv->pendingReplies() == 0);  // the pending send failed with TransportClosed
    CHECK(e.srv->state() == ServerState::Finished);
  }
  REQUIRE_FALSE(first_send.empty());
  // The restarted plugin: a fresh registration (never reused, SDK-28), then the same send.
  Engine e(producerExample({kSession, std::nullopt}));
  e.handshake();
  e.send(kRecoveryStart);
  const std::string new_producer = uuid(777);
  auto s = serveProducer(e, [&](const json::Value& f) -> std::optional<std::string> {
    if (method(f) == "plugin/producer/register") return answer(f, R"({"producer_id":")" + new_producer + R"("})");
    return std::nullopt;
  });
  REQUIRE(s.methods.size() >= 2);
  CHECK(s.methods[0] == "plugin/producer/register");
  CHECK(s.methods[1] == "plugin/producer/send");
  auto expected = first_send;
  expected.replace(expected.find(kProducerId), kProducerId.size(), new_producer);
  CHECK(s.params[1] == expected);
}

// ---------------------------------------------------------------------------------------------
// Behaviour files
// ---------------------------------------------------------------------------------------------

TEST_CASE("behaviour files: errors name the key path", "[behaviour]") {
  auto err = [](std::string_view text) {
    auto r = parseBehaviour(text);
    return r ? std::string("(accepted)") : r.error();
  };
  CHECK(err("{") .find("not valid JSON") != std::string::npos);
  CHECK(err(R"({"nmae":"x"})").find("behaviour.nmae") != std::string::npos);  // closed objects
  CHECK(err(R"({"name":1})").find("behaviour.name: expected string") != std::string::npos);
  CHECK(err(R"({"profile":"0.0.5"})").find("behaviour.profile") != std::string::npos);
  CHECK(err(R"({"tools":[{"name":"t","description":"d","permission_name":"t","parameters":{},"response":{}}]})")
            .find("behaviour.tools[0].response: exactly one of") != std::string::npos);
  CHECK(err(R"({"tools":[{"name":"t","description":"d","permission_name":"t","parameters":{},"response":{"text":"a","echo":"b"}}]})")
            .find("behaviour.tools[0].response") != std::string::npos);
  CHECK(err(R"({"tools":[{"name":"t","description":"d","permission_name":"t","parameters":{},"output":{"kind":"named","streams":["a","b"]},"response":{"streams":{"a":"x"}}}]})")
            .find("behaviour.tools[0].response.streams: declared stream `b`") != std::string::npos);  // TOOL-11
  CHECK(err(R"({"tools":[{"name":"t","description":"d","permission_name":"t","parameters":{},"output":{"kind":"named","streams":["a"]},"response":{"streams":{"a":"x","z":"y"}}}]})")
            .find("behaviour.tools[0].response.streams.z") != std::string::npos);  // TOOL-12
  CHECK(err(R"({"hooks":{"tool_before_cal":{"answer":{}}}})").find("behaviour.hooks.tool_before_cal") != std::string::npos);
  CHECK(err(R"({"hooks":{"message_end":{"answer":[]}}})").find("behaviour.hooks.message_end.answer") != std::string::npos);
  CHECK(err(R"({"emits":[{"name":"x"}]})").find("behaviour.emits") != std::string::npos);  // needs events
  CHECK(err(R"({"producer":{"on":"recovery","sends":[]}})").find("behaviour.producer.session_id") != std::string::npos);
  CHECK(err(R"({"producer":{"on":"recovery","session_id":"s","sends":[{"key":"","description":"d","body":"b"}]}})")
            .find("behaviour.producer.sends[0].key") != std::string::npos);  // PROD-11
  CHECK(err(R"({"recovery":{"status":"failed"}})").find("behaviour.recovery.message") != std::string::npos);
  CHECK(err(R"({"profile":"0.0.4","recovery":{"status":"ready"}})").find("0.0.4") != std::string::npos);
  CHECK(err(R"({"name":"a","name":"b"})") != "(accepted)");  // duplicate keys are refused
  CHECK(err("{}") == "(accepted)");
}

TEST_CASE("behaviour files: declaration errors surface from build (SDK-03)", "[behaviour]") {
  auto spec = parseBehaviour(R"({"tools":[{"name":"BadName","description":"d","permission_name":"t","parameters":{},"response":{"text":"x"}}]})");
  REQUIRE(spec);
  clock::VirtualClock clk;
  auto built = behaviourBuilder(*spec).build(clk);
  REQUIRE_FALSE(built);
  CHECK(built.error().find("INIT-20") == 0);
}

TEST_CASE("behaviour files: an empty behaviour declares nothing and still handshakes (SDK-01)", "[behaviour]") {
  auto spec = parseBehaviour("{}");
  REQUIRE(spec);
  Engine e(behaviourBuilder(*spec));
  auto init = e.handshake();
  CHECK(json::compact(*at(init, "result", "capabilities")) ==
        R"({"tools":false,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"producer_messaging":false,"intercept":[]})");
}

TEST_CASE("behaviour files: a failed recovery outcome and a delayed hook answer", "[behaviour][recovery]") {
  auto spec = parseBehaviour(
      R"({"recovery":{"status":"failed","message":"store offline","delay_ms":250},"hooks":{"session_before_fork":{"answer":{"action":"block","reason":"no"},"delay_ms":1000}}})");
  REQUIRE(spec);
  Engine e(behaviourBuilder(*spec));
  e.handshake();
  e.send(kRecoveryStart);
  CHECK(e.drain().empty());
  e.advance(std::chrono::milliseconds(250));
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(*at(out[0], "params")) == R"({"outcome":{"status":"failed","message":"store offline"}})");
  e.send(hookRequest(9, Hook::SessionBeforeFork));
  CHECK(e.drain().empty());
  e.advance(std::chrono::milliseconds(1000));
  out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(*at(out[0], "result")) == R"({"action":"block","reason":"no"})");
}

TEST_CASE("INIT-26 any engine_version is accepted — the profile's protocol_version is required exactly", "[sdk][init]") {
  Engine e(PluginBuilder("p", "1"));
  std::string init = kInit006;
  init.replace(init.find(R"("engine_version":"t")"), 20, R"("engine_version":"x")");
  e.send(init);
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(at(out[0], "result") != nullptr);
  // PROTOCOL §18: exact version match before 1.0; a 0.0.6 SDK offered 0.0.7 stops with the rule named.
  Engine f(PluginBuilder("p", "1"));
  std::string v7 = kInit006;
  v7.replace(v7.find(R"("protocol_version":"0.0.6")"), 26, R"("protocol_version":"0.0.7")");
  f.send(v7);
  CHECK(f.drain().empty());
  CHECK(f.srv->state() == ServerState::Failed);
  CHECK(f.srv->failure().find("SDK-25") == 0);
}
