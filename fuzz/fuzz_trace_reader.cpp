// fuzz_trace_reader — core/trace TraceReader over an arbitrary (hand-edited, truncated, hostile)
// trace file.
// Invariants:
//  * never crashes; the loop ends (a sticky error repeats the same line, every other call moves
//    on by one line at least);
//  * each event's line_text is exactly that line of the input (LF-separated, CR is content), and
//    its line number is the reader's;
//  * a Frame event's raw bytes are a slice of its line (the frame is stored verbatim, so evidence
//    can point into the file) and parse to the same value as its `frame` member;
//  * Frame events, and only they, carry a parsed frame.
#include <vector>

#include "core/json/json.h"
#include "core/trace/trace.h"
#include "fuzz/fuzz_common.h"

namespace json = conform::json;
namespace trace = conform::trace;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = conform::fuzz::asText(data, size);
  std::vector<std::string_view> lines;  // lines[i] is line i+1
  for (std::size_t pos = 0; pos <= input.size();) {
    const std::size_t lf = input.find('\n', pos);
    if (lf == std::string_view::npos) {
      lines.push_back(input.substr(pos));
      break;
    }
    lines.push_back(input.substr(pos, lf - pos));
    pos = lf + 1;
  }

  auto reader = trace::TraceReader::fromString(std::string(input));
  if (!reader->header()) return 0;
  std::uint64_t last_line = reader->line();
  for (std::size_t calls = 0;; ++calls) {
    FUZZ_CHECK(calls <= lines.size() + 1, "next() keeps returning without reaching the end");
    auto r = reader->next();
    if (!r) {
      FUZZ_CHECK(r.error().line <= lines.size(), r.error().str());
      if (reader->line() == last_line) break;  // sticky: every later call says the same
      last_line = reader->line();
      continue;
    }
    if (!*r) break;
    const trace::TraceEvent& ev = **r;
    FUZZ_CHECK(ev.line == reader->line() && ev.line > last_line && ev.line <= lines.size(), "line number");
    last_line = ev.line;
    FUZZ_CHECK(ev.line_text == lines[ev.line - 1], "line_text is not the input line " + std::to_string(ev.line));
    FUZZ_CHECK((ev.kind == trace::Kind::Frame) == (ev.frame != nullptr), "frame set on a non-Frame event");
    if (ev.kind != trace::Kind::Frame) continue;
    const char* lb = ev.line_text.data();
    FUZZ_CHECK(ev.raw.data() >= lb && ev.raw.data() + ev.raw.size() <= lb + ev.line_text.size(),
               "Frame raw bytes are not a slice of the line");
    auto reparsed = json::parse(ev.raw);
    FUZZ_CHECK(reparsed.has_value(), "Frame raw bytes do not parse: " + std::string(ev.raw));
    FUZZ_CHECK(conform::fuzz::sameValue(reparsed->doc, *ev.frame), "Frame raw bytes and frame member differ");
  }
  return 0;
}
