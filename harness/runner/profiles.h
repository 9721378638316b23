// harness/runner/profiles — case runners of the plugin models beyond the cookie protocol.
//
// `conform check --profile nanopi-0.12 ./plugin.wasm` and `--profile cognipeer-0.10 ./plugin.mjs`
// go through the same runCheck() loop, DSL interpreter (check_case_impl.h: Interpreter + Peer),
// monitors, reports and exit codes as the cookie profiles; only the Peer differs. Each profile's
// reference host (mock_engine/nanopi, mock_engine/cognipeer) is in-process C++ holding every host
// rule, and the plugin under test runs inside a thin Node.js guest runner (guest/nanopi,
// guest/cognipeer) that speaks the guest protocol of docs/guest-protocol.md on stdio.
#pragma once

#include "harness/dsl/plan.h"
#include "harness/runner/check_case.h"

namespace conform::runner {

inline constexpr const char* kNanopiProfile = "nanopi-0.12";
inline constexpr const char* kCognipeerProfile = "cognipeer-0.10";

// Runs one `profile nanopi-0.12` case: target.argv[0] is the component (.wasm). nanopi_check.cpp.
CaseRun runNanopiCase(const dsl::Case& c, const Target& target);
// Runs one `profile cognipeer-0.10` case: target.argv[0] is the plugin module (.mjs/.js). cognipeer_check.cpp.
CaseRun runCognipeerCase(const dsl::Case& c, const Target& target);

}  // namespace conform::runner
