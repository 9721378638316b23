// harness/rules/lint — see lint.h.
#include "harness/rules/lint.h"

#include <fmt/format.h>

#include "harness/rules/monitor.h"

namespace conform::rules {

Expected<LintResult, trace::TraceError> lint(trace::TraceReader& reader, const LintOptions& opts) {
  auto hdr = reader.header();
  if (!hdr) return unexpected(hdr.error());
  const protocol::Profile* profile = nullptr;
  std::string name = !opts.profile.empty() ? opts.profile : (*hdr)->profile;
  if (!name.empty()) {
    profile = protocol::findProfile(name);
    if (!profile && !opts.profile.empty())
      return unexpected(trace::TraceError{0, fmt::format("unknown profile `{}` (known: 0.0.6, 0.0.4)", name)});
  }
  MonitorSet set(profile);
  LintResult res;
  while (true) {
    auto ev = reader.next();
    if (!ev) {
      // A malformed line is reported and skipped; a sticky error (I/O, header) repeats: stop then.
      if (opts.stop_on_bad_line || (!res.bad_lines.empty() && res.bad_lines.back().line == ev.error().line))
        return unexpected(ev.error());
      res.bad_lines.push_back(ev.error());
      if (res.bad_lines.size() > 1000) return unexpected(ev.error());  // not a trace at all
      continue;
    }
    if (!*ev) break;
    set.feed(**ev);
    ++res.events;
  }
  set.finish();
  res.profile = std::string(set.state().effectiveProfile().name());
  res.findings = std::move(set.findings());
  for (auto& [rule, n] : set.sink().suppressed()) res.suppressed.emplace_back(rule, n);
  return res;
}

reports::CaseResult LintResult::toCase(std::string trace_path) const {
  reports::CaseResult c = reports::newCase("lint", "trace lint", {});
  c.trace_path = std::move(trace_path);
  c.findings = findings;
  if (!bad_lines.empty()) {
    c.error = fmt::format("{} unreadable trace line(s); first: {}", bad_lines.size(), bad_lines.front().str());
  }
  reports::finalize(c);
  return c;
}

}  // namespace conform::rules
