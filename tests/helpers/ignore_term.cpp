// tests/helpers/ignore_term — ignores SIGTERM (and reads nothing), announces itself once the
// disposition is set, then sleeps. A graceful close must escalate to SIGKILL after the grace.
//   ignore_term         ignores SIGTERM
//   ignore_term exit    exits 7 on SIGTERM instead (a well-behaved child)
#include <signal.h>
#include <unistd.h>

#include <cstring>

static void onTerm(int) { _exit(7); }

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "exit") == 0)
    ::signal(SIGTERM, onTerm);
  else
    ::signal(SIGTERM, SIG_IGN);
  const char msg[] = "{\"ready\":true}\n";
  if (::write(1, msg, sizeof msg - 1) < 0) return 3;
  for (;;) ::pause();
}
