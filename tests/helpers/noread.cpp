// tests/helpers/noread — never reads stdin: announces itself with one frame, then sleeps until
// killed. Our writes to it must fill the pipe, hit max_write_buffer and fail — never block.
#include <unistd.h>

int main() {
  const char msg[] = "{\"ready\":true}\n";
  if (::write(1, msg, sizeof msg - 1) < 0) return 3;
  for (;;) ::pause();
}
