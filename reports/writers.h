// reports/writers — constructors of the individual formats (one .cpp each); use makeReporter().
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

#include "reports/reporter.h"

namespace conform::reports {

std::unique_ptr<Reporter> makeConsoleReporter(std::ostream& out, const ReporterOptions& opts);
std::unique_ptr<Reporter> makeJsonReporter(std::ostream& out);
std::unique_ptr<Reporter> makeJunitReporter(std::ostream& out);
std::unique_ptr<Reporter> makeSarifReporter(std::ostream& out);
std::unique_ptr<Reporter> makeMarkdownReporter(std::ostream& out);
std::unique_ptr<Reporter> makeHtmlReporter(std::ostream& out);

// Shared text helpers.
std::string xmlEscape(std::string_view);
// "line 12", "lines 12, 15"
std::string evidenceLines(const Finding& f);

}  // namespace conform::reports
