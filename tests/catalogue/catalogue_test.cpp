// tests/catalogue — the plugin catalogue (scenarios/plugin/**) run end to end through the `conform`
// executable, as a user runs it:
//   (1) `conform check -- conform-plugin` passes: exit 0, no FAIL and no ERROR;
//   (2) every fault of `conform-plugin --list-faults` (all 67) makes
//       `conform check --only RULE -- conform-plugin --fault NAME` exit 1 with the case for the
//       fault's rule FAILed (a Lvl I/C rule, or an advisory "should" clause of an M rule, is
//       NON-STRICT: exit 0 by design); "plugin fault kill rate: N/M" is printed, and every fault not
//       caught must be listed in uncatchable() with its reason (as in docs/catalogue.md).
// Processes are spawned with popen under coreutils `timeout`, so a hung child cannot hold the run.
#include <catch2/catch.hpp>

#include <cstdio>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace {

const std::string kConform = std::string(CONFORM_BIN_DIR) + "/conform";
const std::string kPlugin = std::string(CONFORM_BIN_DIR) + "/conform-plugin";

struct Ran {
  int status = -1;  // exit code; -1 when the process did not exit normally
  std::string out;  // stdout and stderr together
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs argv with a deadline (seconds); stdout and stderr are captured together.
Ran run(const std::vector<std::string>& argv, int deadline_s) {
  std::string cmd = "timeout -k 5 " + std::to_string(deadline_s);
  for (const auto& a : argv) cmd += " " + quote(a);
  cmd += " 2>&1";
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  if (st != -1 && WIFEXITED(st)) r.status = WEXITSTATUS(st);
  return r;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Case ids of the built-in catalogue with their level (`conform check --list`: "ID  LEVEL AREA  title").
std::map<std::string, std::string> catalogueCases() {
  // A scalar option after the others keeps CLI11 from reading the catalogue options past `--`.
  Ran r = run({kConform, "check", "--list", "--report-dir", ""}, 30);
  std::map<std::string, std::string> ids;
  for (const auto& l : lines(r.out)) {
    std::istringstream in(l);
    std::string id, level;
    if (in >> id >> level && id.find('-') != std::string::npos) ids[id] = level;
  }
  return ids;
}

struct Fault {
  std::string name, rule;
};

std::vector<Fault> faults() {
  Ran r = run({kPlugin, "--list-faults"}, 10);
  std::vector<Fault> out;
  for (const auto& l : lines(r.out)) {
    std::istringstream in(l);
    Fault f;
    if (in >> f.name >> f.rule) out.push_back(f);
  }
  return out;
}

// "[VERDICT] RULE — title" (the case) or "  [VERDICT] RULE (MUST …" (a finding on the rule).
bool reports(const std::string& out, const std::string& verdict, const std::string& rule) {
  for (const auto& l : lines(out))
    if (l.find("[" + verdict + "] " + rule + " ") != std::string::npos) return true;
  return false;
}

// How a fault was caught: "FAIL" (exit 1, a FAIL on the rule), "NON-STRICT" (a NON-STRICT on the
// rule: a Lvl I/C rule, or the advisory "should" clause of an M rule such as FRAME-08's "writers
// should not send CR" — exit 0 by design), or "" (missed).
std::string caughtAs(const Ran& r, const std::string& rule) {
  if (r.status == 1 && reports(r.out, "FAIL", rule)) return "FAIL";
  if ((r.status == 0 || r.status == 1) && reports(r.out, "NON-STRICT", rule)) return "NON-STRICT";
  return "";
}

}  // namespace

TEST_CASE("the plugin catalogue passes against the reference plugin", "[catalogue]") {
  Ran r = run({kConform, "check", "--jobs", "2", "--report-dir", "", "--", kPlugin}, 180);
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("[FAIL]") == std::string::npos);
  CHECK(r.out.find("[ERROR]") == std::string::npos);
  CHECK(r.out.find("[UNTESTED]") == std::string::npos);
}

TEST_CASE("the plugin catalogue passes against the reference plugin in profile 0.0.4", "[catalogue]") {
  // No profile-0.0.6-only case may fail a 0.0.4 plugin; 0.0.6 cases are NOT-APPLICABLE.
  Ran r = run({kConform, "check", "--jobs", "2", "--profile", "0.0.4", "--report-dir", "", "--", kPlugin, "--profile",
               "0.0.4"},
              180);
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("[FAIL]") == std::string::npos);
  CHECK(r.out.find("[ERROR]") == std::string::npos);
}

// Faults of the gallery that no plugin-catalogue case can catch, with the reason (docs/catalogue.md,
// "Faults without a catching case"). Kept short and honest: an entry that becomes caught fails the
// test (stale), so the list only shrinks.
const std::map<std::string, std::string>& uncatchable() {
  static const std::map<std::string, std::string> m = {};
  return m;
}

TEST_CASE("every fault of the gallery is caught by the case for its rule", "[catalogue]") {
  const std::map<std::string, std::string> cases = catalogueCases();
  REQUIRE(cases.size() > 40);
  const std::vector<Fault> all = faults();
  REQUIRE(all.size() >= 67);

  // Two at a time (the machine is shared); each run is bounded by `timeout`. A fault whose rule has
  // no case runs nothing and counts as missed.
  std::map<std::string, Ran> results;
  std::vector<Fault> targeted;
  for (const auto& f : all)
    if (cases.count(f.rule)) targeted.push_back(f);
  for (std::size_t i = 0; i < targeted.size(); i += 2) {
    std::vector<std::future<Ran>> batch;
    for (std::size_t j = i; j < targeted.size() && j < i + 2; ++j) {
      const Fault f = targeted[j];
      batch.push_back(std::async(std::launch::async, [f] {
        return run({kConform, "check", "--only", f.rule, "--jobs", "1", "--report-dir", "", "--", kPlugin, "--fault",
                    f.name},
                   90);
      }));
    }
    for (std::size_t j = 0; j < batch.size(); ++j) results[targeted[i + j].name] = batch[j].get();
  }

  std::size_t caught = 0, as_fail = 0;
  std::vector<std::string> missed, non_strict, stale;
  for (const auto& f : all) {
    const bool has_case = cases.count(f.rule) > 0;
    const std::string how = has_case ? caughtAs(results[f.name], f.rule) : "";
    const bool excused = uncatchable().count(f.name) > 0;
    if (!how.empty()) ++caught;
    if (how == "FAIL") ++as_fail;
    if (how == "NON-STRICT") non_strict.push_back(f.name + " (" + f.rule + ", " + cases.at(f.rule) + ")");
    if (how.empty())
      missed.push_back(f.name + " (" + f.rule + (has_case ? ", exit " + std::to_string(results[f.name].status) : ", no case") +
                       (excused ? "; documented: " + uncatchable().at(f.name) : "") + ")");
    if (!how.empty() && excused) stale.push_back(f.name);
    INFO(f.name << " → " << f.rule << (has_case ? ":\n" + results[f.name].out : std::string(": no case")));
    CHECK((!how.empty() || excused));
  }
  CHECK(stale.empty());
  std::string detail;
  for (const auto& m : non_strict) detail += "\n  caught as NON-STRICT: " + m;
  for (const auto& m : missed) detail += "\n  missed: " + m;
  for (const auto& m : stale) detail += "\n  stale uncatchable entry (now caught): " + m;
  WARN("plugin fault kill rate: " << caught << "/" << all.size() << " (" << as_fail << " as FAIL, "
                                  << non_strict.size() << " as NON-STRICT; " << uncatchable().size()
                                  << " documented as uncatchable)" << detail);
  // The agreed rate: every fault but the documented ones.
  CHECK(caught + uncatchable().size() == all.size());
}
