// tests/cognipeer/host_test — the reference Cognipeer host against a scripted guest (no Node): the exact
// hook log for chain order, deny/ask/allow precedence, open vs closed failure, observer concurrency and
// slot conflicts (one TEST_CASE per CG rule), plus merge rules, capabilities, snapshot and the loop.
#include <catch2/catch.hpp>

#include "mock_engine/cognipeer/host.h"
#include "tests/cognipeer/fake_guest.h"

using namespace conform;
using namespace conform::cognipeer;
using namespace conform::cognipeer::test;

namespace {

Host make(std::vector<PluginShape> ps, FakeGuest& g) {
  auto h = Host::create(std::move(ps), g);
  REQUIRE(h);
  return std::move(*h);
}

std::string lines(const Host& h) { return h.logText(); }

}  // namespace

TEST_CASE("CG-03 gate chain: priority then declaration order, each handler sees the previous output", "[cognipeer]") {
  FakeGuest g;
  // B (index 1) has priority 50: it runs first although declared second; A and C share 100 and keep
  // declaration order.
  g.on["0:userPromptSubmit"] = [](const InvokeRequest&) { return returns(R"({"text":"A"})"); };
  g.on["1:userPromptSubmit"] = [](const InvokeRequest&) { return returns(R"({"text":"B"})"); };
  g.on["2:userPromptSubmit"] = [](const InvokeRequest&) { return returns(R"({"text":"C"})"); };
  Host h = make({shape(0, "a", {"userPromptSubmit"}), shape(1, "b", {"userPromptSubmit"}, 50), shape(2, "c", {"userPromptSubmit"})}, g);
  auto r = h.runGate("userPromptSubmit", lit(R"({"text":"orig","content":[{"type":"text","text":"orig"}]})"));
  CHECK(r.decision == "allow");
  CHECK(lines(h) ==
        "b userPromptSubmit {\"text\":\"orig\",\"content\":[{\"type\":\"text\",\"text\":\"orig\"}]} -> returned {\"text\":\"B\"}\n"
        "a userPromptSubmit {\"text\":\"B\",\"content\":[{\"type\":\"text\",\"text\":\"B\"}]} -> returned {\"text\":\"A\"}\n"
        "c userPromptSubmit {\"text\":\"A\",\"content\":[{\"type\":\"text\",\"text\":\"A\"}]} -> returned {\"text\":\"C\"}\n");
  CHECK(json::compact(r.value) == R"({"text":"C","content":[{"type":"text","text":"C"}]})");
}

TEST_CASE("CG-09 deny > ask > allow: the first deny ends the chain, ask survives allow", "[cognipeer]") {
  FakeGuest g;
  g.on["0:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"decision":"allow"})"); };
  g.on["1:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"decision":"ask","approvalPrompt":"ok?"})"); };
  g.on["2:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"decision":"deny","reason":"no"})"); };
  g.on["3:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"decision":"allow"})"); };
  SECTION("allow, ask, deny -> deny; the plugin after the deny is never called") {
    Host h = make({shape(0, "p0", {"preToolUse"}), shape(1, "p1", {"preToolUse"}), shape(2, "p2", {"preToolUse"}),
                   shape(3, "p3", {"preToolUse"})}, g);
    auto r = h.runGate("preToolUse", lit(R"({"toolName":"t"})"));
    CHECK(r.decision == "deny");
    CHECK(r.reason == "no");
    CHECK(r.denied_by == "p2");
    CHECK(lines(h) == "p0 preToolUse {\"toolName\":\"t\"} -> returned {\"decision\":\"allow\"}\n"
                      "p1 preToolUse {\"toolName\":\"t\"} -> returned {\"decision\":\"ask\",\"approvalPrompt\":\"ok?\"} [ask]\n"
                      "p2 preToolUse {\"toolName\":\"t\",\"approvalPrompt\":\"ok?\"} -> returned {\"decision\":\"deny\",\"reason\":\"no\"} [deny]\n");
  }
  SECTION("allow, ask, allow -> ask") {
    Host h = make({shape(0, "p0", {"preToolUse"}), shape(1, "p1", {"preToolUse"}), shape(3, "p3", {"preToolUse"})}, g);
    auto r = h.runGate("preToolUse", lit(R"({"toolName":"t"})"));
    CHECK(r.decision == "ask");
    CHECK(r.approval_prompt == std::optional<std::string>("ok?"));
    CHECK(h.findings().empty());
  }
  SECTION("ask outside preToolUse is a deny and a CG-09 finding") {
    g.on["0:preModelCall"] = [](const InvokeRequest&) { return returns(R"({"decision":"ask"})"); };
    Host h = make({shape(0, "p0", {"preModelCall"})}, g);
    auto r = h.runGate("preModelCall", lit("{}"));
    CHECK(r.decision == "deny");
    REQUIRE(h.findings().size() == 1);
    CHECK(h.findings()[0].rule == "CG-09");
  }
  SECTION("an unknown decision is an error under R5: open continues, closed denies") {
    g.on["0:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"decision":"maybe"})"); };
    Host open = make({shape(0, "p0", {"preToolUse"}), shape(3, "p3", {"preToolUse"})}, g);
    CHECK(open.runGate("preToolUse", lit("{}")).decision == "allow");
    CHECK(open.findings().at(0).rule == "CG-09");
    FakeGuest g2;
    g2.on = g.on;
    Host closed = make({shape(0, "p0", {"preToolUse"}, 100, true)}, g2);
    auto r = closed.runGate("preToolUse", lit("{}"));
    CHECK(r.decision == "deny");
    CHECK(r.reason == "p0: hook error (fail-closed) — unknown decision \"maybe\"");
  }
}

TEST_CASE("CG-18 failureMode open skips the failing plugin, closed turns the error into a deny", "[cognipeer]") {
  FakeGuest g;
  g.on["0:preToolUse"] = [](const InvokeRequest&) { return throws("boom"); };
  g.on["1:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"args":{"x":2}})"); };
  SECTION("open") {
    Host h = make({shape(0, "bad", {"preToolUse"}), shape(1, "good", {"preToolUse"})}, g);
    auto r = h.runGate("preToolUse", lit(R"({"args":{"x":1}})"));
    CHECK(r.decision == "allow");
    CHECK(lines(h) == "bad preToolUse {\"args\":{\"x\":1}} -> threw Error: boom [error(open)]\n"
                      "good preToolUse {\"args\":{\"x\":1}} -> returned {\"args\":{\"x\":2}}\n");
  }
  SECTION("closed") {
    Host h = make({shape(0, "bad", {"preToolUse"}, 100, true), shape(1, "good", {"preToolUse"})}, g);
    auto r = h.runGate("preToolUse", lit(R"({"args":{"x":1}})"));
    CHECK(r.decision == "deny");
    CHECK(r.reason == "bad: hook error (fail-closed) — boom");
    CHECK(lines(h) == "bad preToolUse {\"args\":{\"x\":1}} -> threw Error: boom [deny(closed)]\n");
  }
  SECTION("a timeout is an error (R6)") {
    g.on["0:preToolUse"] = [](const InvokeRequest&) { return timesOut(); };
    PluginShape s = shape(0, "slow", {"preToolUse"}, 100, true);
    s.timeout_ms = 50;
    Host h = make({s}, g);
    auto r = h.runGate("preToolUse", lit("{}"));
    CHECK(r.reason == "slow: hook error (fail-closed) — timed out after 50 ms");
  }
}

TEST_CASE("CG-17 observers run concurrently (every invoke sent before any reply) and never fail the run", "[cognipeer]") {
  FakeGuest g;
  g.on["0:sessionEnd"] = [](const InvokeRequest&) { return throws("observer down"); };
  Host h = make({shape(0, "a", {"sessionEnd"}, 100, true), shape(1, "b", {"sessionEnd"}), shape(2, "c", {"sessionEnd"})}, g);
  h.runObservers("sessionEnd", lit(R"({"status":"success"})"));
  CHECK(g.events == std::vector<std::string>{"send 0:sessionEnd", "send 1:sessionEnd", "send 2:sessionEnd",
                                             "await 0:sessionEnd", "await 1:sessionEnd", "await 2:sessionEnd"});
  CHECK(lines(h) == "a sessionEnd {\"status\":\"success\"} -> threw Error: observer down [swallowed (observer)]\n"
                    "b sessionEnd {\"status\":\"success\"} -> returned {\"$type\":\"undefined\"}\n"
                    "c sessionEnd {\"status\":\"success\"} -> returned {\"$type\":\"undefined\"}\n");
}

TEST_CASE("CG-05 a second owner of a strategy slot is a construction error", "[cognipeer]") {
  FakeGuest g;
  PluginShape a = shape(0, "a", {}), b = shape(1, "b", {});
  a.provides = {"memoryStore"};
  b.provides = {"memoryStore"};
  auto h = Host::create({a, b}, g);
  REQUIRE(!h);
  CHECK(h.error() == "strategy slot \"memoryStore\" is already provided by \"a\"; \"b\" cannot claim it (CG-05)");
  b.provides = {"tokenCounter"};
  CHECK(Host::create({a, b}, g));
}

TEST_CASE("CG-03 registration refuses duplicate and empty names", "[cognipeer]") {
  FakeGuest g;
  CHECK(Host::create({shape(0, "a", {}), shape(1, "a", {})}, g).error() == "duplicate plugin name \"a\"");
  CHECK(!Host::create({shape(0, "", {})}, g));
}

TEST_CASE("CG-03 merge rules: collect, shallow-merge, first short-circuit wins", "[cognipeer]") {
  FakeGuest g;
  g.on["0:preModelCall"] = [](const InvokeRequest&) { return returns(R"({"params":{"t":1},"shortCircuit":{"content":"x"}})"); };
  g.on["1:preModelCall"] = [](const InvokeRequest&) { return returns(R"({"params":{"u":2},"shortCircuit":{"content":"y"}})"); };
  g.on["0:sessionStart"] = [](const InvokeRequest&) { return returns(R"({"systemPromptAppend":"one"})"); };
  g.on["1:sessionStart"] = [](const InvokeRequest&) { return returns(R"({"systemPromptAppend":"two"})"); };
  Host h = make({shape(0, "a", {"preModelCall", "sessionStart"}), shape(1, "b", {"preModelCall", "sessionStart"})}, g);
  auto r = h.runGate("preModelCall", lit(R"({"params":{"s":0}})"));
  CHECK(json::compact(r.value) == R"({"params":{"s":0,"t":1,"u":2},"shortCircuit":{"content":"x"}})");
  auto s = h.runGate("sessionStart", lit("{}"));
  CHECK(json::compact(s.collected) == R"({"systemPromptAppend":["one","two"]})");
}

TEST_CASE("CG-13 a text rewrite keeps attachments, a plugin dropping one is flagged", "[cognipeer]") {
  FakeGuest g;
  g.on["0:userPromptSubmit"] = [](const InvokeRequest&) { return returns(R"({"text":"masked"})"); };
  g.on["1:userPromptSubmit"] = [](const InvokeRequest&) { return returns(R"({"content":[{"type":"text","text":"x"}]})"); };
  auto in = lit(R"({"text":"hi","content":[{"type":"text","text":"hi"},{"type":"image","data":"AAA"}]})");
  Host ok = make({shape(0, "a", {"userPromptSubmit"})}, g);
  auto r = ok.runGate("userPromptSubmit", in);
  CHECK(json::compact(r.value["content"]) == R"([{"type":"text","text":"masked"},{"type":"image","data":"AAA"}])");
  CHECK(ok.findings().empty());
  Host bad = make({shape(1, "b", {"userPromptSubmit"})}, g);
  auto r2 = bad.runGate("userPromptSubmit", in);
  CHECK(json::compact(r2.value["content"]) == R"([{"type":"text","text":"x"},{"type":"image","data":"AAA"}])");
  CHECK(bad.findings().at(0).rule == "CG-13");
}

TEST_CASE("CG-14 capabilities are module-level: 13 hooks, 10 slots, 7 features, no contributions", "[cognipeer]") {
  auto c = Host::capabilities();
  CHECK(c["hookContractVersion"].GetInt() == 1);
  CHECK(c["hooks"].MemberCount() == 13);
  CHECK(c["slots"].MemberCount() == 10);
  CHECK(c["features"].MemberCount() == 7);
  CHECK(!c.HasMember("contributions"));
  CHECK(c["slots"]["summarizer"]["implemented"].GetBool() == false);
}

TEST_CASE("CG-11 postToolUse fires after execution, a preToolUse short-circuit and a cache hit", "[cognipeer]") {
  FakeGuest g;
  int n = 0;
  g.on["0:preToolUse"] = [&](const InvokeRequest&) { return ++n == 1 ? returns(R"({"result":"from-hook"})") : undefinedResult(); };
  g.on["0:postToolUse"] = [](const InvokeRequest& r) {
    return returns(std::string(R"({"output":"masked-)") + json::stringMember(r.input, "source").value_or("?").data() + "\"}");
  };
  Host h = make({shape(0, "rec", {"preToolUse", "postToolUse"})}, g);
  auto out = h.run(lit(R"({"prompt":"go","tools":[{"name":"t","result":"real","cache":true}],
      "turns":[{"toolCalls":[{"name":"t","args":{}}]},{"toolCalls":[{"name":"t","args":{}}]},
               {"toolCalls":[{"name":"t","args":{}}]},{"content":"done"}]})"));
  REQUIRE(out);
  std::vector<std::string> sources;
  for (const auto& m : (*out)["messages"].GetArray())
    if (std::string(m["role"].GetString()) == "tool") sources.push_back(m["content"].GetString());
  // CG-12: the transcript holds the masked output.
  CHECK(sources == std::vector<std::string>{"masked-hook", "masked-tool", "masked-cache"});
  CHECK(std::string((*out)["status"].GetString()) == "success");
}

TEST_CASE("CG-08 a userPromptSubmit deny ends the run before any model call with __guardrailBlocked", "[cognipeer]") {
  for (const char* agent : {"base", "smart"}) {
    FakeGuest g;
    g.on["0:userPromptSubmit"] = [](const InvokeRequest&) { return returns(R"({"decision":"deny","reason":"pii"})"); };
    Host h = make({shape(0, "guard", {"userPromptSubmit", "preModelCall"})}, g);
    auto out = h.run(lit(std::string(R"({"agent":")") + agent + R"(","prompt":"x","turns":[{"content":"y"}]})"));
    REQUIRE(out);
    CHECK((*out)["modelCalls"].Size() == 0);
    CHECK(json::compact((*out)["ctx"]["__guardrailBlocked"]) == R"({"phase":"request","incident":{"reason":"pii","deniedBy":"guard"}})");
    // 0.10.2: a snapshot never carries the flag.
    auto snap = h.snapshot();
    REQUIRE(snap);
    CHECK(!(*snap)["ctx"].HasMember("__guardrailBlocked"));
  }
}

TEST_CASE("CG-16 snapshot strips plugin state, resume opens a new session with resumed:true", "[cognipeer]") {
  FakeGuest g;
  Host h = make({shape(0, "rec", {"sessionStart", "userPromptSubmit"})}, g);
  REQUIRE(h.run(lit(R"({"prompt":"hi","turns":[{"content":"ok"}]})")));
  auto snap = h.snapshot();
  REQUIRE(snap);
  for (const char* k : {"__plugins", "__pluginState", "__pluginRunStarted", "__pluginRunEnded"}) CHECK(!snap->HasMember(k));
  h.clearLog();
  REQUIRE(h.resume(*snap, lit(R"({"turns":[{"content":"again"}]})")));
  CHECK(lines(h).rfind("rec sessionStart {\"messages\":", 0) == 0);
  CHECK(lines(h).find("\"resumed\":true") != std::string::npos);
  CHECK(lines(h).find("userPromptSubmit") == std::string::npos);  // no new prompt: skipped
}

TEST_CASE("CG-09 ask on preToolUse parks the run with an approval notification", "[cognipeer]") {
  FakeGuest g;
  g.on["0:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"decision":"ask"})"); };
  Host h = make({shape(0, "appr", {"preToolUse", "notification", "sessionEnd"})}, g);
  auto out = h.run(lit(R"({"prompt":"x","tools":[{"name":"t","result":1}],"turns":[{"toolCalls":[{"name":"t","args":{}}]}]})"));
  REQUIRE(out);
  CHECK(std::string((*out)["status"].GetString()) == "paused");
  CHECK((*out)["ctx"].HasMember("__awaitingApproval"));
  CHECK(lines(h).find("appr notification {\"kind\":\"approval\",\"toolName\":\"t\"}") != std::string::npos);
  CHECK(lines(h).find("appr sessionEnd {\"status\":\"paused\"}") != std::string::npos);
}

TEST_CASE("CG-10 a preToolUse deny under structured output ends the loop", "[cognipeer]") {
  FakeGuest g;
  g.on["0:preToolUse"] = [](const InvokeRequest&) { return returns(R"({"decision":"deny","reason":"no"})"); };
  Host h = make({shape(0, "d", {"preToolUse"})}, g);
  auto out = h.run(lit(R"({"prompt":"x","structuredOutput":true,"turns":[{"toolCalls":[{"name":"t","args":{}}]},{"content":"z"}]})"));
  REQUIRE(out);
  CHECK((*out)["modelCalls"].Size() == 1);
  Host h2 = make({shape(0, "d", {"preToolUse"})}, g);
  auto out2 = h2.run(lit(R"({"prompt":"x","turns":[{"toolCalls":[{"name":"t","args":{}}]},{"content":"z"}]})"));
  CHECK((*out2)["modelCalls"].Size() == 2);
}

TEST_CASE("CG-19 after a handoff the persona is on every model call and never in the transcript", "[cognipeer]") {
  FakeGuest g;
  Host h = make({shape(0, "r", {"preModelCall"})}, g);
  auto out = h.run(lit(R"({"prompt":"x","persona":"P1","turns":[{"handoff":{"persona":"P2"}},{"content":"a"}]})"));
  REQUIRE(out);
  CHECK(std::string((*out)["modelCalls"][1]["system"].GetString()) == "P2");
  CHECK(json::compact((*out)["messages"]).find("P2") == std::string::npos);
}

TEST_CASE("CG-18 setup failure: open skips contributions but hooks fire, closed makes the invoke throw", "[cognipeer]") {
  FakeGuest g;
  g.on["0:setup"] = [](const InvokeRequest&) { return throws("no key"); };
  PluginShape p = shape(0, "s", {"userPromptSubmit"});
  p.setup = true;
  p.tools = lit(R"([{"name":"pt"}])");
  Host open = make({p}, g);
  auto out = open.run(lit(R"({"prompt":"x","turns":[{"content":"a"}]})"));
  REQUIRE(out);
  CHECK(std::string((*out)["status"].GetString()) == "success");
  CHECK(open.logText().find("s userPromptSubmit") != std::string::npos);
  CHECK(open.contributions(lit("[]"))["tools"].Size() == 0);
  p.closed = true;
  Host closed = make({p}, g);
  auto out2 = closed.run(lit(R"({"prompt":"x","turns":[{"content":"a"}]})"));
  REQUIRE(out2);
  CHECK(std::string((*out2)["status"].GetString()) == "threw");
}

TEST_CASE("CG-04 contributions accumulate: tools by name (agent first), toolDescriptions last wins", "[cognipeer]") {
  FakeGuest g;
  PluginShape a = shape(0, "a", {}), b = shape(1, "b", {});
  a.tools = lit(R"([{"name":"x","v":"a"},{"name":"y"}])");
  b.tools = lit(R"([{"name":"x","v":"b"},{"name":"z"}])");
  a.tool_descriptions = lit(R"({"x":"from a"})");
  b.tool_descriptions = lit(R"({"x":"from b"})");
  Host h = make({a, b}, g);
  auto c = h.contributions(lit(R"([{"name":"y","v":"agent"}])"));
  CHECK(json::compact(c["tools"]) == R"([{"name":"y","v":"agent"},{"name":"x","v":"a"},{"name":"z"}])");
  CHECK(json::compact(c["toolDescriptions"]) == R"({"x":"from b"})");
}

TEST_CASE("CG-13 an attachment changed in place (mutated_input) is flagged, the host keeps the original", "[cognipeer]") {
  FakeGuest g;
  g.on["0:userPromptSubmit"] = [](const InvokeRequest&) {
    InvokeResult r = undefinedResult();
    r.mutated_input = lit(R"({"text":"hi","content":[{"type":"text","text":"hi"},{"type":"image","data":"BBB"}]})");
    return r;
  };
  Host h = make({shape(0, "inplace", {"userPromptSubmit"})}, g);
  auto r = h.runGate("userPromptSubmit", lit(R"({"text":"hi","content":[{"type":"text","text":"hi"},{"type":"image","data":"AAA"}]})"));
  CHECK(json::compact(r.value["content"][1]) == R"({"type":"image","data":"AAA"})");
  REQUIRE(h.findings().size() == 1);
  CHECK(h.findings()[0].rule == "CG-13");
}

TEST_CASE("CG-17 the scripted loop fires every hook at its point (exact hook log)", "[cognipeer]") {
  FakeGuest g;
  std::vector<std::string> all(std::begin(kGateHooks), std::end(kGateHooks));
  all.insert(all.end(), std::begin(kObserverHooks), std::end(kObserverHooks));
  Host h = make({shape(0, "rec", all)}, g);
  auto out = h.run(lit(R"({"prompt":"p","compactAt":[1],"subagents":{"s":{"turns":[{"content":"ok"}]}},
      "tools":[{"name":"t","result":"r"}],
      "turns":[{"toolCalls":[{"name":"subagent","args":{"name":"s","task":"do"}}]},{"toolCalls":[{"name":"t","id":"c9","args":{}}]},{"content":"end"}]})"));
  REQUIRE(out);
  std::string order;
  for (const HookCall& c : h.log()) order += c.hook + " ";
  CHECK(order ==
        "sessionStart userPromptSubmit preModelCall modelCall postModelCall subagentStart sessionStart userPromptSubmit "
        "preModelCall modelCall postModelCall preFinalAnswer subagentStop preCompact postCompact preModelCall modelCall "
        "postModelCall preToolUse postToolUse preModelCall modelCall postModelCall preFinalAnswer sessionEnd ");
  CHECK(std::string((*out)["final"].GetString()) == "end");
}
