// bench_trace_read — TraceReader throughput against a bare RapidJSON parse of the same lines.
//
// Issue 2 asks `conform lint` for ≥ 500,000 messages/s of ~300-byte frames on one core and at least
// half the rate of a bare RapidJSON parse of the same file. This writes a 1,000,000-message trace
// to /tmp with TraceWriter, then times (best of 3 each):
//   1. bare:   fgets-free block read + memchr line split + rapidjson::Document::Parse per line
//   2. insitu: the same with ParseInsitu on a copy (the fastest RapidJSON way)
//   3. reader: TraceReader::next() (hardened parse + event decoding + raw frame slice)
// Run a Release build: figures from a Debug build mean nothing.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "core/clock/clock.h"
#include "core/trace/trace.h"

using namespace conform;

namespace {

constexpr std::size_t kMessages = 1'000'000;
const char* kPath = "/tmp/conform-bench-trace.ndjson";

std::string makeFrame(std::size_t i) {
  // ~300 bytes, the shape of an event notification.
  std::string f = R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":"s-)" +
                  std::to_string(i % 97) + R"(","seq":)" + std::to_string(i) +
                  R"(,"class":"message","payload":{"role":"assistant","text":"the quick brown fox jumps over the lazy dog \u00e9","tokens":[1,2,3,4,5,6,7,8],"ok":true,"score":0.125},"grant":null}})";
  while (f.size() < 296) f.insert(f.size() - 2, " ");
  return f;
}

template <class F>
double bestOf3(F&& f) {
  double best = 1e9;
  for (int k = 0; k < 3; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

// Calls fn(line) for each line of the file, reading 1 MiB blocks (like the reader does).
template <class Fn>
void forEachLine(Fn&& fn) {
  std::FILE* f = std::fopen(kPath, "rb");
  if (!f) return;
  std::vector<char> buf(1 << 21);
  std::size_t have = 0;
  for (;;) {
    std::size_t got = std::fread(buf.data() + have, 1, buf.size() - have, f);
    have += got;
    std::size_t pos = 0;
    while (const void* p = std::memchr(buf.data() + pos, '\n', have - pos)) {
      std::size_t nl = static_cast<std::size_t>(static_cast<const char*>(p) - buf.data());
      fn(buf.data() + pos, nl - pos);
      pos = nl + 1;
    }
    std::memmove(buf.data(), buf.data() + pos, have - pos);
    have -= pos;
    if (got == 0) break;
  }
  std::fclose(f);
}

}  // namespace

int main() {
  {
    clock::VirtualClock vc;
    trace::TraceHeader h;
    h.peer = {"./bench-plugin"};
    auto w = trace::TraceWriter::open(kPath, vc, std::move(h), {trace::FlushPolicy::Buffered, false});
    if (!w) {
      std::fprintf(stderr, "%s\n", w.error().c_str());
      return 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kMessages; ++i) {
      vc.advance(std::chrono::microseconds(7));
      (*w)->frame(i % 2 ? trace::Dir::PluginToEngine : trace::Dir::EngineToPlugin, makeFrame(i));
    }
    (*w)->flush();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("write:  %zu frames in %.3f s = %.0f frames/s (frame generation included)\n", kMessages,
                s, kMessages / s);
  }
  std::FILE* f = std::fopen(kPath, "rb");
  std::fseek(f, 0, SEEK_END);
  const double mb = static_cast<double>(std::ftell(f)) / 1e6;
  std::fclose(f);
  std::printf("file:   %s, %.1f MB, frame %zu bytes\n", kPath, mb, makeFrame(0).size());

  std::size_t n_bare = 0;
  const double bare = bestOf3([&] {
    n_bare = 0;
    forEachLine([&](const char* p, std::size_t n) {
      rapidjson::Document d;
      d.Parse<rapidjson::kParseValidateEncodingFlag>(p, n);
      if (!d.HasParseError()) ++n_bare;
    });
  });
  std::size_t n_insitu = 0;
  const double insitu = bestOf3([&] {
    n_insitu = 0;
    std::string work;
    rapidjson::Document d;
    forEachLine([&](const char* p, std::size_t n) {
      work.assign(p, n);
      d.ParseInsitu<rapidjson::kParseValidateEncodingFlag>(work.data());
      if (!d.HasParseError()) ++n_insitu;
    });
  });
  std::size_t n_reader = 0, errors = 0, bytes = 0;
  const double reader = bestOf3([&] {
    n_reader = errors = bytes = 0;
    auto r = trace::TraceReader::open(kPath);
    for (;;) {
      auto e = r->next();
      if (!e) { ++errors; continue; }
      if (!*e) break;
      ++n_reader;
      bytes += (*e)->raw.size();
    }
  });
  std::printf("bare RapidJSON Document::Parse:  %.3f s  %8.0f lines/s  %6.1f MB/s  (%zu ok)\n", bare,
              n_bare / bare, mb / bare, n_bare);
  std::printf("bare RapidJSON ParseInsitu:      %.3f s  %8.0f lines/s  %6.1f MB/s  (%zu ok)\n", insitu,
              n_insitu / insitu, mb / insitu, n_insitu);
  std::printf("TraceReader::next():             %.3f s  %8.0f msgs/s   %6.1f MB/s  (%zu events, %zu errors)\n",
              reader, n_reader / reader, mb / reader, n_reader, errors);
  std::printf("reader / bare Parse = %.2f   reader / ParseInsitu = %.2f   (target: >= 0.5, >= 500000 msgs/s)\n",
              bare / reader, insitu / reader);
  std::remove(kPath);
  return errors == 0 && n_reader == kMessages ? 0 : 1;
}
