// tests/catalogue/run_util — runs a conform command line as a child process for the catalogue
// matrices (the real binaries, as a user runs them), with a deadline; shared by the gallery, the
// callback fixture and the producer fixture tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace conform::catalogue_test {

struct Ran {
  int status = -1;  // exit code; -1 when the process did not exit normally
  std::string out;  // stdout and stderr together
};

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs argv with a deadline (seconds; `timeout -k 5` kills a process that outlives it);
// stdout and stderr are captured together.
inline Ran run(const std::vector<std::string>& argv, int deadline_s) {
  std::string cmd = "timeout -k 5 " + std::to_string(deadline_s);
  for (const auto& a : argv) cmd += " " + quote(a);
  cmd += " 2>&1";
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  if (st != -1 && WIFEXITED(st)) r.status = WEXITSTATUS(st);
  return r;
}

}  // namespace conform::catalogue_test
