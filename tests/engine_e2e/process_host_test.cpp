// LIFE-06 and LIFE-09 with REAL processes: the reference engine in process, bound to
// ProcessHost (mock_engine/io_shell.h: posix_spawn through core/wire/channel), spawning the helper
// tests/helpers/env_plugin, which reports the environment, working directory and process group it
// was given in its `version` string (and, for LIFE-09, forks a grandchild that sleeps forever).
// Every wait has a deadline; the loop is driven by the engine's own reactor (no sleeps).
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>

#include "mock_engine/engine.h"
#include "mock_engine/io_shell.h"

using namespace conform;
using namespace std::chrono_literals;

namespace {

// True once `pid` has terminated (zombie or reaped), waiting at most `within`.
bool waitDead(int pid, std::chrono::milliseconds within) {
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return errno == ESRCH;
  pollfd p{static_cast<int>(fd), POLLIN, 0};
  const int r = ::poll(&p, 1, static_cast<int>(within.count()));
  ::close(static_cast<int>(fd));
  return r == 1;
}

struct Live {
  wire::Reactor reactor;
  engine::ProcessHost host{reactor};
  std::unique_ptr<engine::Engine> eng;

  explicit Live(engine::PluginConfig p) {
    engine::EngineConfig cfg;
    cfg.builtin_tools = engine::defaultBuiltinTools();
    cfg.plugins.push_back(std::move(p));
    eng = std::make_unique<engine::Engine>(cfg, host, clock::RealClock::instance());
    host.attach(*eng);
    eng->start();
  }
  ~Live() {
    if (!eng->shuttingDown()) eng->shutdown();
    runUntil([&] { return eng->shutdownComplete(); }, 15s);
  }
  bool runUntil(const std::function<bool()>& done, std::chrono::milliseconds bound) {
    const auto give_up = std::chrono::steady_clock::now() + bound;
    while (!done()) {
      if (std::chrono::steady_clock::now() > give_up) return false;
      host.runOnce(wire::deadlineIn(20ms));
    }
    return true;
  }
  engine::PluginStatus status() { return *eng->status("envp"); }
  // The helper's report, once connected.
  std::string report() {
    REQUIRE(runUntil([&] { return status().state != engine::PluginState::Connecting; }, 15s));
    REQUIRE(status().state == engine::PluginState::Connected);
    return status().plugin_version;
  }
};

engine::PluginConfig envPlugin(std::vector<std::string> extra = {}) {
  engine::PluginConfig p;
  p.name = "envp";
  p.command = std::string(CONFORM_HELPER_DIR) + "/env_plugin";
  p.args = {"envp"};
  for (auto& a : extra) p.args.push_back(a);
  p.shutdown_grace_ms = 300;
  return p;
}

std::string field(const std::string& report, const std::string& key) {
  auto at = report.find(key + "=");
  REQUIRE(at != std::string::npos);
  at += key.size() + 1;
  return report.substr(at, report.find(';', at) - at);
}

}  // namespace

TEST_CASE("LIFE-06 a real plugin process gets exactly the configured environment (no PATH) and the configured cwd", "[engine][process][life]") {
  REQUIRE(std::getenv("PATH") != nullptr);  // the test's own environment is not empty
  SECTION("env and cwd configured") {
    auto p = envPlugin();
    p.env = {{"CONFORM_ONLY", "yes"}, {"SECOND", "2"}};
    p.cwd = "/tmp";
    Live l(p);
    std::string r = l.report();
    CHECK(field(r, "env") == "CONFORM_ONLY=yes|SECOND=2");
    CHECK(field(r, "cwd") == "/tmp");
  }
  SECTION("nothing configured: an empty environment, the engine's cwd") {
    Live l(envPlugin());
    std::string r = l.report();
    CHECK(field(r, "env").empty());
    char cwd[4096];
    REQUIRE(::getcwd(cwd, sizeof cwd));
    CHECK(field(r, "cwd") == cwd);
  }
}

TEST_CASE("LIFE-09 a real plugin runs in its own process group and its grandchild dies with it", "[engine][process][life]") {
  Live l(envPlugin({"fork"}));
  std::string r = l.report();
  CHECK(field(r, "pgid_is_pid") == "1");
  const int gc = std::atoi(field(r, "gc").c_str());
  REQUIRE(gc > 0);
  CHECK(::kill(gc, 0) == 0);  // alive while the plugin is supervised
  // The plugin ignores plugin/shutdown and stdin EOF: only the process-group kill after the grace
  // period ends it, and with it the grandchild.
  l.eng->shutdown();
  REQUIRE(l.runUntil([&] { return l.eng->shutdownComplete(); }, 15s));
  CHECK(l.status().exit_status.value_or("").find("SIGKILL") != std::string::npos);
  CHECK(waitDead(gc, 5000ms));
}
