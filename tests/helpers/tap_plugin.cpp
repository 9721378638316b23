// tests/helpers/tap_plugin — a tiny scripted "plugin" for the record/replay tests (tracecmds).
// Standalone (no conform_lib): what it does must not depend on the code under test.
//
//   tap_plugin [--cat] [--fault] [--exit N] [--signal S] [--ready]
//     (default)  for every stdin line: a request ("method" and "id":N) gets
//                {"jsonrpc":"2.0","id":N,"result":{"len":L}} (L = the line's length); after each
//                line also a notification carrying a fresh UUID and the current time, so a replay
//                must normalise them to agree.
//     --fault    the same, but "len" is L+1: a replay must report a divergence.
//     --cat      copies stdin to stdout byte for byte (no framing at all).
//     --ready    writes {"ready":true} first (tests wait for it instead of sleeping).
//     --signal S raises signal S after the first line.
//     --exit N   exits with N at stdin EOF (default 0).
//   Always writes "tap_plugin: started" to stderr first (stderr pass-through).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>

namespace {

void writeAll(const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(1, s.data() + off, s.size() - off);
    if (n <= 0) std::exit(3);
    off += static_cast<std::size_t>(n);
  }
}

std::string uuid() {
  static std::mt19937_64 rng{std::random_device{}()};
  const char* hex = "0123456789abcdef";
  std::string u;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) u += '-';
    u += hex[rng() & 15];
  }
  return u;
}

std::string now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000);
  return buf;
}

// The digits after "id": in a line, or "" (test input is written by the tests, so this is enough).
std::string requestId(const std::string& line) {
  if (line.find("\"method\"") == std::string::npos) return {};
  auto p = line.find("\"id\":");
  if (p == std::string::npos) return {};
  p += 5;
  std::string id;
  while (p < line.size() && line[p] >= '0' && line[p] <= '9') id += line[p++];
  return id;
}

}  // namespace

int main(int argc, char** argv) {
  bool cat = false, fault = false, ready = false;
  int exit_code = 0, sig = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cat") cat = true;
    else if (a == "--fault") fault = true;
    else if (a == "--ready") ready = true;
    else if (a == "--exit" && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    else if (a == "--signal" && i + 1 < argc) sig = std::atoi(argv[++i]);
    else { std::fprintf(stderr, "tap_plugin: unknown argument %s\n", a.c_str()); return 2; }
  }
  std::fputs("tap_plugin: started\n", stderr);
  std::fflush(stderr);
  if (ready) writeAll("{\"ready\":true}\n");

  char buf[65536];
  std::string line;
  while (true) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0) return 4;
    if (n == 0) break;
    if (cat) {
      writeAll(std::string(buf, static_cast<std::size_t>(n)));
      continue;
    }
    line.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = line.find('\n')) != std::string::npos) {
      std::string one = line.substr(0, nl);
      line.erase(0, nl + 1);
      if (sig) ::raise(sig);
      std::string id = requestId(one);
      if (!id.empty())
        writeAll("{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"len\":" +
                 std::to_string(one.size() + (fault ? 1 : 0)) + "}}\n");
      writeAll("{\"jsonrpc\":\"2.0\",\"method\":\"x/note\",\"params\":{\"trace\":\"" + uuid() + "\",\"at\":\"" + now() +
               "\"}}\n");
    }
  }
  return exit_code;
}
