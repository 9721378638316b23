// Producer messaging in the reference engine (PROTOCOL §14, PROD-*), in process on a VirtualClock.
// The plugin side is raw frames; durability runs on a real journal directory where it matters.
#include "tests/engine/producer_rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {
std::string sid(ProdRig& r) { return r.svc->createSession(); }
}  // namespace

TEST_CASE("PROD-01 PROD-39 producer messaging needs the capability, the config opt-in and the handler", "[engine][producer]") {
  SECTION("all three: register works") {
    ProdRig r;
    r.boot();
    CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":")" + sid(r) + R"("})")) == 0);
  }
  SECTION("no plugin capability") {
    ProdRig r;
    r.boot(false);
    CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":")" + sid(r) + R"("})")) == -32040);
  }
  SECTION("no config opt-in") {
    ProdRig r({"alpha"}, false);
    r.boot();
    CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":")" + sid(r) + R"("})")) == -32040);
  }
  SECTION("no installed handler: every producer request and recovery completion") {
    ProdRig r;
    r.cfg.producer_handler = false;
    r.boot();
    std::string s = sid(r);
    CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":")" + s + R"("})")) == -32040);
    CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard", R"({"session_id":")" + s + R"(","message_id":")" + s + R"("})")) == -32040);
    CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", R"({"outcome":{"status":"ready"}})")) == -32040);
  }
}

TEST_CASE("PROD-02 PROD-03 strict params: an owner member is invalid params, the owner is the configured name", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":")" + s + R"(","owner":"beta"})")) == -32602);
  std::string p = r.registerProducer("alpha", s);
  CHECK(r.svc->registration(p)->owner == "alpha");
  auto m = r.sendMsg("alpha", s, p, "k1");
  CHECK(r.svc->message(m["result"]["message_id"].GetString())->owner == "alpha");
}

TEST_CASE("PROD-04 PROD-05 fresh epochs per connection and fresh producer ids per register", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  std::string a = r.registerProducer("alpha", s), b = r.registerProducer("alpha", s);
  CHECK(a != b);
  CHECK(r.svc->registration(a)->epoch == r.conn("alpha"));
  ConnId first = r.conn("alpha");
  r.engine->onStdoutEof(first);
  r.engine->onExited(first, "exit 0");
  CHECK(r.status("alpha").state == PluginState::Failed);
}

TEST_CASE("PROD-07 a disconnect revokes only that epoch's registrations", "[engine][producer]") {
  ProdRig r({"alpha", "beta"});
  r.boot();
  std::string s = sid(r);
  std::string pa = r.registerProducer("alpha", s), pb = r.registerProducer("beta", s);
  r.engine->onStdoutEof(r.conn("alpha"));
  CHECK(r.svc->registration(pa)->closed);
  CHECK_FALSE(r.svc->registration(pb)->closed);
  CHECK(ProdRig::code(r.sendMsg("beta", s, pb, "k")) == 0);
}

TEST_CASE("PROD-08 register is served while recovery is still starting", "[engine][producer]") {
  ProdRig r;
  r.boot();
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Starting);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":")" + sid(r) + R"("})")) == 0);
}

TEST_CASE("PROD-09 PROD-37 send returns exactly {message_id} with the original request id", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  auto resp = r.sendMsg("alpha", s, p, "k1");
  REQUIRE(resp.HasMember("result"));
  CHECK(resp["result"].MemberCount() == 1);
  CHECK(resp["result"]["message_id"].IsString());
}

TEST_CASE("PROD-10 PROD-11 PROD-12 PROD-13 field validation answers -32602", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  auto send = [&](const std::string& key, const std::string& desc, const std::string& mode, const std::string& body) {
    return ProdRig::code(r.call("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, key, body, mode, desc)));
  };
  CHECK(send("k", "d", "shout", "b") == -32602);                   // PROD-10
  CHECK(send("", "d", "steer", "b") == -32602);                    // PROD-11: 0 bytes
  CHECK(send(std::string(257, 'k'), "d", "steer", "b") == -32602); // 257 bytes
  CHECK(send("a\tb", "d", "steer", "b") == -32602);                // control character
  CHECK(send(std::string(256, 'k'), "d", "queue", "b") == 0);      // 256 bytes accepted
  CHECK(send("k2", "   ", "steer", "b") == -32602);                // PROD-12: blank
  CHECK(send("k3", std::string(1025, 'd'), "steer", "b") == -32602);
  CHECK(send("k4", "a\nb", "steer", "b") == -32602);
  CHECK(send("k5", std::string(1024, 'd'), "steer", "b") == 0);
  CHECK(send("k6", "d", "steer", "") == 0);                        // PROD-13: empty body
}

TEST_CASE("PROD-14 PROD-15 PROD-23 PROD-24 unregister closes the registration, keeps messages, repeats succeed", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  auto m = r.sendMsg("alpha", s, p, "k1");
  std::string mid = m["result"]["message_id"].GetString();
  std::string un = R"({"session_id":")" + s + R"(","producer_id":")" + p + R"("})";
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/unregister", un)) == 0);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/unregister", un)) == 0);  // PROD-24
  CHECK(r.svc->message(mid)->state == MessageState::Waiting);                  // PROD-23
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p, "k2")) == -32043);               // PROD-15
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p, "k1")) == -32043);               // PROD-14: even a retry
  std::string unknown = R"({"session_id":")" + s + R"(","producer_id":")" + s + R"("})";
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/unregister", unknown)) == -32043);
}

TEST_CASE("PROD-16 PROD-15 a send to another session than the registration's is -32043, unknown session -32044", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s1 = sid(r), s2 = sid(r);
  auto p = r.registerProducer("alpha", s1);
  CHECK(ProdRig::code(r.sendMsg("alpha", s2, p, "k")) == -32043);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register",
                             R"({"session_id":"0191c0de-0000-7000-8000-00000000dead"})")) == -32044);
}

TEST_CASE("PROD-17 PROD-35 the ACK waits for durable acceptance and the reader keeps serving meanwhile", "[engine][producer]") {
  TempDir dir;
  ProdRig r;
  r.journal_dir = dir.path;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  r.svc->holdDurability(true);
  auto id = r.request("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, "k1"));
  CHECK_FALSE(r.response("alpha", id));  // no ACK before the fsync
  // The transport reader is not blocked: a ping is answered and other requests are served.
  auto h = r.engine->ping("alpha");
  auto ping = r.lastFrame("alpha");
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(ping["id"].GetInt64()) + R"(,"result":{}})");
  CHECK(r.engine->pingStatus(h)->state == PingStatus::State::Ok);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":")" + s + R"("})")) == 0);
  r.svc->commitDurable();
  auto resp = r.response("alpha", id);
  REQUIRE(resp);
  std::string mid = (*resp)["result"]["message_id"].GetString();
  // Acknowledged means on disk: a restart on the same journal still has it.
  r.restart();
  REQUIRE(r.svc->message(mid));
  CHECK(r.svc->message(mid)->body == "hello");
}

TEST_CASE("PROD-18 PROD-19 PROD-20 PROD-21 identical retry after a restart returns the original message_id", "[engine][producer]") {
  TempDir dir;
  ProdRig r;
  r.journal_dir = dir.path;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  r.svc->holdDurability(true);
  auto id = r.request("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, "job-7", "body"));
  r.svc->commitDurable();  // committed on disk…
  // …but the ACK is lost: the engine dies before the plugin read it (commit-uncertain, PROD-21).
  std::string original = (*r.response("alpha", id))["result"]["message_id"].GetString();
  r.restart();
  auto p2 = r.registerProducer("alpha", s);  // PROD-06: a new registration, new epoch
  CHECK(p2 != p);
  auto retry = r.sendMsg("alpha", s, p2, "job-7", "body");
  CHECK(std::string(retry["result"]["message_id"].GetString()) == original);
  CHECK(r.svc->messages(s).size() == 1);  // nothing new stored
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p2, "job-7", "other body")) == -32045);      // PROD-19
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p2, "job-7", "body", "queue")) == -32045);
}

TEST_CASE("PROD-19 a different description with the same key is rejected", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, "k", "b", "steer", "one"))) == 0);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, "k", "b", "steer", "two"))) == -32045);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, "k", "b", "steer", "one"))) == 0);
}

TEST_CASE("PROD-26 PROD-27 PROD-31 discard by receipt: no registration, repeatable, later epochs", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  std::string mid = r.sendMsg("alpha", s, p, "k1")["result"]["message_id"].GetString();
  std::string un = R"({"session_id":")" + s + R"(","producer_id":")" + p + R"("})";
  REQUIRE(ProdRig::code(r.call("alpha", "plugin/producer/unregister", un)) == 0);
  std::string d = R"({"session_id":")" + s + R"(","message_id":")" + mid + R"("})";
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard", d)) == 0);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard", d)) == 0);  // PROD-31
  CHECK(r.svc->message(mid)->state == MessageState::Discarded);
  // PROD-26: discard does not unregister: a live registration keeps sending.
  auto p2 = r.registerProducer("alpha", s);
  std::string m2 = r.sendMsg("alpha", s, p2, "k2")["result"]["message_id"].GetString();
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard", R"({"session_id":")" + s + R"(","message_id":")" + m2 + R"("})")) == 0);
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p2, "k3")) == 0);
}

TEST_CASE("PROD-28 discard rejects a foreign owner, another session, an unknown and a consumed receipt", "[engine][producer]") {
  ProdRig r({"alpha", "beta"});
  r.boot();
  std::string s = sid(r), s2 = sid(r);
  auto p = r.registerProducer("alpha", s);
  std::string mid = r.sendMsg("alpha", s, p, "k1")["result"]["message_id"].GetString();
  auto d = [&](const std::string& plugin, const std::string& session, const std::string& m) {
    return ProdRig::code(r.call(plugin, "plugin/producer/discard", R"({"session_id":")" + session + R"(","message_id":")" + m + R"("})"));
  };
  CHECK(d("beta", s, mid) == -32046);
  CHECK(d("alpha", s2, mid) == -32046);
  CHECK(d("alpha", s, s2) == -32046);
  auto c = r.svc->claim(s, std::nullopt);
  REQUIRE(c == mid);
  REQUIRE(r.svc->consume(mid));
  CHECK(d("alpha", s, mid) == -32046);
}

TEST_CASE("PROD-29 PROD-30 a claimed message rejects discard until released — consumed never returns", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  std::string mid = r.sendMsg("alpha", s, p, "k1")["result"]["message_id"].GetString();
  std::string d = R"({"session_id":")" + s + R"(","message_id":")" + mid + R"("})";
  REQUIRE(r.svc->claim(s, std::nullopt) == mid);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard", d)) == -32047);
  r.svc->release(mid);  // preparation failed
  CHECK(r.svc->message(mid)->state == MessageState::Waiting);
  REQUIRE(r.svc->claim(s, std::nullopt) == mid);
  REQUIRE(r.svc->consume(mid));
  r.svc->release(mid);  // a release after consumption changes nothing
  CHECK(r.svc->message(mid)->state == MessageState::Consumed);
  CHECK_FALSE(r.svc->claim(s, std::nullopt));
}

TEST_CASE("PROD-33 accepted messages survive the plugin's crash and the registration's end", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  std::string mid = r.sendMsg("alpha", s, p, "k1")["result"]["message_id"].GetString();
  r.engine->onExited(r.conn("alpha"), "killed by signal 9 (SIGKILL)");
  CHECK(r.svc->message(mid)->state == MessageState::Waiting);
  CHECK(r.svc->claim(s, std::nullopt) == mid);
}

TEST_CASE("PROD-34 at most 32 producer handler tasks per connection, then -32041 — none unanswered", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  r.svc->holdDurability(true);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 40; ++i)
    ids.push_back(r.request("alpha", "plugin/producer/send", ProdRig::sendParams(s, p, "k" + std::to_string(i))));
  CHECK(r.svc->tasks(r.conn("alpha")) == 32);
  int overloaded = 0;
  for (int i = 32; i < 40; ++i) {
    auto resp = r.response("alpha", ids[i]);
    REQUIRE(resp);
    overloaded += ProdRig::code(*resp) == -32041;
  }
  CHECK(overloaded == 8);
  r.svc->commitDurable();
  for (int i = 0; i < 32; ++i) {
    auto resp = r.response("alpha", ids[i]);
    REQUIRE(resp);
    CHECK(ProdRig::code(*resp) == 0);
  }
  CHECK(r.svc->tasks(r.conn("alpha")) == 0);
}

TEST_CASE("PROD-38 no aliases: plugin/producer/create is -32601", "[engine][producer]") {
  ProdRig r;
  r.boot();
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/create", R"({"session_id":")" + sid(r) + R"("})")) == -32601);
}

TEST_CASE("PROD-40 PROD-42 a request from a stale connection is -32042", "[engine][producer]") {
  ProdRig r;
  r.boot();
  std::string s = sid(r);
  ConnId old = r.conn("alpha");
  int code = 0;
  auto params = json::parse(R"({"session_id":")" + s + R"("})");
  r.svc->handle("plugin/producer/register", old + 1000, "alpha", params->doc,
                [&](Expected<json::Document, Engine::RpcError> res) { code = res ? 0 : res.error().code; });
  CHECK(code == -32042);
  r.svc->handle("plugin/producer/register", old, "alpha", params->doc,
                [&](Expected<json::Document, Engine::RpcError> res) { code = res ? 0 : res.error().code; });
  CHECK(code == 0);
}

TEST_CASE("PROD-44 message ids are UUIDs that stay valid across engine restarts", "[engine][producer]") {
  TempDir dir;
  ProdRig r;
  r.journal_dir = dir.path;
  r.boot();
  std::string s = sid(r);
  auto p = r.registerProducer("alpha", s);
  std::string mid = r.sendMsg("alpha", s, p, "k1")["result"]["message_id"].GetString();
  CHECK(mid.size() == 36);
  CHECK(mid[14] == '7');
  r.restart();
  REQUIRE(r.engine->session(s));
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard", R"({"session_id":")" + s + R"(","message_id":")" + mid + R"("})")) == 0);
  r.restart();
  CHECK(r.svc->message(mid)->state == MessageState::Discarded);
}

TEST_CASE("PROD-02 0.0.4 profile: producer methods do not exist", "[engine][producer]") {
  ProdRig r;
  r.cfg.protocol_version = "0.0.4";
  r.engine = std::make_unique<Engine>(r.cfg, r.host, r.clk);
  r.svc = std::make_unique<ProducerService>(*r.engine, std::nullopt);
  r.engine->start();
  r.send("alpha", R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.4","name":"alpha","version":"1","capabilities":{"tools":true,"resources":false,"subscribe_events":false,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"intercept":[]},"tools":[]}})");
  REQUIRE(r.status("alpha").state == PluginState::Connected);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/register", R"({"session_id":"0191c0de-0000-7000-8000-000000000001"})")) == -32601);
}
