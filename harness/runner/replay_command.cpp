// harness/runner/replay_command — `conform replay TRACE -- CMD…` (work in progress).
#include <ostream>

#include "harness/runner/trace_commands.h"

namespace conform::runner {

int runReplay(const ReplayCommandOptions&, std::ostream&, std::ostream& err) {
  err << "conform replay: not implemented yet\n";
  return kExitHarness;
}

}  // namespace conform::runner
