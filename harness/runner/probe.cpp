// harness/runner/probe — the byte relay between an engine under test and the check-engine runner
// (see probe.h). Plain poll(2) on two fds: the probe has no frames of its own to understand.
#include "harness/runner/probe.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace conform::runner {

namespace {

// The probe never outlives a forgotten runner by much: the runner closes its socket at the end of
// every case (which ends the probe), this cap only bounds a probe whose engine keeps stdin open
// after the runner died without closing the socket.
constexpr auto kMaxLifetime = std::chrono::minutes(10);
constexpr int kPollSliceMs = 1000;

bool writeAll(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

int runProbe(const std::string& socket_path) {
  ::signal(SIGPIPE, SIG_IGN);  // a closed peer is an error value (EPIPE), never death by signal
  int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (sock < 0 || socket_path.size() >= sizeof(addr.sun_path)) {
    std::fprintf(stderr, "conform probe: cannot create a socket for `%s`\n", socket_path.c_str());
    return 1;
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (::connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::fprintf(stderr, "conform probe: cannot connect to `%s`: %s\n", socket_path.c_str(), std::strerror(errno));
    return 1;
  }
  bool in_open = true, sock_open = true;
  char buf[65536];
  const auto give_up = std::chrono::steady_clock::now() + kMaxLifetime;
  while ((in_open || sock_open) && std::chrono::steady_clock::now() < give_up) {
    pollfd fds[2] = {{in_open ? 0 : -1, POLLIN, 0}, {sock_open ? sock : -1, POLLIN, 0}};
    int r = ::poll(fds, 2, kPollSliceMs);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    if (in_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n > 0) {
        if (!writeAll(sock, buf, static_cast<std::size_t>(n))) in_open = false, sock_open = false;
      } else if (n == 0 || errno != EINTR) {
        in_open = false;
        ::shutdown(sock, SHUT_WR);  // the runner sees EOF: the engine closed our stdin
      }
    }
    if (sock_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = ::read(sock, buf, sizeof buf);
      if (n > 0) {
        if (!writeAll(1, buf, static_cast<std::size_t>(n))) {
          // The engine closed our stdout's pipe: nothing more can reach it.
          sock_open = false;
          ::close(1);
        }
      } else if (n == 0 || errno != EINTR) {
        sock_open = false;
        ::close(1);  // the engine sees EOF on plugin stdout (FRAME-17)
      }
    }
  }
  ::close(sock);
  return 0;
}

}  // namespace conform::runner
