// bench/framing — FrameDecoder throughput: a 256 MiB buffer of 1 KiB frames (valid JSON-ish
// ASCII plus some UTF-8, so the validator's slow path runs too) fed in 64 KiB chunks, like reads
// from a pipe. Prints MB/s and frames/s (median of 5 runs); asserts nothing.
//   bench_framing [MIB]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/wire/framing.h"

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const std::size_t mib = argc > 1 ? static_cast<std::size_t>(std::atoi(argv[1])) : 256;
  std::string frame = R"({"jsonrpc":"2.0","method":"plugin/event","params":{"text":"caf\u00e9 )";
  frame += "\xC3\xA9\xE2\x82\xAC ";  // é € : multi-byte UTF-8
  while (frame.size() < 1021) frame += 'a';
  frame += "\"}}\n";
  std::string buf;
  buf.reserve(mib << 20);
  while (buf.size() + frame.size() <= (mib << 20)) buf += frame;
  const std::size_t chunk = 64 * 1024;
  std::vector<double> mbps;
  std::uint64_t frames = 0;
  for (int run = 0; run < 5; ++run) {
    conform::wire::FrameDecoder dec;
    frames = 0;
    const auto t0 = Clock::now();
    for (std::size_t off = 0; off < buf.size(); off += chunk) {
      dec.feed(std::string_view(buf).substr(off, chunk));
      while (auto ev = dec.next())
        if (ev->kind == conform::wire::FrameEvent::Kind::Frame) ++frames;
    }
    dec.feedEof();
    while (dec.next()) {
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    mbps.push_back(static_cast<double>(buf.size()) / 1e6 / s);
  }
  std::sort(mbps.begin(), mbps.end());
  const double med = mbps[mbps.size() / 2];
  std::printf("FrameDecoder: %zu MiB of %zu-byte frames in 64 KiB chunks: median %.0f MB/s (%.2f M frames/s), "
              "min %.0f, max %.0f; %llu frames/run\n",
              mib, frame.size(), med, med * 1e6 / static_cast<double>(frame.size()) / 1e6, mbps.front(),
              mbps.back(), static_cast<unsigned long long>(frames));
  return 0;
}
