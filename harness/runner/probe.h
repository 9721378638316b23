// harness/runner/probe — `conform probe --connect PATH` (hidden subcommand): the process an engine
// under test spawns as its plugin in role plugin (`conform check-engine`, docs/check-engine.md).
//
// Why a relay and not a scripted plugin: the scenario (the runner) must hold the plugin side of
// the conversation step by step, exactly like `conform check` holds the engine side. The probe only
// connects to the runner's Unix socket PATH and copies bytes unchanged:
//   stdin  → socket   (EOF on stdin: half-close the socket, so the runner sees the engine's EOF)
//   socket → stdout   (EOF on the socket: close stdout, so the engine sees plugin stdout EOF)
// It exits 0 when both directions are done, 1 when it cannot connect. The engine clears the
// environment (PROTOCOL §1.2), so everything the probe needs is in its arguments.
#pragma once

#include <string>

namespace conform::runner {

int runProbe(const std::string& socket_path);

}  // namespace conform::runner
