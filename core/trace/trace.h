// core/trace — the one trace format every command shares (record, check, check-engine, fuzz,
// replay, lint). docs/trace-format.md is the full description; in short:
//
//   * NDJSON: one JSON object a line, each line ended by one LF (a CR is content, never a line end).
//   * Line 1 is the header {"conform_trace":1,"started":…,"profile":…,"role":…,"peer":[…],"clock":…}.
//   * Every later line is one event with "t" (µs since the trace started) and usually "dir".
//   * A frame that is one valid JSON value is stored VERBATIM as the last member:
//       {"t":12,"dir":"p2e","cr":true,"frame":<the exact frame bytes>}
//     so the trace stays byte-exact (duplicate members, odd number spellings, whitespace all kept)
//     and still readable by any JSON tool, and lint parses each line exactly once.
//   * Line numbers (1-based, header = 1) are the evidence monitors cite.
//
// Why one format: a recorded conversation is at once the evidence in a report, a replay input and a
// fuzz seed (STYLE.md "one text format serves as trace, replay input and fuzz seed").
//
// Untrusted input: a trace file may be hand-edited, cut off by a crash or written by another tool.
// The reader never throws or crashes on it; every problem is a TraceError naming the line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::wire {
struct FrameEvent;
}

namespace conform::trace {

// The format version this code reads and writes (header member "conform_trace").
inline constexpr int kTraceVersion = 1;

// Frames are at most 4,194,304 bytes (FRAME-06/07, PROTOCOL §2). The longest line a writer can
// produce is a "text" event of a 4 MiB frame of control bytes, each escaped as \u00XX (6 bytes), plus
// the event's other members; b64 needs only 4/3. Longer lines are refused with a clear error instead
// of growing memory without bound on a corrupt or hostile file.
inline constexpr std::size_t kMaxLineBytes = 6u * 4'194'304u + 64u * 1024u;

// The reader parses each line with the same hardening as core/json parse(): depth cap (the frame
// sits one level below the line object, hence +1), UTF-8 validation, non-finite numbers rejected.
inline constexpr std::size_t kMaxLineDepth = json::kDefaultMaxDepth + 1;

// How many head bytes of an oversized frame are kept (same as the framer keeps, FRAME-06).
inline constexpr std::size_t kOversizedHeadBytes = 256;

enum class Dir {
  EngineToPlugin,  // "e2p": written to the plugin's stdin
  PluginToEngine,  // "p2e": the plugin's stdout (or, for stderr events, the plugin's stderr)
  None,            // event without a direction (exit, timeout, note, case)
};
const char* toString(Dir);  // "e2p", "p2e", "none"

enum class Kind {
  Frame,      // "frame": one valid JSON value, stored verbatim
  Text,       // "text": valid UTF-8 that is not one valid JSON value (FRAME-13/14)
  Binary,     // "b64": a frame that is not valid UTF-8 (FRAME-04/05)
  Oversized,  // "oversized": a frame past the 4 MiB limit (FRAME-06/07), "head"/"head_b64"
  Stderr,     // "stderr" / "stderr_b64": one line of a process's stderr (FRAME-02)
  Eof,        // "eof": p2e = stdout reached EOF (FRAME-17); e2p = stdin was closed (FRAME-18)
  Exit,       // "exit": process ended, {"code":N} or {"signal":N,"name":"SIGKILL"}
  Timeout,    // "timeout": a wait ran out; the value says what was awaited
  Note,       // "note": free text from the harness
  Case,       // "case" + "phase": a catalogue case begins/ends (case id = rule id)
  Raw,        // "raw_b64": bytes written by a fault step that are not one frame
};
const char* toString(Kind);  // the member name: "frame", "text", "b64", …

enum class CasePhase { Begin, End };

// The header (line 1).
struct TraceHeader {
  int version = kTraceVersion;
  std::string started;              // RFC 3339 UTC with µs, e.g. 2026-11-30T07:00:00.000000Z
  std::string profile = "0.0.6";    // protocol profile, "0.0.6" or "0.0.4"
  std::string role = "engine";      // "engine" (plugin under test), "plugin" (engine under test), "tap"
  std::vector<std::string> peer;    // argv of the process under test (may be empty)
  std::string clock = "real";       // "real" or "virtual"
  // Any other members of the header object, in order (e.g. "name"). Writer: appended after the
  // standard members. Reader: every member of line 1 (standard ones included).
  json::Document extra;
  // Reader only: line 1 exactly as in the file (without its LF). slice() copies it verbatim.
  std::string line_text;

  TraceHeader() { extra.SetObject(); }
};

// One event. Views point into the reader's buffers and are valid until the next call to next()
// (or until the reader is destroyed). Copy what you keep.
struct TraceEvent {
  std::uint64_t line = 0;  // 1-based line number in the trace file (header = 1)
  std::int64_t t_us = 0;   // microseconds since trace start
  Dir dir = Dir::None;
  Kind kind = Kind::Note;

  // Frame/Text/Binary: the exact frame bytes (b64 decoded). Oversized: the kept head bytes.
  // Stderr: the line's bytes. Raw: the bytes written.
  std::string_view raw;
  // Frame only: the parsed frame (a member of the parsed line). nullptr otherwise.
  const json::Value* frame = nullptr;
  // Frame only: JSON paths (frame-relative, json::Path style) of repeated member names (FRAME-19).
  const std::vector<std::string>* duplicates = nullptr;

  bool had_cr = false;        // "cr": the frame ended with CR LF (FRAME-08)
  bool unterminated = false;  // "unterminated": the frame was ended by EOF, not LF (FRAME-09)

  std::uint64_t oversized_bytes = 0;  // Oversized: bytes seen before the limit tripped

  // Exit: exactly one of exit_code / signal.
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string_view signal_name;  // "SIGKILL" (may be empty)

  // Timeout: what timed out. Note: the text. Case: the case id.
  std::string_view text;
  CasePhase phase = CasePhase::Begin;  // Case only

  // The whole line exactly as in the file (without its LF), for slicing and evidence.
  std::string_view line_text;
  // The parsed line object (all members, including ones this reader does not know).
  const json::Value* object = nullptr;
};

struct TraceError {
  std::uint64_t line = 0;  // 1-based; 0 when the file could not be opened/read at all
  std::string message;     // reason without the location, e.g. "missing member \"t\""
  std::string str() const; // "line 7: missing member \"t\""
};

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

// Hint from a caller that already parsed the frame with json::parse (same hardening as ours).
enum class FrameHint {
  Unknown,    // the writer checks (one SAX pass, no DOM)
  ValidJson,  // json::parse succeeded on exactly these bytes: stored as "frame" unchecked
  NotJson,    // json::parse failed: stored as "text" or "b64"
};

enum class FlushPolicy {
  EveryEvent,  // write + flush each line at once (live runs: the trace survives a crash)
  Buffered,    // collect up to ~1 MiB, flush on flush()/destruction (bulk: fuzz, slice)
};

struct WriterOptions {
  FlushPolicy flush = FlushPolicy::EveryEvent;
  bool thread_safe = false;  // lock a mutex per event (several reader threads share one writer)
};

class TraceWriter {
 public:
  // Special value for the `t_us` parameters: read the clock.
  static constexpr std::int64_t kNow = -1;

  // The header is written at once; "started" is taken from clock.wallNow() when header.started is
  // empty, "clock" from clock.isVirtual(). Event times are clock.now() minus the construction
  // instant. The sink must outlive the writer; the clock too.
  TraceWriter(std::FILE* out, const clock::Clock& clock, TraceHeader header,
              WriterOptions opts = {});
  TraceWriter(std::ostream& out, const clock::Clock& clock, TraceHeader header,
              WriterOptions opts = {});
  // Opens (truncates) a file; the writer owns and closes it.
  static Expected<std::unique_ptr<TraceWriter>, std::string> open(const std::string& path,
                                                                  const clock::Clock& clock,
                                                                  TraceHeader header,
                                                                  WriterOptions opts = {});
  // Writes no header: for copying lines verbatim (slice). Use rawLine() for the header too.
  struct NoHeader {};
  TraceWriter(std::FILE* out, const clock::Clock& clock, NoHeader, WriterOptions opts = {});
  TraceWriter(std::ostream& out, const clock::Clock& clock, NoHeader, WriterOptions opts = {});
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Microseconds since the trace started, by the writer's clock.
  std::int64_t nowUs() const;

  // A frame without its LF (and without a stripped CR). Chooses frame / text / b64.
  void frame(Dir dir, std::string_view bytes, bool had_cr = false, std::int64_t t_us = kNow,
             FrameHint hint = FrameHint::Unknown, bool unterminated = false);
  // A framer event (core/wire/framing.h): Frame/InvalidUtf8 → frame(), Oversized → oversized(),
  // Eof → eof(dir).
  void frameEvent(Dir dir, const wire::FrameEvent& ev, std::int64_t t_us = kNow);
  void oversized(Dir dir, std::uint64_t bytes_seen, std::string_view head, std::int64_t t_us = kNow);
  void stderrLine(std::string_view line, Dir dir = Dir::PluginToEngine, std::int64_t t_us = kNow);
  void eof(Dir dir, std::int64_t t_us = kNow);
  void exitCode(int code, std::int64_t t_us = kNow);
  // name may be empty: it is then derived from the number (SIGKILL, SIGTERM, …) when known.
  void exitSignal(int signal, std::string_view name = {}, std::int64_t t_us = kNow);
  void timeout(std::string_view what, std::int64_t t_us = kNow);
  void note(std::string_view text, std::int64_t t_us = kNow);
  void caseBegin(std::string_view id, std::int64_t t_us = kNow);
  void caseEnd(std::string_view id, std::int64_t t_us = kNow);
  void raw(Dir dir, std::string_view bytes, std::int64_t t_us = kNow);
  // One complete line (without LF), copied verbatim. The caller vouches for its validity.
  void rawLine(std::string_view line);

  void flush();
  // False after any write error (disk full, closed pipe); the error text says which.
  bool ok() const;
  std::string error() const;
  std::uint64_t linesWritten() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Cheap classification used by the writer (exposed for tests and callers that want the decision).
// ValidJson: one JSON value under core/json's hardening (depth ≤ 512, finite numbers, UTF-8).
enum class FrameForm { Json, Text, Binary };
FrameForm classifyFrame(std::string_view bytes);

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

class TraceReader {
 public:
  // Opening errors (missing file) and header errors are reported by header() / next().
  static std::unique_ptr<TraceReader> open(const std::string& path);
  static std::unique_ptr<TraceReader> fromFile(std::FILE* f);  // not closed by the reader
  static std::unique_ptr<TraceReader> fromStream(std::istream& in);
  static std::unique_ptr<TraceReader> fromString(std::string text);  // tests, small inputs
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Reads and checks line 1 on first use (next() calls it too). An error here is sticky.
  Expected<const TraceHeader*, TraceError> header();

  // The next event; std::nullopt at end of file. A malformed line is an error naming its line;
  // calling next() again continues with the following line (lint reports them all). Unreadable
  // input (I/O error, bad header) is sticky: every later call returns the same error.
  Expected<std::optional<TraceEvent>, TraceError> next();

  // Line number of the last line read (0 before any).
  std::uint64_t line() const;

 private:
  struct Impl;
  explicit TraceReader(std::unique_ptr<Impl>);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Slicing
// ---------------------------------------------------------------------------------------------

// Which events to keep. Every given filter must hold. The header is always copied (verbatim).
struct SliceSpec {
  std::uint64_t from_line = 0;                      // inclusive; 0 = from the start
  std::uint64_t to_line = 0;                        // inclusive; 0 = to the end
  std::optional<std::string> case_id;               // from its "begin" marker to its "end", inclusive
  std::optional<std::int64_t> from_us, to_us;       // inclusive time range on "t"
};

struct SliceStats {
  std::uint64_t lines_read = 0;     // event lines read (header excluded)
  std::uint64_t events_written = 0; // event lines written
};

// Copies the header and the selected event lines verbatim (their "t" values unchanged). Stops at
// the first malformed line and returns its error.
Expected<SliceStats, TraceError> slice(TraceReader& in, TraceWriter& out, const SliceSpec& spec);

// Convenience wrappers.
Expected<SliceStats, TraceError> sliceLines(TraceReader& in, TraceWriter& out, std::uint64_t from_line,
                                            std::uint64_t to_line);
Expected<SliceStats, TraceError> sliceCase(TraceReader& in, TraceWriter& out, std::string_view case_id);
Expected<SliceStats, TraceError> sliceTime(TraceReader& in, TraceWriter& out, std::int64_t from_us,
                                           std::int64_t to_us);

// ---------------------------------------------------------------------------------------------
// Small helpers (shared by writer, reader and tests)
// ---------------------------------------------------------------------------------------------

std::string base64Encode(std::string_view bytes);
// nullopt on a character outside the alphabet or bad padding.
std::optional<std::string> base64Decode(std::string_view text);
// "SIGKILL" for 9 etc.; empty when unknown.
std::string_view signalName(int signal);

}  // namespace conform::trace
