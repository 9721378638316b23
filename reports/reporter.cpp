// reports/reporter — the format registry and replay() (see reporter.h).
#include "reports/reporter.h"

#include "reports/writers.h"

namespace conform::reports {

Expected<std::unique_ptr<Reporter>, std::string> makeReporter(std::string_view format,
                                                              std::ostream& out,
                                                              const ReporterOptions& opts) {
  if (format == "console") return makeConsoleReporter(out, opts);
  if (format == "json") return makeJsonReporter(out);
  if (format == "junit") return makeJunitReporter(out);
  if (format == "sarif") return makeSarifReporter(out);
  if (format == "markdown") return makeMarkdownReporter(out);
  if (format == "html") return makeHtmlReporter(out);
  return unexpected(std::string("unknown report format `") + std::string(format) +
                    "` (known: console, json, junit, sarif, markdown, html)");
}

void replay(const RunResult& run, Reporter& r) {
  RunResult header = run;
  header.cases.clear();
  r.runStarting(header);
  for (const CaseResult& c : run.cases) {
    CaseResult start;
    start.id = c.id;
    start.title = c.title;
    start.rules = c.rules;
    r.caseStarting(start);
    for (const Finding& f : c.findings) r.findingReported(c, f);
    r.caseEnded(c);
  }
  r.runEnded(run);
}

}  // namespace conform::reports
