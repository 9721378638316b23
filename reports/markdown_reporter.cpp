// reports/markdown_reporter — a Markdown summary for pull-request comments: verdict table, then
// each non-passing case with requirement → expected → actual → evidence lines.
#include <ostream>

#include <fmt/format.h>

#include "reports/writers.h"

namespace conform::reports {
namespace {

// Table cells must not break the row.
std::string cell(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n' || c == '\r') o += ' ';
    else o += c;
  }
  return o;
}

class MarkdownReporter : public CollectingReporter {
 public:
  explicit MarkdownReporter(std::ostream& out) : out_(out) {}
  void render(const RunResult& run) override {
    Counts n = countCases(run);
    out_ << fmt::format("# {} {}", run.tool, run.command);
    if (!run.target.empty()) out_ << " — " << cell(run.target);
    out_ << "\n\n";
    if (!run.profile.empty()) out_ << "Profile: `" << run.profile << "`\n\n";
    if (run.strict) out_ << "Mode: strict (Lvl I and C rules binding on the target, `--strict`)\n\n";
    out_ << "| Verdict | Cases |\n|---|---|\n";
    out_ << fmt::format("| PASS | {} |\n| FAIL | {} |\n| NON-STRICT | {} |\n| NOT-APPLICABLE | {} |\n"
                        "| UNTESTED | {} |\n| ERROR | {} |\n\n",
                        n.pass, n.fail, n.non_strict, n.not_applicable, n.untested, n.error);
    for (const CaseResult& c : run.cases) {
      if (c.verdict == Verdict::Pass) continue;
      out_ << fmt::format("## {} `{}` {}\n\n", toString(c.verdict), c.id, cell(c.title));
      if (!c.error.empty()) out_ << "Harness error: " << c.error << "\n\n";
      if (!c.skip_reason.empty()) out_ << "Reason: " << c.skip_reason << "\n\n";
      for (const Finding& f : c.findings) {
        out_ << fmt::format("* **{} {}** ({} {}, binds {}{})\n", toString(f.verdict), f.rule_id,
                            toString(f.level), toString(f.kind), bindsText(f.binds),
                            f.strict_only ? ", FAIL only under --strict" : "");
        out_ << "  * requirement: " << f.requirement() << "\n";
        if (!f.message.empty()) out_ << "  * what: " << f.message << "\n";
        out_ << "  * expected: " << f.expected << "\n";
        out_ << "  * actual: " << f.actual << "\n";
        if (!f.evidence.empty()) out_ << "  * evidence lines: " << evidenceLines(f) << "\n";
      }
      out_ << "\n";
    }
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> makeMarkdownReporter(std::ostream& out) {
  return std::make_unique<MarkdownReporter>(out);
}

}  // namespace conform::reports
