// fuzz_framing — core/wire FrameDecoder over a byte stream split into reads of fuzzer-chosen sizes.
//
// Input layout: byte 0 chooses the frame limit (small limits, so the FRAME-06/07 oversized path is
// reached with small inputs; 255 = the real 4 MiB limit); byte 1 (mod 16) is how many read-size
// bytes follow; the rest is the stream.
// Invariants:
//  * the events do not depend on how the stream was split: chunked reads with next() drained
//    after every read give exactly the events of one-byte reads drained at the end (framing.cpp's
//    determinism promise, which the peer under test's write pattern must never change);
//  * exactly one Eof, last, at the stream's end; nothing after it;
//  * every Frame / InvalidUtf8 is the stream's bytes at its offset, without LF, with one trailing CR
//    stripped (and flagged), no longer than the limit; Frame is valid UTF-8, InvalidUtf8 names the
//    first bad byte;
//  * Oversized keeps the first min(256, limit+1) bytes of the frame and reports size limit+1;
//  * events come in stream order and never overlap.
#include <vector>

#include "core/wire/framing.h"
#include "fuzz/fuzz_common.h"

namespace wire = conform::wire;
using Kind = wire::FrameEvent::Kind;

namespace {

void drain(wire::FrameDecoder& d, std::vector<wire::FrameEvent>& out) {
  while (auto ev = d.next()) out.push_back(std::move(*ev));
}

bool sameEvent(const wire::FrameEvent& a, const wire::FrameEvent& b) {
  return a.kind == b.kind && a.bytes == b.bytes && a.had_cr == b.had_cr &&
         a.unterminated == b.unterminated && a.offset == b.offset && a.size == b.size &&
         a.utf8_error_at == b.utf8_error_at;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  conform::fuzz::ByteReader in(data, size);
  const std::uint8_t limit_byte = in.byte();
  const std::size_t limit = limit_byte == 255 ? wire::kMaxFrameBytes : limit_byte % 80;
  std::vector<std::size_t> reads(in.byte() % 16);
  bool progress = false;
  for (auto& r : reads) progress |= (r = in.byte()) != 0;
  if (!progress) reads.assign(1, 4096);  // only empty reads would never get through the stream
  const std::string_view stream = in.rest();

  // Chunked reads, drained after each one, like the channel's reader thread.
  std::vector<wire::FrameEvent> chunked;
  wire::FrameDecoder dc(limit);
  std::size_t pos = 0;
  for (std::size_t i = 0; pos < stream.size(); ++i) {
    const std::size_t n = std::min(reads[i % reads.size()], stream.size() - pos);
    dc.feed(stream.substr(pos, n));  // n may be 0: an empty read must be harmless
    pos += n;
    drain(dc, chunked);
  }
  dc.feedEof();
  drain(dc, chunked);
  dc.feed("late bytes");  // nothing may follow EOF
  dc.feedEof();
  FUZZ_CHECK(!dc.next().has_value(), "an event after Eof");
  FUZZ_CHECK(dc.bytesSeen() == stream.size(), "bytesSeen is not the stream length");

  // The reference: one byte a read, drained once at the end.
  std::vector<wire::FrameEvent> bytewise;
  wire::FrameDecoder db(limit);
  for (char c : stream) db.feed(std::string_view(&c, 1));
  db.feedEof();
  drain(db, bytewise);

  FUZZ_CHECK(chunked.size() == bytewise.size(), "event count depends on read sizes");
  for (std::size_t i = 0; i < chunked.size(); ++i)
    FUZZ_CHECK(sameEvent(chunked[i], bytewise[i]), "event " + std::to_string(i) + " depends on read sizes");

  FUZZ_CHECK(!chunked.empty() && chunked.back().kind == Kind::Eof, "the last event is not Eof");
  FUZZ_CHECK(chunked.back().offset == stream.size(), "Eof offset is not the stream length");
  std::uint64_t next_free = 0;  // first stream offset no earlier event covers
  for (std::size_t i = 0; i + 1 < chunked.size(); ++i) {
    const wire::FrameEvent& ev = chunked[i];
    FUZZ_CHECK(ev.kind != Kind::Eof, "Eof before the end");
    FUZZ_CHECK(ev.offset >= next_free && ev.offset + ev.size <= stream.size(), "event outside the stream");
    next_free = ev.offset + ev.size;
    const std::string_view at = stream.substr(ev.offset);
    if (ev.kind == Kind::Oversized) {
      FUZZ_CHECK(ev.size == limit + 1, "Oversized size is not limit+1");
      FUZZ_CHECK(ev.bytes == at.substr(0, std::min<std::size_t>(wire::FrameDecoder::kOversizedKeep, limit + 1)),
                 "Oversized head is not the frame's first bytes");
      continue;
    }
    FUZZ_CHECK(ev.size <= limit, "a frame longer than the limit");
    FUZZ_CHECK(ev.size == ev.bytes.size() + (ev.had_cr ? 1 : 0), "size is not bytes + CR");
    FUZZ_CHECK(ev.bytes == at.substr(0, ev.bytes.size()), "frame bytes are not the stream's");
    FUZZ_CHECK(ev.bytes.find('\n') == std::string::npos, "LF inside a frame");
    if (ev.had_cr) FUZZ_CHECK(at[ev.bytes.size()] == '\r', "had_cr without a CR");
    const bool at_end = ev.offset + ev.size == stream.size();
    FUZZ_CHECK(ev.unterminated == at_end, "unterminated is not 'ended by EOF'");
    if (!ev.unterminated) FUZZ_CHECK(at[ev.size] == '\n', "a terminated frame not followed by LF");
    const std::size_t bad = wire::firstInvalidUtf8(ev.bytes);
    if (ev.kind == Kind::Frame) {
      FUZZ_CHECK(bad == wire::npos, "Frame with invalid UTF-8");
    } else {
      FUZZ_CHECK(bad != wire::npos && bad == ev.utf8_error_at, "InvalidUtf8 at the wrong byte");
    }
  }
  return 0;
}
