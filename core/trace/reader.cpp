// core/trace/reader — streaming reader of the trace format (docs/trace-format.md).
//
// Why it looks like this: `conform lint` reads traces of millions of frames and must keep up with
// ≥ 500,000 frames/s (issue 2), and a trace file is untrusted input (hand-edited, cut off by a
// crash, written by another tool). So:
//   * input is read in 1 MiB blocks and lines are found with memchr — never per-character istream
//     reads; memory is bounded by one line (kMaxLineBytes) plus one block;
//   * each line is parsed exactly once, in situ, into a Document whose pool allocator and stacks are
//     reused, with core/json's hardening applied in the same pass (detail::HardenedSax); a
//     plain-ASCII line skips the UTF-8 and surrogate checks it cannot fail (detail::plainAscii);
//   * a frame's exact bytes are a slice of the original line (the frame is the last member), so
//     nothing is re-serialised and duplicates, spellings and whitespace survive;
//   * every malformed line becomes a TraceError naming its line number; the reader then moves on.

// RapidJSON copies the unescaped runs of a string 16 bytes at a time when RAPIDJSON_SSE2 is set, and
// one byte at a time otherwise: ~16 % of lint's instructions on bench/lint's trace (issue 6). Set
// here, before any RapidJSON header, only for this file: the string parsers it changes are
// instantiated here with this file's own (internal-linkage) handler and allocator types, so no
// other object file shares them; the whitespace skippers it also swaps in accept exactly the same
// input either way. SSE2 is part of every x86-64 CPU. The SIMD loops read
// aligned 16-byte blocks up to 15 bytes past a string's end: the in-situ buffer is reserved with
// kSimdSlack bytes to spare, so those reads stay inside the allocation (sanitizers included).
#if defined(__SSE2__) && !defined(RAPIDJSON_SSE2) && !defined(RAPIDJSON_SSE42)
#define RAPIDJSON_SSE2 1
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <istream>

#include <rapidjson/stream.h>

// RapidJSON parses through a by-value copy of a "copy-optimized" stream (StreamLocalCopy), written
// back after every string and number. For the in-situ stream that copy is two pointers loaded as one
// 16-byte block right after SkipWhitespace stored one of them alone: a store-forwarding stall per
// string, ~1/3 of the string parser's time in perf (bench/lint). Parsing through the stream itself
// costs nothing: the hot loops (the SIMD scanners) keep their own locals. Declared before any use;
// every parser instantiation it changes is this file's own (its handler has internal linkage).
namespace rapidjson {
template <>
struct StreamTraits<GenericInsituStringStream<UTF8<>>> {
  enum { copyOptimization = 0 };
};
}  // namespace rapidjson

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include "core/trace/detail.h"
#include "core/trace/trace.h"

namespace conform::trace {
namespace {

// Read block size: large enough that syscalls are rare, small next to the ~24 MiB line cap.
constexpr std::size_t kReadChunk = 1u << 20;
// The Document's first pool block lives inside the reader, so ordinary lines never call malloc.
constexpr std::size_t kPoolBytes = 64u * 1024u;
// Spare bytes after the in-situ copy of a line: RapidJSON's SIMD string scan (see RAPIDJSON_SSE2
// above) loads whole aligned 16-byte blocks, at most 15 bytes past the terminating NUL.
constexpr std::size_t kSimdSlack = 32;

// The allocator of the Document's parse stack. Why not a MemoryPoolAllocator (as before): after
// every parse the Document releases its stack (ClearStack → ShrinkToFit → Free) and allocates a new
// one on the next parse, and a pool never frees, so the pool grew by a stack per line — memory
// proportional to trace length (≥ 1 KiB a line: 200 MB for 200,000 short lines, see
// tests/rules/lint_perf_test.cpp) and page faults that slowed long traces down. This allocator
// keeps ONE buffer for the reader's life: the stack is the only
// allocation ever live in it (a Document has one stack), so Malloc/Realloc hand back that buffer,
// grown when needed, and Free is a no-op (rapidjson calls it statically).
class StackArena {
 public:
  StackArena() = default;
  StackArena(const StackArena&) = delete;
  StackArena& operator=(const StackArena&) = delete;
  ~StackArena() { std::free(buf_); }

  void* Malloc(std::size_t size) { return size ? Realloc(nullptr, 0, size) : nullptr; }
  void* Realloc(void* original, std::size_t original_size, std::size_t new_size) {
    if (new_size <= cap_) return buf_;  // original is buf_ (or null): its bytes are in place
    void* grown = std::malloc(new_size);
    if (!grown) return nullptr;  // out of memory: as with rapidjson's own allocators
    if (original && original_size) std::memcpy(grown, original, std::min(original_size, cap_));
    std::free(buf_);
    buf_ = grown;
    cap_ = new_size;
    return buf_;
  }
  static void Free(void*) {}

 private:
  void* buf_ = nullptr;
  std::size_t cap_ = 0;
};

using LineDoc = rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>, StackArena>;

bool isWs(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view sv(const json::Value& v) { return {v.GetString(), v.GetStringLength()}; }

// `k` is the literal `lit`. The length decides first and the bytes are compared with a constant
// size (inlined, no memcmp call): decodeEvent tries up to 17 member names per member, and those
// calls were ~5 per line (issue 6 lint throughput).
template <std::size_t N>
bool named(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

// Member lookup without RapidJSON's iterator comparisons (ambiguous under C++20's reversed
// operators, -Wambiguous-reversed-operator).
const json::Value* findMember(const json::Value& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  for (auto& m : obj.GetObject())
    if (sv(m.name) == key) return &m.value;
  return nullptr;
}

}  // namespace

struct TraceReader::Impl {
  // --- source
  std::FILE* file = nullptr;
  bool owns_file = false;
  std::istream* is = nullptr;
  std::optional<TraceError> sticky;  // open/read/header failure: returned by every later call

  // --- line buffer: bytes [begin, end) are unread; `scan` is where the LF search resumes
  std::string buf;
  std::size_t begin = 0, end = 0, scan = 0;
  bool src_eof = false;
  std::uint64_t line_no = 0;

  // --- parsing (all reused from line to line)
  std::string work;  // the in-situ copy of the current line (RapidJSON writes into it)
  alignas(8) char pool_buf[kPoolBytes];
  rapidjson::MemoryPoolAllocator<> pool{pool_buf, sizeof pool_buf};
  StackArena stack_arena;
  LineDoc doc{&pool, 1024, &stack_arena};
  rapidjson::Reader reader;
  detail::HardenedSax<LineDoc> sax{doc, kMaxLineDepth, true};
  std::vector<detail::HardenedSax<LineDoc>::Dup> raw_dups;
  std::vector<std::string> dups;
  std::string decoded;  // b64 payloads

  // --- header
  bool header_done = false;
  TraceHeader header;

  Impl() { sax.dups = &raw_dups; }
  ~Impl() {
    if (owns_file && file) std::fclose(file);
  }

  TraceError err(std::string msg) const { return TraceError{line_no, std::move(msg)}; }

  // Appends up to kReadChunk bytes at `end`. Returns false (and sets sticky) on an I/O error.
  bool fill() {
    if (begin > 0) {
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      end -= begin;
      scan -= begin;
      begin = 0;
    }
    if (buf.size() < end + kReadChunk) buf.resize(end + kReadChunk);
    std::size_t got = 0;
    if (file) {
      got = std::fread(buf.data() + end, 1, kReadChunk, file);
      if (got < kReadChunk) {
        if (std::ferror(file)) {
          sticky = TraceError{line_no + 1, std::string("read error: ") + std::strerror(errno)};
          return false;
        }
        src_eof = true;
      }
    } else if (is) {
      is->read(buf.data() + end, static_cast<std::streamsize>(kReadChunk));
      got = static_cast<std::size_t>(is->gcount());
      if (is->bad()) {
        sticky = TraceError{line_no + 1, "read error on input stream"};
        return false;
      }
      if (got < kReadChunk) src_eof = true;
    } else {
      src_eof = true;  // in-memory source: everything is already in buf
    }
    end += got;
    return true;
  }

  enum class LineStatus { Ok, End, TooLong, IoError };

  // The next line without its LF; `terminated` is false for a last line without LF.
  LineStatus nextLine(std::string_view& out, bool& terminated) {
    for (;;) {
      if (const void* p = std::memchr(buf.data() + scan, '\n', end - scan)) {
        const std::size_t nl = static_cast<std::size_t>(static_cast<const char*>(p) - buf.data());
        out = std::string_view(buf.data() + begin, nl - begin);
        begin = scan = nl + 1;
        terminated = true;
        return out.size() > kMaxLineBytes ? LineStatus::TooLong : LineStatus::Ok;
      }
      scan = end;
      if (end - begin > kMaxLineBytes) {
        // Skip the rest of this line without keeping it: memory stays bounded.
        for (;;) {
          begin = scan = end;
          if (src_eof) return LineStatus::TooLong;
          if (!fill()) return LineStatus::IoError;
          if (const void* p = std::memchr(buf.data() + scan, '\n', end - scan)) {
            begin = scan = static_cast<std::size_t>(static_cast<const char*>(p) - buf.data()) + 1;
            return LineStatus::TooLong;
          }
        }
      }
      if (src_eof) {
        if (begin == end) return LineStatus::End;
        out = std::string_view(buf.data() + begin, end - begin);
        begin = scan = end;
        terminated = false;
        return LineStatus::Ok;
      }
      if (!fill()) return LineStatus::IoError;
    }
  }

  // Parses `line` into doc (in situ on a copy). On error returns the reason.
  std::optional<std::string> parseLine(std::string_view line) {
    work.reserve(line.size() + kSimdSlack);
    work.assign(line.data(), line.size());
    doc.SetNull();
    pool.Clear();
    sax.reset();
    raw_dups.clear();
    dups.clear();
    rapidjson::InsituStringStream ss(work.data());
    rapidjson::ParseResult pr;
    // A plain-ASCII line needs neither UTF-8 validation nor the surrogate scan (detail::plainAscii):
    // same verdicts, about half the parse time. Every other line gets the full checks.
    const bool plain = detail::plainAscii(line);
    sax.check_surrogates = !plain;
    auto gen = [&](LineDoc&) {
      if (plain) pr = reader.Parse<rapidjson::kParseInsituFlag>(ss, sax);
      else pr = reader.Parse<rapidjson::kParseInsituFlag | rapidjson::kParseValidateEncodingFlag>(ss, sax);
      return !pr.IsError();
    };
    doc.Populate(gen);
    if (pr.IsError()) {
      switch (sax.fault) {
        case detail::SaxFault::TooDeep:
          return "JSON nested deeper than " + std::to_string(kMaxLineDepth) + " levels";
        case detail::SaxFault::NonFinite:
          return "number out of range (not finite) at offset " + std::to_string(pr.Offset());
        case detail::SaxFault::Surrogate:
          return "lone UTF-16 surrogate escape (\\uD800-\\uDFFF without its pair) in a string ending at offset " +
                 std::to_string(pr.Offset());
        case detail::SaxFault::None: break;
      }
      return std::string("not valid JSON: ") + rapidjson::GetParseError_En(pr.Code()) + " (offset " +
             std::to_string(pr.Offset()) + ")";
    }
    // InsituStringStream stops at a NUL byte as if the line ended there.
    if (ss.Tell() != line.size()) return "NUL byte at offset " + std::to_string(ss.Tell());
    if (!doc.IsObject()) return std::string("line is a JSON ") + json::typeName(doc) + ", not an object";
    for (auto& d : raw_dups) {
      std::string_view p = d.path;
      if (d.depth > 1 && p.size() > 5 && p.substr(0, 5) == "frame" && (p[5] == '.' || p[5] == '[')) {
        p.remove_prefix(p[5] == '.' ? 6 : 5);
        dups.emplace_back(p);
      } else {
        return "duplicate member " + d.path;
      }
    }
    return std::nullopt;
  }

  Expected<const TraceHeader*, TraceError> readHeader() {
    if (sticky) return unexpected(*sticky);
    if (header_done) return &header;
    auto fail = [&](std::string m) -> Expected<const TraceHeader*, TraceError> {
      sticky = TraceError{1, "bad trace header: " + std::move(m)};
      return unexpected(*sticky);
    };
    std::string_view line;
    bool terminated = true;
    switch (nextLine(line, terminated)) {
      case LineStatus::End: line_no = 1; return fail("empty file (no header line)");
      case LineStatus::TooLong: line_no = 1; return fail("line longer than the " + std::to_string(kMaxLineBytes) + "-byte cap");
      case LineStatus::IoError: return unexpected(*sticky);
      case LineStatus::Ok: break;
    }
    line_no = 1;
    header.line_text.assign(line.data(), line.size());
    if (auto e = parseLine(line)) return fail(*e);
    const json::Value* v = nullptr;
    auto find = [&](const char* k) { return findMember(doc, k); };
    if (!(v = find("conform_trace")))
      return fail("not a conform trace (line 1 has no \"conform_trace\" member)");
    if (!v->IsInt()) return fail("\"conform_trace\" must be an integer");
    if (v->GetInt() != kTraceVersion)
      return fail("unsupported trace version " + std::to_string(v->GetInt()) + " (this reader knows " +
                  std::to_string(kTraceVersion) + ")");
    header.version = v->GetInt();
    auto str = [&](const char* k, std::string& out) -> bool {
      const json::Value* m = find(k);
      if (!m || !m->IsString()) return false;
      out.assign(m->GetString(), m->GetStringLength());
      return true;
    };
    if (!str("started", header.started)) return fail("\"started\" must be a string (RFC 3339 time)");
    if (!str("profile", header.profile)) return fail("\"profile\" must be a string");
    if (!str("role", header.role)) return fail("\"role\" must be a string");
    if (header.role != "engine" && header.role != "plugin" && header.role != "tap")
      return fail("\"role\" must be \"engine\", \"plugin\" or \"tap\", found \"" + header.role + "\"");
    if (!str("clock", header.clock)) return fail("\"clock\" must be a string");
    if (header.clock != "real" && header.clock != "virtual")
      return fail("\"clock\" must be \"real\" or \"virtual\", found \"" + header.clock + "\"");
    header.peer.clear();
    if ((v = find("peer"))) {
      if (!v->IsArray()) return fail("\"peer\" must be an array of strings");
      for (auto& e : v->GetArray()) {
        if (!e.IsString()) return fail("\"peer\" must be an array of strings");
        header.peer.emplace_back(sv(e));
      }
    }
    json::deepCopy(header.extra, doc, header.extra.GetAllocator());
    if (!terminated) return fail("truncated (no newline after the header)");
    header_done = true;
    return &header;
  }

  Expected<std::optional<TraceEvent>, TraceError> readEvent() {
    if (auto h = readHeader(); !h) return unexpected(h.error());
    std::string_view line;
    bool terminated = true;
    switch (nextLine(line, terminated)) {
      case LineStatus::End: return std::optional<TraceEvent>{};
      case LineStatus::TooLong:
        ++line_no;
        return unexpected(err("line longer than the " + std::to_string(kMaxLineBytes) +
                              "-byte cap (a frame is at most 4 MiB, FRAME-06)"));
      case LineStatus::IoError: return unexpected(*sticky);
      case LineStatus::Ok: break;
    }
    ++line_no;
    if (line.empty()) return unexpected(err("empty line"));
    if (auto e = parseLine(line)) {
      if (!terminated) return unexpected(err("truncated last line (no newline at end of file): " + *e));
      return unexpected(err(*e));
    }
    return decodeEvent(line);
  }

  // Offset in `line` where the value of the root member "frame" starts (just past its colon: a
  // frame may begin with whitespace of its own), or npos when that member's name is not written
  // literally. The parse recorded where the name starts (HardenedSax::frame_key; in situ, offsets in
  // `work` are offsets in `line`), so only the bytes between the name and the colon are looked at.
  // Exactly one root member decodes to "frame" (a repeated root member is refused by parseLine),
  // so this is the position a scan for the first literal "frame" name would find.
  std::size_t frameStart(std::string_view line) const {
    if (!sax.frame_key) return std::string_view::npos;
    std::size_t i = static_cast<std::size_t>(sax.frame_key - work.data());
    if (i > line.size() || line.substr(i, 6) != "frame\"") return std::string_view::npos;  // escaped
    for (i += 6; i < line.size() && isWs(line[i]); ++i) {}
    if (i >= line.size() || line[i] != ':') return std::string_view::npos;
    return i + 1;
  }

  Expected<std::optional<TraceEvent>, TraceError> decodeEvent(std::string_view line) {
    TraceEvent ev;
    ev.line = line_no;
    ev.line_text = line;
    ev.object = &doc;
    const json::Value *t = nullptr, *dir = nullptr, *payload = nullptr, *head = nullptr,
                      *head_b64 = nullptr, *phase = nullptr;
    std::string_view kind_name;
    bool frame_last = false;
    const json::Value& root = doc;
    const json::Value* last_value =
        root.MemberCount() ? &(root.MemberBegin() + (root.MemberCount() - 1))->value : nullptr;
    for (const auto& member : root.GetObject()) {
      const std::string_view k = sv(member.name);
      const json::Value& v = member.value;
      Kind kind;
      if (named(k, "t")) { t = &v; continue; }
      if (named(k, "dir")) { dir = &v; continue; }
      if (named(k, "cr") || named(k, "unterminated")) {
        if (!v.IsBool()) return unexpected(err("\"" + std::string(k) + "\" must be a boolean"));
        (named(k, "cr") ? ev.had_cr : ev.unterminated) = v.GetBool();
        continue;
      }
      if (named(k, "head")) { head = &v; continue; }
      if (named(k, "head_b64")) { head_b64 = &v; continue; }
      if (named(k, "phase")) { phase = &v; continue; }
      if (named(k, "frame")) { kind = Kind::Frame; frame_last = &v == last_value; }
      else if (named(k, "text")) kind = Kind::Text;
      else if (named(k, "b64")) kind = Kind::Binary;
      else if (named(k, "oversized")) kind = Kind::Oversized;
      else if (named(k, "stderr") || named(k, "stderr_b64")) kind = Kind::Stderr;
      else if (named(k, "eof")) kind = Kind::Eof;
      else if (named(k, "exit")) kind = Kind::Exit;
      else if (named(k, "timeout")) kind = Kind::Timeout;
      else if (named(k, "note")) kind = Kind::Note;
      else if (named(k, "case")) kind = Kind::Case;
      else if (named(k, "raw_b64")) kind = Kind::Raw;
      else continue;  // unknown members are allowed (forward compatibility, annotations)
      if (payload)
        return unexpected(err("two event kinds in one line (\"" + std::string(kind_name) + "\" and \"" +
                              std::string(k) + "\")"));
      payload = &v;
      kind_name = k;
      ev.kind = kind;
    }
    if (!t) return unexpected(err("missing member \"t\""));
    if (!t->IsInt64() || t->GetInt64() < 0)
      return unexpected(err("\"t\" must be a non-negative integer (microseconds since start)"));
    ev.t_us = t->GetInt64();
    if (!payload)
      return unexpected(err("unknown event kind: no member frame, text, b64, oversized, stderr, "
                            "stderr_b64, eof, exit, timeout, note, case or raw_b64"));
    if (dir) {
      if (!dir->IsString()) return unexpected(err("\"dir\" must be \"e2p\" or \"p2e\""));
      const std::string_view d = sv(*dir);
      if (d == "e2p") ev.dir = Dir::EngineToPlugin;
      else if (d == "p2e") ev.dir = Dir::PluginToEngine;
      else return unexpected(err("\"dir\" must be \"e2p\" or \"p2e\", found \"" + std::string(d) + "\""));
    }
    switch (ev.kind) {
      case Kind::Frame: case Kind::Text: case Kind::Binary: case Kind::Oversized:
      case Kind::Stderr: case Kind::Eof: case Kind::Raw:
        if (!dir) return unexpected(err("missing member \"dir\" (needed by a \"" + std::string(kind_name) + "\" event)"));
        break;
      default: break;
    }
    auto needString = [&](const json::Value& v) -> std::optional<TraceError> {
      if (v.IsString()) return std::nullopt;
      return err("\"" + std::string(kind_name) + "\" must be a string");
    };
    auto b64 = [&](const json::Value& v, std::string_view what) -> std::optional<TraceError> {
      if (!v.IsString()) return err("\"" + std::string(what) + "\" must be a base64 string");
      auto d = base64Decode(sv(v));
      if (!d) return err("\"" + std::string(what) + "\" is not valid base64");
      decoded = std::move(*d);
      return std::nullopt;
    };
    switch (ev.kind) {
      case Kind::Frame: {
        if (!frame_last) return unexpected(err("\"frame\" must be the last member of its line"));
        const std::size_t start = frameStart(line);
        const std::size_t close = line.rfind('}');
        if (start == std::string_view::npos || close == std::string_view::npos || close < start)
          return unexpected(err("the \"frame\" member name must be written literally, without escapes"));
        ev.raw = line.substr(start, close - start);
        ev.frame = payload;
        ev.duplicates = &dups;
        break;
      }
      case Kind::Text:
        if (auto e = needString(*payload)) return unexpected(*e);
        ev.raw = sv(*payload);
        break;
      case Kind::Binary:
        if (auto e = b64(*payload, "b64")) return unexpected(*e);
        ev.raw = decoded;
        break;
      case Kind::Oversized:
        if (!payload->IsUint64())
          return unexpected(err("\"oversized\" must be a non-negative integer (bytes seen)"));
        ev.oversized_bytes = payload->GetUint64();
        if (head) {
          if (!head->IsString()) return unexpected(err("\"head\" must be a string"));
          ev.raw = sv(*head);
        } else if (head_b64) {
          if (auto e = b64(*head_b64, "head_b64")) return unexpected(*e);
          ev.raw = decoded;
        }
        break;
      case Kind::Stderr:
        if (kind_name == "stderr") {
          if (auto e = needString(*payload)) return unexpected(*e);
          ev.raw = sv(*payload);
        } else {
          if (auto e = b64(*payload, "stderr_b64")) return unexpected(*e);
          ev.raw = decoded;
        }
        break;
      case Kind::Eof:
        if (!payload->IsTrue()) return unexpected(err("\"eof\" must be true"));
        break;
      case Kind::Exit: {
        if (!payload->IsObject()) return unexpected(err("\"exit\" must be an object {\"code\":N} or {\"signal\":N}"));
        const json::Value* code = findMember(*payload, "code");
        const json::Value* sig = findMember(*payload, "signal");
        if (!code == !sig)
          return unexpected(err("\"exit\" must have exactly one of \"code\" and \"signal\""));
        if (code) {
          if (!code->IsInt()) return unexpected(err("\"exit.code\" must be an integer"));
          ev.exit_code = code->GetInt();
        } else {
          if (!sig->IsInt() || sig->GetInt() <= 0)
            return unexpected(err("\"exit.signal\" must be a positive integer"));
          ev.signal = sig->GetInt();
          if (const json::Value* name = findMember(*payload, "name")) {
            if (!name->IsString()) return unexpected(err("\"exit.name\" must be a string"));
            ev.signal_name = sv(*name);
          }
        }
        break;
      }
      case Kind::Timeout: case Kind::Note:
        if (auto e = needString(*payload)) return unexpected(*e);
        ev.text = sv(*payload);
        break;
      case Kind::Case: {
        if (auto e = needString(*payload)) return unexpected(*e);
        ev.text = sv(*payload);
        const std::string_view ph = phase && phase->IsString() ? sv(*phase) : std::string_view{};
        if (ph == "begin") ev.phase = CasePhase::Begin;
        else if (ph == "end") ev.phase = CasePhase::End;
        else return unexpected(err("a \"case\" event needs \"phase\": \"begin\" or \"end\""));
        break;
      }
      case Kind::Raw:
        if (auto e = b64(*payload, "raw_b64")) return unexpected(*e);
        ev.raw = decoded;
        break;
    }
    return std::optional<TraceEvent>(ev);
  }
};

TraceReader::TraceReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceReader::~TraceReader() = default;

std::unique_ptr<TraceReader> TraceReader::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->file = std::fopen(path.c_str(), "rb");
  if (!impl->file) impl->sticky = TraceError{0, path + ": cannot open trace: " + std::strerror(errno)};
  else impl->owns_file = true;
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}
std::unique_ptr<TraceReader> TraceReader::fromFile(std::FILE* f) {
  auto impl = std::make_unique<Impl>();
  impl->file = f;
  if (!f) impl->sticky = TraceError{0, "no input file"};
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}
std::unique_ptr<TraceReader> TraceReader::fromStream(std::istream& in) {
  auto impl = std::make_unique<Impl>();
  impl->is = &in;
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}
std::unique_ptr<TraceReader> TraceReader::fromString(std::string text) {
  auto impl = std::make_unique<Impl>();
  impl->buf = std::move(text);
  impl->end = impl->buf.size();
  impl->src_eof = true;
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}

Expected<const TraceHeader*, TraceError> TraceReader::header() { return impl_->readHeader(); }
Expected<std::optional<TraceEvent>, TraceError> TraceReader::next() { return impl_->readEvent(); }
std::uint64_t TraceReader::line() const { return impl_->line_no; }

}  // namespace conform::trace
