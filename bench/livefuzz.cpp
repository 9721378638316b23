// bench/livefuzz — throughput of `conform fuzz` into ONE persistent conform-plugin (issue 8 item 2:
// target ≥ 10,000 messages/s). Valid traffic only (a mutated frame may legitimately end the
// process, and a restart measures spawn cost, not the fuzzer), in batches as the fuzzer sends them.
// Two figures: the transport alone, and with every frame traced and judged by the monitors (what
// `conform fuzz` actually does). Prints figures; asserts nothing (bench/CMakeLists.txt).
#include <chrono>
#include <cstdio>
#include <string>

#include "core/protocol/profile.h"
#include "harness/runner/fuzz_impl.h"

using namespace conform;
using namespace conform::runner::fuzz;

namespace {

double measure(bool monitors, double seconds, std::size_t batch_len) {
  const auto& profile = protocol::profileV006();
  Generator gen(profile, 2000);
  gen.setMutatePercent(0);
  Target target({std::string(CONFORM_BIN_DIR) + "/conform-plugin"}, profile, 2000);
  target.setMonitors(monitors);
  auto sr = target.start(gen.handshake());
  if (!sr.info) {
    std::fprintf(stderr, "bench_livefuzz: handshake failed: %s\n", sr.harness_error.c_str());
    return 0;
  }
  gen.setTarget(*sr.info);
  Rng rng(42);
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  const std::uint64_t sent0 = target.stats().frames_sent;
  std::size_t problems = 0;
  while (std::chrono::steady_clock::now() < end) {
    auto batch = gen.batch(rng, batch_len);
    batch.push_back(gen.ping());
    if (target.run(batch)) ++problems;
    if (!target.alive()) {
      std::fprintf(stderr, "bench_livefuzz: the plugin died; figures are not of one persistent process\n");
      return 0;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rate = static_cast<double>(target.stats().frames_sent - sent0) / secs;
  std::printf("  %-28s batch %3zu: %9.0f messages/s (%llu messages, %zu problem(s), sessions %llu)\n",
              monitors ? "traced + monitors" : "traced, no monitors", batch_len, rate,
              static_cast<unsigned long long>(target.stats().frames_sent - sent0), problems,
              static_cast<unsigned long long>(target.stats().sessions));
  target.stop();
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  std::printf("bench_livefuzz: one persistent conform-plugin, valid generated traffic, %.1f s per figure\n", seconds);
  for (std::size_t b : {12, 64}) {
    measure(false, seconds, b);
    measure(true, seconds, b);
  }
  return 0;
}
