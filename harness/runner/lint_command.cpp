// harness/runner/lint_command — `conform lint TRACE`: TraceReader → rules::lint → reporters.
//
// Deliberately thin: the monitors (harness/rules) and the reader (core/trace) do the work in one
// streaming pass whose memory is bounded by live protocol state, not by trace length; this file
// only turns the result into the user's output and an exit code. Findings are printed compiler
// style ("TRACE:LINE: RULE-ID (MUST) message") so editors and CI logs link straight to the line.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>

#include <fmt/format.h>

#include "core/clock/clock.h"
#include "core/trace/trace.h"
#include "harness/rules/lint.h"
#include "harness/runner/trace_commands.h"
#include "reports/reporter.h"

namespace conform::runner {
namespace {

// One file per format in --report-dir; the names say the format so CI artefact viewers pick them.
struct ReportFile {
  const char* format;
  const char* name;
};
constexpr ReportFile kReportFiles[] = {
    {"json", "lint.json"}, {"junit", "lint.junit.xml"}, {"sarif", "lint.sarif"}, {"markdown", "lint.md"}};

std::uint64_t findingLine(const reports::Finding& f) {
  for (const auto& e : f.evidence)
    if (e.line) return e.line;
  return 0;
}

void printConsole(const std::string& trace, const rules::LintResult& res, std::ostream& out) {
  for (const auto& f : res.findings) {
    std::uint64_t line = findingLine(f);
    std::string where = line ? fmt::format("{}:{}", trace, line) : trace;
    out << fmt::format("{}: {} ({}) {}\n", where, f.rule_id, reports::toString(f.level), f.message);
    if (!f.expected.empty()) out << fmt::format("    expected: {}\n", f.expected);
    if (!f.actual.empty()) out << fmt::format("    actual:   {}\n", f.actual);
  }
  for (const auto& [rule, n] : res.suppressed)
    out << fmt::format("{}: {} more {} finding(s) not shown (per-rule cap)\n", trace, n, rule);
  for (const auto& e : res.bad_lines)
    out << fmt::format("{}:{}: unreadable trace line: {}\n", trace, e.line, e.message);
  std::size_t must = 0;
  for (const auto& f : res.findings) must += f.level == reports::Level::Must ? 1 : 0;
  out << fmt::format("{}: {} event(s), profile {}, {} finding(s) ({} MUST, {} SHOULD){}\n", trace, res.events,
                     res.profile, res.findings.size(), must, res.findings.size() - must,
                     res.bad_lines.empty() ? "" : fmt::format(", {} unreadable line(s)", res.bad_lines.size()));
}

}  // namespace

int runLint(const LintCommandOptions& opt, std::ostream& out, std::ostream& err) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<trace::TraceReader> reader =
      opt.trace == "-" ? trace::TraceReader::fromFile(stdin) : trace::TraceReader::open(opt.trace);
  rules::LintOptions lo;
  lo.profile = opt.profile;
  lo.stop_on_bad_line = opt.stop_on_bad_line;
  auto res = rules::lint(*reader, lo);
  if (!res) {
    const auto& e = res.error();
    if (e.line)
      err << fmt::format("conform lint: {}:{}: {}\n", opt.trace, e.line, e.message);
    else
      err << fmt::format("conform lint: {}: {}\n", opt.trace, e.message);
    return kExitHarness;
  }

  reports::RunResult run;
  run.command = "lint";
  run.target = opt.trace;
  run.profile = res->profile;
  run.started_at = clock::formatRfc3339(clock::RealClock::instance().wallNow());
  run.cases.push_back(res->toCase(opt.trace));
  run.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  if (opt.format == "console") {
    printConsole(opt.trace, *res, out);
  } else {
    auto rep = reports::makeReporter(opt.format, out);
    if (!rep) {
      err << "conform lint: " << rep.error() << "\n";
      return kExitHarness;
    }
    reports::replay(run, **rep);
  }

  if (!opt.report_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opt.report_dir, ec);
    if (ec) {
      err << fmt::format("conform lint: cannot create report directory {}: {}\n", opt.report_dir, ec.message());
      return kExitHarness;
    }
    for (const ReportFile& rf : kReportFiles) {
      const std::string path = (std::filesystem::path(opt.report_dir) / rf.name).string();
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      auto rep = reports::makeReporter(rf.format, f);
      if (!f || !rep) {
        err << fmt::format("conform lint: cannot write {}\n", path);
        return kExitHarness;
      }
      reports::replay(run, **rep);
      f.flush();
      if (!f) {
        err << fmt::format("conform lint: write error on {}\n", path);
        return kExitHarness;
      }
    }
  }

  // Unreadable lines mean the verdict rests on partial input: a harness-level problem (exit 2),
  // reported with every line and reason above — never silently accepted.
  if (!res->bad_lines.empty()) {
    err << fmt::format("conform lint: {}:{}: {}\n", opt.trace, res->bad_lines.front().line,
                       res->bad_lines.front().message);
    return kExitHarness;
  }
  // A finding with an ERROR verdict names a rule the catalogue lacks (a monitor bug): harness error.
  // Otherwise any finding, MUST or SHOULD, is what lint exists to report: exit 1.
  int rc = kExitPass;
  for (const auto& f : res->findings) {
    if (f.verdict == reports::Verdict::Error) return kExitHarness;
    if (f.verdict == reports::Verdict::Fail || f.verdict == reports::Verdict::NonStrict) rc = kExitFindings;
  }
  return rc;
}

}  // namespace conform::runner
