// tests/check — the role-engine runner end to end against the reference plugin (a real process):
// every catalogue case PASSes against build/conform-plugin, and each fault the catalogue targets
// makes the run fail with a finding on the fault's rule (proving the checks can fail). Also
// interpreter behaviour on small inline scripts: FAIL, ERROR, NOT-APPLICABLE, UNTESTED.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/dsl/plan.h"
#include "harness/runner/check.h"
#include "harness/runner/check_case.h"

using namespace conform;
using reports::Verdict;

namespace {

const std::string kPlugin = std::string(CONFORM_BIN_DIR) + "/conform-plugin";

runner::CaseRun runOne(std::string_view script, std::vector<std::string> extra = {}) {
  auto plan = dsl::parse(script, "inline.scn");
  if (!plan) FAIL(plan.error().front().str());
  std::vector<std::string> argv{kPlugin};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return runner::runEngineCase(plan->cases.at(0), runner::Target{argv, "", "0.0.6"});
}

std::string describe(const reports::CaseResult& c) {
  std::string s = std::string(reports::toString(c.verdict)) + " " + c.error + c.skip_reason;
  for (const auto& f : c.findings) s += "\n  " + f.rule_id + " " + reports::toString(f.verdict) + ": " + f.message + " | " + f.actual;
  return s;
}

}  // namespace

TEST_CASE("conform check passes the reference plugin and writes reports", "[check]") {
  auto dir = std::filesystem::temp_directory_path() / "conform-check-test";
  std::filesystem::remove_all(dir);
  runner::CheckOptions o;
  o.command = {kPlugin};
  o.report_dir = dir.string();
  o.jobs = 2;
  std::ostringstream out, err;
  int rc = runner::runCheck(o, out, err);
  INFO(out.str() << err.str());
  CHECK(rc == 0);
  CHECK(std::filesystem::exists(dir / "report.json"));
  CHECK(std::filesystem::exists(dir / "junit.xml"));
  CHECK(std::filesystem::exists(dir / "traces" / "FRAME-05.ndjson"));
}

TEST_CASE("each targeted fault fails the run with a finding on its rule", "[check]") {
  struct Row { const char* fault; const char* rule; Verdict v; };
  const Row rows[] = {
      {"non_json_stdout", "FRAME-01", Verdict::Fail},     {"batch_frame", "FRAME-11", Verdict::Fail},
      {"empty_line", "FRAME-01", Verdict::Fail},     {"crlf_frames", "FRAME-08", Verdict::NonStrict},
      {"duplicate_member", "FRAME-19", Verdict::NonStrict}, {"ignores_shutdown", "FRAME-18", Verdict::Fail},
      {"ignores_shutdown", "SHUT-08", Verdict::Fail},     {"double_answer", "RPC-08", Verdict::Fail},
      {"wrong_response_id", "RPC-08", Verdict::Fail},     {"string_id", "RPC-08", Verdict::Fail},
      {"ignores_ping", "RPC-08", Verdict::Fail},          {"wrong_jsonrpc", "RPC-01", Verdict::Fail},
      {"extra_envelope_member", "RPC-03", Verdict::Fail}, {"result_and_error", "RPC-04", Verdict::Fail},
      {"answers_notification", "RPC-16", Verdict::Fail},  {"extra_result_member", "INIT-09", Verdict::Fail},
      {"wrong_version", "INIT-10", Verdict::Fail},        {"name_mismatch", "INIT-13", Verdict::Fail},
      {"ping_result_not_empty", "PING-01", Verdict::Fail},
  };
  auto cat = runner::loadCatalogue({}, "engine");
  REQUIRE(cat);
  for (const Row& r : rows) {
    // The case named after the rule must report it (other cases may report it too).
    const dsl::Case* c = nullptr;
    for (const auto& cc : *cat)
      if (cc.c.id == r.rule) c = &cc.c;
    REQUIRE(c);
    auto res = runner::runEngineCase(*c, runner::Target{{kPlugin, "--fault", r.fault}, "", "0.0.6"});
    INFO(r.fault << " → " << r.rule << ": " << describe(res.result));
    bool found = false;
    for (const auto& f : res.result.findings) found |= f.rule_id == r.rule && f.verdict == r.v;
    CHECK(found);
    CHECK(res.result.verdict == r.v);
  }
}

TEST_CASE("conform check exits 1 on a fault, 2 on usage errors", "[check]") {
  std::ostringstream out, err;
  runner::CheckOptions o;
  o.command = {kPlugin, "--fault", "string_id"};
  o.report_dir = "";
  o.only = {"RPC-08"};
  CHECK(runner::runCheck(o, out, err) == 1);
  o.only = {"NOPE-*"};
  CHECK(runner::runCheck(o, out, err) == 2);
  o.only = {};
  o.profile = "9.9.9";
  CHECK(runner::runCheck(o, out, err) == 2);
  o.profile = "0.0.6";
  o.command.clear();
  CHECK(runner::runCheck(o, out, err) == 2);
}

TEST_CASE("FRAME-19 --strict: a Lvl I breach by the plugin exits 0 by default, 1 under --strict, marked in the reports", "[check][strict]") {
  auto dir = std::filesystem::temp_directory_path() / "conform-check-strict-test";
  std::filesystem::remove_all(dir);
  runner::CheckOptions o;
  o.command = {kPlugin, "--fault", "duplicate_member"};
  o.report_dir = "";
  o.only = {"FRAME-19"};
  std::ostringstream out, err;
  CHECK(runner::runCheck(o, out, err) == 0);
  CHECK(out.str().find("[NON-STRICT] FRAME-19") != std::string::npos);
  o.strict = true;
  o.report_dir = dir.string();
  std::ostringstream sout, serr;
  CHECK(runner::runCheck(o, sout, serr) == 1);
  INFO(sout.str() << serr.str());
  CHECK(sout.str().find("[strict: Lvl I/C rules binding]") != std::string::npos);
  CHECK(sout.str().find("[FAIL] FRAME-19 (MUST implementation, plugin, --strict)") != std::string::npos);
  std::ifstream j(dir / "report.json");
  std::stringstream js;
  js << j.rdbuf();
  CHECK(js.str().find("\"strict\": true") != std::string::npos);
  CHECK(js.str().find("\"strict_only\": true") != std::string::npos);
  // The conforming plugin stays clean under --strict.
  o.command = {kPlugin};
  o.report_dir = "";
  std::ostringstream cout_, cerr_;
  CHECK(runner::runCheck(o, cout_, cerr_) == 0);
}

TEST_CASE("EMIT-13 --strict: an engine stimulus is reported and never FAILs the plugin", "[check][strict]") {
  runner::CheckOptions o;
  o.command = {kPlugin, "--fault", "emit_unknown_token"};
  o.report_dir = "";
  o.only = {"EMIT-13"};
  o.strict = true;
  std::ostringstream out, err;
  CHECK(runner::runCheck(o, out, err) == 0);
  INFO(out.str());
  CHECK(out.str().find("[NON-STRICT]") != std::string::npos);
  CHECK(out.str().find("[FAIL]") == std::string::npos);
}

TEST_CASE("baselines: a known failure passes the run, a stale entry fails it", "[check]") {
  auto dir = std::filesystem::temp_directory_path();
  auto write = [&](const char* name, const char* text) {
    auto p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  };
  std::ostringstream out, err;
  runner::CheckOptions o;
  o.command = {kPlugin, "--fault", "string_id"};
  o.report_dir = "";
  o.only = {"RPC-08"};
  o.baseline = write("conform-baseline-ok.json", R"({"known_failures": [{"case": "RPC-08", "reason": "tracked"}]})");
  CHECK(runner::runCheck(o, out, err) == 0);
  o.baseline = write("conform-baseline-rule.json", R"({"known_failures": [{"rule": "RPC-08"}]})");
  CHECK(runner::runCheck(o, out, err) == 0);
  o.command = {kPlugin};
  o.baseline = write("conform-baseline-stale.json", R"({"known_failures": [{"case": "RPC-08"}]})");
  CHECK(runner::runCheck(o, out, err) == 1);
  CHECK(out.str().find("STALE baseline entry: case RPC-08") != std::string::npos);
  o.baseline = write("conform-baseline-bad.json", R"({"known_failures": [{"rule": "RPC-999"}]})");
  CHECK(runner::runCheck(o, out, err) == 2);
}

TEST_CASE("interpreter: a wrong expectation FAILs on the case rule with file:line", "[check]") {
  auto r = runOne("case PING-01 \"t\"\n  send request plugin/ping {} as $p\n  expect response $p exact {\"x\": 1} within 300ms\n");
  INFO(describe(r.result));
  REQUIRE(r.result.verdict == Verdict::Fail);
  CHECK(r.result.findings.at(0).rule_id == "PING-01");
  CHECK(r.result.findings.at(0).message.rfind("inline.scn:3:3: no response to $p", 0) == 0);
}

TEST_CASE("interpreter: captures flow from expect into send — expect no catches a frame", "[check]") {
  auto pass = runOne(R"(case RPC-15 "t"
  send request plugin/nope {"k": 1} as $u
  expect error $u -32601 as $e
  send request plugin/ping {} id 42 as $p
  expect frame {"id": 42, "result": {}}
)");
  INFO(describe(pass.result));
  CHECK(pass.result.verdict == Verdict::Pass);
  auto fail = runOne(R"(case RPC-15 "t"
  send request plugin/ping {} as $p
  expect no response $p within 1s
)");
  CHECK(fail.result.verdict == Verdict::Fail);
}

TEST_CASE("interpreter: harness problems are ERROR, never the plugin's fault", "[check]") {
  auto r = runOne("case RPC-08 \"t\"\n  send response $nobody {}\n");
  CHECK(r.result.verdict == Verdict::Error);
  CHECK(r.result.error.find("inline.scn:2:3: $nobody names no request") == 0);
  auto u = runOne("case RPC-08 \"t\"\n  send notify x {\"a\": $unbound}\n");
  CHECK(u.result.verdict == Verdict::Error);
  auto bad = runner::runEngineCase(dsl::parse("case RPC-08 \"t\"\n  wait 1ms\n", "x.scn")->cases[0],
                           runner::Target{{"/nonexistent/plugin"}, "", "0.0.6"});
  CHECK(bad.result.verdict != Verdict::Pass);
}

TEST_CASE("interpreter: needs → NOT-APPLICABLE — failed handshake → not PASS", "[check]") {
  auto na = runOne("case EMIT-04 \"t\"\n  needs publish_session_events\n  wait 1ms\n");
  CHECK(na.result.verdict == Verdict::NotApplicable);
  auto hs = runOne("case RPC-08 \"t\"\n  wait 1ms\n", {"--fault", "handshake_error"});
  INFO(describe(hs.result));
  CHECK(hs.result.verdict != Verdict::Pass);
  CHECK(hs.result.verdict != Verdict::Error);
}

TEST_CASE("interpreter: needs no inverts applicability", "[check]") {
  // The reference plugin declares publish_bus: `needs no publish_bus` is NOT-APPLICABLE, and a
  // plugin whose handshake lacks it (fault undeclared_publish rewrites it to false) runs the case.
  auto na = runOne("case EMIT-24 \"t\"\n  needs no publish_bus\n  wait 1ms\n");
  CHECK(na.result.verdict == Verdict::NotApplicable);
  CHECK(na.result.skip_reason.find("declares publish_bus") != std::string::npos);
  auto runs = runOne("case EMIT-24 \"t\"\n  needs no publish_bus\n  wait 1ms\n", {"--fault", "undeclared_publish"});
  INFO(describe(runs.result));
  CHECK(runs.result.verdict != Verdict::NotApplicable);
}

TEST_CASE("interpreter: method segments from captures reach every hook — expect answer … not CODE", "[check]") {
  const char* script = R"(case INIT-14 "t"
  drive session.create as $s
  for each hook as $h {
    send request plugin/intercept/$h {} as $r
    expect answer $r not -32601 within 3s
  }
)";
  auto pass = runOne(script);
  INFO(describe(pass.result));
  CHECK(pass.result.verdict == Verdict::Pass);
  // All 13 hooks were written with their own method name.
  std::size_t hooks = 0;
  for (std::size_t at = 0; (at = pass.trace.find("\"method\":\"plugin/intercept/", at)) != std::string::npos; ++at) ++hooks;
  CHECK(hooks == 13);
  auto fail = runOne(script, {"--fault", "declared_hook_unsupported"});
  INFO(describe(fail.result));
  REQUIRE(fail.result.verdict == Verdict::Fail);
  CHECK(fail.result.findings.at(0).message.find("the answer to $r is an error with code -32601") != std::string::npos);
  auto unbound = runOne("case INIT-14 \"t\"\n  send request plugin/intercept/$nope {}\n");
  CHECK(unbound.result.verdict == Verdict::Error);
  CHECK(unbound.result.error.find("$nope in the method name") != std::string::npos);
}

TEST_CASE("interpreter: send frame … size N writes exactly N bytes before the LF", "[check]") {
  // FRAME-07: the SDK accepts 4,194,304 bytes and exits on one byte more.
  auto boundary = runOne(R"(case FRAME-07 "t"
  send frame {"jsonrpc": "2.0", "method": "conform/pad", "params": {"p": "$pad"}} size 4194304
  send request plugin/ping {} as $p
  expect response $p exact {} within 5s
)");
  INFO(describe(boundary.result));
  CHECK(boundary.result.verdict == Verdict::Pass);
  auto over = runOne(R"(case FRAME-07 "t"
  send frame {"jsonrpc": "2.0", "method": "conform/pad", "params": {"p": "$pad"}} size 4194305
  expect exit nonzero within 5s
)");
  INFO(describe(over.result));
  CHECK(over.result.verdict == Verdict::Pass);
  auto small = runOne("case FRAME-07 \"t\"\n  send frame {\"jsonrpc\": \"2.0\", \"method\": \"x\", \"params\": {\"p\": \"$pad\"}} size 10\n");
  CHECK(small.result.verdict == Verdict::Error);
}

TEST_CASE("interpreter: fault restart reconnects the plugin — drive run fires the hooks", "[check]") {
  auto r = runOne(R"(case PROD-06 "t"
  send request plugin/ping {} as $p
  expect response $p exact {}
  fault restart
  expect state connected
  send request plugin/ping {} as $q
  expect response $q exact {}
  drive session.create as $s
  drive run $s {"input": "hello"} as $run
  expect state connected
)");
  INFO(describe(r.result));
  CHECK(r.result.verdict == Verdict::Pass);
  CHECK(r.trace.find("(connection 2)") != std::string::npos);
  CHECK(r.trace.find("plugin/intercept/user_before_input") != std::string::npos);
  // The old process's exit does not satisfy `expect exit` after the restart: the new one runs on.
  auto still = runOne("case PROD-06 \"t\"\n  fault restart\n  expect exit within 300ms\n");
  INFO(describe(still.result));
  CHECK(still.result.verdict == Verdict::Fail);
  // An unbound session argument is a harness ERROR, never the plugin's fault.
  auto bad = runOne("case PROD-06 \"t\"\n  drive run $nosession {\"input\": \"x\"}\n");
  CHECK(bad.result.verdict == Verdict::Error);
}
