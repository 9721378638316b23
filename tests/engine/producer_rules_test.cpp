// Producer messaging and recovery rules of issue 5 that producer_test.cpp / recovery_test.cpp do
// not name yet (PROD-22/25/32/36/41/43, RECOV-12), in process on the virtual clock.
#include "tests/engine/producer_rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

std::string messageId(const json::Document& resp) {
  REQUIRE(ProdRig::code(resp) == 0);
  return resp["result"]["message_id"].GetString();
}

}  // namespace

TEST_CASE("PROD-22 no exactly-once promise beyond the idempotency key: equal bodies under new keys are new messages", "[engine][producer]") {
  ProdRig r;
  r.boot();
  auto s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto a = messageId(r.sendMsg("alpha", s, p, "k1", "same body"));
  auto b = messageId(r.sendMsg("alpha", s, p, "k2", "same body"));
  CHECK(a != b);
  CHECK(r.svc->messages(s).size() == 2);
  CHECK(messageId(r.sendMsg("alpha", s, p, "k1", "same body")) == a);  // the key is the only dedup
}

TEST_CASE("PROD-25 only an explicit unregister or the connection's end closes a registration", "[engine][producer]") {
  ProdRig r;
  auto& e = r.boot();
  auto s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  // Time, other traffic and other registrations do not close it.
  r.advance(std::chrono::hours(2));
  (void)e.produceEvent(s, RecordClass::Ordinary);
  (void)r.registerProducer("alpha", s);
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p, "k1")) == 0);
  std::string un = R"({"session_id":")" + s + R"(","producer_id":")" + p + R"("})";
  REQUIRE(ProdRig::code(r.call("alpha", "plugin/producer/unregister", un)) == 0);
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p, "k2")) != 0);
}

TEST_CASE("PROD-32 discard never cancels a claimed model request: it is refused and the request completes", "[engine][producer]") {
  ProdRig r;
  r.boot();
  auto s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto mid = messageId(r.sendMsg("alpha", s, p, "k1"));
  REQUIRE(r.svc->claim(s, std::nullopt) == mid);  // a model request is being prepared with it
  auto d = r.call("alpha", "plugin/producer/discard", R"({"session_id":")" + s + R"(","message_id":")" + mid + R"("})");
  CHECK(ProdRig::code(d) == -32047);
  CHECK(r.svc->message(mid)->state == MessageState::Claimed);
  CHECK(r.svc->consume(mid));  // the request goes on and consumes it
  CHECK(r.svc->message(mid)->state == MessageState::Consumed);
}

TEST_CASE("PROD-36 under an event flood every producer request still gets its response", "[engine][producer][evt]") {
  ProdRig r;
  r.engine = std::make_unique<Engine>(r.cfg, r.host, r.clk);
  r.svc = std::make_unique<ProducerService>(*r.engine, std::nullopt);
  r.engine->start();
  Caps c;
  c.producer_messaging = c.subscribe_events = true;
  r.answerInit("alpha", c);
  auto& e = *r.engine;
  auto s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  r.host.procs[r.conn("alpha")].writable = false;  // deliveries wait; responses are not deliveries
  for (int i = 0; i < 2000; ++i) (void)e.produceEvent(s, RecordClass::Chunk);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(r.request("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, "k" + std::to_string(i))));
  for (auto id : ids) {
    INFO(id);
    auto resp = r.response("alpha", id);
    REQUIRE(resp);
    CHECK(ProdRig::code(*resp) == 0);
  }
  CHECK(r.status("alpha").queued == 1024);  // the flood really was queued meanwhile
}

TEST_CASE("PROD-41 model-bound messages exist only through explicit producer sends", "[engine][producer]") {
  ProdRig r;
  auto& e = r.boot();
  auto s = r.svc->createSession();
  // Emits (bus and durable), unknown methods and notifications create nothing model-bound.
  (void)e.produceEvent(s, RecordClass::Ordinary);
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + s +
                      R"(","context_id":"t","name":"steer","payload":{"body":"do it"}}})");
  r.send("alpha", R"({"jsonrpc":"2.0","id":5,"method":"plugin/producer/inject","params":{"session_id":")" + s + R"("}})");
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/producer/send","params":{"session_id":")" + s + R"("}})");
  CHECK(r.svc->messages(s).empty());
  CHECK_FALSE(r.svc->hasWaiting(s, std::nullopt));
  auto p = r.registerProducer("alpha", s);
  (void)messageId(r.sendMsg("alpha", s, p, "k1"));
  CHECK(r.svc->messages(s).size() == 1);
}

TEST_CASE("PROD-43 steer and queue messages are claimed by their own delivery points, oldest first", "[engine][producer]") {
  ProdRig r;
  r.boot();
  auto s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto q1 = messageId(r.sendMsg("alpha", s, p, "q1", "queued 1", "queue"));
  auto s1 = messageId(r.sendMsg("alpha", s, p, "s1", "steer 1", "steer"));
  auto q2 = messageId(r.sendMsg("alpha", s, p, "q2", "queued 2", "queue"));
  // A steering boundary of an active run takes steer messages only.
  CHECK(r.svc->claim(s, protocol::DeliveryMode::Steer) == s1);
  CHECK_FALSE(r.svc->claim(s, protocol::DeliveryMode::Steer));
  // An idle session starts a new turn from the oldest queued message.
  CHECK(r.svc->claim(s, protocol::DeliveryMode::Queue) == q1);
  CHECK(r.svc->claim(s, protocol::DeliveryMode::Queue) == q2);
  CHECK_FALSE(r.svc->hasWaiting(s, std::nullopt));
}

TEST_CASE("RECOV-12 recovery state is inspected through the runtime, never through the protocol", "[engine][recovery]") {
  ProdRig r;
  r.boot();
  for (auto m : {"plugin/recovery/status", "plugin/session/producers", "session.producers"}) {
    INFO(m);
    CHECK(ProdRig::code(r.call("alpha", m, "{}")) == -32601);
  }
  auto st = r.svc->recovery("alpha");
  REQUIRE(st);
  CHECK(st->state == RecoveryState::Starting);
  CHECK(r.svc->recoveryStatuses().size() == 1);
}

TEST_CASE("PROD-39 PROD-42 without the runtime handler the 0.0.6 producer methods answer -32040, not -32601", "[engine][producer]") {
  Rig r;  // no producer_handler, no ProducerService
  auto& e = r.start();
  r.answerInit("alpha");
  auto s = e.createSession();
  for (auto m : {"plugin/producer/register", "plugin/producer/send", "plugin/producer/unregister", "plugin/producer/discard",
                 "plugin/recovery/complete"}) {
    INFO(m);
    r.send("alpha", R"({"jsonrpc":"2.0","id":"q","method":")" + std::string(m) + R"(","params":{"session_id":")" + s + R"("}})");
    CHECK(r.lastFrame("alpha")["error"]["code"].GetInt() == -32040);
  }
  r.send("alpha", R"({"jsonrpc":"2.0","id":"q","method":"plugin/producer/create","params":{}})");
  CHECK(r.lastFrame("alpha")["error"]["code"].GetInt() == -32601);  // PROD-38: no aliases
  CHECK(r.status("alpha").state == PluginState::Connected);
}
