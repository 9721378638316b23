// tests/plugin/fixture_cb — the SDK fixture's callback tools (mock_plugin/fixture_callbacks.cpp) and
// the SdkDeviations fault knobs, in-process on a VirtualClock: each knob's default is the conforming
// SDK and the knob breaks exactly its rule (the process-level matrix is
// tests/catalogue/fixture_callbacks_test.cpp). Also the regression test of an SDK bug found while
// writing the fixture: notification grants ran from dispatch instead of the reader's decode.
#include <catch2/catch.hpp>

#include "mock_plugin/fixture.h"
#include "tests/plugin/harness.h"

using namespace conform;
using namespace conform::plugin;
using namespace conform::plugin::test;

namespace {

PluginBuilder fixture(std::string_view fault = "") {
  BehaviourOptions o;
  PluginBuilder b = builtinBehaviour(o);
  addCallbackFixtures(b, o, fault);
  return b;
}

std::string text(const json::Value& frame) {
  const json::Value* out = at(frame, "result", "output");
  if (!out) return "";
  return std::string(json::stringMember(*out, "text").value_or(""));
}
int errorCode(const json::Value& frame) {
  const json::Value* c = at(frame, "error", "code");
  return c && c->IsInt() ? c->GetInt() : 0;
}
std::string emitResult(std::string_view name, std::string_view bus) {
  return std::string(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":")") + std::string(name) +
         R"(","bus":")" + std::string(bus) + R"(","durable":"rejected"}})";
}
std::size_t count(const std::vector<json::Document>& out, std::string_view m) {
  std::size_t n = 0;
  for (const auto& f : out) n += method(f) == m ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("SDK-07 a notification grant runs from the reader's decode, also while the frame waits in the inbound queue",
          "[sdk][grant][fixture]") {
  // Regression: the grant clock started when the frame was dispatched. A frame the reader decoded
  // while the outbound queue was full (SDK-19) got a fresh 4 s on dispatch and could emit after the
  // engine's 5 s expiry.
  for (auto wait : {std::chrono::milliseconds(3500), std::chrono::milliseconds(4500)}) {
    auto results = std::make_shared<std::vector<Result<EmitResult>>>();
    PluginBuilder b("p", "1");
    b.enableBusPublishing();
    b.onEvent([results](Context ctx, const EventDelivery& ev, Completion) {
      ctx.emitBus(ev.session_id, "late", json::Document(rapidjson::kObjectType),
                  [results](Result<EmitResult> r) { results->push_back(std::move(r)); });
    });
    Engine e(std::move(b));
    e.handshake();
    for (int i = 0; i < static_cast<int>(kOutboundQueueFrames); ++i)
      e.send(R"({"jsonrpc":"2.0","id":)" + std::to_string(10 + i) + R"(,"method":"plugin/ping","params":{}})");
    REQUIRE(e.srv->outboundSize() == kOutboundQueueFrames);  // full: nothing more is dispatched
    e.send(event(1));                                         // decoded now, waits in the inbound queue
    e.advance(wait);
    CHECK(e.drain().size() == kOutboundQueueFrames);  // the engine reads again
    e.srv->process();
    auto out = e.drain();
    INFO(wait.count() << " ms");
    if (wait < kNotificationGrant) {
      CHECK(count(out, "plugin/emit") == 1);
      CHECK(results->empty());  // pending until plugin/emit_result
    } else {
      CHECK(count(out, "plugin/emit") == 0);
      REQUIRE(results->size() == 1);
      CHECK(results->at(0).error().kind == ErrorKind::ContextUnavailable);
    }
  }
}

TEST_CASE("RPC-10 fixture_sleep answers in completion order — fixture_fifo_answers holds the fast one back", "[fixture]") {
  for (std::string fault : {"", "fixture_fifo_answers"}) {
    Engine e(fixture(fault));
    e.handshake();
    e.send(toolCall(2, "fixture_sleep", R"({"ms":600})", "c2"));
    e.send(toolCall(3, "fixture_sleep", R"({"ms":0})", "c3"));
    e.advance(std::chrono::milliseconds(1));
    auto out = e.drain();
    INFO("fault: " << fault);
    if (fault.empty()) {
      REQUIRE(out.size() == 1);
      CHECK(at(out[0], "id")->GetInt() == 3);
      CHECK(text(out[0]) == "slept 0");
    } else {
      CHECK(out.empty());
    }
    e.advance(std::chrono::milliseconds(600));
    out = e.drain();
    REQUIRE(out.size() == (fault.empty() ? 1u : 2u));
    CHECK(at(out[0], "id")->GetInt() == 2);
  }
}

TEST_CASE("SDK-17 SDK-18 PING-04 saturation knobs: limit, code, ping through a slot", "[fixture][bounds]") {
  struct Row {
    const char* fault;
    bool refused_65th;
    int code;
    bool ping_ok;
  };
  for (Row r : {Row{"", true, kBusyCode, true}, Row{"callback_limit_65", false, 0, true},
                Row{"busy_code_32603", true, kInternalError, true}, Row{"ping_takes_slot", true, kBusyCode, false}}) {
    INFO("fault: " << r.fault);
    Engine e(fixture(r.fault));
    e.handshake();
    for (int i = 0; i < 64; ++i) e.send(toolCall(100 + i, "fixture_sleep", R"({"ms":5000})", "c"));
    CHECK(e.drain().empty());
    e.send(toolCall(200, "fixture_sleep", R"({"ms":5000})", "c"));
    auto out = e.drain();
    CHECK(out.size() == (r.refused_65th ? 1u : 0u));
    if (r.refused_65th && !out.empty()) CHECK(errorCode(out[0]) == r.code);
    e.send(R"({"jsonrpc":"2.0","id":201,"method":"plugin/ping","params":{}})");
    out = e.drain();
    REQUIRE(out.size() == 1);
    CHECK((at(out[0], "result") != nullptr) == r.ping_ok);
  }
}

TEST_CASE("SDK-26 EVT-23 fixture_panic: tool panics answer -32603, event panics only log — the knobs break each",
          "[fixture][panic]") {
  for (std::string fault : {"", "tool_panic_code_32000", "event_panic_fatal"}) {
    INFO("fault: " << fault);
    Engine e(fixture(fault));
    e.handshake();
    e.send(toolCall(2, "fixture_panic", R"({"where":"tool"})", "c"));
    auto out = e.drain();
    REQUIRE(out.size() == 1);
    CHECK(errorCode(out[0]) == (fault == "tool_panic_code_32000" ? kToolFailureCode : kInternalError));
    e.send(toolCall(3, "fixture_panic", R"({"where":"event"})", "c"));
    CHECK(text(e.drain().at(0)) == "armed event");
    e.send(event(1));
    CHECK(e.drain().empty());  // no frame either way
    CHECK(e.srv->state() == (fault == "event_panic_fatal" ? ServerState::Failed : ServerState::Running));
    if (fault == "event_panic_fatal") continue;
    CHECK(e.logged("event handler panicked"));
    e.send(toolCall(4, "fixture_panic", R"({"where":"fired"})", "c"));
    CHECK(text(e.drain().at(0)) == "fired");
  }
}

TEST_CASE("EMIT-25 EMIT-26 SDK-08 fixture_emit reports the status the engine sent, paired FIFO by name — the knobs break each",
          "[fixture][grant]") {
  struct Row {
    const char* fault;
    const char* a1;  // outcome of the first fixture.a emit (the engine answers rejected)
    const char* a2;  // of the second (published)
  };
  for (Row r : {Row{"", "tag=a1 bus=rejected durable=rejected", "tag=a2 bus=published durable=rejected"},
                Row{"emit_pairing_lifo", "tag=a1 bus=published durable=rejected", "tag=a2 bus=rejected durable=rejected"},
                Row{"emit_status_collapsed", "tag=a1 bus=dropped durable=rejected", "tag=a2 bus=published durable=rejected"},
                Row{"emit_optimistic", "tag=a1 bus=published durable=rejected", "tag=a2 bus=published durable=rejected"}}) {
    INFO("fault: " << r.fault);
    Engine e(fixture(r.fault));
    e.handshake();
    e.send(toolCall(2, "fixture_emit", R"({"name":"fixture.a","tag":"a1","group":"g","group_size":2})", "c2"));
    CHECK(e.drain().empty());  // waits for its group
    e.send(toolCall(3, "fixture_emit", R"({"name":"fixture.a","tag":"a2","group":"g","group_size":2})", "c3"));
    auto out = e.drain();
    REQUIRE(count(out, "plugin/emit") == 2);  // both pending together, each with its own token (SDK-06)
    CHECK(std::string(at(out[0], "params", "context_id")->GetString()) == "c2");
    CHECK(std::string(at(out[1], "params", "context_id")->GetString()) == "c3");
    e.send(emitResult("fixture.a", "rejected"));
    e.send(emitResult("fixture.a", "published"));
    out = e.drain();
    REQUIRE(out.size() == 2);
    std::map<int, std::string> by_id;
    for (const auto& f : out) by_id[at(f, "id")->GetInt()] = text(f);
    CHECK(by_id[2] == r.a1);
    CHECK(by_id[3] == r.a2);
  }
}

TEST_CASE("SDK-06 SDK-07 the session_shared_grant and grant_outlives_answer knobs", "[fixture][grant]") {
  {  // conforming: two concurrent calls of one session emit with their own tokens
    Engine e(fixture("session_shared_grant"));
    e.handshake();
    e.send(toolCall(2, "fixture_emit", R"({"name":"n","tag":"x","group":"g","group_size":2})", "c2"));
    e.send(toolCall(3, "fixture_emit", R"({"name":"n","tag":"y","group":"g","group_size":2})", "c3"));
    auto out = e.drain();
    REQUIRE(count(out, "plugin/emit") == 1);  // the shared grant is spent by the first
    CHECK(std::string(at(out[0], "params", "context_id")->GetString()) == "c3");
  }
  for (std::string fault : {"", "grant_outlives_answer"}) {
    INFO("fault: " << fault);
    Engine e(fixture(fault));
    e.handshake();
    e.send(toolCall(2, "fixture_emit", R"({"name":"late","after_answer":true})", "c2"));
    auto out = e.drain();
    CHECK(text(out.at(0)) == "answered");
    CHECK(count(out, "plugin/emit") == (fault.empty() ? 0u : 1u));
    e.send(toolCall(3, "fixture_status", R"({"what":"late_emit"})", "c3"));
    out = e.drain();
    if (fault.empty()) CHECK(text(out.at(0)) == "late_emit=error=ContextUnavailable");
    else CHECK(text(out.at(0)) == "late_emit=none");  // still waiting for its emit_result
  }
}

TEST_CASE("SDK-22 emit results reach a saturated SDK — the emit_result_needs_slot knob drops them", "[fixture][bounds]") {
  for (std::string fault : {"", "emit_result_needs_slot"}) {
    INFO("fault: " << fault);
    Engine e(fixture(fault));
    e.handshake();
    for (int i = 0; i < 63; ++i) e.send(toolCall(100 + i, "fixture_sleep", R"({"ms":5000})", "c"));
    e.send(toolCall(2, "fixture_emit", R"({"name":"sat"})", "c2"));
    CHECK(count(e.drain(), "plugin/emit") == 1);
    CHECK(e.srv->activeCallbacks() == 64);
    e.send(emitResult("sat", "published"));
    auto out = e.drain();
    if (fault.empty()) {
      REQUIRE(out.size() == 1);
      CHECK(text(out[0]) == "bus=published durable=rejected");
    } else {
      CHECK(out.empty());
      CHECK(e.logged("dropped plugin/emit_result"));
    }
  }
}

TEST_CASE("SDK-21 the recovery slot is outside the 64 — the recovery_takes_slot knob takes one of them", "[fixture][bounds]") {
  for (std::string fault : {"", "recovery_takes_slot"}) {
    INFO("fault: " << fault);
    BehaviourOptions o;
    PluginBuilder b = builtinBehaviour(o);
    addCallbackFixtures(b, o, fault);
    auto parked = std::make_shared<std::vector<RecoveryDone>>();
    b.onRecovery([parked](Context, RecoveryDone d) { parked->push_back(d); });  // held
    Engine e(std::move(b));
    e.handshake();
    e.send(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
    REQUIRE(parked->size() == 1);
    for (int i = 0; i < 64; ++i) e.send(toolCall(100 + i, "fixture_sleep", R"({"ms":5000})", "c"));
    auto out = e.drain();
    CHECK(out.size() == (fault.empty() ? 0u : 1u));  // the 64th is refused when recovery holds a slot
  }
}

TEST_CASE("EMIT-25 pending emits fail with TransportClosed on disconnect and on stdin EOF", "[sdk][grant][fixture]") {
  for (bool eof : {false, true}) {
    INFO("end: " << (eof ? "stdin EOF" : "disconnect"));
    auto results = std::make_shared<std::vector<Result<EmitResult>>>();
    auto held = std::make_shared<std::vector<ToolReply>>();
    PluginBuilder b("p", "1");
    b.enableBusPublishing();
    b.tool(makeTool("emit", "emit and hold", R"({"type":"object"})", "emit"),
           [results, held](Context ctx, ToolCall call, ToolReply r) {
             held->push_back(r);
             ctx.emitBus(call.session_id, "n", json::Document(rapidjson::kObjectType),
                         [results](Result<EmitResult> x) { results->push_back(std::move(x)); });
           });
    Engine e(std::move(b));
    e.handshake();
    e.send(toolCall(2, "emit", "{}", "c2"));
    CHECK(count(e.drain(), "plugin/emit") == 1);
    CHECK(results->empty());
    if (eof) {
      e.srv->receiveEof();
      e.srv->process();
    } else {
      e.srv->disconnect();
    }
    REQUIRE(results->size() == 1);
    CHECK(results->at(0).error().kind == ErrorKind::TransportClosed);
  }
}
