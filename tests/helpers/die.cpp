// tests/helpers/die — ends in a chosen way, to tell exit codes from signals apart.
//   die exit N     writes one frame, then exit(N)
//   die signal N   writes one frame, then raise(N) with the default disposition
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  const char msg[] = "{\"bye\":true}\n";
  if (::write(1, msg, sizeof msg - 1) < 0) return 3;
  const int n = argc > 2 ? std::atoi(argv[2]) : 0;
  if (argc > 1 && std::strcmp(argv[1], "signal") == 0) {
    ::signal(n, SIG_DFL);
    ::raise(n);
    return 99;  // not reached for fatal signals
  }
  std::exit(n);
}
