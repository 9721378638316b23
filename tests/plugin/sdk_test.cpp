// SDK rules driven in-process on the VirtualClock (issue 3 "Done when"). Each test is named after
// the rule it covers and proves both ways where the rule has two sides.
#include <catch2/catch.hpp>

#include "tests/plugin/harness.h"

using namespace conform;
using namespace conform::plugin;
using namespace conform::plugin::test;

namespace {
ToolDecl echoDecl(std::string name = "echo") {
  return makeTool(std::move(name), "Echo", R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})", "echo");
}
void echoHandler(Context, ToolCall c, ToolReply r) { r.ok(ToolResult::success(json::member(c.arguments, "text")->GetString())); }
}  // namespace

TEST_CASE("SDK-01 a plugin with no handlers completes handshake, ping and shutdown", "[sdk]") {
  Engine e(PluginBuilder("bare", "1.0"));
  auto init = e.handshake();
  CHECK(std::string(at(init, "result", "protocol_version")->GetString()) == "0.0.6");  // INIT-27
  e.send(R"({"jsonrpc":"2.0","id":2,"method":"plugin/ping","params":{}})");
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(out[0]) == R"({"jsonrpc":"2.0","id":2,"result":{}})");  // PING-01
  e.send(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
  CHECK(e.srv->state() == ServerState::Finished);
  CHECK(e.drain().empty());  // RPC-16: no answer to a notification
}

TEST_CASE("SDK-02 INIT-14 capability flags are derived from registrations only", "[sdk]") {
  Engine bare(PluginBuilder("p", "1"));
  CHECK(json::compact(*at(bare.handshake(), "result", "capabilities")) ==
        R"({"tools":false,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"producer_messaging":false,"intercept":[]})");
  PluginBuilder b("p", "1");
  b.tool(echoDecl(), echoHandler);
  Engine toolOnly(std::move(b));
  CHECK(json::compact(*at(toolOnly.handshake(), "result", "capabilities")) ==
        R"({"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"producer_messaging":false,"intercept":[]})");
  PluginBuilder all("p", "1");
  all.onEvent([](Context, const EventDelivery&, Completion) {})
      .onBusEvent([](Context, const BusDelivery&, Completion) {})
      .enableBusPublishing()
      .enableProducers()
      .sessionBeforeFork([](Context, const json::Value&, HookReply r) { r.answer(hooks::allow()); });
  Engine full(std::move(all));
  CHECK(json::compact(*at(full.handshake(), "result", "capabilities")) ==
        R"({"tools":false,"resources":false,"subscribe_events":true,"subscribe_bus":true,"publish_bus":true,"publish_session_events":false,"producer_messaging":true,"intercept":["session_before_fork"]})");
}

TEST_CASE("SDK-03 tool declarations are validated when the server is built", "[sdk]") {
  clock::VirtualClock clk;
  auto build = [&](ToolDecl d, std::optional<ToolDecl> second = std::nullopt) {
    PluginBuilder b("p", "1");
    b.tool(std::move(d), echoHandler);
    if (second) b.tool(std::move(*second), echoHandler);
    return b.build(clk);
  };
  CHECK(build(echoDecl()));
  CHECK(build(echoDecl(), echoDecl()).error().find("INIT-20") == 0);  // duplicate
  CHECK(build(echoDecl("EchoTool")).error().find("INIT-20") == 0);    // not snake_case
  CHECK_FALSE(build(makeTool("t", "", "{\"type\":\"object\"}", "t")));  // empty description
  CHECK_FALSE(build(makeTool("t", "d", "{\"type\":\"object\"}", "Bad-Perm")));
  CHECK_FALSE(build(makeTool("t", "d", "{\"type\":12}", "t")));           // invalid schema
  CHECK_FALSE(build(makeTool("t", "d", "[1]", "t")));                     // not an object schema
  CHECK_FALSE(build(makeTool("t", "d", "{\"type\":\"object\",\"properties\":{}}", "t", "path")));
  CHECK(build(makeTool("t", "d", "{\"type\":\"object\",\"properties\":{\"path\":{}}}", "t", "path")));
  CHECK(build(makeTool("t", "d", "{}", "t", std::nullopt, OutputDecl::namedStreams({"a", "b~.-_Z9"}))));
  CHECK_FALSE(build(makeTool("t", "d", "{}", "t", std::nullopt, OutputDecl::namedStreams({}))));
  CHECK_FALSE(build(makeTool("t", "d", "{}", "t", std::nullopt, OutputDecl::namedStreams({"a", "a"}))));
  CHECK_FALSE(build(makeTool("t", "d", "{}", "t", std::nullopt,
                             OutputDecl::namedStreams({"a", "b", "c", "d", "e", "f", "g", "h", "i"}))));
  CHECK_FALSE(build(makeTool("t", "d", "{}", "t", std::nullopt, OutputDecl::namedStreams({"a b"}))));
}

TEST_CASE("SDK-05 INIT-25 publish_session_events and resources are always false", "[sdk]") {
  Engine e(PluginBuilder("p", "1").enableBusPublishing());
  auto init = e.handshake();
  CHECK(at(init, "result", "capabilities")->GetObject()["publish_session_events"].GetBool() == false);
  CHECK(at(init, "result", "capabilities")->GetObject()["resources"].GetBool() == false);
}

namespace {
// A plugin that keeps each event's context so tests can emit later.
struct Captured {
  std::vector<Context> ctxs;
  std::vector<Result<EmitResult>> results;
};
PluginBuilder emitter(std::shared_ptr<Captured> cap, bool publish = true) {
  PluginBuilder b("p", "1");
  b.onEvent([cap](Context c, const EventDelivery&, Completion) { cap->ctxs.push_back(c); });
  if (publish) b.enableBusPublishing();
  return b;
}
void emitNow(Context& c, std::shared_ptr<Captured> cap, std::string name = "n") {
  json::Document p;
  p.SetObject();
  c.emitBus(kSession, std::move(name), p, [cap](Result<EmitResult> r) { cap->results.push_back(std::move(r)); });
}
}  // namespace

TEST_CASE("SDK-07 a notification grant is usable just under 4 s after decode and not at 4 s", "[sdk][grant]") {
  auto cap = std::make_shared<Captured>();
  Engine e(emitter(cap));
  e.handshake();
  e.send(event(1, "tok-1"));
  e.send(event(2, "tok-2"));
  REQUIRE(cap->ctxs.size() == 2);
  e.advance(std::chrono::milliseconds(3999));
  emitNow(cap->ctxs[0], cap);
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(method(out[0]) == "plugin/emit");
  CHECK(std::string(at(out[0], "params", "context_id")->GetString()) == "tok-1");
  e.advance(std::chrono::milliseconds(201));  // 4.2 s after decode
  emitNow(cap->ctxs[1], cap);
  CHECK(e.drain().empty());
  REQUIRE(cap->results.size() == 1);
  CHECK(cap->results[0].error().kind == ErrorKind::ContextUnavailable);
}

TEST_CASE("SDK-06 EMIT-06 each callback spends only its own grant, once", "[sdk][grant]") {
  auto cap = std::make_shared<Captured>();
  Engine e(emitter(cap));
  e.handshake();
  e.send(event(1, "tok-a"));
  e.send(event(2, "tok-b"));
  emitNow(cap->ctxs[0], cap);
  emitNow(cap->ctxs[1], cap);
  emitNow(cap->ctxs[0], cap);  // second use of tok-a: refused locally
  auto out = e.drain();
  REQUIRE(out.size() == 2);
  CHECK(std::string(at(out[0], "params", "context_id")->GetString()) == "tok-a");
  CHECK(std::string(at(out[1], "params", "context_id")->GetString()) == "tok-b");
  REQUIRE(cap->results.size() == 1);
  CHECK(cap->results[0].error().kind == ErrorKind::ContextUnavailable);
}

TEST_CASE("EMIT-24 without enableBusPublishing an emit fails locally and keeps the grant", "[sdk][grant]") {
  auto cap = std::make_shared<Captured>();
  Engine e(emitter(cap, /*publish=*/false));
  e.handshake();
  e.send(event(1));
  emitNow(cap->ctxs[0], cap);
  CHECK(e.drain().empty());
  REQUIRE(cap->results.size() == 1);
  CHECK(cap->results[0].error().kind == ErrorKind::PublishingNotEnabled);
}

TEST_CASE("EMIT-25 EMIT-26 emit results pair with pending emits by name, first in first out", "[sdk][grant]") {
  auto cap = std::make_shared<Captured>();
  Engine e(emitter(cap));
  e.handshake();
  for (int i = 1; i <= 3; ++i) e.send(event(i, "tok-" + std::to_string(i)));
  emitNow(cap->ctxs[0], cap, "a");
  emitNow(cap->ctxs[1], cap, "b");
  emitNow(cap->ctxs[2], cap, "a");
  e.drain();
  e.send(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"b","bus":"dropped","durable":"rejected","reason":"quota"}})");
  e.send(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"a","bus":"published","durable":"rejected"}})");
  e.send(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"a","bus":"rejected","durable":"rejected"}})");
  REQUIRE(cap->results.size() == 3);
  CHECK(cap->results[0]->bus == EmitStatus::Dropped);
  CHECK(cap->results[1]->bus == EmitStatus::Published);
  CHECK(cap->results[2]->bus == EmitStatus::Rejected);  // timing rejection surfaces as Rejected
}

TEST_CASE("BUS-06 a bus event without context_id gives its handler no grant", "[sdk][grant]") {
  auto cap = std::make_shared<Captured>();
  PluginBuilder b("p", "1");
  b.onBusEvent([cap](Context c, const BusDelivery&, Completion) { cap->ctxs.push_back(c); }).enableBusPublishing();
  Engine e(std::move(b));
  e.handshake();
  e.send(std::string(R"({"jsonrpc":"2.0","method":"plugin/bus_event","params":{"session_id":")") + kSession +
         R"(","plugin":"other","name":"x","payload":{}}})");
  e.send(std::string(R"({"jsonrpc":"2.0","method":"plugin/bus_event","params":{"session_id":")") + kSession +
         R"(","context_id":"tok-bus","plugin":"other","name":"x","payload":{}}})");
  REQUIRE(cap->ctxs.size() == 2);
  emitNow(cap->ctxs[0], cap);
  emitNow(cap->ctxs[1], cap);
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(std::string(at(out[0], "params", "context_id")->GetString()) == "tok-bus");
  CHECK(cap->results.at(0).error().kind == ErrorKind::ContextUnavailable);
}

TEST_CASE("FRAME-16 an oversized emit fails locally and nothing is written", "[sdk][grant]") {
  auto cap = std::make_shared<Captured>();
  Engine e(emitter(cap));
  e.handshake();
  e.send(event(1));
  json::Document big;
  big.SetString(std::string(wire::kMaxFrameBytes, 'x').c_str(), static_cast<rapidjson::SizeType>(wire::kMaxFrameBytes),
                big.GetAllocator());
  cap->ctxs[0].emitBus(kSession, "big", big, [cap](Result<EmitResult> r) { cap->results.push_back(std::move(r)); });
  CHECK(e.drain().empty());
  CHECK(cap->results.at(0).error().kind == ErrorKind::Oversized);
  CHECK(e.srv->state() == ServerState::Running);
}

TEST_CASE("SDK-17 SDK-18 PING-04 the 65th concurrent callback is refused with -32050 — ping still answers", "[sdk][bounds]") {
  auto held = std::make_shared<std::vector<ToolReply>>();
  PluginBuilder b("p", "1");
  b.tool(echoDecl("slow"), [held](Context, ToolCall, ToolReply r) { held->push_back(r); });
  b.onEvent([](Context, const EventDelivery&, Completion) {});
  Engine e(std::move(b));
  e.handshake();
  for (int i = 0; i < 64; ++i) e.send(toolCall(100 + i, "slow", R"({"text":"x"})"));
  CHECK(e.drain().empty());
  CHECK(e.srv->activeCallbacks() == 64);
  e.send(toolCall(200, "slow", R"({"text":"x"})"));
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(at(out[0], "error", "code")->GetInt() == kBusyCode);
  e.send(R"({"jsonrpc":"2.0","id":201,"method":"plugin/ping","params":{}})");
  out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(*at(out[0], "result")) == "{}");
  e.send(event(7));  // observational notification: dropped with a stderr line
  CHECK(e.logged("dropped plugin/event seq 7"));
  held->at(0).ok(ToolResult::success("done"));  // a slot frees up
  e.drain();
  e.send(toolCall(202, "slow", R"({"text":"x"})"));
  CHECK(e.drain().empty());  // accepted this time
}

TEST_CASE("SDK-19 SDK-20 at most 128 producer requests await replies — the 129th fails locally", "[sdk][bounds]") {
  auto results = std::make_shared<std::vector<Result<ProducerHandle>>>();
  PluginBuilder b("p", "1");
  b.enableProducers().onRecovery([results](Context c, RecoveryDone) {
    for (int i = 0; i < 129; ++i)
      c.registerProducer(kSession, [results](Result<ProducerHandle> r) { results->push_back(std::move(r)); });
  });
  Engine e(std::move(b));
  e.handshake();
  e.send(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  auto out = e.drain();
  CHECK(out.size() == 128);
  CHECK(at(out[0], "id")->GetInt() == 1);  // RPC-21
  REQUIRE(results->size() == 1);
  CHECK(results->at(0).error().kind == ErrorKind::TooManyPending);
  CHECK(e.srv->pendingReplies() == 128);
}

TEST_CASE("SDK-21 SDK-15 SDK-22 SDK-11 recovery runs in its own slot while 64 callbacks are busy, and its ACKs resolve", "[sdk][bounds]") {
  auto held = std::make_shared<std::vector<ToolReply>>();
  auto handle = std::make_shared<std::optional<ProducerHandle>>();
  PluginBuilder b("p", "1");
  b.tool(echoDecl("slow"), [held](Context, ToolCall, ToolReply r) { held->push_back(r); });
  b.enableProducers().onRecovery([handle](Context c, RecoveryDone done) {
    c.registerProducer(kSession, [handle, done](Result<ProducerHandle> r) mutable {
      if (r) *handle = r.value();
      done.ready();
    });
  });
  Engine e(std::move(b));
  e.handshake();
  for (int i = 0; i < 64; ++i) e.send(toolCall(100 + i, "slow", R"({"text":"x"})"));
  e.send(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(method(out[0]) == "plugin/producer/register");
  e.send(R"({"jsonrpc":"2.0","id":1,"result":{"producer_id":"0191c0de-0000-7000-8000-0000000000a1"}})");  // SDK-22: ACK while saturated
  REQUIRE(handle->has_value());
  CHECK((*handle)->id() == "0191c0de-0000-7000-8000-0000000000a1");           // SDK-11
  CHECK((*handle)->sessionId() == kSession);
  out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(*at(out[0], "params")) == R"({"outcome":{"status":"ready"}})");
}

TEST_CASE("SDK-16 without a recovery callback the SDK completes recovery as ready at once", "[sdk][recovery]") {
  Engine e(PluginBuilder("p", "1").enableProducers());
  e.handshake();
  e.send(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(method(out[0]) == "plugin/recovery/complete");
  CHECK(json::compact(*at(out[0], "params")) == R"({"outcome":{"status":"ready"}})");
}

TEST_CASE("SDK-14 a failing recovery callback reports failed with its message", "[sdk][recovery]") {
  PluginBuilder b("p", "1");
  b.enableProducers().onRecovery([](Context c, RecoveryDone d) {
    c.after(std::chrono::seconds(90), [d]() mutable { d.failed("x"); });  // RECOV-07: no deadline
  });
  Engine e(std::move(b));
  e.handshake();
  e.send(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  CHECK(e.drain().empty());
  e.advance(std::chrono::seconds(90));
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(*at(out[0], "params")) == R"({"outcome":{"status":"failed","message":"x"}})");
}

namespace {
struct ProducerRig {
  std::shared_ptr<std::optional<ProducerHandle>> handle = std::make_shared<std::optional<ProducerHandle>>();
  std::shared_ptr<std::vector<std::string>> events = std::make_shared<std::vector<std::string>>();
  std::unique_ptr<Engine> e;
  ProducerRig() {
    PluginBuilder b("p", "1");
    auto h = handle;
    b.enableProducers().onRecovery([h](Context c, RecoveryDone done) {
      c.registerProducer(kSession, [h](Result<ProducerHandle> r) { if (r) *h = r.value(); });
      done.ready();
    });
    e = std::make_unique<Engine>(std::move(b));
    e->handshake();
    e->send(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
    e->drain();
    e->send(R"({"jsonrpc":"2.0","id":1,"result":{"producer_id":"0191c0de-0000-7000-8000-0000000000a1"}})");
    e->send(R"({"jsonrpc":"2.0","id":2,"result":{}})");
  }
};
}  // namespace

TEST_CASE("SDK-09 SDK-10 a producer handle stays usable after its callback and returns the receipt", "[sdk][producer]") {
  std::optional<Result<std::string>> receipt;
  ProducerRig rig;
  REQUIRE(rig.handle->has_value());
  auto key = IdempotencyKey::make("job-1");
  REQUIRE(key);
  (*rig.handle)->queue("body", "compact", key.value(), [&](Result<std::string> r) { receipt = std::move(r); });
  auto out = rig.e->drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(*at(out[0], "params")) ==
        R"({"session_id":"0191c0de-0000-7000-8000-000000000001","producer_id":"0191c0de-0000-7000-8000-0000000000a1","mode":"queue","idempotency_key":"job-1","description":"compact","body":"body"})");
  rig.e->send(std::string(R"({"jsonrpc":"2.0","id":)") + std::to_string(at(out[0], "id")->GetInt()) +
              R"(,"result":{"message_id":"0191c0de-0000-7000-8000-0000000000b1"}})");
  REQUIRE(receipt);
  CHECK(receipt->value() == "0191c0de-0000-7000-8000-0000000000b1");
}

TEST_CASE("PROD-11 PROD-12 keys and descriptions are validated before anything is written", "[sdk][producer]") {
  CHECK_FALSE(IdempotencyKey::make(""));
  CHECK(IdempotencyKey::make(std::string(256, 'k')));
  CHECK_FALSE(IdempotencyKey::make(std::string(257, 'k')));
  CHECK_FALSE(IdempotencyKey::make("a\tb"));
  CHECK_FALSE(IdempotencyKey::make("a\xc2\x85" "b"));  // U+0085 is Cc
  CHECK_FALSE(checkDescription(std::string(1024, 'd')));
  CHECK(checkDescription(std::string(1025, 'd')));
  CHECK(checkDescription("   "));
  CHECK(checkDescription("a\nb"));
  std::optional<Result<std::string>> r;
  ProducerRig rig;
  (*rig.handle)->steer("b", "   ", IdempotencyKey::make("k").value(), [&](Result<std::string> x) { r = std::move(x); });
  CHECK(rig.e->drain().empty());
  CHECK(r->error().kind == ErrorKind::InvalidArgument);
}

TEST_CASE("SDK-12 PROD-25 unregister can be retried after a rejection — dropping a handle sends nothing", "[sdk][producer]") {
  std::vector<Result<Ok>> results;  // outlives the rig: teardown fails pending calls into it
  ProducerRig rig;
  (*rig.handle)->unregister([&](Result<Ok> r) { results.push_back(std::move(r)); });
  auto out = rig.e->drain();
  REQUIRE(out.size() == 1);
  rig.e->send(std::string(R"({"jsonrpc":"2.0","id":)") + std::to_string(at(out[0], "id")->GetInt()) +
              R"(,"error":{"code":-32042,"message":"stale"}})");
  (*rig.handle)->unregister([&](Result<Ok> r) { results.push_back(std::move(r)); });
  out = rig.e->drain();
  REQUIRE(out.size() == 1);
  CHECK(method(out[0]) == "plugin/producer/unregister");
  REQUIRE(results.size() == 1);
  CHECK(results[0].error().code == -32042);
  rig.handle->reset();  // dropping the handle
  CHECK(rig.e->drain().empty());
}

TEST_CASE("SDK-13 discard works after unregister and by receipt without a registration", "[sdk][producer]") {
  ProducerRig rig;
  (*rig.handle)->unregister({});
  (*rig.handle)->discard("0191c0de-0000-7000-8000-0000000000b9", {});
  auto out = rig.e->drain();
  REQUIRE(out.size() == 2);
  CHECK(method(out[1]) == "plugin/producer/discard");
  CHECK(json::compact(*at(out[1], "params")) == R"({"session_id":"0191c0de-0000-7000-8000-000000000001","message_id":"0191c0de-0000-7000-8000-0000000000b9"})");
}

TEST_CASE("SDK-23 SHUT-09 a disconnect fails pending producer calls with TransportClosed", "[sdk][producer]") {
  std::optional<Result<std::string>> r;
  ProducerRig rig;
  (*rig.handle)->steer("b", "d", IdempotencyKey::make("k").value(), [&](Result<std::string> x) { r = std::move(x); });
  rig.e->drain();
  rig.e->send(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
  REQUIRE(r);
  CHECK(r->error().kind == ErrorKind::TransportClosed);
  CHECK(rig.e->srv->state() == ServerState::Finished);
}

TEST_CASE("SHUT-09 in-flight handlers are abandoned without a response after shutdown", "[sdk]") {
  auto held = std::make_shared<std::vector<ToolReply>>();
  PluginBuilder b("p", "1");
  b.tool(echoDecl("slow"), [held](Context, ToolCall, ToolReply r) { held->push_back(r); });
  Engine e(std::move(b));
  e.handshake();
  e.send(toolCall(5, "slow", R"({"text":"x"})"));
  e.send(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
  held->at(0).ok(ToolResult::success("late"));
  CHECK(e.drain().empty());
}

TEST_CASE("TOOL-31 unknown tool, bad arguments, handler failure and handler panic", "[sdk][tools]") {
  PluginBuilder b("p", "1");
  b.tool(echoDecl(), echoHandler);
  b.tool(echoDecl("fails"), [](Context, ToolCall, ToolReply r) { r.fail(ToolFailure{kToolFailureCode, "nope"}); });
  b.tool(echoDecl("panics"), [](Context, ToolCall, ToolReply) { throw std::runtime_error("boom"); });
  Engine e(std::move(b));
  e.handshake();
  e.send(toolCall(2, "missing", R"({"text":"x"})"));
  e.send(toolCall(3, "echo", R"({"text":5})"));
  e.send(R"({"jsonrpc":"2.0","id":4,"method":"plugin/tools/call","params":{"tool":"echo"}})");
  e.send(toolCall(5, "fails", R"({"text":"x"})"));
  e.send(toolCall(6, "panics", R"({"text":"x"})"));
  e.send(toolCall(7, "echo", R"({"text":"hi"})"));
  auto out = e.drain();
  REQUIRE(out.size() == 6);
  CHECK(at(out[0], "error", "code")->GetInt() == -32601);
  CHECK(at(out[1], "error", "code")->GetInt() == -32602);
  CHECK(at(out[2], "error", "code")->GetInt() == -32602);
  CHECK(at(out[3], "error", "code")->GetInt() == -32000);
  CHECK(at(out[4], "error", "code")->GetInt() == -32603);
  CHECK(json::compact(out[5]) == R"({"jsonrpc":"2.0","id":7,"result":{"output":{"kind":"single","text":"hi"},"is_error":false}})");
}

TEST_CASE("TOOL-11 TOOL-12 named output lists every declared stream — mismatches never reach the wire", "[sdk][tools]") {
  PluginBuilder b("p", "1");
  b.tool(makeTool("report", "r", "{}", "report", std::nullopt, OutputDecl::namedStreams({"results", "errors"})),
         [](Context, ToolCall c, ToolReply r) {
           if (c.invocation_id == uuid(2)) r.ok(ToolResult::namedOutput({{"errors", ""}, {"results", "ok"}}));
           else r.ok(ToolResult::namedOutput({{"results", "ok"}}));
         });
  Engine e(std::move(b));
  e.handshake();
  e.send(toolCall(2, "report", "{}"));
  e.send(toolCall(3, "report", "{}"));
  auto out = e.drain();
  REQUIRE(out.size() == 2);
  CHECK(json::compact(*at(out[0], "result")) ==
        R"({"output":{"kind":"named","streams":[{"stream":"errors","text":""},{"stream":"results","text":"ok"}]},"is_error":false})");
  CHECK(at(out[1], "error", "code")->GetInt() == kInternalError);
}

TEST_CASE("TOOL-10 the 0.0.4 profile answers with content and declares no output", "[sdk][tools]") {
  PluginBuilder b("p", "1");
  b.profile(Profile::V004).tool(echoDecl(), echoHandler);
  Engine e(std::move(b));
  auto init = e.handshake(kInit004);
  CHECK(std::string(at(init, "result", "protocol_version")->GetString()) == "0.0.4");
  CHECK(json::member(*at(init, "result", "capabilities"), "producer_messaging") == nullptr);
  CHECK(json::member((*at(init, "result", "tools"))[0], "output") == nullptr);
  e.send(toolCall(2, "echo", R"({"text":"hi"})"));
  CHECK(json::compact(*at(e.drain().at(0), "result")) == R"({"content":"hi","is_error":false})");
}

TEST_CASE("HOOK-14 unregistered hook -32601, bad params -32602, handler panic -32603", "[sdk][hooks]") {
  PluginBuilder b("p", "1");
  b.toolBeforeCall([](Context, const json::Value&, HookReply r) { r.answer(hooks::block("no", "denied")); });
  b.sessionBeforeFork([](Context, const json::Value&, HookReply) { throw 1; });
  Engine e(std::move(b));
  e.handshake();
  std::string s = std::string("\"session_id\":\"") + kSession + "\",\"context_id\":\"c\"";
  e.send(R"({"jsonrpc":"2.0","id":2,"method":"plugin/intercept/message_end","params":{)" + s +
         R"(,"attempt_id":"0191c0de-0000-7000-8000-0000000000c1","role":"assistant","content":[]}})");
  e.send(R"({"jsonrpc":"2.0","id":3,"method":"plugin/intercept/tool_before_call","params":{)" + s + R"(,"tool":"t"}})");
  e.send(R"({"jsonrpc":"2.0","id":4,"method":"plugin/intercept/session_before_fork","params":{)" + s + R"(,"through_seq":3}})");
  e.send(R"({"jsonrpc":"2.0","id":5,"method":"plugin/intercept/tool_before_call","params":{)" + s +
         R"(,"tool":"t","arguments":{},"permission_name":"t","resource":null}})");
  auto out = e.drain();
  REQUIRE(out.size() == 4);
  CHECK(at(out[0], "error", "code")->GetInt() == -32601);
  CHECK(at(out[1], "error", "code")->GetInt() == -32602);
  CHECK(at(out[2], "error", "code")->GetInt() == -32603);
  CHECK(json::compact(*at(out[3], "result")) == R"({"action":"block","reason":"no","message_to_model":"denied"})");
}

TEST_CASE("SDK-24 hook helpers build the closed result of every hook", "[sdk][hooks]") {
  CHECK(json::compact(hooks::appendPrompt("x")) == R"({"append_to_system_prompt":"x"})");
  CHECK(json::compact(hooks::replacePrompt("x")) == R"({"replace_system_prompt":"x"})");
  CHECK(json::compact(hooks::injectMessage("user", "hi")) == R"({"inject_message":{"role":"user","content":"hi"}})");
  CHECK(json::compact(hooks::cancelCompaction("r")) == R"({"cancel":true,"reason":"r"})");
  CHECK(json::compact(hooks::overrideRevertInstructions("i")) == R"({"action":"override","instructions_override":"i"})");
  CHECK(json::compact(hooks::inputTransform("t")) == R"({"action":"transform","new_text":"t"})");
  CHECK(json::compact(hooks::replaceResult("c")) == R"({"action":"replace","replacement_content":"c"})");
  CHECK(json::compact(hooks::passThrough(Hook::ProviderAfterResponse)) == "{}");  // HOOK-47
  CHECK(allHooks().size() == 13);  // HOOK-03
}

TEST_CASE("RPC-15 unknown requests get -32601 and unknown notifications are ignored", "[sdk][rpc]") {
  Engine e(PluginBuilder("p", "1"));
  e.handshake();
  e.send(R"({"jsonrpc":"2.0","method":"plugin/future_notice","params":{}})");
  e.send(R"({"jsonrpc":"2.0","id":"s-1","method":"plugin/future","params":{}})");
  auto out = e.drain();
  REQUIRE(out.size() == 1);
  CHECK(json::compact(out[0]) == R"({"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"plugin method is not supported"}})");
}

TEST_CASE("RPC-08 ids are echoed with the same JSON type and value", "[sdk][rpc]") {
  Engine e(PluginBuilder("p", "1"));
  e.send(R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"plugin/ping","params":{}})");
  e.send(R"({"jsonrpc":"2.0","id":"abc","method":"plugin/ping","params":{}})");
  auto out = e.drainText();
  REQUIRE(out.size() == 2);
  CHECK(out[0] == R"({"jsonrpc":"2.0","id":9223372036854775807,"result":{}})");
  CHECK(out[1] == R"({"jsonrpc":"2.0","id":"abc","result":{}})");
}

TEST_CASE("SDK-25 malformed frames and envelopes are fatal — nothing is answered", "[sdk][fatal]") {
  auto fatalFor = [](std::string_view frame) {
    Engine e(PluginBuilder("p", "1"));
    e.send(frame);
    return std::make_pair(e.srv->state(), e.drain().size());
  };
  CHECK(fatalFor("{bad") == std::make_pair(ServerState::Failed, std::size_t(0)));                      // FRAME-13
  CHECK(fatalFor("") == std::make_pair(ServerState::Failed, std::size_t(0)));                          // FRAME-10
  CHECK(fatalFor("\xEF\xBB\xBF{}") == std::make_pair(ServerState::Failed, std::size_t(0)));            // FRAME-14
  CHECK(fatalFor(R"({"jsonrpc":"1.0","id":1,"method":"plugin/ping","params":{}})").first == ServerState::Failed);  // RPC-01
  CHECK(fatalFor(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{},"x":1})").first == ServerState::Failed);  // RPC-03
  CHECK(fatalFor(R"({"jsonrpc":"2.0","id":1.5,"method":"plugin/ping","params":{}})").first == ServerState::Failed);  // RPC-05
  CHECK(fatalFor(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping"})").first == ServerState::Failed);  // RPC-11
  CHECK(fatalFor(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{"x":1}})").first == ServerState::Failed);  // SHUT-10
  CHECK(fatalFor(R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}})").first == ServerState::Failed);  // RPC-04
  CHECK(fatalFor(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"n"}})").first == ServerState::Failed);
  CHECK(fatalFor(R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{}})").first == ServerState::Failed);
  // ...and the conforming counterparts keep the server running.
  CHECK(fatalFor("[]").first == ServerState::Running);  // FRAME-12
  CHECK(fatalFor("42").first == ServerState::Running);
  CHECK(fatalFor(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{}})") ==
        std::make_pair(ServerState::Running, std::size_t(1)));
}

TEST_CASE("FRAME-05 FRAME-07 decoder errors are fatal — FRAME-18 EOF ends the run normally", "[sdk][fatal]") {
  Engine a(PluginBuilder("p", "1"));
  wire::FrameEvent bad;
  bad.kind = wire::FrameEvent::Kind::InvalidUtf8;
  a.srv->receive(bad);
  a.srv->process();
  CHECK(a.srv->state() == ServerState::Failed);
  CHECK(a.srv->failure().find("FRAME-05") == 0);
  Engine b(PluginBuilder("p", "1"));
  wire::FrameEvent big;
  big.kind = wire::FrameEvent::Kind::Oversized;
  b.srv->receive(big);
  b.srv->process();
  CHECK(b.srv->failure().find("FRAME-07") == 0);
  Engine c(PluginBuilder("p", "1"));
  c.srv->receiveEof();
  c.srv->process();
  CHECK(c.srv->state() == ServerState::Finished);
}

TEST_CASE("EVT-10 EVT-11 unknown event types and members are passed through opaquely", "[sdk][events]") {
  auto types = std::make_shared<std::vector<std::string>>();
  PluginBuilder b("p", "1");
  b.onEvent([types](Context, const EventDelivery& d, Completion) { types->push_back(d.type()); });
  Engine e(std::move(b));
  e.handshake();
  e.send(event(1, "c", "future_event"));
  CHECK(e.srv->state() == ServerState::Running);
  REQUIRE(types->size() == 1);
  CHECK(types->at(0) == "future_event");
}

TEST_CASE("SDK-20 the inbound queue holds 32 frames and applies back-pressure without dropping", "[sdk][bounds]") {
  Engine e(PluginBuilder("p", "1"));
  for (int i = 0; i < 32; ++i) e.srv->receiveFrame(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{}})");
  CHECK_FALSE(e.srv->canAcceptFrame());
  e.srv->process();
  CHECK(e.srv->canAcceptFrame());
  CHECK(e.drain().size() == 32);
}

TEST_CASE("SDK-19 writers wait while 128 outbound frames are queued — nothing is dropped", "[sdk][bounds]") {
  Engine e(PluginBuilder("p", "1"));
  for (int i = 0; i < 130; ++i) {
    e.srv->receiveFrame(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{}})");
    if (!e.srv->canAcceptFrame()) e.srv->process();
  }
  e.srv->process();
  CHECK(e.srv->outboundSize() == 128);
  e.drain();
  e.srv->process();
  CHECK(e.drain().size() == 2);
}
