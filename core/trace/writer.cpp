// core/trace/writer — writes the trace format of docs/trace-format.md.
//
// Why the frame is spliced in as text rather than re-serialised: the trace must keep every frame
// byte for byte (duplicate member names, number spellings, whitespace, a BOM), because it is the
// evidence for FRAME-* findings and the input of replay. A frame that is one valid JSON value can be
// the last member's value verbatim; anything else is escaped ("text") or base64 ("b64").
//
// Each event is formatted into one std::string and handed to the sink in one write, so a trace
// written with FlushPolicy::EveryEvent is complete up to the last event even if conform crashes.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <mutex>
#include <ostream>

#include <rapidjson/writer.h>

#include "core/trace/trace.h"
#include "core/wire/framing.h"

namespace conform::trace {
namespace {

// Buffered writers hand ~1 MiB at a time to the sink (fewer syscalls in bulk slicing/fuzzing).
constexpr std::size_t kBufferedFlushBytes = 1u << 20;

struct StringOut {
  using Ch = char;
  std::string* s;
  void Put(char c) { s->push_back(c); }
  void Flush() {}
};

// Appends `s` as a JSON string. `s` must be valid UTF-8 (callers check, or sanitise first).
void appendJsonString(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  StringOut so{&out};
  rapidjson::Writer<StringOut> w(so);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// Free text from the harness (notes, timeouts, case ids) should be UTF-8; if it is not, each bad
// byte becomes U+FFFD so the trace line stays valid JSON. Frames are never altered like this.
std::string sanitizeUtf8(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    const std::size_t bad = wire::firstInvalidUtf8(s);
    if (bad == wire::npos) { out += s; break; }
    out += s.substr(0, bad);
    out += "\xEF\xBF\xBD";
    s.remove_prefix(bad + 1);
  }
  return out;
}

void appendText(std::string& out, std::string_view s) {
  if (wire::firstInvalidUtf8(s) == wire::npos) appendJsonString(out, s);
  else appendJsonString(out, sanitizeUtf8(s));
}

void appendInt(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace

struct TraceWriter::Impl {
  std::FILE* file = nullptr;
  bool owns_file = false;
  std::ostream* os = nullptr;
  const clock::Clock* clk = nullptr;
  clock::TimePoint start{};
  WriterOptions opts;
  std::mutex mu;
  std::string buf;
  std::string error;
  std::uint64_t lines = 0;

  void sinkWrite() {
    if (buf.empty()) return;
    if (error.empty()) {
      if (file) {
        if (std::fwrite(buf.data(), 1, buf.size(), file) != buf.size())
          error = std::string("trace write failed: ") + std::strerror(errno);
      } else if (os) {
        os->write(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (!*os) error = "trace write failed: output stream error";
      }
    }
    buf.clear();
  }
  void sinkFlush() {
    sinkWrite();
    if (!error.empty()) return;
    if (file && std::fflush(file) != 0) error = std::string("trace flush failed: ") + std::strerror(errno);
    if (os && !os->flush()) error = "trace flush failed: output stream error";
  }
  // Called with the line (without LF) already appended to buf.
  void endLine() {
    buf += '\n';
    ++lines;
    if (opts.flush == FlushPolicy::EveryEvent) sinkFlush();
    else if (buf.size() >= kBufferedFlushBytes) sinkWrite();
  }
  std::int64_t now() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(clk->now() - start).count();
  }
  // `{"t":N` (+ `,"dir":"…"` unless None)
  void begin(std::int64_t t, Dir dir) {
    buf += "{\"t\":";
    appendInt(buf, t < 0 ? now() : t);
    if (dir != Dir::None) {
      buf += ",\"dir\":\"";
      buf += toString(dir);
      buf += '"';
    }
  }

  template <class F>
  void event(F&& f) {
    if (opts.thread_safe) {
      std::lock_guard<std::mutex> lock(mu);
      f();
    } else {
      f();
    }
  }

  void writeHeader(const TraceHeader& h) {
    buf += "{\"conform_trace\":";
    appendInt(buf, h.version);
    buf += ",\"started\":";
    appendText(buf, h.started.empty() ? clock::formatRfc3339(clk->wallNow()) : h.started);
    buf += ",\"profile\":";
    appendText(buf, h.profile);
    buf += ",\"role\":";
    appendText(buf, h.role);
    buf += ",\"peer\":[";
    for (std::size_t i = 0; i < h.peer.size(); ++i) {
      if (i) buf += ',';
      appendText(buf, h.peer[i]);
    }
    buf += "],\"clock\":";
    appendText(buf, clk->isVirtual() ? "virtual" : "real");
    if (h.extra.IsObject()) {
      static constexpr std::string_view kStandard[] = {"conform_trace", "started", "profile",
                                                       "role", "peer", "clock"};
      for (const auto& m : h.extra.GetObject()) {
        std::string_view name(m.name.GetString(), m.name.GetStringLength());
        if (std::find(std::begin(kStandard), std::end(kStandard), name) != std::end(kStandard))
          continue;
        buf += ',';
        appendText(buf, name);
        buf += ':';
        StringOut so{&buf};
        rapidjson::Writer<StringOut> w(so);
        m.value.Accept(w);
      }
    }
    buf += '}';
    endLine();
  }
};

TraceWriter::TraceWriter(std::FILE* out, const clock::Clock& clk, TraceHeader header, WriterOptions opts)
    : impl_(std::make_unique<Impl>()) {
  impl_->file = out;
  impl_->clk = &clk;
  impl_->start = clk.now();
  impl_->opts = opts;
  impl_->writeHeader(header);
}
TraceWriter::TraceWriter(std::ostream& out, const clock::Clock& clk, TraceHeader header, WriterOptions opts)
    : impl_(std::make_unique<Impl>()) {
  impl_->os = &out;
  impl_->clk = &clk;
  impl_->start = clk.now();
  impl_->opts = opts;
  impl_->writeHeader(header);
}
TraceWriter::TraceWriter(std::FILE* out, const clock::Clock& clk, NoHeader, WriterOptions opts)
    : impl_(std::make_unique<Impl>()) {
  impl_->file = out;
  impl_->clk = &clk;
  impl_->start = clk.now();
  impl_->opts = opts;
}
TraceWriter::TraceWriter(std::ostream& out, const clock::Clock& clk, NoHeader, WriterOptions opts)
    : impl_(std::make_unique<Impl>()) {
  impl_->os = &out;
  impl_->clk = &clk;
  impl_->start = clk.now();
  impl_->opts = opts;
}

Expected<std::unique_ptr<TraceWriter>, std::string> TraceWriter::open(const std::string& path,
                                                                      const clock::Clock& clk,
                                                                      TraceHeader header,
                                                                      WriterOptions opts) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return unexpected(path + ": cannot create trace file: " + std::strerror(errno));
  auto w = std::make_unique<TraceWriter>(f, clk, std::move(header), opts);
  w->impl_->owns_file = true;
  return w;
}

TraceWriter::~TraceWriter() {
  if (!impl_) return;
  impl_->sinkFlush();
  if (impl_->owns_file && impl_->file) std::fclose(impl_->file);
}

std::int64_t TraceWriter::nowUs() const { return impl_->now(); }

void TraceWriter::frame(Dir dir, std::string_view bytes, bool had_cr, std::int64_t t, FrameHint hint,
                        bool unterminated) {
  FrameForm form = FrameForm::Json;
  if (hint == FrameHint::ValidJson) form = FrameForm::Json;
  else if (hint == FrameHint::NotJson)
    form = wire::firstInvalidUtf8(bytes) == wire::npos ? FrameForm::Text : FrameForm::Binary;
  else form = classifyFrame(bytes);
  impl_->event([&] {
    std::string& b = impl_->buf;
    impl_->begin(t, dir);
    // Flags come BEFORE the payload: a "frame" member must be the last one (docs/trace-format.md).
    if (had_cr) b += ",\"cr\":true";
    if (unterminated) b += ",\"unterminated\":true";
    switch (form) {
      case FrameForm::Json:
        b += ",\"frame\":";
        b += bytes;
        break;
      case FrameForm::Text:
        b += ",\"text\":";
        appendJsonString(b, bytes);
        break;
      case FrameForm::Binary:
        b += ",\"b64\":\"";
        b += base64Encode(bytes);
        b += '"';
        break;
    }
    b += '}';
    impl_->endLine();
  });
}

void TraceWriter::frameEvent(Dir dir, const wire::FrameEvent& ev, std::int64_t t) {
  using K = wire::FrameEvent::Kind;
  switch (ev.kind) {
    case K::Frame: frame(dir, ev.bytes, ev.had_cr, t, FrameHint::Unknown, ev.unterminated); break;
    case K::InvalidUtf8: frame(dir, ev.bytes, ev.had_cr, t, FrameHint::NotJson, ev.unterminated); break;
    case K::Oversized: oversized(dir, ev.size, ev.bytes, t); break;
    case K::Eof: eof(dir, t); break;
  }
}

void TraceWriter::oversized(Dir dir, std::uint64_t bytes_seen, std::string_view head, std::int64_t t) {
  impl_->event([&] {
    std::string& b = impl_->buf;
    impl_->begin(t, dir);
    b += ",\"oversized\":";
    b += std::to_string(bytes_seen);
    if (wire::firstInvalidUtf8(head) == wire::npos) {
      b += ",\"head\":";
      appendJsonString(b, head);
    } else {
      b += ",\"head_b64\":\"";
      b += base64Encode(head);
      b += '"';
    }
    b += '}';
    impl_->endLine();
  });
}

void TraceWriter::stderrLine(std::string_view line, Dir dir, std::int64_t t) {
  impl_->event([&] {
    std::string& b = impl_->buf;
    impl_->begin(t, dir);
    if (wire::firstInvalidUtf8(line) == wire::npos) {
      b += ",\"stderr\":";
      appendJsonString(b, line);
    } else {
      b += ",\"stderr_b64\":\"";
      b += base64Encode(line);
      b += '"';
    }
    b += '}';
    impl_->endLine();
  });
}

void TraceWriter::eof(Dir dir, std::int64_t t) {
  impl_->event([&] {
    impl_->begin(t, dir);
    impl_->buf += ",\"eof\":true}";
    impl_->endLine();
  });
}

void TraceWriter::exitCode(int code, std::int64_t t) {
  impl_->event([&] {
    impl_->begin(t, Dir::None);
    impl_->buf += ",\"exit\":{\"code\":";
    appendInt(impl_->buf, code);
    impl_->buf += "}}";
    impl_->endLine();
  });
}

void TraceWriter::exitSignal(int sig, std::string_view name, std::int64_t t) {
  if (name.empty()) name = signalName(sig);
  impl_->event([&] {
    std::string& b = impl_->buf;
    impl_->begin(t, Dir::None);
    b += ",\"exit\":{\"signal\":";
    appendInt(b, sig);
    if (!name.empty()) {
      b += ",\"name\":";
      appendText(b, name);
    }
    b += "}}";
    impl_->endLine();
  });
}

namespace {
template <class Impl>
void textEvent(Impl& impl, std::string_view key, std::string_view text, std::int64_t t) {
  impl.event([&] {
    impl.begin(t, Dir::None);
    impl.buf += ",\"";
    impl.buf += key;
    impl.buf += "\":";
    appendText(impl.buf, text);
    impl.buf += '}';
    impl.endLine();
  });
}
}  // namespace

void TraceWriter::timeout(std::string_view what, std::int64_t t) { textEvent(*impl_, "timeout", what, t); }
void TraceWriter::note(std::string_view text, std::int64_t t) { textEvent(*impl_, "note", text, t); }

void TraceWriter::caseBegin(std::string_view id, std::int64_t t) {
  impl_->event([&] {
    impl_->begin(t, Dir::None);
    impl_->buf += ",\"case\":";
    appendText(impl_->buf, id);
    impl_->buf += ",\"phase\":\"begin\"}";
    impl_->endLine();
  });
}
void TraceWriter::caseEnd(std::string_view id, std::int64_t t) {
  impl_->event([&] {
    impl_->begin(t, Dir::None);
    impl_->buf += ",\"case\":";
    appendText(impl_->buf, id);
    impl_->buf += ",\"phase\":\"end\"}";
    impl_->endLine();
  });
}

void TraceWriter::raw(Dir dir, std::string_view bytes, std::int64_t t) {
  impl_->event([&] {
    impl_->begin(t, dir);
    impl_->buf += ",\"raw_b64\":\"";
    impl_->buf += base64Encode(bytes);
    impl_->buf += "\"}";
    impl_->endLine();
  });
}

void TraceWriter::rawLine(std::string_view line) {
  impl_->event([&] {
    impl_->buf += line;
    impl_->endLine();
  });
}

void TraceWriter::flush() {
  impl_->event([&] { impl_->sinkFlush(); });
}
bool TraceWriter::ok() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->error.empty();
}
std::string TraceWriter::error() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->error;
}
std::uint64_t TraceWriter::linesWritten() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->lines;
}

}  // namespace conform::trace
