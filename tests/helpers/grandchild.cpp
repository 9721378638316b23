// tests/helpers/grandchild — forks a grandchild that keeps stdout open and sleeps forever, prints
// {"grandchild":PID} and then, with `exit`, exits at once (the orphan holds the pipe: no EOF ever
// comes), or with `stay` sleeps too. close() must neither hang nor leave the grandchild alive.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  const pid_t gc = ::fork();
  if (gc < 0) return 2;
  if (gc == 0) {
    for (;;) ::pause();
  }
  char msg[64];
  const int n = std::snprintf(msg, sizeof msg, "{\"grandchild\":%d}\n", static_cast<int>(gc));
  if (::write(1, msg, static_cast<size_t>(n)) < 0) return 3;
  if (argc > 1 && std::strcmp(argv[1], "stay") == 0)
    for (;;) ::pause();
  return 0;
}
