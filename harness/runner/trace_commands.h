// harness/runner/trace_commands — the three commands that work on recorded conversations:
//
//   conform lint TRACE      — all monitors over a trace file, offline, one streaming pass
//   conform record --out T -- CMD…  — a transparent tap between an engine and a plugin
//   conform replay TRACE -- CMD…    — plays one side of a trace into a process, compares the other
//
// Why here and not in main.cpp: main.cpp only parses options into these plain structs (CLI11 is
// slow to compile and must stay in one file); the work lives in the library so tests and other
// commands can call it without a process. Every function returns the process exit code
// (ARCHITECTURE.md "Verdicts"): 0 all pass, 1 findings / divergence, 2 usage or harness error —
// never a count. docs/trace-format.md describes the commands with a worked example.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace conform::runner {

inline constexpr int kExitPass = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitHarness = 2;

// ---------------------------------------------------------------------------------------------
// lint
// ---------------------------------------------------------------------------------------------
struct LintCommandOptions {
  std::string trace;            // path; "-" = stdin
  std::string profile;          // empty: the trace header's profile
  std::string format = "console";  // stdout format: console (findings as TRACE:LINE lines), json, …
  std::string report_dir;       // when set: lint.json, lint.junit.xml, lint.sarif, lint.md there
  bool stop_on_bad_line = false;
};
// Findings print as "TRACE:LINE: RULE-ID (MUST) message". 0 clean, 1 findings (FAIL/NON-STRICT),
// 2 unreadable input (the message names the line and the reason) or bad options.
int runLint(const LintCommandOptions&, std::ostream& out, std::ostream& err);

// ---------------------------------------------------------------------------------------------
// record
// ---------------------------------------------------------------------------------------------
struct RecordCommandOptions {
  std::string out;                  // trace path (required)
  std::vector<std::string> command; // CMD and its arguments (required)
  std::string profile = "0.0.6";    // written to the trace header
  // Our side of the tap. Defaults are our own stdin/stdout; tests may pass other fds.
  int in_fd = 0;
  int out_fd = 1;
};
// Copies in_fd → child stdin and child stdout → out_fd byte for byte while writing the trace;
// child stderr is inherited. Returns the child's exit code; when the child died of a signal, the
// signal is re-raised on this process (the caller never sees a return in that case unless the
// signal does not terminate, then 128+N). Harness errors (cannot start CMD, cannot open the
// trace) return 2 with a message on stderr.
int runRecord(const RecordCommandOptions&);

// ---------------------------------------------------------------------------------------------
// replay
// ---------------------------------------------------------------------------------------------
struct ReplayCommandOptions {
  std::string trace;                // recorded trace (required)
  std::vector<std::string> command; // the process to replay into (required)
  std::string role = "engine";      // "engine": we play the engine side into a plugin
  std::string timing = "fast";      // "recorded": keep recorded gaps; "fast": next step when answered
  std::string out;                  // optional: the replay's own trace
  std::string profile;              // empty: the recorded trace's profile
  // fast mode: how long one step waits for the recorded answers before moving on (ms).
  std::uint32_t step_timeout_ms = 2000;
  bool lint = true;                 // run the monitors over the replayed conversation too
};
// 0 no divergence, 1 divergence (the first one printed with both versions side by side), 2 harness
// error (unreadable trace, cannot start CMD, unsupported role).
int runReplay(const ReplayCommandOptions&, std::ostream& out, std::ostream& err);

}  // namespace conform::runner
