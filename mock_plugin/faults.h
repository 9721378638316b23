// mock_plugin/faults — the fault gallery of `conform-plugin --fault NAME` (issue 3 §4). Each fault
// breaks exactly one rule the way real plugins do, on top of the conforming built-in behaviour.
// Faults are data (name, rule ID, one-line description) so other tools can list them; each is
// triggered by an ordinary engine conversation (handshake, ping, tool calls, events, hooks,
// producer enablement, shutdown) without special set-up.
//
// Faults and stimuli (docs/reference-plugin.md §Faults and stimuli). A FAULT breaks a rule that
// binds the plugin (or its SDK): `conform check` FAILs it — on an M rule by default, on a Lvl I/C
// rule under --strict. A STIMULUS is plugin behaviour that breaks no plugin-binding rule but makes
// the ENGINE act on a rule that binds it (EMIT-*/QUOTA-* rejections of bad emits: RULES.md Binds E;
// INIT-21's declaration checks: Binds E). Against conform's engine a stimulus is reported
// (NON-STRICT, advisory) and never FAILs — a FAIL would be a false FAIL of a plugin that broke
// nothing it is bound by; check-engine and the e2e tests use stimuli to exercise engines.
// Both run with `conform-plugin --fault NAME`.
#pragma once

#include <string_view>
#include <vector>

#include "mock_plugin/sdk.h"

namespace conform::plugin {

struct Fault {
  const char* name;
  const char* rule;         // the RULES.md ID it breaks (or whose enforcement it exercises)
  const char* description;  // one line
  int settle_ms = 0;        // extra quiet time a test must wait to observe it (timers)
  int linger_ms = 0;        // the process keeps running this long after the run ends
};

// The plugin faults (`--list-faults`).
const std::vector<Fault>& faultTable();
// The engine stimuli (`--list-stimuli`).
const std::vector<Fault>& stimulusTable();
// Searches both tables; the pointer is into the table that holds the name.
const Fault* findFault(std::string_view name);
bool isStimulus(std::string_view name);

// Installs the fault's filters/observers/timers on a built server (built from builtinBehaviour).
void installFault(const Fault& f, PluginServer& server, Profile profile);

}  // namespace conform::plugin
