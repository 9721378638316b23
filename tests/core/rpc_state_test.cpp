// Tests of core/wire/rpc encoding and per-connection bookkeeping: encoders round-trip through the
// decoder, id allocation (RPC-06/07/21), the pending-request table (RPC-08/09/10/18) and ReplyOnce
// (RPC-08, SHUT-09).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>
#include <limits>
#include <string>
#include <vector>

#include "core/clock/clock.h"
#include "core/wire/rpc.h"

using namespace conform::wire;
namespace json = conform::json;
using conform::clock::TimePoint;
using namespace std::chrono_literals;

namespace {

json::Document parseDoc(std::string_view text) {
  auto p = json::parse(text);
  REQUIRE(p);
  return std::move(p->doc);
}

}  // namespace

TEST_CASE("FRAME-03 encoders write compact frames without LF that decode back", "[rpc][encode]") {
  auto params = parseDoc(R"({"session_id":"s", "n": [1, 2.5, null]})");
  CHECK(encodeRequest(RpcId(2), "plugin/tools/call", params) ==
        R"({"jsonrpc":"2.0","id":2,"method":"plugin/tools/call","params":{"session_id":"s","n":[1,2.5,null]}})");
  CHECK(encodeNotification("plugin/event", params) ==
        R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":"s","n":[1,2.5,null]}})");
  CHECK(encodeResult(RpcId("r-1"), params) ==
        R"({"jsonrpc":"2.0","id":"r-1","result":{"session_id":"s","n":[1,2.5,null]}})");
  CHECK(encodeError(RpcId(), kMethodNotFound, "plugin method is not supported") ==
        R"({"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"plugin method is not supported"}})");
  CHECK(encodeError(RpcId(7), kServerError, "m", &params) ==
        R"({"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"m","data":{"session_id":"s","n":[1,2.5,null]}}})");
  CHECK(encodeRequestRaw(RpcId(1), "plugin/initialize", "{}") ==
        R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{}})");
  CHECK(encodeNotificationRaw("plugin/shutdown", "{}") ==
        R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
  CHECK(encodeResultRaw(RpcId(3), "null") == R"({"jsonrpc":"2.0","id":3,"result":null})");

  for (const std::string& f : {encodeRequest(RpcId(2), "m", params), encodeNotification("m", params),
                               encodeResult(RpcId("x"), params), encodeError(RpcId(1), 1, "e", &params)}) {
    CHECK(f.find('\n') == std::string::npos);
    CHECK(decodeMessage(f));
  }
}

TEST_CASE("FRAME-01 encoders escape method names and messages into valid single-line JSON", "[rpc][encode]") {
  json::Document empty;
  empty.SetObject();
  const std::string f = encodeRequest(RpcId("a\"b\nc"), "we\"ird\n\\method", empty);
  CHECK(f.find('\n') == std::string::npos);
  auto m = decodeMessage(f);
  REQUIRE(m);
  CHECK(m->method == "we\"ird\n\\method");
  CHECK(m->id.string() == "a\"b\nc");
  const std::string e = encodeError(RpcId(1), kInternalError, "line1\nline2");
  CHECK(e.find('\n') == std::string::npos);
  auto em = decodeMessage(e);
  REQUIRE(em);
  CHECK(em->error.message == "line1\nline2");
}

TEST_CASE("FRAME-13 a non-finite number in a value we built is written as null, never broken JSON", "[rpc][encode]") {
  json::Document d;
  d.SetObject();
  d.AddMember("x", json::Value(std::numeric_limits<double>::infinity()), d.GetAllocator());
  d.AddMember("y", json::Value(1), d.GetAllocator());
  const std::string f = encodeResult(RpcId(1), d);
  CHECK(f == R"({"jsonrpc":"2.0","id":1,"result":{"x":null,"y":1}})");
  CHECK(decodeMessage(f));
}

TEST_CASE("RPC-08 ids are echoed with the same JSON type and value", "[rpc][encode]") {
  const char* frames[] = {
      R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"plugin/ping","params":{}})",
      R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"plugin/ping","params":{}})",
      R"({"jsonrpc":"2.0","id":"r-1","method":"plugin/ping","params":{}})",
      R"({"jsonrpc":"2.0","id":"\u00e9\"\\","method":"plugin/ping","params":{}})",
      R"({"jsonrpc":"2.0","id":null,"method":"plugin/ping","params":{}})",
      R"({"jsonrpc":"2.0","id":0,"method":"plugin/ping","params":{}})",
  };
  for (const char* f : frames) {
    auto req = decodeMessage(f);
    REQUIRE(req);
    json::Document empty;
    empty.SetObject();
    auto resp = decodeMessage(encodeResult(req->id, empty));
    REQUIRE(resp);
    INFO(f);
    CHECK(resp->id == req->id);
    CHECK(json::equal(*resp->id_value, *req->id_value));
    CHECK(std::string(json::typeName(*resp->id_value)) == json::typeName(*req->id_value));
  }
}

TEST_CASE("RPC-05 RpcId orders, hashes and converts consistently", "[rpc]") {
  std::vector<RpcId> ids = {RpcId("b"), RpcId(2), RpcId(), RpcId("a"), RpcId(-1)};
  std::sort(ids.begin(), ids.end());
  std::string s;
  for (const auto& id : ids) s += id.render() + " ";
  CHECK(s == "null -1 2 \"a\" \"b\" ");
  CHECK(RpcIdHash{}(RpcId(1)) == RpcIdHash{}(RpcId(1)));
  CHECK_FALSE(RpcId(1) == RpcId("1"));
  json::Document d;
  auto v = RpcId("x").toJSON(d.GetAllocator());
  CHECK(v.IsString());
  CHECK(RpcId(5).toJSON(d.GetAllocator()).GetInt64() == 5);
  CHECK(RpcId().toJSON(d.GetAllocator()).IsNull());
  auto back = RpcId::fromJSON(v);
  REQUIRE(back);
  CHECK(*back == RpcId("x"));
  CHECK_FALSE(RpcId::fromJSON(json::Value(1.5)));
  CHECK_FALSE(RpcId::fromJSON(json::Value(true)));
  CHECK_FALSE(RpcId::fromJSON(json::Value(std::uint64_t{9223372036854775808ULL})));
}

TEST_CASE("RPC-07 engine ids: initialize takes 1, later requests 2, 3, … from one counter", "[rpc][ids]") {
  auto ids = IdAllocator::engine();
  std::string s;
  for (int i = 0; i < 4; ++i) s += ids.next()->render() + " ";
  CHECK(s == "1 2 3 4 ");
  CHECK(ids.issued() == 4);
  CHECK(ids.peek() == 5);
}

TEST_CASE("RPC-21 plugin ids are integers starting at 1", "[rpc][ids]") {
  auto ids = IdAllocator::plugin();
  auto first = ids.next();
  REQUIRE(first);
  CHECK(first->isInteger());
  CHECK(first->integer() == 1);
}

TEST_CASE("RPC-07 id counter overflow is reported and never wraps", "[rpc][ids]") {
  IdAllocator ids(std::numeric_limits<std::int64_t>::max() - 1);
  CHECK(ids.next()->integer() == std::numeric_limits<std::int64_t>::max() - 1);
  CHECK(ids.next()->integer() == std::numeric_limits<std::int64_t>::max());
  CHECK_FALSE(ids.peek());
  auto over = ids.next();
  REQUIRE_FALSE(over);
  CHECK(over.error().find("RPC-07") != std::string::npos);
  CHECK_FALSE(ids.next());  // stays exhausted
}

TEST_CASE("RPC-06 engine ids are unique within a connection", "[rpc][ids]") {
  auto ids = IdAllocator::engine();
  std::set<RpcId> seen;
  for (int i = 0; i < 10'000; ++i) CHECK(seen.insert(*ids.next()).second);
}

TEST_CASE("RPC-10 responses resolve in any order, by id only", "[rpc][pending]") {
  PendingRequests<int> p(Direction::EngineToPlugin, 8);
  const TimePoint t0{};
  REQUIRE(p.add(RpcId(2), "plugin/intercept/tool_before_call", t0 + 5s, 20));
  REQUIRE(p.add(RpcId(3), "plugin/intercept/tool_before_call", t0 + 5s, 30));
  auto r3 = p.resolve(RpcId(3), Direction::PluginToEngine);
  REQUIRE(r3);
  CHECK(r3->data == 30);
  auto r2 = p.resolve(RpcId(2), Direction::PluginToEngine);
  REQUIRE(r2);
  CHECK(r2->data == 20);
  CHECK(r2->method == "plugin/intercept/tool_before_call");
  CHECK(p.empty());
}

TEST_CASE("RPC-08 a second response to one request is reported as already answered", "[rpc][pending]") {
  PendingRequests<> p(Direction::EngineToPlugin, 8);
  REQUIRE(p.add(RpcId(1), "plugin/initialize", TimePoint{} + 10s));
  CHECK(p.resolve(RpcId(1), Direction::PluginToEngine));
  auto again = p.resolve(RpcId(1), Direction::PluginToEngine);
  REQUIRE_FALSE(again);
  CHECK(again.error() == ResolveError::AlreadyAnswered);
}

TEST_CASE("RPC-09 unknown, non-integer and timed-out response ids are told apart", "[rpc][pending]") {
  conform::clock::VirtualClock clock;
  PendingRequests<> p(Direction::EngineToPlugin, 8);
  REQUIRE(p.add(RpcId(1), "plugin/initialize", clock.now() + 10s));
  REQUIRE(p.add(RpcId(2), "plugin/ping", clock.now() + 3s));
  CHECK(p.nextDeadline() == clock.now() + 3s);

  CHECK(p.resolve(RpcId(999), Direction::PluginToEngine).error() == ResolveError::UnknownId);
  CHECK(p.resolve(RpcId("1"), Direction::PluginToEngine).error() == ResolveError::UnknownId);

  clock.advance(2s);
  CHECK(p.expire(clock.now()).empty());
  clock.advance(1s);  // exactly the deadline: expired
  auto gone = p.expire(clock.now());
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].id == RpcId(2));
  CHECK(gone[0].method == "plugin/ping");
  CHECK(p.resolve(RpcId(2), Direction::PluginToEngine).error() == ResolveError::TimedOut);
  CHECK(p.size() == 1);
  CHECK(p.resolve(RpcId(1), Direction::PluginToEngine));
}

TEST_CASE("RPC-09 expire returns entries earliest deadline first", "[rpc][pending]") {
  PendingRequests<> p(Direction::PluginToEngine, 8);
  const TimePoint t0{};
  REQUIRE(p.add(RpcId(1), "a", t0 + 3s));
  REQUIRE(p.add(RpcId(2), "b", t0 + 1s));
  REQUIRE(p.add(RpcId(3), "c", t0 + 2s));
  REQUIRE(p.add(RpcId(4), "d", t0 + 9s));
  auto out = p.expire(t0 + 5s);
  std::string s;
  for (const auto& e : out) s += e.method;
  CHECK(s == "bca");
  CHECK(p.size() == 1);
}

TEST_CASE("RPC-18 a pending table refuses responses travelling the same way as its requests", "[rpc][pending]") {
  // Engine and plugin both use id 5 at once: separate tables, never confused.
  PendingRequests<> engine_calls(Direction::EngineToPlugin, 8);
  PendingRequests<> plugin_calls(Direction::PluginToEngine, 8);
  REQUIRE(engine_calls.add(RpcId(5), "plugin/tools/call", TimePoint{} + 1s));
  REQUIRE(plugin_calls.add(RpcId(5), "plugin/producer/register", TimePoint{} + 1s));
  CHECK(engine_calls.responseDirection() == Direction::PluginToEngine);
  CHECK(plugin_calls.responseDirection() == Direction::EngineToPlugin);

  // The engine's answer to the plugin's request 5 travels e2p: it must not hit engine_calls.
  CHECK(engine_calls.resolve(RpcId(5), Direction::EngineToPlugin).error() == ResolveError::WrongDirection);
  CHECK(engine_calls.size() == 1);
  auto p = plugin_calls.resolve(RpcId(5), Direction::EngineToPlugin);
  REQUIRE(p);
  CHECK(p->method == "plugin/producer/register");
  auto e = engine_calls.resolve(RpcId(5), Direction::PluginToEngine);
  REQUIRE(e);
  CHECK(e->method == "plugin/tools/call");
}

TEST_CASE("RPC-06 the pending table is bounded and refuses an id already outstanding", "[rpc][pending]") {
  PendingRequests<> p(Direction::EngineToPlugin, 2);
  REQUIRE(p.add(RpcId(1), "a", TimePoint{}));
  CHECK(p.add(RpcId(1), "b", TimePoint{}).error() == AddError::DuplicateId);
  REQUIRE(p.add(RpcId(2), "b", TimePoint{}));
  CHECK(p.add(RpcId(3), "c", TimePoint{}).error() == AddError::Full);
  CHECK(p.capacity() == 2);
  auto all = p.clear();
  CHECK(all.size() == 2);
  CHECK(p.empty());
  CHECK(p.find(RpcId(1)) == nullptr);
}

TEST_CASE("RPC-09 the closed-id history is bounded", "[rpc][pending]") {
  using P = PendingRequests<>;
  P p(Direction::EngineToPlugin, 4);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(P::kHistory) + 10; ++i) {
    REQUIRE(p.add(RpcId(i), "m", TimePoint{}));
    REQUIRE(p.resolve(RpcId(i), Direction::PluginToEngine));
  }
  CHECK(p.resolve(RpcId(0), Direction::PluginToEngine).error() == ResolveError::UnknownId);
  CHECK(p.resolve(RpcId(static_cast<std::int64_t>(P::kHistory) + 9), Direction::PluginToEngine).error() ==
        ResolveError::AlreadyAnswered);
}

TEST_CASE("RPC-08 ReplyOnce sends exactly one reply and refuses a second", "[rpc][reply]") {
  std::vector<std::string> sent;
  auto sink = [&](std::string f) { sent.push_back(std::move(f)); };
  {
    ReplyOnce r(RpcId(4), "plugin/ping", sink);
    json::Document empty;
    empty.SetObject();
    CHECK(r.pending());
    CHECK(r.reply(empty));
    CHECK_FALSE(r.pending());
    CHECK_FALSE(r.reply(empty));
    CHECK_FALSE(r.error(kInternalError, "late"));
    CHECK_FALSE(r.abandon());
  }
  {
    ReplyOnce r(RpcId("s"), "plugin/tools/call", sink);
    CHECK(r.error(kMethodNotFound, "unknown tool"));
    CHECK_FALSE(r.replyRaw("{}"));
  }
  REQUIRE(sent.size() == 2);
  CHECK(sent[0] == R"({"jsonrpc":"2.0","id":4,"result":{}})");
  CHECK(sent[1] == R"({"jsonrpc":"2.0","id":"s","error":{"code":-32601,"message":"unknown tool"}})");
}

TEST_CASE("RPC-08 a dropped ReplyOnce answers -32603 handler dropped the request", "[rpc][reply]") {
  std::vector<std::string> sent;
  { ReplyOnce r(RpcId(9), "plugin/tools/call", [&](std::string f) { sent.push_back(std::move(f)); }); }
  REQUIRE(sent.size() == 1);
  CHECK(sent[0] == R"({"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"handler dropped the request"}})");
}

TEST_CASE("SHUT-09 an abandoned ReplyOnce sends nothing", "[rpc][reply]") {
  std::vector<std::string> sent;
  {
    ReplyOnce r(RpcId(9), "plugin/tools/call", [&](std::string f) { sent.push_back(std::move(f)); });
    CHECK(r.abandon());
    CHECK_FALSE(r.pending());
    json::Document empty;
    empty.SetObject();
    CHECK_FALSE(r.reply(empty));
  }
  CHECK(sent.empty());
}

TEST_CASE("RPC-08 moving a ReplyOnce transfers the obligation", "[rpc][reply]") {
  std::vector<std::string> sent;
  auto sink = [&](std::string f) { sent.push_back(std::move(f)); };
  {
    ReplyOnce a(RpcId(1), "m", sink);
    ReplyOnce b(std::move(a));
    CHECK_FALSE(a.pending());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    CHECK(b.pending());
    CHECK(b.replyRaw("1"));
    std::vector<ReplyOnce> v;
    v.emplace_back(RpcId(2), "m", sink);
    v.emplace_back(RpcId(3), "m", sink);  // reallocation moves the first: still one obligation
    CHECK(v[0].replyRaw("2"));
    // Move-assigning over an unanswered ReplyOnce answers the overwritten request first.
    ReplyOnce c(RpcId(4), "m", sink);
    c = std::move(v[1]);
    CHECK(c.id() == RpcId(3));
    CHECK(c.abandon());
  }
  REQUIRE(sent.size() == 3);
  CHECK(sent[0] == R"({"jsonrpc":"2.0","id":1,"result":1})");
  CHECK(sent[1] == R"({"jsonrpc":"2.0","id":2,"result":2})");
  CHECK(sent[2] == R"({"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"handler dropped the request"}})");
  static_assert(!std::is_copy_constructible_v<ReplyOnce>);
  static_assert(std::is_nothrow_move_constructible_v<ReplyOnce>);
}

TEST_CASE("RPC-13 error code constants match PROTOCOL section 19", "[rpc]") {
  CHECK(kMethodNotFound == -32601);
  CHECK(kInvalidParams == -32602);
  CHECK(kInternalError == -32603);
  CHECK(kServerError == -32000);
  CHECK(kProducerCodeFirst == -32049);
  CHECK(kProducerCodeLast == -32040);
  CHECK(kPluginBusy == -32050);
  CHECK(std::string(errorCodeName(kMethodNotFound)) == "method not found");
  CHECK(std::string(errorCodeName(kPluginBusy)) == "plugin busy");
  CHECK(std::string(errorCodeName(-32700)) == "unknown");
  for (std::int32_t c = kProducerCodeFirst; c <= kProducerCodeLast; ++c)
    CHECK(std::string(errorCodeName(c)) != "unknown");
}

TEST_CASE("RPC-16 notifications and responses carry no reply obligation", "[rpc][reply]") {
  std::vector<std::string> sent;
  auto sink = [&](std::string f) { sent.push_back(std::move(f)); };
  auto n = decodeMessage(R"({"jsonrpc":"2.0","method":"plugin/event","params":{}})");
  auto r = decodeMessage(R"({"jsonrpc":"2.0","id":1,"result":{}})");
  auto q = decodeMessage(R"({"jsonrpc":"2.0","id":"q","method":"plugin/ping","params":{}})");
  REQUIRE(n);
  REQUIRE(r);
  REQUIRE(q);
  CHECK_FALSE(ReplyOnce::forRequest(*n, sink));
  CHECK_FALSE(ReplyOnce::forRequest(*r, sink));
  {
    auto reply = ReplyOnce::forRequest(*q, sink);
    REQUIRE(reply);
    CHECK(reply->method() == "plugin/ping");
    CHECK(reply->replyRaw("{}"));
  }
  REQUIRE(sent.size() == 1);
  CHECK(sent[0] == R"({"jsonrpc":"2.0","id":"q","result":{}})");
}
