// Reference engine, in process: tools and permissions (TOOL), events and the 1024 queue (EVT),
// the bus (BUS), emits, grants and quotas (EMIT, QUOTA), diagnostics.
#include "tests/engine/rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

json::Document obj(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p);
  return std::move(p->doc);
}

std::string emit(const std::string& session, const std::string& token, const std::string& name = "n",
                 const std::string& payload = "{}") {
  return R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":")" + session +
         R"(","context_id":")" + token + R"(","name":)" + quoteJson(name) + R"(,"payload":)" + payload + "}}";
}

}  // namespace

TEST_CASE("TOOL-05 TOOL-06 TOOL-19 a tool call carries session, grant, invocation id, arguments, resource and cancellation token", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("issue_read") + "]");
  auto s = e.createSession();
  auto id = e.callTool(s, "issue_read", obj(R"({"path":"src/lib.rs"})"));
  REQUIRE(id);
  auto f = r.lastFrame("alpha");
  CHECK(str(f, "method") == "plugin/tools/call");
  const auto& p = f["params"];
  CHECK(str(p, "tool") == "issue_read");
  CHECK(str(p, "session_id") == s);
  CHECK(str(p, "invocation_id") == *id);
  CHECK(str(p, "cancellation_token") == *id);
  CHECK(str(p, "resource") == "src/lib.rs");
  CHECK(p["arguments"]["path"] == "src/lib.rs");
  auto id2 = e.callTool(s, "issue_read", obj(R"({"path":7})"));
  CHECK(str(r.lastFrame("alpha")["params"], "resource") == "7");
  auto id3 = e.callTool(s, "issue_read", obj(R"({})"));
  CHECK(r.lastFrame("alpha")["params"]["resource"].IsNull());
  (void)id2, (void)id3;
}

TEST_CASE("TOOL-07 non-object arguments fail before any frame is written", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("issue_read") + "]");
  auto n = r.written("alpha").size();
  auto id = e.callTool(e.createSession(), "issue_read", obj("[1]"));
  CHECK(e.toolCall(*id)->state == CallState::Failed);
  CHECK(r.written("alpha").size() == n);
}

TEST_CASE("TOOL-09 TOOL-14 single output completes — is_error marks the call failed but keeps the output", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto s = e.createSession();
  auto a = *e.callTool(s, "echo", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"single","text":"hi"},"display":"UI","is_error":false}})");
  CHECK(e.toolCall(a)->state == CallState::Completed);
  CHECK(*e.toolCall(a)->display == "UI");
  auto b = *e.callTool(s, "echo", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":3,"result":{"output":{"kind":"single","text":"bad"},"is_error":true}})");
  CHECK(e.toolCall(b)->state == CallState::Failed);
  CHECK(e.toolCall(b)->output);
  CHECK(e.toolCall(b)->incomplete);
}

TEST_CASE("TOOL-10 TOOL-12 RPC-20 malformed results and errors fail the call, not the connection", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "," + tool("multi", R"(,"output":{"kind":"named","streams":["out","err"]})") + "]");
  auto s = e.createSession();
  std::vector<std::pair<std::string, std::string>> cases = {
      {"echo", R"({"content":"x","is_error":false})"},
      {"echo", R"({"output":{"kind":"named","streams":[]},"is_error":false})"},
      {"multi", R"({"output":{"kind":"single","text":"x"},"is_error":false})"},
      {"multi", R"({"output":{"kind":"named","streams":[{"stream":"out","text":""}]},"is_error":false})"},
      {"multi", R"({"output":{"kind":"named","streams":[{"stream":"out","text":""},{"stream":"err","text":""},{"stream":"zzz","text":""}]},"is_error":false})"},
  };
  int id = 2;
  for (auto& [t, res] : cases) {
    auto c = *e.callTool(s, t, obj("{}"));
    r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(id++) + R"(,"result":)" + res + "}");
    INFO(res);
    CHECK(e.toolCall(c)->state == CallState::Failed);
    CHECK(e.toolCall(c)->reason.find("malformed plugin tool call result") == 0);
  }
  auto c = *e.callTool(s, "multi", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(id++) + R"(,"result":{"output":{"kind":"named","streams":[{"stream":"err","text":"e"},{"stream":"out","text":""}]},"is_error":false}})");
  CHECK(e.toolCall(c)->state == CallState::Completed);
  CHECK((*e.toolCall(c)->output)["streams"][0]["stream"] == "out");  // declaration order
  auto d = *e.callTool(s, "echo", obj("{}"));
  r.send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(id++) + R"(,"error":{"code":-32000,"message":"boom"}})");
  CHECK(e.toolCall(d)->reason == "plugin tool call rejected: boom");
  CHECK(r.status("alpha").state == PluginState::Connected);
}

TEST_CASE("TOOL-16 TOOL-20 EMIT-08 EMIT-09 a call times out, its grant is usable while pending and revoked after", "[engine][tools][emit]") {
  Rig r;
  r.cfg.plugins[0].tool_timeout_ms = 300;
  auto& e = r.start();
  Caps c;
  c.publish_bus = true;
  r.answerInit("alpha", c, "[" + tool("echo") + "]");
  auto s = e.createSession();
  auto a = *e.callTool(s, "echo", obj("{}"));
  auto token = str(r.lastFrame("alpha")["params"], "context_id");
  r.send("alpha", emit(s, token));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
  auto b = *e.callTool(s, "echo", obj("{}"));
  auto token_b = str(r.lastFrame("alpha")["params"], "context_id");
  r.advance(300ms);
  CHECK(e.toolCall(b)->reason == "plugin tool call timed out");
  r.send("alpha", R"({"jsonrpc":"2.0","id":3,"result":{"output":{"kind":"single","text":"late"},"is_error":false}})");
  CHECK(e.toolCall(b)->state == CallState::Failed);
  r.send("alpha", emit(s, token_b));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "rejected");
  (void)a;
}

TEST_CASE("TOOL-18 cancellation writes nothing, revokes the grant and ignores the late answer", "[engine][tools]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.publish_bus = true;
  r.answerInit("alpha", c, "[" + tool("echo") + "]");
  auto s = e.createSession();
  auto a = *e.callTool(s, "echo", obj("{}"));
  auto token = str(r.lastFrame("alpha")["params"], "context_id");
  auto n = r.written("alpha").size();
  CHECK(e.cancelToolCall(a));
  CHECK(r.written("alpha").size() == n);
  CHECK(e.toolCall(a)->state == CallState::Cancelled);
  r.send("alpha", R"({"jsonrpc":"2.0","id":2,"result":{"output":{"kind":"single","text":"late"},"is_error":false}})");
  CHECK(e.toolCall(a)->state == CallState::Cancelled);
  r.send("alpha", emit(s, token));
  CHECK(str(r.lastFrame("alpha")["params"], "reason") == "context_id was already consumed, expired, or revoked");
}

TEST_CASE("TOOL-21 TOOL-22 TOOL-23 deny by default — visibility needs a plugin rule — calls match permission and resource", "[engine][tools]") {
  Rig r({"alpha"}, false);
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("issue_read") + "]");
  auto s = e.createSession();
  auto names = e.visibleTools(s);
  CHECK(std::find(names.begin(), names.end(), "issue_read") == names.end());
  CHECK(std::find(names.begin(), names.end(), "bash") != names.end());
  auto n = r.written("alpha").size();
  auto hidden = *e.callTool(s, "issue_read", obj(R"({"path":"docs/a"})"));
  CHECK(e.toolCall(hidden)->state == CallState::Denied);
  e.setSessionPermissions(s, {{"plugin", "issue_read docs/*", Decision::Allow}});
  names = e.visibleTools(s);
  CHECK(std::find(names.begin(), names.end(), "issue_read") != names.end());
  auto denied = *e.callTool(s, "issue_read", obj(R"({"path":"src/x"})"));
  CHECK(e.toolCall(denied)->state == CallState::Denied);
  CHECK(e.toolCall(denied)->permission_resource == "issue_read src/x");
  CHECK(r.written("alpha").size() == n);
  auto allowed = *e.callTool(s, "issue_read", obj(R"({"path":"docs/a"})"));
  CHECK(e.toolCall(allowed)->state == CallState::Pending);
  CHECK(e.toolCall(allowed)->approval_display == "docs/a");  // TOOL-24
  CHECK(r.written("alpha").size() == n + 1);
}

TEST_CASE("TOOL-26 TOOL-27 built-in names are reserved and MCP claims win", "[engine][tools]") {
  Rig r({"alpha", "beta"});
  r.cfg.mcp_tools = {"search"};
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("bash") + "]");
  CHECK(r.status("alpha").reason->find("reserved built-in") != std::string::npos);
  r.answerInit("beta", {}, "[" + tool("search") + "]");
  CHECK(r.status("beta").reason->find("MCP") != std::string::npos);
  Rig q;
  auto& e2 = q.start();
  q.answerInit("alpha", {}, "[" + tool("lookup") + "]");
  e2.claimMcpTool("lookup");
  CHECK(q.status("alpha").state == PluginState::Failed);
  CHECK(q.status("alpha").reason->find("preempted by MCP") != std::string::npos);
  CHECK(q.host.procs[q.conn("alpha")].killed);
  (void)e;
}

TEST_CASE("TOOL-28 the plugin registering last wins a name — the loser keeps its other tools", "[engine][tools]") {
  Rig r({"alpha", "beta"});
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("shared") + "," + tool("only_a") + "]");
  r.answerInit("beta", {}, "[" + tool("shared") + "]");
  CHECK(r.status("alpha").state == PluginState::Connected);
  CHECK(r.status("alpha").tools == std::vector<std::string>{"only_a"});
  CHECK(r.status("alpha").reason->find("replaced by later plugin `beta`") != std::string::npos);
  auto id = *e.callTool(e.createSession(), "shared", obj("{}"));
  CHECK(e.toolCall(id)->plugin == "beta");
}

TEST_CASE("TOOL-29 LIFE-11 plugin exit mid-call fails the call and removes its claims", "[engine][tools][life]") {
  Rig r;
  auto& e = r.start();
  r.answerInit("alpha", {}, "[" + tool("echo") + "]");
  auto s = e.createSession();
  auto a = *e.callTool(s, "echo", obj("{}"));
  e.onExited(r.conn("alpha"), "exit 1");
  CHECK(e.toolCall(a)->reason == "plugin `alpha` stopped during tool call");
  CHECK(r.status("alpha").tools.empty());
  auto b = *e.callTool(s, "echo", obj("{}"));
  CHECK(e.toolCall(b)->reason.find("unknown tool") == 0);
}

TEST_CASE("EVT-01 EVT-02 EVT-05 EVT-06 events go to subscribers only, in seq order, with the raw payload", "[engine][evt]") {
  Rig r({"sub", "nosub"});
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  r.answerInit("sub", c);
  r.answerInit("nosub");
  auto s = e.createSession();
  for (int i = 0; i < 3; ++i) e.produceEvent(s, RecordClass::Ordinary);
  auto evs = r.framesOf("sub", "plugin/event");
  REQUIRE(evs.size() == 3);
  for (int i = 0; i < 3; ++i) {
    const auto& p = evs[static_cast<std::size_t>(i)]["params"];
    CHECK(p["seq"].GetUint64() == static_cast<std::uint64_t>(i + 1));
    CHECK(str(p, "session_id") == s);
    CHECK(p.MemberCount() == 5);
    CHECK(str(p, "event", "type") == "tool_call_progress");
  }
  CHECK(r.framesOf("nosub", "plugin/event").empty());
}

TEST_CASE("EVT-04 a buffered session delivers its whole prefix when first persisted", "[engine][evt]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  r.answerInit("alpha", c);
  auto s = e.createSession(false);
  e.produceEvent(s, RecordClass::Ordinary);
  e.produceEvent(s, RecordClass::Chunk);
  CHECK(r.framesOf("alpha", "plugin/event").empty());
  REQUIRE(e.persistSession(s));
  auto evs = r.framesOf("alpha", "plugin/event");
  REQUIRE(evs.size() == 2);
  CHECK(evs[1]["params"]["seq"].GetInt() == 2);
}

TEST_CASE("EVT-08 text and reasoning deltas are never delivered", "[engine][evt]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  r.answerInit("alpha", c);
  auto s = e.createSession();
  e.appendEvent(s, obj(R"({"type":"text_delta","text":"x"})"));
  e.appendEvent(s, obj(R"({"type":"reasoning_delta","text":"x"})"));
  CHECK(r.framesOf("alpha", "plugin/event").empty());
}

TEST_CASE("EVT-12 EVT-14 EVT-15 EVT-16 a full queue evicts by class and counts drops with diagnostics", "[engine][evt]") {
  Rig r({"slow", "observer"});
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  r.answerInit("slow", c);
  r.answerInit("observer", c);
  r.host.procs[r.conn("slow")].writable = false;
  auto s = e.createSession();
  e.produceEvent(s, RecordClass::Chunk);
  for (int i = 0; i < 1023; ++i) e.produceEvent(s, RecordClass::Ordinary);
  CHECK(r.status("slow").queued == 1024);
  CHECK(r.status("slow").dropped_events == 0);
  e.produceEvent(s, RecordClass::Ordinary);  // evicts the chunk
  CHECK(r.status("slow").dropped_by_class[0] == 1);
  e.produceEvent(s, RecordClass::Chunk);  // no chunk left to evict: the incoming chunk is dropped
  CHECK(r.status("slow").dropped_by_class[0] == 2);
  e.produceEvent(s, RecordClass::Ordinary);  // evicts the oldest ordinary
  CHECK(r.status("slow").dropped_by_class[1] == 1);
  e.produceEvent(s, RecordClass::Terminal);
  CHECK(r.status("slow").dropped_events == 4);
  r.host.procs[r.conn("slow")].writable = true;
  e.onWritable(r.conn("slow"));
  auto evs = r.framesOf("slow", "plugin/event");
  REQUIRE(evs.size() == 1024);
  std::uint64_t prev = 0;
  for (auto& ev : evs) {
    CHECK(ev["params"]["seq"].GetUint64() > prev);
    prev = ev["params"]["seq"].GetUint64();
  }
  CHECK(str(evs.back()["params"], "event", "type") == "tool_call_terminated");
  // The drops are coalesced into plugin_diagnostic events after 100 ms; the observer sees them, the
  // slow plugin never sees diagnostics about itself (EVT-18).
  auto before = r.framesOf("observer", "plugin/event").size();
  r.advance(100ms);
  auto all = r.framesOf("observer", "plugin/event");
  std::uint64_t total = 0;
  bool chunk_msg = false;
  for (std::size_t i = before; i < all.size(); ++i) {
    const auto& ev = all[i]["params"]["event"];
    CHECK(str(ev, "type") == "plugin_diagnostic");
    CHECK(str(ev, "kind") == "event_drop");
    total += ev["count"].GetUint64();
    chunk_msg = chunk_msg || str(ev, "message") == "plugin chunk event buffer overflow; event delivery was dropped";
  }
  CHECK(total == 4);
  CHECK(chunk_msg);
  for (auto& ev : r.framesOf("slow", "plugin/event")) CHECK(str(ev["params"], "event", "type") != "plugin_diagnostic");
}

TEST_CASE("EMIT-11 EMIT-12 grants activate at the write — dropped deliveries' grants never activate", "[engine][emit]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  r.answerInit("alpha", c);
  r.host.procs[r.conn("alpha")].writable = false;
  auto s = e.createSession();
  e.produceEvent(s, RecordClass::Ordinary);
  r.advance(10s);  // queued for 10 s: longer than a grant's lifetime
  r.host.procs[r.conn("alpha")].writable = true;
  e.onWritable(r.conn("alpha"));
  auto token = str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id");
  r.advance(4500ms);
  r.send("alpha", emit(s, token));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
}

TEST_CASE("EMIT-10 notification grants expire 5 s after the write", "[engine][emit]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  r.answerInit("alpha", c);
  auto s = e.createSession();
  e.produceEvent(s, RecordClass::Ordinary);
  auto token = str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id");
  r.advance(5s);
  r.send("alpha", emit(s, token));
  auto res_doc = r.lastFrame("alpha");
  const auto& res = res_doc["params"];
  CHECK(str(res, "bus") == "rejected");
  CHECK(str(res, "durable") == "rejected");
}

TEST_CASE("EMIT-02 EMIT-06 EMIT-07 EMIT-05 EMIT-14 one result per emit in order — tokens are one-shot even when rejected", "[engine][emit]") {
  Rig r({"alpha", "observer"});
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  r.answerInit("alpha", c);
  r.answerInit("observer", c);
  auto s = e.createSession();
  auto other = e.createSession();
  e.produceEvent(s, RecordClass::Ordinary);
  auto token = str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id");
  auto n = r.written("alpha").size();
  r.send("alpha", emit(other, token, "same"));  // mismatch consumes the token
  r.send("alpha", emit(s, token, "same"));      // spent
  auto results = r.framesOf("alpha", "plugin/emit_result");
  REQUIRE(r.written("alpha").size() == n + 2);
  CHECK(str(results[0]["params"], "reason") == "session_id does not match the delivered context");
  CHECK(str(results[1]["params"], "reason") == "context_id was already consumed, expired, or revoked");
  CHECK(str(results[1]["params"], "name") == "same");
  CHECK(r.status("alpha").diagnostics["context_mismatch"] == 2);
  r.advance(100ms);
  bool in_token_session = false;
  for (auto& ev : r.framesOf("observer", "plugin/event"))
    if (str(ev["params"], "event", "kind") == "context_mismatch") in_token_session = str(ev["params"], "session_id") == s;
  CHECK(in_token_session);
}

TEST_CASE("EMIT-04 EMIT-13 a token of another plugin is unknown: status reason only, no diagnostic", "[engine][emit]") {
  Rig r({"alpha", "beta"});
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  r.answerInit("alpha", c);
  r.answerInit("beta", c);
  auto s = e.createSession();
  e.produceEvent(s, RecordClass::Ordinary);
  auto beta_token = str(r.framesOf("beta", "plugin/event").back()["params"], "context_id");
  r.send("alpha", emit(s, beta_token));
  CHECK(str(r.lastFrame("alpha")["params"], "reason") == "context_id is unknown to this plugin");
  CHECK(r.status("alpha").reason->find("unknown") != std::string::npos);
  CHECK(r.status("alpha").diagnostics.empty());
}

TEST_CASE("EMIT-15 EMIT-16 EMIT-17 EMIT-20 statuses: published bus, rejected durable, capability rejection", "[engine][emit]") {
  Rig r({"pub", "nopub"});
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  c.publish_session_events = true;
  r.answerInit("pub", c);
  Caps d;
  d.subscribe_events = true;
  r.answerInit("nopub", d);
  auto s = e.createSession();
  e.produceEvent(s, RecordClass::Ordinary);
  auto t1 = str(r.framesOf("pub", "plugin/event").back()["params"], "context_id");
  auto t2 = str(r.framesOf("nopub", "plugin/event").back()["params"], "context_id");
  r.send("pub", emit(s, t1));
  auto a_doc = r.lastFrame("pub");
  const auto& a = a_doc["params"];
  CHECK(str(a, "bus") == "published");
  CHECK(str(a, "durable") == "rejected");
  CHECK(str(a, "reason").find("plugin/producer/send") != std::string::npos);
  r.send("nopub", emit(s, t2));
  auto b_doc = r.lastFrame("nopub");
  const auto& b = b_doc["params"];
  CHECK(str(b, "bus") == "rejected");
  CHECK(str(b, "reason") == "plugin did not declare an event publishing capability");
  for (auto& rec : e.session(s)->log) CHECK(rec.type != "plugin_event_added");
}

TEST_CASE("EMIT-21 EMIT-22 an emit before the handshake is rejected as not initialized — undecodable params are fatal", "[engine][emit]") {
  Rig r;
  r.start();
  r.send("alpha", emit("s", "t"));
  CHECK(r.written("alpha").size() == 1);  // held until the handshake (INIT-07)
  r.answerInit("alpha");
  CHECK(str(r.lastFrame("alpha")["params"], "reason") == "plugin is not initialized");
  r.send("alpha", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":"s","name":"n","payload":{}}})");
  CHECK(r.status("alpha").state == PluginState::Failed);
}

TEST_CASE("BUS-01 BUS-02 BUS-05 BUS-07 EVT-19 bus events reach subscribers except the publisher, with a fresh grant", "[engine][bus]") {
  Rig r({"a", "b", "c"});
  auto& e = r.start();
  Caps pub;
  pub.subscribe_events = true;
  pub.subscribe_bus = true;
  pub.publish_bus = true;
  r.answerInit("a", pub);
  Caps sub;
  sub.subscribe_bus = true;
  sub.publish_bus = true;
  r.answerInit("b", sub);
  r.answerInit("c");
  auto s = e.createSession();
  e.produceEvent(s, RecordClass::Ordinary);
  auto token = str(r.framesOf("a", "plugin/event").back()["params"], "context_id");
  r.send("a", emit(s, token, "ping", R"({"k":[1,2]})"));
  CHECK(r.framesOf("a", "plugin/bus_event").empty());
  CHECK(r.framesOf("c", "plugin/bus_event").empty());
  auto bus = r.framesOf("b", "plugin/bus_event");
  REQUIRE(bus.size() == 1);
  const auto& p = bus[0]["params"];
  CHECK(str(p, "plugin") == "a");
  CHECK(str(p, "name") == "ping");
  CHECK(json::equal(p["payload"], obj(R"({"k":[1,2]})")));
  r.send("b", emit(s, str(p, "context_id"), "reply"));
  CHECK(str(r.lastFrame("b")["params"], "bus") == "published");
  auto back = r.framesOf("a", "plugin/bus_event");  // a subscribes; b is the publisher now
  REQUIRE(back.size() == 1);
  CHECK(str(back[0]["params"], "plugin") == "b");
  CHECK(r.framesOf("b", "plugin/bus_event").size() == 1);
}

TEST_CASE("QUOTA-01 QUOTA-02 QUOTA-04 payload and name limits drop with oversized_event", "[engine][quota]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  r.answerInit("alpha", c);
  auto s = e.createSession();
  auto next_token = [&] {
    e.produceEvent(s, RecordClass::Ordinary);
    return str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id");
  };
  auto payload = [](std::size_t bytes) { return "\"" + std::string(bytes - 2, 'x') + "\""; };
  r.send("alpha", emit(s, next_token(), "n", payload(262'144)));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
  r.send("alpha", emit(s, next_token(), "n", payload(262'145)));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "dropped");
  std::string four_byte;
  for (int i = 0; i < 128; ++i) four_byte += "\xF0\x9F\x98\x80";
  r.send("alpha", emit(s, next_token(), four_byte));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
  for (std::string bad : {four_byte + "a", std::string(""), std::string("a\tb")}) {
    r.send("alpha", emit(s, next_token(), bad));
    CHECK(str(r.lastFrame("alpha")["params"], "bus") == "dropped");
    CHECK(str(r.lastFrame("alpha")["params"], "durable") == "rejected");
  }
  CHECK(r.status("alpha").diagnostics["oversized_event"] == 4);
}

TEST_CASE("QUOTA-05 QUOTA-07 QUOTA-08 QUOTA-09 QUOTA-10 the 41st emit within one second is dropped and rate_limited", "[engine][quota]") {
  Rig r({"alpha", "observer"});
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  r.answerInit("alpha", c);
  r.answerInit("observer", c);
  auto s = e.createSession();
  auto s2 = e.createSession();
  std::vector<std::string> tokens;
  for (int i = 0; i < 43; ++i) {
    e.produceEvent(i < 42 ? s : s2, RecordClass::Ordinary);
    tokens.push_back(str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id"));
  }
  for (int i = 0; i < 40; ++i) r.send("alpha", emit(s, tokens[static_cast<std::size_t>(i)]));
  auto results = r.framesOf("alpha", "plugin/emit_result");
  for (auto& res : results) CHECK(str(res["params"], "bus") == "published");
  r.advance(999ms);
  r.send("alpha", emit(s, tokens[40]));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "dropped");
  CHECK(str(r.lastFrame("alpha")["params"], "reason").find("rate limit") != std::string::npos);
  r.send("alpha", emit(s2, tokens[42]));  // another session: independent
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
  r.advance(1ms);  // the 1 s window restarts
  r.send("alpha", emit(s, tokens[41]));
  CHECK(str(r.lastFrame("alpha")["params"], "bus") == "published");
  r.advance(100ms);
  std::uint64_t rate = 0;
  for (auto& ev : r.framesOf("observer", "plugin/event"))
    if (str(ev["params"], "event", "kind") == "rate_limited") rate += ev["params"]["event"]["count"].GetUint64();
  CHECK(rate == 1);
}

TEST_CASE("QUOTA-06 the emit crossing 4 MiB per minute is dropped", "[engine][quota]") {
  PublishQuota q;
  clock::TimePoint t{};
  std::uint64_t used = 0;
  int admitted = 0;
  for (int i = 0; i < 20; ++i, t += 1s) {
    if (q.check("p", "s", 262'000, t) == PublishQuota::Verdict::Admitted) { used += 262'000; ++admitted; }
  }
  CHECK(admitted == 16);
  CHECK(used <= kEmitBytesPerMinute);
  CHECK(q.check("p", "s", 1, clock::TimePoint{} + 60s) == PublishQuota::Verdict::Admitted);
}

TEST_CASE("QUOTA-11 QUOTA-12 diagnostic keys are normalised, cut at 200 characters, 256 per batch plus an exact overflow", "[engine][quota]") {
  DiagnosticCoalescer d;
  d.record("s", "p", "hook_blocked", std::string(150, 'a') + "\n" + std::string(150, 'b'));
  auto b = d.swap();
  REQUIRE(b.size() == 1);
  CHECK(b[0].message.size() == 200);
  CHECK(b[0].message[150] == ' ');
  for (int i = 0; i < 300; ++i) d.record("s", "p", "rate_limited", "m" + std::to_string(i));
  d.record("s", "p", "rate_limited", "m0");
  b = d.swap();
  REQUIRE(b.size() == 257);
  CHECK(b.back().message == "(overflow)");
  CHECK(b.back().count == 44);
  std::uint64_t sum = 0;
  for (auto& e : b) sum += e.count;
  CHECK(sum == 301);
}

TEST_CASE("QUOTA-14 a diagnostic append stalled for 250 ms marks the drain incomplete", "[engine][quota]") {
  Rig r;
  auto& e = r.start();
  Caps c;
  c.subscribe_events = true;
  c.publish_bus = true;
  r.answerInit("alpha", c);
  auto s = e.createSession();
  r.send("alpha", emit(s, "unknown-token"));
  e.produceEvent(s, RecordClass::Ordinary);
  auto token = str(r.framesOf("alpha", "plugin/event").back()["params"], "context_id");
  r.send("alpha", emit(s, token));
  r.send("alpha", emit(s, token));  // context_mismatch in s
  REQUIRE(e.setSessionStalled(s, true));
  r.advance(100ms);
  r.advance(250ms);
  bool noted = false;
  for (auto& n : r.status("alpha").notes) noted = noted || n.find("diagnostic drain incomplete") == 0;
  CHECK(noted);
}

TEST_CASE("GrantTable keeps at most 1024 active and 256 spent tokens", "[engine][emit]") {
  GrantTable g;
  clock::TimePoint t{};
  for (int i = 0; i < 1100; ++i) {
    g.mint("t" + std::to_string(i), "s", GrantKind::Notification);
    g.activate("t" + std::to_string(i), t);
  }
  CHECK(g.activeCount() == 1024);
  CHECK(g.consume("t0", "s", t).result == GrantCheck::Result::Spent);
  CHECK(g.consume("t1099", "s", t).result == GrantCheck::Result::Ok);
  CHECK(g.spentCount() <= 256);
  CHECK(g.consume("t1", "s", t + 31s).result == GrantCheck::Result::Unknown);
}
