// harness/rules/lint — the `conform lint` engine (the CLI wires it later): one streaming pass of all
// monitors over a trace. Memory is bounded by live protocol state (monitor.h), never by length.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/expected.h"
#include "reports/results.h"

namespace conform::rules {

struct LintOptions {
  // "0.0.6" / "v006" / "0.0.4" / "v004"; empty: the trace header's profile, else the handshake's.
  std::string profile;
  // Stop at the first malformed trace line instead of reporting it and continuing.
  bool stop_on_bad_line = false;
};

struct LintResult {
  std::vector<reports::Finding> findings;
  std::uint64_t events = 0;
  std::string profile;                          // the profile judged by ("v006")
  std::vector<trace::TraceError> bad_lines;     // malformed lines that were skipped
  // Findings not kept because of the per-rule cap, by rule.
  std::vector<std::pair<std::string, std::size_t>> suppressed;
  // As a results-model case ("lint"): findings plus an ERROR when lines were unreadable.
  reports::CaseResult toCase(std::string trace_path = {}) const;
};

// Unreadable input (missing file, bad header, I/O error) is an error value naming the line.
// An unknown profile name is an error too.
Expected<LintResult, trace::TraceError> lint(trace::TraceReader& reader, const LintOptions& = {});

}  // namespace conform::rules
