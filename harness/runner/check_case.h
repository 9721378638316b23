// harness/runner/check_case — runs ONE compiled scenario case in role engine: conform plays the
// engine (the in-process reference Engine, mock_engine/) and the command under test runs as its
// plugin, a real child process. See docs/check.md for the full contract.
//
// Per case: a fresh Reactor, Engine and process; the engine performs the handshake itself; then
// the interpreter runs the steps (one onX() per Step::Kind). Every frame, stderr line, EOF, exit and
// state change is written to the case's in-memory trace (core/trace), and at the end of the case
// the whole trace is fed to the rule monitors (harness/rules) — the same code `conform lint` runs —
// so the case verdict combines its own expectations with every monitor finding against the side
// under test.
//
// Time: the plugin is a real process, so `expect … within` deadlines are real time. The engine's own
// timers run on an OffsetClock (real time + an offset) that `advance D` increases, so engine-side
// timers (grant expiry, ping deadline, quotas) can be moved forward without waiting.
#pragma once

#include <string>
#include <vector>

#include "harness/dsl/plan.h"
#include "reports/results.h"

namespace conform::runner {

struct Target {
  std::vector<std::string> argv;  // command of the plugin under test (argv[0] resolved via PATH)
  std::string name;               // configured plugin name (INIT-13); default: basename of argv[0]
  std::string profile = "0.0.6";  // protocol profile the engine speaks
  // Role plugin (check-engine, docs/check-engine.md): argv is the engine under test.
  std::string driver = "stdio";   // stdio (virtual clock) | stdio-real-clock
  std::string probe{};            // the `conform` executable the engine spawns; "" = this process
  // Profiles nanopi-0.12 / cognipeer-0.10 (profiles.h): options of their reference hosts.
  std::vector<std::string> grants{};  // nanopi: --grant EVENT… (the config's `events`); empty = the case decides
  bool allow_network = false;         // nanopi: --allow-network (the [[extensions]] allow_network flag)
  std::string host = "reference";     // cognipeer: --host reference|real
  std::string guest_dir{};            // the Node guest runner's folder; "" = the built-in default
};

// The configured name used when --name is not given: the basename of argv[0].
std::string defaultPluginName(const std::vector<std::string>& argv);

struct CaseRun {
  reports::CaseResult result;
  std::string trace;  // the case's trace (docs/trace-format.md), complete
};

// Runs one case (role engine). Never throws; a harness problem is an ERROR verdict with text.
CaseRun runEngineCase(const dsl::Case& c, const Target& target);

// Exposed for tests: the rule a failed expectation of this case is reported against.
std::string caseRule(const dsl::Case& c);

}  // namespace conform::runner
