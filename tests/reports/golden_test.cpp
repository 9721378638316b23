// Every report format against approved golden files (tests/data/golden/report.*). The run is built
// with fixed times and ids, so nothing needs normalising beyond that; evidence includes a frame with
// quotes, markup characters, a control byte and invalid UTF-8 to exercise each writer's escaping.
// Re-approve after an intended change:  CONFORM_APPROVE=1 ./test_reports "[golden]"
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "reports/reporter.h"

using namespace conform::reports;

namespace {

RunResult sampleRun() {
  RunResult run;
  run.tool_version = "0.1.0";
  run.command = "lint";
  run.target = "traces/sample.ndjson";
  run.profile = "v006";
  run.started_at = "2026-01-01T00:00:00.000000Z";
  run.duration_ms = 12;
  CaseResult pass = newCase("PING-01", "ping answers {}", {"PING-01"});
  pass.duration_ms = 1;
  pass.trace =
      R"({"conform_trace":1,"started":"2026-01-01T00:00:00.000000Z","profile":"0.0.6","role":"engine","peer":[],"clock":"virtual"})"
      "\n"
      R"({"t":0,"dir":"e2p","frame":{"jsonrpc":"2.0","id":7,"method":"plugin/ping","params":{}}})"
      "\n"
      R"({"t":90,"dir":"p2e","frame":{"jsonrpc":"2.0","id":7,"result":{}}})"
      "\n";
  CaseResult fail = newCase("lint", "trace lint", {"EMIT-06", "FRAME-19"});
  fail.trace_path = "traces/sample.ndjson";
  // The wire log the HTML report shows (other formats name trace_path only). Lines 4, 7 and 9 are
  // the evidence; line 6 carries markup a careless writer would let through.
  fail.trace =
      R"({"conform_trace":1,"started":"2026-01-01T00:00:00.000000Z","profile":"0.0.6","role":"engine","peer":["./plugin"],"clock":"virtual"})"
      "\n"
      R"({"t":0,"dir":"e2p","frame":{"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{}}})"
      "\n"
      R"({"t":800,"dir":"p2e","frame":{"jsonrpc":"2.0","id":1,"result":{"name":"p"}}})"
      "\n"
      R"({"t":1200,"dir":"p2e","frame":{"jsonrpc":"2.0","method":"plugin/emit","params":{"name":"<a&b>"}}})"
      "\n"
      R"({"t":1300,"dir":"e2p","frame":{"jsonrpc":"2.0","method":"plugin/emit_result","params":{"bus":"published"}}})"
      "\n"
      R"({"t":1400,"dir":"p2e","stderr":"warn: </pre><script>x</script>"})"
      "\n"
      R"({"t":1500,"dir":"p2e","b64":"eyJ4IjoiAf8ifQ=="})"
      "\n"
      R"({"t":1600,"dir":"e2p","frame":{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}})"
      "\n"
      R"({"t":1700,"dir":"p2e","frame":{"jsonrpc":"2.0","id":3,"id":3,"result":{}}})"
      "\n"
      R"({"t":2000,"exit":{"code":0}})"
      "\n";
  fail.duration_ms = 5;
  fail.findings.push_back(makeFinding(
      "EMIT-06", kBindsEngine, "a spent context token was accepted a second time",
      "bus \"rejected\" (token already consumed at line 4)", "bus \"published\"",
      {{4, R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"name":"<a&b>"}})"},
       {7, shortenEvidence("{\"x\":\"\x01\xFF\"}")}}));
  fail.findings.push_back(makeFinding("FRAME-19", kBindsPlugin, "member `id` repeats", "unique members",
                                      "duplicate at params.id", {{9, ""}}));
  CaseResult na = newCase("RECOV-02", "recovery start once", {"RECOV-02"});
  na.verdict = Verdict::NotApplicable;
  na.skip_reason = "connection is not producer-enabled";
  CaseResult err = newCase("EVT-05", "seq order", {"EVT-05"});
  err.error = "trace line 3: missing member \"t\"";
  for (CaseResult* c : {&pass, &fail, &na, &err}) {
    finalize(*c);
    run.cases.push_back(*c);
  }
  return run;
}

void checkGolden(const std::string& format) {
  std::ostringstream out;
  auto rep = makeReporter(format, out);
  REQUIRE(rep.has_value());
  replay(sampleRun(), **rep);
  std::string path = std::string(CONFORM_SOURCE_DIR) + "/tests/data/golden/report." + format;
  if (std::getenv("CONFORM_APPROVE")) {
    std::ofstream(path, std::ios::binary) << out.str();
    WARN("approved " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream want;
  want << in.rdbuf();
  INFO("golden " << path << " differs; re-approve with CONFORM_APPROVE=1 if intended");
  CHECK(out.str() == want.str());
}

}  // namespace

TEST_CASE("golden: console report", "[golden]") { checkGolden("console"); }
TEST_CASE("golden: JSON report", "[golden]") { checkGolden("json"); }
TEST_CASE("golden: JUnit report keeps failure apart from error", "[golden]") {
  checkGolden("junit");
  std::ostringstream out;
  auto rep = makeReporter("junit", out);
  replay(sampleRun(), **rep);
  CHECK(out.str().find("<failure type=\"FAIL\" message=\"EMIT-06") != std::string::npos);
  CHECK(out.str().find("<error message=\"trace line 3") != std::string::npos);
}
TEST_CASE("golden: SARIF report", "[golden]") { checkGolden("sarif"); }
TEST_CASE("golden: Markdown report", "[golden]") { checkGolden("markdown"); }
TEST_CASE("golden: HTML report", "[golden]") { checkGolden("html"); }

TEST_CASE("unknown report format is an error naming the known ones", "[report]") {
  std::ostringstream out;
  auto rep = makeReporter("html5", out);
  REQUIRE(!rep.has_value());
  CHECK(rep.error().find("console") != std::string::npos);
}

TEST_CASE("FRAME-19 strict mode is shown by every format and marks the promoted finding", "[report][strict]") {
  // The sample run under --strict: FRAME-19 (Lvl I, the plugin's duplicate member) becomes a FAIL.
  RunResult run = sampleRun();
  run.strict = true;
  std::size_t promoted = 0;
  for (CaseResult& c : run.cases) promoted += applyStrict(c, kBindsPlugin | kBindsSdk);
  REQUIRE(promoted == 1);
  auto render = [&](const char* format) {
    std::ostringstream out;
    auto rep = makeReporter(format, out);
    REQUIRE(rep.has_value());
    replay(run, **rep);
    return out.str();
  };
  const std::string console = render("console");
  CHECK(console.find("[strict: Lvl I/C rules binding]") != std::string::npos);
  CHECK(console.find("[FAIL] FRAME-19 (MUST implementation, plugin, --strict)") != std::string::npos);
  CHECK(console.find("strict mode: 1 finding(s) FAIL only because of --strict") != std::string::npos);
  const std::string json = render("json");
  CHECK(json.find("\"strict\": true") != std::string::npos);
  CHECK(json.find("\"strict_only\": true") != std::string::npos);
  const std::string junit = render("junit");
  CHECK(junit.find("<property name=\"strict\" value=\"true\"/>") != std::string::npos);
  CHECK(junit.find("message=\"FRAME-19 MUST (--strict):") != std::string::npos);
  const std::string sarif = render("sarif");
  CHECK(sarif.find("\"strict_only\": true") != std::string::npos);
  CHECK(sarif.find("\"level\": \"warning\"") == std::string::npos);  // the only warning became an error
  CHECK(render("markdown").find("Mode: strict") != std::string::npos);
  const std::string html = render("html");
  CHECK(html.find("<th>Mode</th>") != std::string::npos);
  CHECK(html.find("FAIL only under --strict") != std::string::npos);
  CHECK(html.find("This run is strict (--strict)") != std::string::npos);
  // Default mode shows none of it.
  run = sampleRun();
  std::ostringstream out;
  auto rep = makeReporter("console", out);
  replay(run, **rep);
  CHECK(out.str().find("strict") == std::string::npos);
}
