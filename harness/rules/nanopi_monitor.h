// harness/rules/nanopi_monitor — judges the wire of a nanopi-0.12 case trace (the reference host
// talking to the guest runner, docs/guest-protocol.md) for the host-side rules a wire shows:
//   NP-07  the host calls list-events at most once (a call right after the note "harness probe" is
//          the harness's NP-08 probe, not the host's);
//   NP-26  every handle-event call carries budget_ms 2000, every other export call 30000.
// The reference host cannot break them by design; the monitor keeps it honest (a regression in
// mock_engine/nanopi shows up as a finding on the rule, bound to the host).
#pragma once

#include <string>
#include <vector>

#include "reports/results.h"

namespace conform::rules {

std::vector<reports::Finding> judgeNanopiWire(const std::string& trace_text);

}  // namespace conform::rules
