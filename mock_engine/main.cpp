// conform-engine — the reference engine as an executable: spawns the configured plugins, speaks the
// extension protocol with them, and serves the driver protocol (docs/driver-protocol.md) on its own
// stdin/stdout (plugins use pipes, so the engine's stdout is free). Arguments are parsed by hand:
// CLI11 is reserved for the `conform` executable (it is slow to compile).
//
//   conform-engine --config FILE [--driver stdio|none] [--virtual-clock] [--fault NAME]
//   conform-engine --list-faults
//
// Exit codes: 0 after a clean shutdown, 2 for usage or configuration errors.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/clock/clock.h"
#include "core/wire/channel.h"
#include "mock_engine/config.h"
#include "mock_engine/driver.h"
#include "mock_engine/engine.h"
#include "mock_engine/faults.h"
#include "mock_engine/io_shell.h"

using namespace conform;

namespace {

void usage(FILE* to) {
  std::fputs(
      "usage: conform-engine --config FILE [--driver stdio|none] [--virtual-clock]\n"
      "  --config FILE     engine configuration (docs/reference-engine.md)\n"
      "  --driver stdio    serve the driver protocol on stdin/stdout (default)\n"
      "  --driver none     no driver: run until SIGTERM/SIGINT or stdin EOF\n"
      "  --virtual-clock   timers run on a virtual clock advanced by the driver (clock.advance)\n"
      "  --fault NAME      break one rule on purpose (the engine fault gallery, issue 7)\n"
      "  --list-faults     print the fault gallery: name, rule ID, description\n",
      to);
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, driver = "stdio";
  bool virtual_clock = false;
  std::string fault_name;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) config_path = argv[++i];
    else if (a == "--driver" && i + 1 < argc) driver = argv[++i];
    else if (a == "--virtual-clock") virtual_clock = true;
    else if (a == "--fault" && i + 1 < argc) fault_name = argv[++i];
    else if (a == "--list-faults") {
      for (auto& f : engine::engineFaultTable())
        std::printf("%-28s %-9s %s\n", f.name, f.rule, f.description);
      return 0;
    }
    else if (a == "--help" || a == "-h") { usage(stdout); return 0; }
    else {
      std::fprintf(stderr, "conform-engine: unknown argument `%s`\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (config_path.empty() || (driver != "stdio" && driver != "none")) {
    usage(stderr);
    return 2;
  }
  const engine::EngineFaultInfo* fault = nullptr;
  if (!fault_name.empty() && !(fault = engine::findEngineFault(fault_name))) {
    std::fprintf(stderr, "conform-engine: unknown fault `%s` (see --list-faults)\n", fault_name.c_str());
    return 2;
  }
  auto cfg = engine::loadConfig(config_path);
  if (!cfg) {
    std::fprintf(stderr, "conform-engine: %s\n", cfg.error().c_str());
    return 2;
  }
  wire::ignoreSigpipe();
  wire::Reactor reactor;
  clock::VirtualClock vclock;
  clock::Clock& clk = virtual_clock ? static_cast<clock::Clock&>(vclock) : clock::RealClock::instance();
  engine::ProcessHost host(reactor);
  engine::Engine eng(*cfg, host, clk);
  host.attach(eng);
  if (fault) eng.setFault(fault->id);

  std::unique_ptr<wire::Channel> side;
  if (driver == "stdio") side = wire::fdChannel(reactor, 0, 1);
  engine::Driver drv(eng, virtual_clock ? &vclock : nullptr,
                     [&](std::string frame) { if (side) side->writeFrame(frame); });
  eng.start();

  // PROTOCOL §7.2 (SHUT-07): the whole shutdown is bounded by the largest grace + 6 s.
  std::uint64_t max_grace = 0;
  for (auto& p : cfg->plugins) max_grace = std::max(max_grace, p.shutdown_grace_ms);
  const auto shutdown_bound = std::chrono::milliseconds(max_grace + 6000);
  std::optional<wire::SteadyTime> give_up;

  for (;;) {
    host.runOnce(wire::deadlineIn(std::chrono::milliseconds(20)));
    if (side) {
      while (auto ev = side->poll()) {
        if (ev->kind == wire::ChannelEvent::Kind::Frame) drv.onFrame(ev->frame.bytes);
        else if (ev->kind == wire::ChannelEvent::Kind::Eof) {
          eng.shutdown();  // the driver went away: stop
          side.reset();
          break;
        }
      }
    }
    drv.poll();
    if (eng.shuttingDown() && !give_up) give_up = wire::deadlineIn(shutdown_bound);
    if (drv.quitRequested() || (eng.shuttingDown() && eng.shutdownComplete())) break;
    if (give_up && std::chrono::steady_clock::now() > *give_up) break;
  }
  if (side) side->flush(wire::deadlineIn(std::chrono::seconds(2)));
  return 0;
}
