// tests/nanopi/catalogue_test — the nanopi catalogue as data: it parses, every case is profile
// nanopi-0.12 and titled by an NP rule, every rule the host can report a component on has a case
// that lists it (a host observation on an uncased rule would be silently lost), and a harness
// problem (no component, no runner) is an ERROR naming what is missing, never a PASS.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>

#include <fmt/format.h>

#include "harness/rules/nanopi_monitor.h"
#include "harness/runner/check.h"
#include "harness/runner/profiles.h"
#include "reports/rule_catalog.h"

using namespace conform;

namespace {
std::vector<runner::CatalogueCase> nanopiCases() {
  auto cat = runner::loadCatalogue({}, "engine");
  REQUIRE(cat);
  std::vector<runner::CatalogueCase> out;
  for (auto& cc : *cat)
    if (cc.c.profile == runner::kNanopiProfile) out.push_back(std::move(cc));
  return out;
}
}  // namespace

TEST_CASE("the nanopi catalogue: one case per rule, each an NP rule of the catalogue", "[nanopi]") {
  auto cases = nanopiCases();
  CHECK(cases.size() >= 30);
  for (const auto& cc : cases) {
    INFO(cc.c.id);
    CHECK(cc.file.find("scenarios/nanopi/") != std::string::npos);
    CHECK(cc.c.id.rfind("NP-", 0) == 0);
    const reports::RuleInfo* r = reports::findRule(cc.c.id);
    REQUIRE(r);
    CHECK(reports::familyOfProfile(runner::kNanopiProfile) == reports::RuleFamily::Nanopi);
  }
}

TEST_CASE("every rule the nanopi host reports a component on has a case that lists it", "[nanopi]") {
  // The rules of GuestFault in mock_engine/nanopi (host.cpp, host_imports.cpp) and of the probe.
  const std::set<std::string> fault_rules = {"NP-03", "NP-06", "NP-08", "NP-09", "NP-13", "NP-14", "NP-24", "NP-26",
                                             "NP-28", "NP-33", "NP-34", "NP-35", "NP-37", "NP-38", "NP-39"};
  std::set<std::string> cased;
  for (const auto& cc : nanopiCases()) cased.insert(cc.c.rules.begin(), cc.c.rules.end());
  for (const auto& r : fault_rules) {
    INFO(r);
    CHECK(cased.count(r));
  }
  // Every rule whose Observe column says TH (the toolkit hosts the component) is cased.
  for (const reports::RuleInfo& r : reports::ruleCatalog(reports::RuleFamily::Nanopi))
    if (r.observe.find("TH") != std::string_view::npos) {
      INFO(r.id);
      CHECK(cased.count(std::string(r.id)));
    }
}

TEST_CASE("a nanopi case without a component, or without the runner, is an ERROR naming what is missing", "[nanopi]") {
  auto cases = nanopiCases();
  REQUIRE(!cases.empty());
  runner::Target t;
  t.profile = runner::kNanopiProfile;
  t.argv = {"/nonexistent/plugin.wasm"};
  auto r = runner::runNanopiCase(cases[0].c, t);
  CHECK(r.result.verdict == reports::Verdict::Error);
  CHECK(r.result.error.find("/nonexistent/plugin.wasm") != std::string::npos);
  t.argv = {CONFORM_SOURCE_DIR "/tests/nanopi_components/manifest.json"};  // exists; the runner does not
  t.guest_dir = "/nonexistent-guest";
  r = runner::runNanopiCase(cases[0].c, t);
  CHECK(r.result.verdict == reports::Verdict::Error);
  CHECK(r.result.error.find("/nonexistent-guest/nanopi/runner.mjs") != std::string::npos);
  t.argv.clear();
  r = runner::runNanopiCase(cases[0].c, t);
  CHECK(r.result.verdict == reports::Verdict::Error);
}

TEST_CASE("a file that is not a component is an NP-33 load failure, reported on NP-33 and untested elsewhere", "[nanopi][e2e]") {
  if (!std::ifstream(CONFORM_SOURCE_DIR "/guest/nanopi/node_modules/@bytecodealliance/jco-transpile/package.json")) {
    WARN("SKIPPED — guest/nanopi/node_modules missing (run `make deps`)");
    return;
  }
  runner::Target t;
  t.profile = runner::kNanopiProfile;
  t.argv = {CONFORM_SOURCE_DIR "/tests/nanopi_components/manifest.json"};
  const runner::CatalogueCase* np33 = nullptr;
  const runner::CatalogueCase* np03 = nullptr;
  auto cases = nanopiCases();
  for (const auto& cc : cases) {
    if (cc.c.id == "NP-33") np33 = &cc;
    if (cc.c.id == "NP-03") np03 = &cc;
  }
  REQUIRE(np33);
  REQUIRE(np03);
  auto a = runner::runNanopiCase(np33->c, t);
  INFO(a.result.error);
  CHECK(a.result.verdict == reports::Verdict::Fail);
  REQUIRE(!a.result.findings.empty());
  CHECK(a.result.findings[0].rule_id == "NP-33");
  auto b = runner::runNanopiCase(np03->c, t);
  CHECK(b.result.verdict == reports::Verdict::Untested);
  CHECK(b.result.skip_reason.find("did not load") != std::string::npos);
  CHECK(b.trace.find("\"method\":\"load\"") != std::string::npos);  // the wire is in the trace
}

TEST_CASE("NP-07 NP-26 the wire monitor flags a second list-events call and a wrong budget, not the harness probe", "[nanopi]") {
  auto trace = [](const std::string& body) {
    return std::string(R"({"conform_trace":1,"started":"2026-11-30T07:00:00.000000Z","profile":"nanopi-0.12","role":"engine","peer":["x.wasm"],"clock":"real"})") + "\n" + body;
  };
  auto call = [](int t, const std::string& exp, int budget) {
    return fmt::format(R"({{"t":{},"dir":"e2p","frame":{{"jsonrpc":"2.0","id":{},"method":"call","params":{{"export":"{}","args":[],"budget_ms":{}}}}}}})", t, t, exp, budget) + "\n";
  };
  auto good = trace(call(1, "list-tools", 30000) + call(2, "list-events", 30000) + call(3, "handle-event", 2000) +
                    R"({"t":4,"note":"harness probe (not the host): list-events called a second time to compare"})" "\n" +
                    call(5, "list-events", 30000));
  CHECK(rules::judgeNanopiWire(good).empty());
  auto twice = trace(call(1, "list-events", 30000) + call(2, "list-events", 30000));
  auto f = rules::judgeNanopiWire(twice);
  REQUIRE(f.size() == 1);
  CHECK(f[0].rule_id == "NP-07");
  auto slow = trace(call(1, "handle-event", 30000));
  f = rules::judgeNanopiWire(slow);
  REQUIRE(f.size() == 1);
  CHECK(f[0].rule_id == "NP-26");
}
