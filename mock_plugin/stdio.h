// mock_plugin/stdio — the thin IO shell around the sans-IO PluginServer: moves frames between a
// wire::Channel (the process's own stdin/stdout via fdChannel, or a memoryPair end in tests) and
// the server, and runs its timers on the real clock. Exit code contract (issue 3, SDK-25,
// FRAME-18): 0 after plugin/shutdown or stdin EOF, 1 after a fatal frame (message on stderr).
#pragma once

#include <chrono>

#include "core/wire/channel.h"
#include "mock_plugin/sdk.h"

namespace conform::plugin {

struct RunOptions {
  // Bound on flushing queued frames after the run ends (SHUT-08: exit promptly).
  std::chrono::milliseconds final_flush{500};
  // Upper bound on the whole run (faults such as "never reads stdin" must not live forever).
  std::chrono::milliseconds max_lifetime{std::chrono::hours(24)};
};

int runOnChannel(PluginServer& server, wire::Channel& ch, const clock::Clock& clk, const RunOptions& = {});
// Runs over fds 0 (stdin) and 1 (stdout).
int runStdio(PluginServer& server, const clock::Clock& clk, const RunOptions& = {});

}  // namespace conform::plugin
