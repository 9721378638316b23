// tests/helpers/echo — copies stdin to stdout byte for byte until EOF, then exits 0. A line in is
// the same line out, so it is the trivial "echo plugin" for channel tests and bench_roundtrip.
// Plain read(2)/write(2) on fds 0/1: no stdio buffering, so each line goes back as it arrives.
#include <unistd.h>

#include <cerrno>

int main() {
  static char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return 2;
    }
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = ::write(1, buf + off, static_cast<size_t>(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        return 3;
      }
      off += w;
    }
  }
}
