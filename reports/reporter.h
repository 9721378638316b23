// reports/reporter — one event interface, one file per output format (Catch2 reporter style).
//
// Why events: the console writer streams while a long check runs; JUnit, JSON, HTML, SARIF and
// Markdown collect and render at the end. Both kinds sit behind the same calls, so the runner emits
// events once and any set of writers listens. replay() drives the events from a finished RunResult
// (lint, golden tests, re-rendering a saved JSON result).
//
// Adding a format: write reports/<format>_reporter.cpp with a class deriving from Reporter (or
// CollectingReporter) and add one line to makeReporter() in reporter.cpp.
#pragma once

#include <iosfwd>
#include <memory>
#include <string_view>

#include "core/util/expected.h"
#include "reports/results.h"

namespace conform::reports {

class Reporter {
 public:
  virtual ~Reporter() = default;
  // `run` holds the header fields (tool, command, target, profile, started_at); cases empty.
  virtual void runStarting(const RunResult& run) { (void)run; }
  // `c` holds id, title and rules; findings empty.
  virtual void caseStarting(const CaseResult& c) { (void)c; }
  virtual void findingReported(const CaseResult& c, const Finding& f) { (void)c; (void)f; }
  // `c` is complete (verdict, findings, duration).
  virtual void caseEnded(const CaseResult& c) { (void)c; }
  // `run` is complete.
  virtual void runEnded(const RunResult& run) { (void)run; }
};

// For formats that render once at the end: everything is in runEnded(run).
class CollectingReporter : public Reporter {
 public:
  void runEnded(const RunResult& run) override { render(run); }
  virtual void render(const RunResult& run) = 0;
};

struct ReporterOptions {
  bool color = false;    // console: ANSI colours
  bool verbose = false;  // console: also list passing cases
};

// Formats: "console", "json", "junit", "sarif", "markdown". Unknown → error naming the known ones.
Expected<std::unique_ptr<Reporter>, std::string> makeReporter(std::string_view format,
                                                              std::ostream& out,
                                                              const ReporterOptions& = {});

// Feeds a finished run through a reporter, event by event.
void replay(const RunResult& run, Reporter& r);

}  // namespace conform::reports
