// harness/runner/cognipeer_check — the cognipeer profile's case runner (profiles.h). Being built (issue 10):
// until then every case of this profile ends in a harness ERROR that says so, never a PASS.
#include "harness/runner/profiles.h"

namespace conform::runner {

CaseRun runCognipeerCase(const dsl::Case& c, const Target&) {
  CaseRun r;
  r.result = reports::newCase(c.id, c.title, c.rules);
  r.result.verdict = reports::Verdict::Error;
  r.result.error = "the cognipeer host is not built yet";
  return r;
}

}  // namespace conform::runner
