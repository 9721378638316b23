// tests/helpers/exit_midframe — one complete frame, then a fragment without LF, then exit 0.
// FRAME-09: the reader must deliver the fragment as an unterminated frame, then Eof, then Exited.
#include <unistd.h>

int main() {
  const char msg[] = "{\"a\":1}\n{\"partial\":";
  return ::write(1, msg, sizeof msg - 1) < 0 ? 3 : 0;
}
