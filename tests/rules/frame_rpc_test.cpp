// FRAME and RPC monitors: each rule broken once, and clean traces that give no finding.
#include <catch2/catch.hpp>

#include "tests/rules/script.h"

using namespace conform::rules;
using namespace conform::rules::test;
using V = std::vector<std::string>;

static const char* kPing = R"({"jsonrpc":"2.0","id":2,"method":"plugin/ping","params":{}})";
static const char* kPong = R"({"jsonrpc":"2.0","id":2,"result":{}})";

TEST_CASE("clean: handshake, ping, shutdown give no finding", "[rules][clean]") {
  Script s;
  s.handshake().e2p(kPing).p2e(kPong).e2p(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
  auto f = s.run();
  INFO((f.empty() ? "" : f[0].rule_id + ": " + f[0].message + " / " + f[0].actual));
  CHECK(f.empty());
}

TEST_CASE("FRAME-01 a plugin frame that is not JSON is reported against the plugin", "[rules][frame]") {
  Script s;
  s.handshake().text(Dir::PluginToEngine, "{bad");
  auto f = s.run();
  REQUIRE(ids(f) == V{"FRAME-01"});
  CHECK(f[0].binds == conform::reports::kBindsPlugin);
  CHECK(f[0].evidence[0].line == 4);
}

TEST_CASE("FRAME-01 invalid UTF-8 from the engine is reported against the engine", "[rules][frame]") {
  Script s;
  s.handshake().text(Dir::EngineToPlugin, "\xFF", conform::trace::Kind::Binary);
  auto f = s.run();
  REQUIRE(ids(f) == V{"FRAME-01"});
  CHECK(f[0].binds == conform::reports::kBindsEngine);
}

TEST_CASE("FRAME-10 FRAME-01 an empty line is reported: the engine's reaction and the writer's MUST NOT", "[rules][frame]") {
  Script s;
  s.handshake().text(Dir::PluginToEngine, "");
  CHECK(ids(s.run()) == V{"FRAME-10", "FRAME-01"});
}

TEST_CASE("FRAME-11 a JSON array frame is reported", "[rules][frame]") {
  Script s;
  s.handshake().p2e("[]");
  CHECK(ids(s.run()) == V{"FRAME-11"});
}

TEST_CASE("FRAME-08 a CR LF frame is a SHOULD-level finding", "[rules][frame]") {
  Script s;
  s.handshake().e2p(kPing).cr().p2e(kPong);
  auto f = s.run();
  REQUIRE(ids(f) == V{"FRAME-08"});
  CHECK(f[0].verdict == conform::reports::Verdict::NonStrict);
}

TEST_CASE("FRAME-13 the engine answering a request sent after a fatal frame is reported", "[rules][frame]") {
  Script s;
  s.handshake().text(Dir::PluginToEngine, "{bad")
      .p2e(R"({"jsonrpc":"2.0","id":7,"method":"plugin/future","params":{}})")
      .e2p(R"({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}})");
  auto f = s.run();
  CHECK(ids(f) == V{"FRAME-01", "FRAME-13"});
}

TEST_CASE("FRAME-19 duplicate members are a SHOULD-level finding", "[rules][frame]") {
  Script s;
  s.handshake().e2p(kPing).p2e(R"({"jsonrpc":"2.0","id":2,"result":{},"id":2})");
  auto f = s.run();
  REQUIRE(!f.empty());
  CHECK(f[0].rule_id == "FRAME-19");
  CHECK(f[0].verdict == conform::reports::Verdict::NonStrict);
}

TEST_CASE("RPC-01 a wrong jsonrpc version is reported", "[rules][rpc]") {
  Script s;
  s.handshake().e2p(kPing).p2e(R"({"jsonrpc":"2","id":2,"result":{}})");
  CHECK(ids(s.run()) == V{"RPC-01"});
}

TEST_CASE("RPC-04 a response with result and error is reported", "[rules][rpc]") {
  Script s;
  s.handshake().e2p(kPing).p2e(R"({"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"x"}})");
  CHECK(ids(s.run()) == V{"RPC-04"});
}

TEST_CASE("RPC-08 an id echoed with another JSON type is reported", "[rules][rpc]") {
  Script s;
  s.handshake().e2p(kPing).p2e(R"({"jsonrpc":"2.0","id":"2","result":{}})");
  CHECK(ids(s.run()) == V{"RPC-08"});
}

TEST_CASE("RPC-08 a second response to one request is reported", "[rules][rpc]") {
  Script s;
  s.handshake().e2p(kPing).p2e(kPong).p2e(kPong);
  CHECK(ids(s.run()) == V{"RPC-08"});
}

TEST_CASE("RPC-08 a response to an unknown id is reported", "[rules][rpc]") {
  Script s;
  s.handshake().p2e(R"({"jsonrpc":"2.0","id":999,"result":{}})");
  CHECK(ids(s.run()) == V{"RPC-08"});
}

TEST_CASE("RPC-06 an engine id reused is reported (and RPC-07 the broken sequence)", "[rules][rpc]") {
  Script s;
  s.handshake().e2p(kPing).p2e(kPong).e2p(kPing).p2e(kPong);
  CHECK(ids(s.run()) == V{"RPC-06", "RPC-07"});
}

TEST_CASE("RPC-11 a request without params is reported", "[rules][rpc]") {
  Script s;
  s.handshake().e2p(R"({"jsonrpc":"2.0","id":2,"method":"plugin/ping"})").p2e(kPong);
  CHECK(ids(s.run()) == V{"RPC-11"});
}

TEST_CASE("RPC-13 the engine must answer an unknown plugin request with -32601", "[rules][rpc]") {
  Script bad, good;
  bad.handshake().p2e(R"({"jsonrpc":"2.0","id":9,"method":"plugin/future","params":{}})")
      .e2p(R"({"jsonrpc":"2.0","id":9,"result":{}})");
  CHECK(ids(bad.run()) == V{"RPC-13"});
  good.handshake().p2e(R"({"jsonrpc":"2.0","id":9,"method":"plugin/future","params":{}})")
      .e2p(R"({"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"unknown"}})");
  CHECK(good.run().empty());
}

TEST_CASE("RPC-18 equal ids in both directions do not collide", "[rules][rpc][clean]") {
  Script s;
  s.handshake().e2p(kPing)
      .p2e(R"({"jsonrpc":"2.0","id":2,"method":"plugin/future","params":{}})")
      .p2e(kPong)
      .e2p(R"({"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"unknown"}})");
  CHECK(s.run().empty());
}

TEST_CASE("PING-01 a ping result with members is reported", "[rules][ping]") {
  Script s;
  s.handshake().e2p(kPing).p2e(R"({"jsonrpc":"2.0","id":2,"result":{"x":1}})");
  CHECK(ids(s.run()) == V{"PING-01"});
}
