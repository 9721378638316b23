// Recovery in the reference engine (PROTOCOL §15, RECOV-*), in process on a VirtualClock.
#include "tests/engine/producer_rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {
const char* kReady = R"({"outcome":{"status":"ready"}})";
const char* kFailed = R"({"outcome":{"status":"failed","message":"job store unreachable"}})";
}  // namespace

TEST_CASE("RECOV-01 RECOV-02 RECOV-03 recovery/start is the one frame right after the handshake, only on producer connections", "[engine][recovery]") {
  ProdRig r({"alpha", "beta"});
  r.cfg.plugins[1].producer_messaging = false;
  r.boot();
  auto& a = r.written("alpha");
  REQUIRE(a.size() == 2);  // initialize, then recovery/start
  CHECK(a[1] == R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  CHECK(r.framesOf("beta", "plugin/recovery/start").empty());
  r.svc->createSession();
  CHECK(r.framesOf("alpha", "plugin/recovery/start").size() == 1);
}

TEST_CASE("RECOV-04 RECOV-07 no deadline: completion after 60 s of silence is accepted", "[engine][recovery]") {
  ProdRig r;
  r.boot();
  r.advance(60s);
  CHECK(r.status("alpha").state == PluginState::Connected);
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Starting);
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kReady)) == 0);
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Ready);
}

TEST_CASE("RECOV-05 the outcome is ready or failed with a message — anything else is -32602", "[engine][recovery]") {
  ProdRig r;
  r.boot();
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", R"({"outcome":{"status":"done"}})")) == -32602);
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", R"({"outcome":{"status":"failed"}})")) == -32602);
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", R"({"outcome":{"status":"ready","message":"x"}})")) == -32602);
  auto ok = r.call("alpha", "plugin/recovery/complete", kReady);
  REQUIRE(ok.HasMember("result"));
  CHECK(ok["result"].IsObject());
  CHECK(ok["result"].MemberCount() == 0);
}

TEST_CASE("RECOV-10 identical repeats succeed, a changed outcome is -32048", "[engine][recovery]") {
  ProdRig r;
  r.boot();
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kReady)) == 0);
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kReady)) == 0);
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kFailed)) == -32048);
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Ready);
}

TEST_CASE("RECOV-10 PROD-40 a completion from a stale epoch is -32042", "[engine][recovery]") {
  ProdRig r;
  r.boot();
  int code = 0;
  auto params = json::parse(kReady);
  r.svc->handle("plugin/recovery/complete", r.conn("alpha") + 7, "alpha", params->doc,
                [&](Expected<json::Document, Engine::RpcError> res) { code = res ? 0 : res.error().code; });
  CHECK(code == -32042);
}

TEST_CASE("RECOV-08 RECOV-09 RECOV-15 statuses: starting, ready, failed, disabled, per (owner, epoch), for every configured producer plugin", "[engine][recovery]") {
  ProdRig r({"alpha", "beta", "gamma"});
  r.cfg.plugins[2].enabled = false;
  r.boot();
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Starting);
  CHECK(r.svc->recovery("alpha")->epoch == r.conn("alpha"));
  CHECK(r.svc->recovery("gamma")->state == RecoveryState::Disabled);
  CHECK(r.svc->recoveryStatuses().size() == 3);
  CHECK(ProdRig::code(r.call("beta", "plugin/recovery/complete", kFailed)) == 0);
  CHECK(r.svc->recovery("beta")->state == RecoveryState::Failed);
  CHECK(r.svc->recovery("beta")->reason == "job store unreachable");
}

TEST_CASE("RECOV-11 RECOV-19 failed recovery: recovery_failed diagnostic to sessions with waiting messages and a notice", "[engine][recovery]") {
  ProdRig r;
  r.boot();
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  REQUIRE(ProdRig::code(r.sendMsg("alpha", s, p, "k1")) == 0);
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kFailed)) == 0);
  CHECK(r.status("alpha").diagnostics["recovery_failed"] == 1);
  REQUIRE(r.svc->notices().size() == 1);
  CHECK(r.svc->notices()[0].find("job store unreachable") != std::string::npos);
  // RECOV-13: the unrecovered message is not treated as done.
  CHECK(r.svc->messages(s)[0]->state == MessageState::Waiting);
}

TEST_CASE("RECOV-11 a plugin that does not opt in is disabled with a recovery_disabled diagnostic", "[engine][recovery]") {
  TempDir dir;
  ProdRig r;
  r.journal_dir = dir.path;
  r.boot();
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  REQUIRE(ProdRig::code(r.sendMsg("alpha", s, p, "k1")) == 0);
  r.restart(false);  // the plugin comes back without the capability
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Disabled);
  CHECK(r.status("alpha").diagnostics["recovery_disabled"] == 1);
}

TEST_CASE("RECOV-19 a disconnect while starting or ready moves the status to failed", "[engine][recovery]") {
  ProdRig r;
  r.boot();
  REQUIRE(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kReady)) == 0);
  r.engine->onStdoutEof(r.conn("alpha"));
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Failed);
  CHECK(r.svc->recovery("alpha")->reason == "disconnected");
}

TEST_CASE("RECOV-14 the state watch coalesces wake-ups into one reconcile", "[engine][recovery]") {
  ProdRig r({"alpha", "beta"});
  r.boot();
  r.engine->tick();
  std::uint64_t base = r.svc->reconciles();
  CHECK(base == 1);  // two handshakes before the first tick: one reconcile
  REQUIRE(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kReady)) == 0);
  r.engine->onStdoutEof(r.conn("beta"));
  CHECK(r.svc->reconciles() == base);  // nothing ran inline
  r.engine->tick();
  CHECK(r.svc->reconciles() == base + 1);
  r.engine->tick();
  CHECK(r.svc->reconciles() == base + 1);  // no spurious wake-ups
}

TEST_CASE("RECOV-16 RECOV-18 discard of an old receipt during recovery on a new connection — failed outcome does not gate", "[engine][recovery]") {
  TempDir dir;
  ProdRig r;
  r.journal_dir = dir.path;
  r.boot();
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  std::string mid = r.sendMsg("alpha", s, p, "k1")["result"]["message_id"].GetString();
  r.restart();
  CHECK(r.svc->recovery("alpha")->state == RecoveryState::Starting);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard", R"({"session_id":")" + s + R"(","message_id":")" + mid + R"("})")) == 0);
  REQUIRE(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kFailed)) == 0);
  auto p2 = r.registerProducer("alpha", s);
  CHECK(ProdRig::code(r.sendMsg("alpha", s, p2, "k2")) == 0);
}

TEST_CASE("RECOV-17 completion on a non-producer connection is -32040", "[engine][recovery]") {
  ProdRig r({"alpha"}, false);
  r.boot();
  CHECK(ProdRig::code(r.call("alpha", "plugin/recovery/complete", kReady)) == -32040);
}
