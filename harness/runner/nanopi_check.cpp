// harness/runner/nanopi_check — the nanopi profile's case runner (profiles.h). Being built (issue 9):
// until then every case of this profile ends in a harness ERROR that says so, never a PASS.
#include "harness/runner/profiles.h"

namespace conform::runner {

CaseRun runNanopiCase(const dsl::Case& c, const Target&) {
  CaseRun r;
  r.result = reports::newCase(c.id, c.title, c.rules);
  r.result.verdict = reports::Verdict::Error;
  r.result.error = "the nanopi host is not built yet";
  return r;
}

}  // namespace conform::runner
