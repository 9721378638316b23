// bench/check — wall time of the whole plugin catalogue against the reference plugin, as
// `conform check -- build/conform-plugin` runs it (issue target: < 5 s on 2 cores). Prints the
// seconds of each of 3 runs and the median; asserts nothing.
//   bench_check [JOBS] [PLUGIN]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "harness/runner/check.h"

int main(int argc, char** argv) {
  conform::runner::CheckOptions o;
  o.jobs = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 2;
  o.command = {argc > 2 ? argv[2] : std::string(CONFORM_BIN_DIR) + "/conform-plugin"};
  o.report_dir = "";
  std::vector<double> secs;
  int rc = 0;
  for (int run = 0; run < 3; ++run) {
    std::ostringstream out, err;
    auto t0 = std::chrono::steady_clock::now();
    rc = conform::runner::runCheck(o, out, err);
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::printf("run %d: %.2f s (exit %d)\n", run + 1, secs.back(), rc);
    if (rc != 0) std::fputs((out.str() + err.str()).c_str(), stderr);
  }
  std::sort(secs.begin(), secs.end());
  std::printf("plugin catalogue, %u job(s): median %.2f s wall\n", o.jobs, secs[1]);
  return rc == 0 ? 0 : 1;
}
