// tests/catalogue/fixture_callbacks — the SDK fixture's callback, emit and saturation cases
// (scenarios/plugin/sdk/fixture_callbacks.scn, docs/sdk-fixture.md) run end to end through the
// `conform` executable against `conform-plugin --fixture sdk`, as a user runs them:
//   (1) every case PASSes against the fixture, also under --strict (0.0.6; and 0.0.4 for the cases
//       whose rule binds the 0.0.4 SDK too, the others are NOT-APPLICABLE there);
//   (2) against the plain reference plugin (no fixture tools) every case is NOT-APPLICABLE, never
//       FAIL: the fixture is a contract a plugin opts into;
//   (3) every callback fixture fault (callbackFixtureFaults(), `--list-faults` after the gallery)
//       is caught by the case for its rule, run alone with `--only RULE`: exit 1 with a FAIL on an
//       M rule; on a Lvl I/C rule a NON-STRICT by default and a FAIL (exit 1) under --strict.
// "callback fixture kill rate: N/M" is printed. Each case takes about a second (held calls are
// abandoned at shutdown, not waited for), so the matrix runs two processes at a time in ~20 s.
// Processes run under coreutils `timeout`, so a hung child cannot hold the run.
#include <catch2/catch.hpp>

#include "tests/catalogue/run_util.h"

#include <cstdio>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "mock_plugin/fixture.h"

namespace {

using conform::catalogue_test::Ran;
using conform::catalogue_test::run;

const std::string kConform = std::string(CONFORM_BIN_DIR) + "/conform";
const std::string kPlugin = std::string(CONFORM_BIN_DIR) + "/conform-plugin";

// The rules with a case in fixture_callbacks.scn, and whether the case also runs in 0.0.4.
const std::map<std::string, bool>& cases() {
  static const std::map<std::string, bool> m = {
      {"PING-04", true}, {"RPC-10", true},  {"EVT-23", true},  {"SDK-17", true},  {"SDK-18", true},
      {"SDK-26", true},  {"SDK-21", false}, {"SDK-22", false}, {"TOOL-33", false}, {"EMIT-25", false},
      {"EMIT-26", false}, {"SDK-06", false}, {"SDK-07", false}, {"SDK-08", false}};
  return m;
}

// "[VERDICT] RULE " at the start of a case line (verbose mode lists passing cases too) or inside a
// finding line ("  [FAIL] RULE (MUST …").
bool reports(const std::string& out, const std::string& verdict, const std::string& rule) {
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (l.find("[" + verdict + "] " + rule + " ") != std::string::npos) return true;
  return false;
}

std::vector<std::string> onlyArgs(bool profile_004_only) {
  std::vector<std::string> a;
  for (const auto& [rule, v004] : cases())
    if (!profile_004_only || v004) {
      a.push_back("--only");
      a.push_back(rule);
    }
  return a;
}

Ran check(std::vector<std::string> extra, std::vector<std::string> plugin_args) {
  std::vector<std::string> argv{kConform, "check", "--verbose", "--jobs", "2", "--report-dir", ""};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--");
  argv.push_back(kPlugin);
  argv.insert(argv.end(), plugin_args.begin(), plugin_args.end());
  return run(argv, 120);
}

}  // namespace

TEST_CASE("the callback fixture cases pass against conform-plugin --fixture sdk, also under --strict", "[catalogue][fixture]") {
  auto args = onlyArgs(false);
  args.push_back("--strict");
  Ran r = check(args, {"--fixture", "sdk"});
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("[FAIL]") == std::string::npos);
  CHECK(r.out.find("[ERROR]") == std::string::npos);
  CHECK(r.out.find("[NON-STRICT]") == std::string::npos);
  for (const auto& [rule, v004] : cases()) {
    INFO(rule);
    CHECK(reports(r.out, "PASS", rule));
  }
}

TEST_CASE("in profile 0.0.4 the cases of rules binding the 0.0.4 SDK pass — the 0.0.6-only ones are not applicable",
          "[catalogue][fixture]") {
  auto args = onlyArgs(false);
  args.push_back("--profile");
  args.push_back("0.0.4");
  Ran r = check(args, {"--fixture", "sdk", "--profile", "0.0.4"});
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("[FAIL]") == std::string::npos);
  CHECK(r.out.find("[ERROR]") == std::string::npos);
  for (const auto& [rule, v004] : cases()) {
    INFO(rule);
    CHECK(reports(r.out, v004 ? "PASS" : "NOT-APPLICABLE", rule));
  }
}

TEST_CASE("a plugin without the fixture tools gets NOT-APPLICABLE on every callback fixture case, never FAIL",
          "[catalogue][fixture]") {
  Ran r = check(onlyArgs(false), {});
  INFO(r.out);
  CHECK(r.status == 0);
  for (const auto& [rule, v004] : cases()) {
    INFO(rule);
    CHECK(reports(r.out, "NOT-APPLICABLE", rule));
  }
}

TEST_CASE("conform-plugin lists the fixture faults after the gallery's and accepts them only with --fixture sdk",
          "[catalogue][fixture]") {
  Ran list = run({kPlugin, "--list-faults"}, 10);
  REQUIRE(list.status == 0);
  for (const auto& f : conform::plugin::callbackFixtureFaults()) {
    INFO(f.name);
    CHECK(list.out.find(std::string(f.name) + " ") != std::string::npos);
  }
  Ran bad = run({kPlugin, "--fault", conform::plugin::callbackFixtureFaults().front().name}, 10);
  CHECK(bad.status == 2);
  CHECK(bad.out.find("needs --fixture sdk") != std::string::npos);
  Ran unknown = run({kPlugin, "--fixture", "sdk", "--fault", "no_such_fault"}, 10);
  CHECK(unknown.status == 2);
}

TEST_CASE("every callback fixture fault is caught by the case for its rule", "[catalogue][fixture]") {
  const auto& faults = conform::plugin::callbackFixtureFaults();
  REQUIRE(faults.size() == cases().size());  // one fault per case, one case per rule
  // Lvl of each rule as `conform check --list` prints it: MUST → FAIL by default; SHOULD (Lvl I/C)
  // → NON-STRICT by default, FAIL under --strict.
  Ran list = run({kConform, "check", "--list", "--report-dir", ""}, 30);
  std::map<std::string, std::string> level;
  {
    std::istringstream in(list.out);
    for (std::string l; std::getline(in, l);) {
      std::istringstream ls(l);
      std::string id, lvl;
      if (ls >> id >> lvl) level[id] = lvl;
    }
  }
  struct Job {
    std::string fault, rule;
    bool strict;
  };
  std::vector<Job> jobs;
  for (const auto& f : faults) {
    REQUIRE(cases().count(f.rule));
    REQUIRE(level.count(f.rule));
    jobs.push_back({f.name, f.rule, false});
    if (level[f.rule] != "MUST") jobs.push_back({f.name, f.rule, true});
  }
  auto one = [](const Job& j) {
    std::vector<std::string> argv{kConform, "check", "--only", j.rule, "--jobs", "1", "--report-dir", ""};
    if (j.strict) argv.push_back("--strict");
    for (const std::string& a : {std::string("--"), kPlugin, std::string("--fixture"), std::string("sdk"),
                                 std::string("--fault"), j.fault})
      argv.push_back(a);
    return run(argv, 90);
  };
  std::vector<Ran> results(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); i += 2) {  // two at a time: the machine is shared
    std::vector<std::future<Ran>> batch;
    for (std::size_t j = i; j < jobs.size() && j < i + 2; ++j) batch.push_back(std::async(std::launch::async, one, jobs[j]));
    for (std::size_t j = 0; j < batch.size(); ++j) results[i + j] = batch[j].get();
  }
  std::map<std::string, bool> caught;
  for (const auto& f : faults) caught[f.name] = true;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const Ran& r = results[i];
    const bool must = level[j.rule] == "MUST";
    bool ok;
    if (j.strict || must) ok = r.status == 1 && reports(r.out, "FAIL", j.rule);
    else ok = (r.status == 0 || r.status == 1) && reports(r.out, "NON-STRICT", j.rule);
    if (!ok) {
      caught[j.fault] = false;
      UNSCOPED_INFO(j.fault << " (" << j.rule << (j.strict ? ", --strict" : "") << ") not caught; exit "
                            << r.status << "\n" << r.out);
    }
  }
  std::size_t n = 0;
  for (const auto& [name, c] : caught) n += c ? 1 : 0;
  std::printf("callback fixture kill rate: %zu/%zu\n", n, faults.size());
  CHECK(n == faults.size());
}
