// harness/runner/engine_check — runs ONE compiled scenario case in role plugin (`conform
// check-engine`, docs/check-engine.md): the engine under test is started with a configuration that
// names `conform probe --connect SOCKET` as its plugin `conform-probe`; the probe relays its stdin
// and stdout to this runner, which holds the plugin side of the conversation with the same step
// interpreter as role engine (check_steps.cpp), and drives the engine over the driver protocol
// (docs/driver-protocol.md) on the engine's own stdin/stdout. A case may declare further probes
// (`plugin NAME`, each its own socket, handshake and inbox) and address top-level steps to one
// with `on NAME` (docs/check-engine.md "Several plugins"): the rules about hook chains need two.
#pragma once

#include "harness/dsl/plan.h"
#include "harness/runner/check_case.h"

namespace conform::runner {

// The configured plugin name of the probe (what the handshake reports unless `handshake name=`).
inline constexpr const char* kProbeName = dsl::kMainProbe;

// Runs one case (role plugin). Never throws; a harness problem is an ERROR verdict with text.
CaseRun runPluginCase(const dsl::Case& c, const Target& target);

}  // namespace conform::runner
