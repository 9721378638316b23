// reports/console_reporter — streams human-readable results: each failure as
// requirement → expected → actual → evidence lines (h2spec style), then a summary table.
#include <ostream>

#include <fmt/format.h>

#include "reports/writers.h"

namespace conform::reports {
namespace {

const char* whoText(std::uint8_t binds) {
  switch (binds) {
    case kBindsEngine: return "engine";
    case kBindsPlugin: return "plugin";
    case kBindsSdk: return "plugin SDK";
    default: return bindsText(binds);
  }
}

class ConsoleReporter : public Reporter {
 public:
  ConsoleReporter(std::ostream& out, ReporterOptions opts) : out_(out), opts_(opts) {}

  void runStarting(const RunResult& run) override {
    out_ << fmt::format("{} {}", run.tool, run.command);
    if (!run.target.empty()) out_ << " — " << run.target;
    if (!run.profile.empty()) out_ << " (profile " << run.profile << ")";
    if (run.strict) out_ << " [strict: Lvl I/C rules binding]";
    out_ << "\n";
  }

  void caseEnded(const CaseResult& c) override {
    if (c.verdict == Verdict::Pass && !opts_.verbose) return;
    out_ << fmt::format("{} {}", paint(c.verdict), c.id);
    if (!c.title.empty()) out_ << " — " << c.title;
    out_ << "\n";
    if (!c.error.empty()) out_ << "    harness error: " << c.error << "\n";
    if (!c.skip_reason.empty()) out_ << "    reason: " << c.skip_reason << "\n";
    for (const Finding& f : c.findings) {
      out_ << fmt::format("  {} {} ({} {}, {}{})\n", paint(f.verdict), f.rule_id, toString(f.level),
                          toString(f.kind), whoText(f.binds), f.strict_only ? ", --strict" : "");
      std::string_view req = f.requirement();
      if (!req.empty()) out_ << "    requirement: " << req << "\n";
      if (!f.message.empty()) out_ << "    what:        " << f.message << "\n";
      if (!f.expected.empty()) out_ << "    expected:    " << f.expected << "\n";
      if (!f.actual.empty()) out_ << "    actual:      " << f.actual << "\n";
      for (const Evidence& e : f.evidence) {
        if (e.line) out_ << fmt::format("    line {:>6}: ", e.line);
        else out_ << "    evidence:    ";
        out_ << e.text << "\n";
      }
    }
  }

  void runEnded(const RunResult& run) override {
    Counts n = countCases(run);
    out_ << "\nSummary\n";
    out_ << fmt::format("  {:<15} {:>6}\n", "verdict", "cases");
    auto row = [&](Verdict v, std::size_t k) {
      if (k) out_ << fmt::format("  {:<15} {:>6}\n", toString(v), k);
    };
    row(Verdict::Pass, n.pass);
    row(Verdict::Fail, n.fail);
    row(Verdict::NonStrict, n.non_strict);
    row(Verdict::NotApplicable, n.not_applicable);
    row(Verdict::Untested, n.untested);
    row(Verdict::Error, n.error);
    out_ << fmt::format("  {:<15} {:>6}\n", "total", n.total());
    std::size_t findings = 0;
    for (const CaseResult& c : run.cases) findings += c.findings.size();
    out_ << fmt::format("  findings: {}, duration: {:.0f} ms, exit code {}\n", findings,
                        run.duration_ms, exitCode(run));
    if (run.strict) {
      std::size_t promoted = 0;
      for (const CaseResult& c : run.cases)
        for (const Finding& f : c.findings) promoted += f.strict_only;
      out_ << fmt::format("  strict mode: {} finding(s) FAIL only because of --strict\n", promoted);
    }
  }

 private:
  std::string paint(Verdict v) const {
    std::string s = fmt::format("[{}]", toString(v));
    if (!opts_.color) return s;
    const char* c = "";
    switch (v) {
      case Verdict::Pass: c = "\x1b[32m"; break;
      case Verdict::Fail: case Verdict::Error: c = "\x1b[31m"; break;
      case Verdict::NonStrict: c = "\x1b[33m"; break;
      default: c = "\x1b[90m"; break;
    }
    return std::string(c) + s + "\x1b[0m";
  }
  std::ostream& out_;
  ReporterOptions opts_;
};

}  // namespace

std::unique_ptr<Reporter> makeConsoleReporter(std::ostream& out, const ReporterOptions& opts) {
  return std::make_unique<ConsoleReporter>(out, opts);
}

std::string evidenceLines(const Finding& f) {
  std::string s;
  for (const Evidence& e : f.evidence) {
    if (!e.line) continue;
    s += s.empty() ? "" : ", ";
    s += std::to_string(e.line);
  }
  return s;
}

std::string xmlEscape(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (char ch : in) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most C0 controls even escaped; frame text from a fuzzer may hold them.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t' && ch != '\r')
          out += fmt::format("\\x{:02X}", static_cast<unsigned char>(ch));
        else
          out += ch;
    }
  }
  return out;
}

}  // namespace conform::reports
