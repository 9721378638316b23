// tests/dsl — the scenario parser: every step kind, every directive, errors with file:line:column,
// and the --dump-plan golden. Pure (no processes).
#include <catch2/catch.hpp>

#include "harness/dsl/lexer.h"
#include "harness/dsl/plan.h"

using namespace conform;
using dsl::Step;

namespace {

dsl::Plan ok(std::string_view text) {
  auto p = dsl::parse(text, "t.scn");
  if (!p) FAIL(p.error().front().str());
  return std::move(*p);
}

std::string firstError(std::string_view text) {
  auto p = dsl::parse(text, "t.scn");
  REQUIRE_FALSE(p);
  return p.error().front().str();
}

const char* kAllSteps = R"(# every step kind
case EMIT-04 "a context token admits exactly one emit"
  role engine
  profile 0.0.6
  rules EMIT-06 EMIT-13
  needs publish_bus
  needs hook tool_before_call
  needs tool
  config engine_version "x"
  drive session.create as $s
  drive event $s class=ordinary
  drive tool.call $s echo {"text": "hi"} as $call
  expect notify plugin/event {"session_id": $s} as $ev within 2s
  send notify plugin/emit {"session_id": $s, "context_id": $ev.context_id}
  send request plugin/ping {} as $p
  send request plugin/ping {} id 9223372036854775807 as $max
  send request plugin/ping {} id "s-1" as $str
  expect response $p exact {}
  expect error $p -32601 {"message": "$*"} within 500ms
  expect request plugin/producer/register as $reg
  send response $reg {"producer_id": "p"}
  send error $reg -32040 "not enabled"
  send raw hex:FF0A
  send raw text:"{bad\r\n"
  send frame {"jsonrpc": "2.0", "method": "x", "params": {}}
  expect no response within 1s
  expect no frame
  expect exit nonzero within 3s
  expect exit code 3
  expect exit signal
  expect exit zero
  expect exit
  expect eof within 1s
  expect state failed reason "UTF-8" within 1s
  repeat 2 {
    for each tool as $t {
      wait 10ms
    }
  }
  for each hook as $h {
    advance 5s
  }
  fault close-stdin
  fault kill
  fault restart
  fault stall-reading 2s
  fault drop-reply
  fault disconnect
  drive ping
  drive shutdown
)";

}  // namespace

TEST_CASE("every step kind parses into a typed step", "[dsl]") {
  dsl::Plan plan = ok(kAllSteps);
  REQUIRE(plan.cases.size() == 1);
  const dsl::Case& c = plan.cases[0];
  CHECK(c.id == "EMIT-04");
  CHECK(c.area() == "EMIT");
  CHECK(c.profile == "0.0.6");
  CHECK(c.rules == std::vector<std::string>{"EMIT-04", "EMIT-06", "EMIT-13"});
  REQUIRE(c.needs.size() == 3);
  CHECK(c.needs[1].kind == dsl::Need::Kind::Hook);
  CHECK(c.needs[1].name == "tool_before_call");
  CHECK(c.config.at(0) == std::pair<std::string, std::string>{"engine_version", "x"});
  const auto& s = c.steps;
  REQUIRE(s.size() == 35);
  CHECK(s[0].kind == Step::Kind::Drive);
  CHECK(s[0].as == "s");
  CHECK(s[2].json);
  CHECK(s[2].args == std::vector<std::string>{"$s", "echo"});
  CHECK(s[3].kind == Step::Kind::Expect);
  CHECK(s[3].msg == dsl::MsgKind::Notify);
  CHECK(json::compact(*s[3].json) == R"({"session_id":"$s"})");
  CHECK(s[3].within == dsl::Millis(2000));
  CHECK(s[4].kind == Step::Kind::SendNotify);
  CHECK(json::compact(*s[4].json) == R"({"session_id":"$s","context_id":"$ev.context_id"})");
  CHECK(s[6].id->GetInt64() == INT64_MAX);
  CHECK(s[7].id->IsString());
  CHECK(s[8].exact);
  CHECK(s[9].msg == dsl::MsgKind::Error);
  CHECK(*s[9].code == -32601);
  CHECK(s[12].kind == Step::Kind::SendError);
  CHECK(s[12].text == "not enabled");
  CHECK(s[13].text == std::string("\xFF\n"));
  CHECK(s[14].text == "{bad\r\n");
  CHECK(s[15].kind == Step::Kind::SendFrame);
  CHECK(s[16].kind == Step::Kind::ExpectNo);
  CHECK(s[18].exit == dsl::ExitWant::Nonzero);
  CHECK(*s[19].code == 3);
  CHECK(s[23].kind == Step::Kind::ExpectEof);
  CHECK(s[24].reason == "UTF-8");
  CHECK(s[25].kind == Step::Kind::Repeat);
  REQUIRE(s[25].body.size() == 1);
  CHECK(s[25].body[0].kind == Step::Kind::ForEachTool);
  CHECK(s[25].body[0].body[0].kind == Step::Kind::Wait);
  CHECK(s[26].kind == Step::Kind::ForEachHook);
  CHECK(s[26].body[0].duration == dsl::Millis(5000));
  CHECK(s[30].fault == dsl::FaultKind::StallReading);
  CHECK(s[30].duration == dsl::Millis(2000));
  CHECK(s[33].loc.str() == "t.scn:49:3");
}

TEST_CASE("several cases per file — expect state first judges the handshake", "[dsl]") {
  dsl::Plan plan = ok("case A-01 \"a\"\n  expect state connected\ncase B-02 \"b\" # c\n  wait 1ms\n");
  REQUIRE(plan.cases.size() == 2);
  CHECK(plan.cases[0].judges_handshake);
  CHECK_FALSE(plan.cases[1].judges_handshake);
}

TEST_CASE("errors name file:line:column and say what was expected", "[dsl]") {
  CHECK(firstError("wait 1s\n") == "t.scn:1:1: `wait` outside a case (start one with `case RULE-ID \"title\"`)");
  CHECK(firstError("case X-01 \"t\"\n  send request plugin/ping [1]\n") ==
        "t.scn:2:28: expected a JSON object of params, found a JSON literal");
  CHECK(firstError("case X-01 \"t\"\n  send request plugin/ping {\"a\": }\n") ==
        "t.scn:2:34: invalid JSON: Invalid value at offset 6");
  CHECK(firstError("case X-01 \"t\"\n  expect response $p within 2x\n") ==
        "t.scn:2:29: expected a duration like 250ms or 2s, found `2x`");
  CHECK(firstError("case X-01 \"t\"\n  frobnicate\n") ==
        "t.scn:2:3: unknown step `frobnicate` (send, expect, drive, fault, advance, wait, repeat, for each, …)");
  CHECK(firstError("case X-01 \"t\"\n  repeat 3 {\n  wait 1ms\n") == "t.scn:2:3: block opened here is never closed with `}`");
  CHECK(firstError("case X-01 \"t\"\n  }\n") == "t.scn:2:3: `}` without an open block");
  CHECK(firstError("case X-01 \"t\"\n  send raw hex:F\n") == "t.scn:2:12: invalid hex after `hex:` (pairs of hex digits)");
  CHECK(firstError("case X-01 \"t\"\n  send raw text:\"abc\n") == "t.scn:2:17: unterminated string after text:");
  CHECK(firstError("case X-01 \"t\"\n  wait 1ms\n  role engine\n") == "t.scn:3:3: `role` must come before the case's first step");
  CHECK(firstError("case X-01 \"t\"\n  role judge\n") == "t.scn:2:3: unknown role `judge` (engine or plugin)");
  CHECK(firstError("case X-01 \"t\"\ncase X-01 \"u\"\n") == "t.scn:2:1: duplicate case id `X-01` (first at t.scn:1:1)");
  CHECK(firstError("case x01 \"t\"\n") == "t.scn:1:6: invalid case id `x01` (use the rule id, e.g. FRAME-05)");
  CHECK(firstError("case X-01 \"t\"\n  expect exit code 300\n") == "t.scn:2:20: exit codes are 0–255");
  CHECK(firstError("case X-01 \"t\"\n  fault explode\n") ==
        "t.scn:2:9: unknown fault `explode` (known: close-stdin, kill, restart, stall-reading D, drop-reply, disconnect)");
  CHECK(firstError("case X-01 \"t\"\n  repeat 0 {\n  }\n") == "t.scn:2:10: repeat count must be 1–10000");
  CHECK(firstError("case X-01 \"t\"\n  expect state happy\n") ==
        "t.scn:2:16: unknown state `happy` (known: connected, connecting, failed, disconnected)");
  CHECK(firstError("case X-01 \"t\"\n  expect response $p within 2m\n") == "t.scn:2:29: `within 120s` exceeds the 60s cap");
  CHECK(firstError("case X-01 \"t\"\n  send request m {\"a\": 1, \"a\": 2}\n") ==
        "t.scn:2:18: invalid JSON: duplicate member name: a");
  CHECK(firstError("") == "t.scn:1:1: no `case` in the file");
}

TEST_CASE("every broken line is reported, not just the first", "[dsl]") {
  auto p = dsl::parse("case X-01 \"t\"\n  bogus\n  wait 1s\n  send nonsense\n", "t.scn");
  REQUIRE_FALSE(p);
  REQUIRE(p.error().size() == 2);
  CHECK(p.error()[0].loc.line == 2);
  CHECK(p.error()[1].loc.line == 4);
}

TEST_CASE("durations and hex", "[dsl]") {
  CHECK(dsl::parseDuration("250ms") == dsl::Millis(250));
  CHECK(dsl::parseDuration("1.5s") == dsl::Millis(1500));
  CHECK(dsl::parseDuration("1m") == dsl::Millis(60000));
  CHECK_FALSE(dsl::parseDuration("5"));
  CHECK_FALSE(dsl::parseDuration("s"));
  CHECK_FALSE(dsl::parseDuration("1.2.3s"));
  CHECK_FALSE(dsl::parseDuration("0.0001ms"));
  CHECK_FALSE(dsl::parseDuration("99999999999s"));
  std::string out;
  CHECK(dsl::detail::decodeHex("ef bb_bf", out));
  CHECK(out == "\xEF\xBB\xBF");
  CHECK_FALSE(dsl::detail::decodeHex("zz", out));
  CHECK(dsl::detail::quoteBareRefs(R"({"a": $x.y, "b": "$keep", "c": [$z]})") ==
        R"({"a": "$x.y", "b": "$keep", "c": ["$z"]})");
}

TEST_CASE("dump-plan output matches the golden plan", "[dsl]") {
  dsl::Plan plan = ok(R"(case FRAME-05 "bad UTF-8 is fatal"
  send raw hex:FF0A
  expect no frame
  expect exit nonzero within 3s
case RPC-08 "ids echoed"
  needs tool
  send request plugin/ping {} id "x" as $p
  expect response $p exact {}
  repeat 2 {
    send error $p -32601 "no \"such\""
  }
)");
  CHECK(dsl::dump(plan) == R"(FRAME-05 "bad UTF-8 is fatal" role=engine profile=any rules=FRAME-05
  2:3 send-raw hex:ff0a
  3:3 expect-no frame within=300ms
  4:3 expect-exit nonzero within=3s
RPC-08 "ids echoed" role=engine profile=any rules=RPC-08 needs=tool
  7:3 send-request plugin/ping {} id="x" as $p
  8:3 expect response $p exact {} within=2s
  9:3 repeat 2
    10:5 send-error $p -32601 "no \"such\""
)");
}

TEST_CASE("DSL additions: needs no, captured method segments, expect answer, send frame size", "[dsl]") {
  dsl::Plan p = ok(R"(case INIT-14 "x"
  needs no publish_bus
  needs no hook user_before_input
  needs subscribe_events
  for each hook as $h {
    send request plugin/intercept/$h {} as $r
    expect answer $r not -32601 within 3s
    expect request plugin/$h
  }
  expect answer $r
  send frame {"jsonrpc": "2.0", "method": "x", "params": {"pad": "$pad"}} size 4194304
)");
  const dsl::Case& c = p.cases.at(0);
  REQUIRE(c.needs.size() == 3);
  CHECK(c.needs[0].negated);
  CHECK(c.needs[0].name == "publish_bus");
  CHECK(c.needs[1].negated);
  CHECK(c.needs[1].kind == dsl::Need::Kind::Hook);
  CHECK_FALSE(c.needs[2].negated);
  const Step& loop = c.steps.at(0);
  REQUIRE(loop.body.size() == 3);
  CHECK(loop.body[0].method == "plugin/intercept/$h");
  CHECK(loop.body[1].msg == dsl::MsgKind::Answer);
  CHECK(loop.body[1].ref == "r");
  CHECK(loop.body[1].not_code);
  CHECK(*loop.body[1].code == -32601);
  CHECK(c.steps.at(1).msg == dsl::MsgKind::Answer);
  CHECK_FALSE(c.steps.at(1).not_code);
  CHECK(c.steps.at(2).size == 4194304);
  std::string d = dsl::dump(p);
  CHECK(d.find("needs=no:publish_bus") != std::string::npos);
  CHECK(d.find("needs=no:hook:user_before_input") != std::string::npos);
  CHECK(d.find("expect answer $r not-code=-32601") != std::string::npos);
  CHECK(d.find("size=4194304") != std::string::npos);
}

TEST_CASE("DSL additions: their errors name the line and column", "[dsl]") {
  CHECK(firstError("case A-1 \"x\"\n  send request plugin/$/x {}\n").find("t.scn:2:16: invalid method name") != std::string::npos);
  CHECK(firstError("case A-1 \"x\"\n  send request plugin/a$b {}\n").find("invalid method name `plugin/a$b`") != std::string::npos);
  CHECK(firstError("case A-1 \"x\"\n  expect answer\n").find("a request reference like $r after `answer`") != std::string::npos);
  CHECK(firstError("case A-1 \"x\"\n  expect answer $r not x\n").find("an error code after `not`") != std::string::npos);
  CHECK(firstError("case A-1 \"x\"\n  send frame {\"a\": \"$pad\"} size 1\n").find("frame size must be 2–") != std::string::npos);
  CHECK(firstError("case A-1 \"x\"\n  send frame {\"a\": \"$pad\"} size 99999999\n").find("frame size must be") != std::string::npos);
  CHECK(firstError("case A-1 \"x\"\n  send frame {\"a\": 1} size 100\n").find("needs a \"$pad\" string") != std::string::npos);
  CHECK(firstError("case A-1 \"x\"\n  needs no\n").find("expected a capability") != std::string::npos);
}

// Role plugin with further probes (docs/check-engine.md "Several plugins"): `plugin NAME [first]
// [workspace]` declares one, `on NAME handshake|config …` gives its handshake and plugin-entry
// keys, `on NAME STEP` addresses a top-level step (or a whole block) to it.
TEST_CASE("role plugin: plugin NAME declarations and `on NAME` steps", "[dsl]") {
  auto p = ok(R"(case HOOK-04 "two plugins"
  role plugin
  handshake intercept=user_before_input
  plugin zeta first
  plugin alpha workspace
  on zeta handshake intercept=user_before_input name=zeta
  on zeta config interception_timeout_ms 500
  drive session.create as $s
  on zeta expect request plugin/intercept/user_before_input as $z
  expect no request plugin/intercept/user_before_input within 100ms
  on zeta send response $z {"action": "allow"}
  on alpha repeat 2 {
    expect no request within 10ms
  }
)");
  REQUIRE(p.cases.size() == 1);
  const dsl::Case& c = p.cases[0];
  REQUIRE(c.plugins.size() == 2);
  CHECK(c.plugins[0].name == "zeta");
  CHECK(c.plugins[0].first);
  CHECK_FALSE(c.plugins[0].workspace);
  CHECK(c.plugins[1].name == "alpha");
  CHECK(c.plugins[1].workspace);
  REQUIRE(c.plugins[0].handshake.size() == 2);
  CHECK(c.plugins[0].handshake[1] == std::pair<std::string, std::string>{"name", "zeta"});
  REQUIRE(c.plugins[0].config.size() == 1);
  CHECK(c.plugins[0].config[0].first == "interception_timeout_ms");
  // The case's own handshake keys stay the main probe's.
  REQUIRE(c.handshake.size() == 1);
  REQUIRE(c.steps.size() == 5);
  CHECK(c.steps[0].plugin.empty());
  CHECK(c.steps[1].plugin == "zeta");
  CHECK(c.steps[1].kind == Step::Kind::Expect);
  CHECK(c.steps[1].method == "plugin/intercept/user_before_input");
  CHECK(c.steps[2].plugin.empty());
  CHECK(c.steps[3].plugin == "zeta");
  CHECK(c.steps[3].kind == Step::Kind::SendResponse);
  CHECK(c.steps[4].plugin == "alpha");
  CHECK(c.steps[4].kind == Step::Kind::Repeat);
  REQUIRE(c.steps[4].body.size() == 1);
  CHECK(c.steps[4].body[0].plugin.empty());  // the block's steps go where the block goes
  // --dump-plan shows both.
  std::string d = dsl::dump(p);
  CHECK(d.find("  plugin zeta first handshake:intercept=user_before_input handshake:name=zeta "
               "config:interception_timeout_ms=500\n") != std::string::npos);
  CHECK(d.find("  plugin alpha workspace\n") != std::string::npos);
  CHECK(d.find("as $z on=zeta\n") != std::string::npos);
  // A single-probe case is unchanged: no plugins, no `on`.
  auto q = ok("case PING-01 \"x\"\n  role plugin\n  drive ping\n");
  CHECK(q.cases[0].plugins.empty());
  CHECK(q.cases[0].steps[0].plugin.empty());
  CHECK(dsl::dump(q).find("on=") == std::string::npos);
}

TEST_CASE("role plugin: `plugin` and `on` errors name the line and column", "[dsl]") {
  const char* head = "case HOOK-04 \"x\"\n  role plugin\n";
  auto err = [&](std::string body) { return firstError(std::string(head) + body); };
  CHECK(err("  on zeta drive ping\n") == "t.scn:3:6: `on zeta`: no `plugin zeta` declared in this case");
  CHECK(err("  plugin conform-probe\n") == "t.scn:3:10: `conform-probe` is the main probe's name");
  CHECK(err("  plugin a\n  plugin a\n") == "t.scn:4:10: plugin `a` declared twice");
  CHECK(err("  plugin a\n  plugin b\n  plugin c\n  plugin d\n") == "t.scn:6:10: at most 3 further plugins per case");
  CHECK(err("  plugin a last\n") == "t.scn:3:12: expected `first`, `workspace` or end of line, found `last`");
  CHECK(ok(std::string(head) + "  plugin a first workspace\n  drive ping\n").cases[0].plugins[0].workspace);
  CHECK(err("  plugin\n") == "t.scn:3:9: expected a plugin name, found end of line");
  CHECK(err("  plugin a\n  on a\n") == "t.scn:4:7: expected a step after `on NAME`, found end of line");
  CHECK(err("  plugin a\n  on a on a drive ping\n") == "t.scn:4:8: `on` cannot follow `on NAME`");
  CHECK(err("  plugin a\n  on a bogus\n") == "t.scn:4:3: unknown step `bogus` (send, expect, drive, fault, advance, wait, repeat, for each, …)");
  CHECK(err("  plugin a\n  repeat 2 {\n    on a drive ping\n  }\n") ==
        "t.scn:5:8: `on NAME` addresses a whole top-level step or block, not a step inside a block");
  CHECK(err("  plugin a\n  drive ping\n  on a handshake intercept=x\n") ==
        "t.scn:5:3: `on a handshake` must come before the case's first step");
  CHECK(err("  drive ping\n  plugin a\n") == "t.scn:4:3: `plugin` must come before the case's first step");
  // Only role plugin has further probes.
  CHECK(firstError("case HOOK-04 \"x\"\n  plugin a\n  drive ping\n") ==
        "t.scn:2:3: `plugin NAME` needs `role plugin` (a further probe the engine under test starts)");
}
