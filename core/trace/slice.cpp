// core/trace/slice — cut a trace down to a line range, one catalogue case, or a time window.
//
// Lines are copied verbatim (header included, "t" unchanged) so a slice is itself a valid trace
// whose frames are byte-identical to the original: a minimal reproduction for a bug report or a
// replay seed. Every line is still parsed, so a slice of a corrupt trace fails loudly at the bad
// line instead of copying garbage.
#include "core/trace/trace.h"

namespace conform::trace {

Expected<SliceStats, TraceError> slice(TraceReader& in, TraceWriter& out, const SliceSpec& spec) {
  SliceStats stats;
  auto h = in.header();
  if (!h) return unexpected(h.error());
  out.rawLine((*h)->line_text);
  bool in_case = false;  // inside the requested case's begin..end markers
  for (;;) {
    auto r = in.next();
    if (!r) return unexpected(r.error());
    if (!*r) break;
    const TraceEvent& ev = **r;
    ++stats.lines_read;
    bool keep = true;
    if (spec.from_line && ev.line < spec.from_line) keep = false;
    if (spec.to_line && ev.line > spec.to_line) keep = false;
    if (spec.from_us && ev.t_us < *spec.from_us) keep = false;
    if (spec.to_us && ev.t_us > *spec.to_us) keep = false;
    if (spec.case_id) {
      const bool marker = ev.kind == Kind::Case && ev.text == *spec.case_id;
      if (marker && ev.phase == CasePhase::Begin) in_case = true;
      if (!in_case) keep = false;
      if (marker && ev.phase == CasePhase::End) in_case = false;
    }
    if (!keep) continue;
    out.rawLine(ev.line_text);
    ++stats.events_written;
  }
  out.flush();
  return stats;
}

Expected<SliceStats, TraceError> sliceLines(TraceReader& in, TraceWriter& out, std::uint64_t from_line,
                                            std::uint64_t to_line) {
  SliceSpec s;
  s.from_line = from_line;
  s.to_line = to_line;
  return slice(in, out, s);
}

Expected<SliceStats, TraceError> sliceCase(TraceReader& in, TraceWriter& out, std::string_view case_id) {
  SliceSpec s;
  s.case_id = std::string(case_id);
  return slice(in, out, s);
}

Expected<SliceStats, TraceError> sliceTime(TraceReader& in, TraceWriter& out, std::int64_t from_us,
                                           std::int64_t to_us) {
  SliceSpec s;
  s.from_us = from_us;
  s.to_us = to_us;
  return slice(in, out, s);
}

}  // namespace conform::trace
