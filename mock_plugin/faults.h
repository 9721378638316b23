// mock_plugin/faults — the fault gallery of `conform-plugin --fault NAME` (issue 3 §4). Each fault
// breaks exactly one rule the way real plugins do, on top of the conforming built-in behaviour.
// Faults are data (name, rule ID, one-line description) so other tools can list them; each is
// triggered by an ordinary engine conversation (handshake, ping, tool calls, events, hooks,
// producer enablement, shutdown) without special set-up.
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

const std::vector<Fault>& faultTable();
const Fault* findFault(std::string_view name);

// Installs the fault's filters/observers/timers on a built server (built from builtinBehaviour).
void installFault(const Fault& f, PluginServer& server, Profile profile);

}  // namespace conform::plugin
