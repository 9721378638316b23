// tests/helpers/stderr_chatter — writes log lines (some that look like JSON-RPC frames), one
// 100 KiB line and a last line without LF to stderr, and exactly one frame to stdout. Stderr is
// never protocol: none of it may appear as a Frame.
#include <unistd.h>

#include <string>

static void put(int fd, const std::string& s) {
  for (size_t off = 0; off < s.size();) {
    const ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

int main() {
  put(2, "starting up\n");
  put(2, "{\"jsonrpc\":\"2.0\",\"method\":\"fake/frame\"}\n");
  put(1, "{\"jsonrpc\":\"2.0\",\"method\":\"real/frame\"}\n");
  put(2, "with CR\r\n");
  put(2, std::string(100 * 1024, 'L') + "\n");
  put(2, "no newline at the end");
  return 0;
}
