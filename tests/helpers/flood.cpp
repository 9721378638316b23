// tests/helpers/flood — writes to stdout as fast as it can, to prove a flooding peer cannot hang
// or exhaust the reader.
//   flood [TOTAL_BYTES] [lines|nolf|badutf8]
//   lines   (default) 1 KiB frames: 1023 bytes of 'x' then LF
//   nolf    TOTAL_BYTES of 'x' and no LF at all (one giant oversized frame)
//   badutf8 1 KiB frames whose 10th byte is 0xFF (invalid UTF-8)
// Exits 0 when done (or dies of SIGPIPE if the reader goes away, as a real plugin would).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  unsigned long long total = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200ull << 20;
  const std::string mode = argc > 2 ? argv[2] : "lines";
  static char block[1 << 16];
  std::memset(block, 'x', sizeof block);
  if (mode != "nolf") {
    for (size_t i = 0; i < sizeof block; i += 1024) {
      block[i + 1023] = '\n';
      if (mode == "badutf8") block[i + 9] = static_cast<char>(0xFF);
    }
  }
  while (total > 0) {
    const size_t n = total < sizeof block ? static_cast<size_t>(total) : sizeof block;
    const ssize_t w = ::write(1, block, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return 3;
    }
    total -= static_cast<unsigned long long>(w);
  }
  return 0;
}
