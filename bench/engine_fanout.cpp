// bench/engine_fanout — issue 4 figures for the reference engine core (in process, no pipes):
//  1. event fan-out rate to one draining plugin (target >= 200,000 events/s);
//  2. resident memory while 10,000,000 events are pushed at a plugin that never reads (target:
//     flat, bounded by the 1024-record queue; the session log is capped with max_retained_events).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "mock_engine/engine.h"

using namespace conform;
using namespace conform::engine;

namespace {

struct NullHost : Host {
  bool reading = true;
  std::size_t bytes = 0;
  bool spawn(ConnId, const PluginConfig&, std::string&) override { return true; }
  void write(ConnId, std::string_view b) override { bytes += b.size(); }
  bool writable(ConnId) override { return reading; }
  void closeStdin(ConnId) override {}
  void kill(ConnId) override {}
};

// CPU seconds of this process (user + system). The machine running the benchmarks is often
// shared, so wall-clock rates swing with the load; CPU time is the engine's own cost.
double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long rssKiB() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::unique_ptr<Engine> connected(NullHost& h, clock::VirtualClock& clk) {
  EngineConfig cfg;
  PluginConfig p;
  p.name = "sink";
  p.command = "/bin/true";
  cfg.plugins.push_back(p);
  cfg.max_retained_events = 1024;
  auto e = std::make_unique<Engine>(cfg, h, clk);
  e->start();
  e->onBytes(e->connection("sink"),
             R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"sink","version":"1","capabilities":{"tools":false,"resources":false,"subscribe_events":true,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"producer_messaging":false,"intercept":[]},"tools":[]}})"
             "\n");
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t n_rate = 1'000'000, n_mem = 10'000'000;
  if (argc > 1) n_rate = std::stoull(argv[1]);
  if (argc > 2) n_mem = std::stoull(argv[2]);
  {
    NullHost h;
    clock::VirtualClock clk;
    auto e = connected(h, clk);
    auto s = e->createSession();
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpuSeconds();
    for (std::uint64_t i = 0; i < n_rate; ++i) (void)e->produceEvent(s, RecordClass::Ordinary);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpuSeconds() - c0;
    std::printf("fan-out to one draining plugin: %llu events, wall %.2f s = %.0f events/s, "
                "CPU %.2f s = %.0f events/CPU-s (%zu bytes written)\n",
                static_cast<unsigned long long>(n_rate), secs, n_rate / secs, cpu, n_rate / cpu,
                h.bytes);
  }
  {
    NullHost h;
    h.reading = false;
    clock::VirtualClock clk;
    auto e = connected(h, clk);
    auto s = e->createSession();
    for (std::uint64_t i = 0; i < n_mem; ++i) {
      (void)e->produceEvent(s, i % 3 == 0 ? RecordClass::Chunk : RecordClass::Ordinary);
      if (i % 1'000'000 == 0 || i + 1 == n_mem) {
        clk.advance(std::chrono::milliseconds(100));
        e->tick();  // diagnostics flush
        std::printf("never-reading plugin: %llu events pushed, queued %zu, dropped %llu, RSS %ld KiB\n",
                    static_cast<unsigned long long>(i + 1), e->status("sink")->queued,
                    static_cast<unsigned long long>(e->status("sink")->dropped_events), rssKiB());
      }
    }
  }
  return 0;
}
