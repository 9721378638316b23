// reports/junit_reporter — JUnit XML for CI dashboards. A broken rule (FAIL, and NON-STRICT so it
// stays visible) is a <failure>; a harness problem is an <error> — never mixed (STYLE.md, Catch2).
// NOT-APPLICABLE and UNTESTED cases are <skipped>.
#include <ostream>

#include <fmt/format.h>

#include "reports/writers.h"

namespace conform::reports {
namespace {

class JunitReporter : public CollectingReporter {
 public:
  explicit JunitReporter(std::ostream& out) : out_(out) {}
  void render(const RunResult& run) override {
    Counts n = countCases(run);
    out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ << fmt::format(
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\">\n",
        xmlEscape(run.tool + " " + run.command), n.total(), n.fail + n.non_strict, n.error,
        n.not_applicable + n.untested, run.duration_ms / 1000.0);
    out_ << fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "timestamp=\"{}\" time=\"{:.3f}\">\n",
        xmlEscape(run.target.empty() ? run.command : run.target), n.total(), n.fail + n.non_strict,
        n.error, n.not_applicable + n.untested, xmlEscape(run.started_at), run.duration_ms / 1000.0);
    // The run's mode as a property, so a CI dashboard can tell a --strict run from a default one.
    out_ << fmt::format("    <properties>\n      <property name=\"strict\" value=\"{}\"/>\n    </properties>\n",
                        run.strict ? "true" : "false");
    for (const CaseResult& c : run.cases) {
      out_ << fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"",
                          xmlEscape(run.profile.empty() ? "conform" : run.profile),
                          xmlEscape(c.title.empty() ? c.id : c.id + " " + c.title),
                          c.duration_ms / 1000.0);
      if (c.verdict == Verdict::Pass) {
        out_ << "/>\n";
        continue;
      }
      out_ << ">\n";
      switch (c.verdict) {
        case Verdict::Error:
          out_ << fmt::format("      <error message=\"{}\"/>\n", xmlEscape(c.error));
          break;
        case Verdict::NotApplicable:
        case Verdict::Untested:
          out_ << fmt::format("      <skipped message=\"{}: {}\"/>\n", toString(c.verdict),
                              xmlEscape(c.skip_reason));
          break;
        default:
          break;
      }
      for (const Finding& f : c.findings) {
        if (f.verdict == Verdict::Error) {
          out_ << fmt::format("      <error message=\"{}\"/>\n", xmlEscape(f.message));
          continue;
        }
        out_ << fmt::format("      <failure type=\"{}\" message=\"{} {}{}: {}\">", toString(f.verdict),
                            xmlEscape(f.rule_id), toString(f.level), f.strict_only ? " (--strict)" : "",
                            xmlEscape(f.message));
        out_ << xmlEscape(fmt::format("requirement: {}\nexpected: {}\nactual: {}\nevidence lines: {}\n",
                                      f.requirement(), f.expected, f.actual, evidenceLines(f)));
        out_ << "</failure>\n";
      }
      out_ << "    </testcase>\n";
    }
    out_ << "  </testsuite>\n</testsuites>\n";
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> makeJunitReporter(std::ostream& out) {
  return std::make_unique<JunitReporter>(out);
}

}  // namespace conform::reports
