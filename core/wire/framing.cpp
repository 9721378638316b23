// core/wire/framing — the NDJSON frame decoder (PROTOCOL.md §2, RULES.md FRAME-*).
//
// Why it looks like this: the decoder runs on every byte a peer under test sends, including
// floods of gigabytes without a newline and one-byte reads. So: LF search with memchr (never a
// per-byte loop), a frame that arrives whole in one read is copied once, an oversized frame is
// cut off the moment byte limit+1 arrives (FRAME-06/07) and its remaining bytes are skipped
// without buffering, and UTF-8 validation has a word-at-a-time ASCII fast path.
//
// Determinism: whatever way the stream is split into feed() calls, the events are identical
// (tests/core/framing_test.cpp feeds byte by byte and compares).
#include "core/wire/framing.h"

#include <algorithm>
#include <cstring>

namespace conform::wire {

namespace {

constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;

// RFC 3629 §4 (Table 3-7 of Unicode): the only well-formed sequences. The second byte's range
// depends on the lead byte (that excludes overlongs E0 80..9F, F0 80..8F, surrogates ED A0..BF and
// code points above U+10FFFF F4 90..); C0, C1 and F5..FF never appear.
inline bool inRange(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

}  // namespace

std::size_t firstInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII fast path: 8 bytes at a time while no byte has its high bit set.
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & kHighBits) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (inRange(c, 0xC2, 0xDF)) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3, lo = 0xA0;  // overlong below U+0800
    } else if (inRange(c, 0xE1, 0xEC) || c == 0xEE || c == 0xEF) {
      len = 3;
    } else if (c == 0xED) {
      len = 3, hi = 0x9F;  // U+D800..U+DFFF are surrogates
    } else if (c == 0xF0) {
      len = 4, lo = 0x90;  // overlong below U+10000
    } else if (inRange(c, 0xF1, 0xF3)) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4, hi = 0x8F;  // above U+10FFFF
    } else {
      return i;  // 80..C1 (continuation or overlong lead), F5..FF
    }
    if (i + len > n) return i;  // truncated sequence
    if (!inRange(p[i + 1], lo, hi)) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (!inRange(p[i + k], 0x80, 0xBF)) return i;
    i += len;
  }
  return npos;
}

void FrameDecoder::emitLine(std::string&& line, bool terminated) {
  FrameEvent ev;
  ev.offset = frame_start_;
  ev.size = line.size();  // CR included (FRAME-06)
  ev.unterminated = !terminated;
  // FRAME-08: one CR directly before the LF is removed. At EOF (FRAME-09) the R4 readers strip a
  // trailing CR the same way (a line codec's decode_eof), so we do too and flag it.
  if (!line.empty() && line.back() == '\r') {
    line.pop_back();
    ev.had_cr = true;
  }
  const std::size_t bad = firstInvalidUtf8(line);
  if (bad == npos) {
    ev.kind = FrameEvent::Kind::Frame;
  } else {
    ev.kind = FrameEvent::Kind::InvalidUtf8;  // FRAME-04/05: its own error, not "malformed JSON"
    ev.utf8_error_at = bad;
  }
  ev.bytes = std::move(line);
  out_.push_back(std::move(ev));
}

void FrameDecoder::feed(std::string_view data) {
  if (eof_) return;  // nothing can follow EOF
  while (!data.empty()) {
    const void* lf_ptr = std::memchr(data.data(), '\n', data.size());
    if (skipping_) {
      // Inside an oversized frame: discard up to and including the LF, then resync.
      if (!lf_ptr) {
        offset_ += data.size();
        return;
      }
      const std::size_t skip = static_cast<const char*>(lf_ptr) - data.data() + 1;
      offset_ += skip;
      data.remove_prefix(skip);
      skipping_ = false;
      frame_start_ = offset_;
      continue;
    }
    const std::size_t avail =
        lf_ptr ? static_cast<std::size_t>(static_cast<const char*>(lf_ptr) - data.data()) : data.size();
    // FRAME-06/07: everything before the LF counts; byte max_+1 makes the frame oversized even
    // when no LF ever comes.
    if (partial_.size() + avail > max_) {
      FrameEvent ev;
      ev.kind = FrameEvent::Kind::Oversized;
      ev.offset = frame_start_;
      ev.size = max_ + 1;  // bytes seen when the limit was passed: independent of read sizes
      // Keep a prefix for the report; never more than max_+1 bytes, the most that is certain to
      // have arrived whatever the read sizes were (determinism).
      const std::size_t keep = std::min(kOversizedKeep, max_ + 1);
      ev.bytes = partial_.substr(0, keep);
      if (ev.bytes.size() < keep) ev.bytes.append(data.substr(0, std::min(avail, keep - ev.bytes.size())));
      out_.push_back(std::move(ev));
      partial_.clear();
      partial_.shrink_to_fit();  // a 4 MiB buffer must not outlive the offending frame
      skipping_ = true;
      continue;  // the skipping branch consumes the rest up to the LF
    }
    if (!lf_ptr) {
      partial_.append(data);
      offset_ += data.size();
      return;
    }
    std::string line;
    if (partial_.empty()) {
      line.assign(data.data(), avail);  // the common case: the whole frame in one read, one copy
    } else {
      partial_.append(data.data(), avail);
      line = std::move(partial_);
      partial_.clear();
    }
    offset_ += avail + 1;
    data.remove_prefix(avail + 1);
    emitLine(std::move(line), /*terminated=*/true);
    frame_start_ = offset_;
  }
}

void FrameDecoder::feedEof() {
  if (eof_) return;
  // FRAME-09: a non-empty unterminated fragment is a last frame. An oversized one was already
  // reported when it passed the limit.
  if (!skipping_ && !partial_.empty()) {
    std::string line = std::move(partial_);
    partial_.clear();
    emitLine(std::move(line), /*terminated=*/false);
  }
  skipping_ = false;
  eof_ = true;
  FrameEvent ev;
  ev.kind = FrameEvent::Kind::Eof;
  ev.offset = offset_;
  out_.push_back(std::move(ev));
}

std::optional<FrameEvent> FrameDecoder::next() {
  if (out_.empty()) return std::nullopt;
  FrameEvent ev = std::move(out_.front());
  out_.pop_front();
  return ev;
}

std::string encodeFrame(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 1);
  out.append(json);
  out.push_back('\n');  // FRAME-03: exactly one LF, never CR (FRAME-08)
  return out;
}

}  // namespace conform::wire
