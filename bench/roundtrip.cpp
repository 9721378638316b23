// bench/roundtrip — request/response latency to a trivial C++ echo child (tests/helpers/echo):
// through our Channel (reactor, FrameDecoder, event queue) vs. raw blocking pipes (write one line,
// read until LF; no framing, no reactor). Target (issue 2 item 8): Channel within 1.5x of raw.
// Also: spawn + reap cost of a trivial child through spawnProcess (fuzzing restarts children).
// Prints figures; asserts nothing (a number is measured, not tested).
//   bench_roundtrip [PAIRS] [PAYLOAD_BYTES]
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/wire/channel.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace wire = conform::wire;

const std::string kEcho = std::string(CONFORM_HELPER_DIR) + "/echo";

struct Stats {
  double median_us, p99_us, rate;
  double cpu_us = 0;  // our own CPU time (user + system) per pair: steadier than wall time on a busy machine
};

double cpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

Stats summarize(std::vector<double>& us, double total_s, double cpu_s) {
  std::sort(us.begin(), us.end());
  const double n = static_cast<double>(us.size());
  return {us[us.size() / 2], us[us.size() * 99 / 100], n / total_s, cpu_s / n * 1e6};
}

// A 100-byte-ish JSON-RPC request line without its LF.
std::string payload(std::size_t n) {
  std::string s = R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{"pad":")";
  while (s.size() + 3 < n) s += 'p';
  return s + "\"}}";
}

Stats runChannel(int pairs, const std::string& line) {
  wire::Reactor r;
  wire::SpawnOptions opt;
  opt.program = kEcho;
  wire::SpawnError err;
  auto ch = wire::spawnProcess(r, opt, &err);
  if (!ch) {
    std::fprintf(stderr, "%s\n", err.message.c_str());
    std::exit(1);
  }
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(pairs));
  const double cpu0 = cpuSeconds();
  const auto start = Clock::now();
  for (int i = 0; i < pairs; ++i) {
    const auto t0 = Clock::now();
    ch->writeFrame(line);
    auto ev = ch->next(t0 + 5s);
    if (!ev || ev->kind != wire::ChannelEvent::Kind::Frame || ev->frame.bytes.size() != line.size()) {
      std::fprintf(stderr, "channel: bad reply at %d\n", i);
      std::exit(1);
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = cpuSeconds() - cpu0;
  ch->close();
  return summarize(us, total, cpu);
}

Stats runRaw(int pairs, const std::string& line_no_lf) {
  int in[2], out[2];
  if (::pipe(in) || ::pipe(out)) std::exit(1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  pid_t pid;
  char* argv[] = {const_cast<char*>(kEcho.c_str()), nullptr};
  if (::posix_spawn(&pid, kEcho.c_str(), &fa, nullptr, argv, environ) != 0) std::exit(1);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  const std::string line = line_no_lf + "\n";
  std::vector<char> buf(1 << 16);
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(pairs));
  const double cpu0 = cpuSeconds();
  const auto start = Clock::now();
  for (int i = 0; i < pairs; ++i) {
    const auto t0 = Clock::now();
    if (::write(in[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::exit(1);
    std::size_t got = 0;
    while (got == 0 || buf[got - 1] != '\n') {
      const ssize_t n = ::read(out[0], buf.data() + got, buf.size() - got);
      if (n <= 0) std::exit(1);
      got += static_cast<std::size_t>(n);
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = cpuSeconds() - cpu0;
  ::close(in[1]);
  ::close(out[0]);
  int st;
  ::waitpid(pid, &st, 0);
  return summarize(us, total, cpu);
}

void spawnCost(int n) {
  wire::Reactor r;
  wire::SpawnOptions opt;
  opt.program = kEcho;
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    auto ch = wire::spawnProcess(r, opt);
    ch->closeWrite();
    while (auto ev = ch->next(t0 + 5s))
      if (ev->kind == wire::ChannelEvent::Kind::Exited) break;
    ch->close();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("spawn + EOF + exit + reap of the echo child: median %.0f us, p99 %.0f us (%d runs)\n",
              us[us.size() / 2], us[us.size() * 99 / 100], n);
}

}  // namespace

int main(int argc, char** argv) {
  wire::ignoreSigpipe();
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 50000;
  const std::size_t size = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 100;
  const std::string line = payload(size);
  std::printf("round trips of a %zu-byte line to %s, %d pairs each\n", line.size() + 1, kEcho.c_str(), pairs);
  runRaw(pairs / 10, line);  // warm-up (page cache, CPU frequency)
  runChannel(pairs / 10, line);
  // Interleave rounds so drift on a shared machine hits both sides alike; report the median round.
  std::vector<Stats> raws, chans;
  for (int round = 0; round < 5; ++round) {
    raws.push_back(runRaw(pairs / 5, line));
    chans.push_back(runChannel(pairs / 5, line));
  }
  auto pick = [](std::vector<Stats> v) {
    std::sort(v.begin(), v.end(), [](const Stats& a, const Stats& b) { return a.median_us < b.median_us; });
    return v[v.size() / 2];
  };
  const Stats raw = pick(raws), ch = pick(chans);
  std::printf("raw pipes : %9.0f pairs/s  median %6.1f us  p99 %6.1f us  cpu %5.2f us/pair\n", raw.rate,
              raw.median_us, raw.p99_us, raw.cpu_us);
  std::printf("Channel   : %9.0f pairs/s  median %6.1f us  p99 %6.1f us  cpu %5.2f us/pair\n", ch.rate,
              ch.median_us, ch.p99_us, ch.cpu_us);
  std::printf("ratio Channel/raw: median latency %.2fx, throughput %.2fx, cpu %.2fx (target <= 1.5x)\n",
              ch.median_us / raw.median_us, raw.rate / ch.rate, ch.cpu_us / raw.cpu_us);
  spawnCost(200);
  return 0;
}
