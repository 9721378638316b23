// core/wire/framing — newline-delimited frames exactly as the FRAME-* rules say
// (PROTOCOL.md §2, RULES.md FRAME-01…19).
//
//  * One frame a line, ended by one LF. One CR directly before the LF is stripped (FRAME-08) and
//    remembered (a writer SHOULD NOT send it; monitors report it).
//  * Limit: 4,194,304 bytes counted over everything before the LF, a trailing CR included
//    (FRAME-06/07). Exactly the limit is accepted; one byte more is an error, detected as soon as
//    the limit is passed — without waiting for a newline that a flooding peer may never send.
//  * Invalid UTF-8 is its own error, distinct from malformed JSON (FRAME-04/05).
//  * A non-empty unterminated fragment before EOF is delivered as a last frame (FRAME-09), then EOF.
//  * An empty line is delivered as an (empty) frame: it is malformed JSON, and deciding that is the
//    JSON layer's job (FRAME-10).
//
// The decoder is push-based and never blocks: feed it whatever a read returned (partial reads,
// many frames in one read), then drain next(). Memory is bounded by the limit: an oversized frame's
// bytes are discarded as they arrive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace conform::wire {

// FRAME-06 / FRAME-07: the 4 MiB frame limit, counted before the LF with a trailing CR included.
inline constexpr std::size_t kMaxFrameBytes = 4'194'304;

struct FrameEvent {
  enum class Kind {
    Frame,        // bytes: the frame without LF (and without the stripped CR)
    Oversized,    // the frame passed the limit; bytes: its first min(kOversizedKeep, max+1) bytes
    InvalidUtf8,  // bytes: the whole frame as received (without LF/CR)
    Eof,          // end of stream; always the last event
  };
  Kind kind = Kind::Frame;
  std::string bytes;
  bool had_cr = false;          // a CR was stripped before the LF (or before EOF, FRAME-09)
  bool unterminated = false;    // Frame/InvalidUtf8 ended by EOF instead of LF (FRAME-09)
  std::uint64_t offset = 0;     // stream offset of the frame's first byte
  // Bytes before the LF (CR counted). For Oversized: max_frame + 1, the count at which the limit
  // was passed (the same whatever the read sizes; the rest of the frame is skipped unseen).
  std::uint64_t size = 0;
  std::size_t utf8_error_at = 0;  // InvalidUtf8: offset of the first bad byte within the frame
};

// Byte offset of the first invalid UTF-8 sequence, or npos when `s` is valid (overlongs,
// surrogates and code points above U+10FFFF are invalid, as RFC 3629 says).
std::size_t firstInvalidUtf8(std::string_view s);
inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

class FrameDecoder {
 public:
  static constexpr std::size_t kOversizedKeep = 256;

  explicit FrameDecoder(std::size_t max_frame = kMaxFrameBytes) : max_(max_frame) {}

  // After an Oversized event the decoder skips to the next LF and resumes ("resync"); a protocol
  // peer treats the event as fatal anyway, but an observer (record, lint) keeps reading.
  void feed(std::string_view data);
  void feedEof();
  std::optional<FrameEvent> next();
  bool eof() const { return eof_; }
  std::uint64_t bytesSeen() const { return offset_; }

 private:
  void emitLine(std::string&& line, bool terminated);
  std::size_t max_;
  std::string partial_;
  bool skipping_ = false;  // inside an oversized frame, discarding until LF
  bool eof_ = false;
  std::uint64_t offset_ = 0;        // total bytes fed
  std::uint64_t frame_start_ = 0;   // offset of the current partial frame
  std::deque<FrameEvent> out_;
};

// Appends the LF. Never adds CR. Callers must not pass bytes containing LF.
std::string encodeFrame(std::string_view json);

}  // namespace conform::wire
