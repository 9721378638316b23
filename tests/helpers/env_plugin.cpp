// tests/helpers/env_plugin — a minimal plugin for the process-host tests of LIFE-06 and LIFE-09
// (tests/engine_e2e/process_host_test.cpp): it answers plugin/initialize (id 1, RPC-07) as plugin
// argv[1] with a `version` string that reports what the engine gave it:
//   "env=<K=V>|<K=V>…;cwd=<dir>;pgid_is_pid=<0|1>;gc=<pid or 0>"
// With argv[2] == "fork" it first forks a grandchild that sleeps forever (LIFE-09: it must die
// with the plugin). After the handshake it reads stdin until EOF and then stays (pause) so that
// only the engine's kill of the process group ends it.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  pid_t gc = 0;
  if (argc > 2 && std::strcmp(argv[2], "fork") == 0) {
    gc = ::fork();
    if (gc < 0) return 2;
    if (gc == 0) {
      for (;;) ::pause();
    }
  }
  std::string report = "env=";
  for (char** e = environ; *e; ++e) report += std::string(e == environ ? "" : "|") + *e;
  char cwd[4096];
  report += ";cwd=" + std::string(::getcwd(cwd, sizeof cwd) ? cwd : "?");
  report += ";pgid_is_pid=" + std::string(::getpgrp() == ::getpid() ? "1" : "0");
  report += ";gc=" + std::to_string(static_cast<long>(gc));
  for (char& c : report)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';  // keep the JSON simple
  int ch;
  while ((ch = std::getchar()) != EOF && ch != '\n') {
  }
  std::printf(
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocol_version\":\"0.0.6\",\"name\":\"%s\",\"version\":\"%s\","
      "\"capabilities\":{\"tools\":false,\"resources\":false,\"subscribe_events\":false,\"subscribe_bus\":false,"
      "\"publish_bus\":false,\"publish_session_events\":false,\"producer_messaging\":false,\"intercept\":[]},"
      "\"tools\":[]}}\n",
      argv[1], report.c_str());
  std::fflush(stdout);
  while (std::getchar() != EOF) {
  }
  for (;;) ::pause();
}
