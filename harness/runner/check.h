// harness/runner/check — `conform check`: run the plugin catalogue (scenarios/plugin/**/*.scn,
// embedded at build time) against a plugin command in role engine, and `conform run FILE.scn`;
// `conform check-engine` runs the engine catalogue (scenarios/engine/**) in role plugin with the
// same loop, reports and baselines (CheckOptions::role = "plugin").
// docs/check.md documents options, exit codes, reports and baselines.
//
// main.cpp parses options into these plain structs and calls runCheck()/runScenarioFile(); all the
// work is here so tests can call it without a process.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/util/expected.h"
#include "harness/dsl/plan.h"
#include "reports/results.h"

namespace conform::runner {

struct CheckOptions {
  std::string profile = "0.0.6";       // 0.0.6 | 0.0.4 (also v006 / v004)
  std::string name;                    // configured plugin name; default basename of command[0]
  std::vector<std::string> only;       // globs on case id or area ("FRAME-*", "RPC", "INIT-1?")
  std::vector<std::string> skip;       // same syntax; skip wins over only
  bool list = false;                   // list the selected cases and exit 0
  bool coverage = false;               // print per-area coverage and exit 0
  std::string baseline;                // JSON file of known failures (docs/check.md)
  std::string report_dir = "conform-reports";  // "" = write no report files
  std::uint64_t seed = 0;              // 0: catalogue order; else a shuffled run order (printed)
  unsigned jobs = 0;                   // parallel cases; 0 = hardware threads (at least 1)
  std::vector<std::string> scenarios;  // .scn files or folders instead of the embedded catalogue
  std::vector<std::string> command;    // the plugin under test (after --)
  bool color = false, verbose = false;
  // --strict (docs/check.md §Strict mode): Lvl I and C rules that bind the target become binding —
  // reports::applyStrict() over every case result, before it is printed or counted.
  bool strict = false;
  std::string role = "engine";         // the catalogue role this command runs
  // Role plugin (`conform check-engine`, docs/check-engine.md): how the engine under test is
  // driven (stdio | stdio-real-clock) and the probe executable it spawns ("" = this process).
  std::string driver = "stdio";
  std::string probe;
  // Profiles nanopi-0.12 / cognipeer-0.10 (harness/runner/profiles.h), copied into Target.
  std::vector<std::string> grants;
  bool allow_network = false;
  std::string host = "reference";
  std::string guest_dir;
};

// One loaded catalogue case with the file it came from.
struct CatalogueCase {
  dsl::Case c;
  std::string file;
};

// Loads the embedded catalogue (or the given files/folders), keeping cases of `role`. Parse errors
// of every file are returned together (`file.scn:12:5: …`).
Expected<std::vector<CatalogueCase>, std::vector<std::string>> loadCatalogue(
    const std::vector<std::string>& paths, const std::string& role);

// Case selection by --only / --skip globs on the case id and its area.
bool selected(const dsl::Case& c, const std::vector<std::string>& only, const std::vector<std::string>& skip);

// Baselines: {"known_failures": [{"case": "RPC-08", "reason": "…"}, {"rule": "FRAME-19"}]}.
struct Baseline {
  std::vector<std::string> cases, rules;
};
Expected<Baseline, std::string> loadBaseline(const std::string& path);

// The whole command. Progress and the console summary go to `out`, diagnostics to `err`.
// Returns the exit code: 0 all pass (baselined failures allowed), 1 a check failed or a baseline
// entry is stale, 2 usage or harness error.
int runCheck(const CheckOptions& opt, std::ostream& out, std::ostream& err);

// `conform run FILE.scn [--dump-plan] -- CMD…`: one file, every case in it, console report.
struct RunOptions {
  std::string file;
  bool dump_plan = false;
  std::string profile = "0.0.6";
  std::string name;
  std::string report_dir;  // "" = none
  std::vector<std::string> command;
  bool verbose = true;
  bool strict = false;
};
int runScenarioFile(const RunOptions& opt, std::ostream& out, std::ostream& err);

// Writes every report format and each case's trace into `dir` (created). Error text on failure.
Expected<Ok, std::string> writeReports(const reports::RunResult& run, const std::vector<std::string>& traces,
                                       const std::string& dir);

}  // namespace conform::runner
