// tests/helpers/printenv — prints its environment, its working directory and its signal state
// as frames, then exits 0: {"env":"K=V"} per variable, {"cwd":"..."},
// {"sigpipe_default":true|false}, {"sigmask_empty":true|false}, {"pgid_is_pid":true|false}.
// Values are printed raw (tests use plain ASCII values without quotes or backslashes).
#include <signal.h>
#include <unistd.h>

#include <cstdio>

extern char** environ;

int main() {
  for (char** e = environ; *e; ++e) std::printf("{\"env\":\"%s\"}\n", *e);
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd)) std::printf("{\"cwd\":\"%s\"}\n", cwd);
  struct sigaction sa {};
  ::sigaction(SIGPIPE, nullptr, &sa);
  std::printf("{\"sigpipe_default\":%s}\n", sa.sa_handler == SIG_DFL ? "true" : "false");
  sigset_t mask;
  sigemptyset(&mask);
  ::sigprocmask(SIG_BLOCK, nullptr, &mask);
  bool empty = true;
  for (int s = 1; s < 32; ++s)
    if (sigismember(&mask, s)) empty = false;
  std::printf("{\"sigmask_empty\":%s}\n", empty ? "true" : "false");
  std::printf("{\"pgid_is_pid\":%s}\n", ::getpgrp() == ::getpid() ? "true" : "false");
  return 0;
}
