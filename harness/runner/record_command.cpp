// harness/runner/record_command — `conform record --out TRACE -- CMD…`: a transparent tap.
//
// An engine configured to start `conform record --out t.ndjson -- ./my-plugin` instead of the plugin
// must get byte for byte the same conversation. So this file copies raw bytes, never re-encoded
// frames: the core Channel hands out decoded frames (a CR stripped, an oversized frame cut to its
// head), which cannot reproduce the stream exactly. The copy is a plain poll() loop over four
// non-blocking ends; the frames for the trace come from one FrameDecoder per direction fed with the
// very bytes that are copied, so the trace and the copy cannot disagree.
//
// Guarantees (tests/tracecmds/record_test.cpp):
//   * never adds, drops or reorders a byte; each direction has its own bounded buffer and a full
//     buffer only pauses reading on that direction (a pipe's own back-pressure), never the other;
//   * stderr is inherited (passed through untouched, not traced: it is not ours to read);
//   * EOF on our stdin closes the child's stdin; EOF on the child's stdout closes our stdout;
//     an engine that stops reading (EPIPE) makes the child see a broken pipe too;
//   * SIGTERM/SIGINT/SIGHUP sent to us go to the child's process group; the child's exit code is
//     ours, and a child killed by a signal makes us die of the same signal (the engine sees the same
//     death); the trace is flushed before that.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "core/clock/clock.h"
#include "core/trace/trace.h"
#include "core/wire/channel.h"
#include "core/wire/framing.h"
#include "harness/runner/trace_commands.h"

extern char** environ;

namespace conform::runner {
namespace {

// Bytes read per read() call: large enough for bulk transfers, small enough for the stack budget.
constexpr std::size_t kReadChunk = 64 * 1024;
// Per-direction buffer cap: past it we stop reading that side until the other end drains, exactly
// the back-pressure a direct pipe would apply (a 4 MiB frame, FRAME-06, still streams through).
constexpr std::size_t kMaxPending = 1u << 20;
// A write to a *blocking* pipe of at most PIPE_BUF bytes after POLLOUT never blocks (POSIX). Our own
// stdin/stdout belong to the engine and are left in blocking mode (changing O_NONBLOCK on them would
// change the engine's file description too), so writes to them are cut to this size.
constexpr std::size_t kSafeBlockingWrite = PIPE_BUF;
// After the child exited, how long a grandchild that still holds its stdout may keep it open before
// we stop waiting for EOF (FRAME-17's EOF would otherwise never come; PROTOCOL §1 process model).
constexpr auto kExitDrain = std::chrono::seconds(2);

int g_sig_write_fd = -1;  // self-pipe: the signal handler only writes the signal number

extern "C" void onSignal(int signo) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(signo);
  if (g_sig_write_fd >= 0) (void)!::write(g_sig_write_fd, &b, 1);
  errno = saved;
}

bool setNonBlocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// One direction of the tap: bytes read from `src` wait in `buf` until written to `dst`.
struct Direction {
  int src = -1;
  int dst = -1;
  bool dst_nonblocking = false;  // our own stdout is blocking: writes are cut to PIPE_BUF
  std::string buf;
  std::size_t off = 0;  // bytes of buf already written
  bool src_eof = false;
  trace::Dir dir = trace::Dir::EngineToPlugin;
  wire::FrameDecoder decoder;

  std::size_t pending() const { return buf.size() - off; }
};

void drainDecoder(Direction& d, trace::TraceWriter& tw) {
  while (auto ev = d.decoder.next()) tw.frameEvent(d.dir, *ev);
}

// Reads what is available; false on a read error other than EAGAIN (treated as EOF).
void readSome(Direction& d, trace::TraceWriter& tw) {
  char chunk[kReadChunk];
  ssize_t n = ::read(d.src, chunk, sizeof chunk);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    d.src_eof = true;
    d.decoder.feedEof();
    drainDecoder(d, tw);
    return;
  }
  d.buf.append(chunk, static_cast<std::size_t>(n));
  d.decoder.feed(std::string_view(chunk, static_cast<std::size_t>(n)));
  drainDecoder(d, tw);
}

// Writes what the destination takes. On EPIPE the reader is gone: the bytes can never be delivered,
// so they are dropped and the source is closed, which hands the broken pipe on to the writer there.
void writeSome(Direction& d) {
  std::size_t len = d.pending();
  if (!d.dst_nonblocking) len = std::min(len, kSafeBlockingWrite);
  ssize_t n = ::write(d.dst, d.buf.data() + d.off, len);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    closeFd(d.dst);
    d.buf.clear();
    d.off = 0;
    return;
  }
  d.off += static_cast<std::size_t>(n);
  if (d.off == d.buf.size()) {
    d.buf.clear();
    d.off = 0;
  } else if (d.off > kMaxPending) {
    d.buf.erase(0, d.off);
    d.off = 0;
  }
}

// Dies of `signo` like the child did; returns only if the signal does not terminate.
int reraise(int signo) {
  struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // the child already dumped core if it was going to
  std::signal(signo, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signo);
  return 128 + signo;  // the shell convention, for signals that do not end a process
}

}  // namespace

int runRecord(const RecordCommandOptions& opt) {
  if (opt.command.empty()) {
    fmt::print(stderr, "conform record: no command given (usage: conform record --out TRACE -- CMD...)\n");
    return kExitHarness;
  }
  wire::ignoreSigpipe();

  trace::TraceHeader hdr;
  hdr.role = "tap";
  hdr.peer = opt.command;
  hdr.profile = opt.profile;
  auto writer = trace::TraceWriter::open(opt.out, clock::RealClock::instance(), std::move(hdr),
                                         {trace::FlushPolicy::EveryEvent, false});
  if (!writer) {
    fmt::print(stderr, "conform record: cannot write trace {}: {}\n", opt.out, writer.error());
    return kExitHarness;
  }
  trace::TraceWriter& tw = **writer;

  int sig_pipe[2], to_child[2], from_child[2];
  if (::pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0 || ::pipe2(to_child, O_CLOEXEC) != 0 ||
      ::pipe2(from_child, O_CLOEXEC) != 0) {
    fmt::print(stderr, "conform record: pipe: {}\n", std::strerror(errno));
    return kExitHarness;
  }
  g_sig_write_fd = sig_pipe[1];
  constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP};
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : kForwarded) ::sigaction(s, &sa, nullptr);
  ::sigaction(SIGCHLD, &sa, nullptr);

  // The child: its own process group (so forwarded signals reach its helpers too), default signal
  // dispositions and an empty mask (we ignore SIGPIPE; it must not inherit that), stderr inherited.
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  for (const auto& a : opt.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (rc != 0) {
    fmt::print(stderr, "conform record: cannot start {}: {}\n", opt.command[0], std::strerror(rc));
    tw.note(fmt::format("cannot start {}: {}", opt.command[0], std::strerror(rc)));
    ::close(to_child[1]);
    ::close(from_child[0]);
    return kExitHarness;
  }
  setNonBlocking(to_child[1]);
  setNonBlocking(from_child[0]);

  Direction e2p, p2e;
  e2p.src = opt.in_fd;
  e2p.dst = to_child[1];
  e2p.dst_nonblocking = true;
  e2p.dir = trace::Dir::EngineToPlugin;
  p2e.src = from_child[0];
  p2e.dst = opt.out_fd;
  p2e.dst_nonblocking = false;
  p2e.dir = trace::Dir::PluginToEngine;

  bool reaped = false;
  int status = 0;
  std::chrono::steady_clock::time_point drain_deadline{};
  bool e2p_closed_traced = false;

  while (true) {
    if (!reaped) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        reaped = true;
        drain_deadline = std::chrono::steady_clock::now() + kExitDrain;
      }
    }
    // Our stdin ended (or the child's stdin broke) and everything is delivered: close the child's
    // stdin so it sees EOF exactly when it would have without the tap.
    if ((e2p.src_eof || e2p.dst < 0) && e2p.pending() == 0 && e2p.dst >= 0) closeFd(e2p.dst);
    if (e2p.dst < 0 && !e2p_closed_traced) {
      e2p_closed_traced = true;
      if (!e2p.src_eof) {
        // The child closed its stdin: the engine's next write must fail as it would without us.
        e2p.src_eof = true;
        if (e2p.src == opt.in_fd) ::close(opt.in_fd);
        e2p.src = -1;
      }
    }
    if (p2e.src_eof && p2e.pending() == 0 && p2e.dst >= 0) closeFd(p2e.dst);
    if (p2e.dst < 0 && !p2e.src_eof) {
      // The engine stopped reading: close the child's stdout so it gets EPIPE like it would.
      closeFd(p2e.src);
      p2e.src_eof = true;
      p2e.decoder.feedEof();
      drainDecoder(p2e, tw);
    }
    const bool p2e_done = p2e.src_eof && (p2e.pending() == 0 || p2e.dst < 0);
    if (reaped && (p2e_done || std::chrono::steady_clock::now() >= drain_deadline)) break;

    std::vector<pollfd> fds;
    enum Slot { kIn, kChildIn, kChildOut, kOut, kSig };
    int slot_of[5] = {-1, -1, -1, -1, -1};
    auto add = [&](Slot s, int fd, short ev) {
      slot_of[s] = static_cast<int>(fds.size());
      fds.push_back({fd, ev, 0});
    };
    if (!e2p.src_eof && e2p.src >= 0 && e2p.pending() < kMaxPending && !reaped) add(kIn, e2p.src, POLLIN);
    if (e2p.pending() > 0 && e2p.dst >= 0) add(kChildIn, e2p.dst, POLLOUT);
    if (!p2e.src_eof && p2e.pending() < kMaxPending) add(kChildOut, p2e.src, POLLIN);
    if (p2e.pending() > 0 && p2e.dst >= 0) add(kOut, p2e.dst, POLLOUT);
    add(kSig, sig_pipe[0], POLLIN);

    int timeout_ms = -1;
    if (reaped) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(drain_deadline - std::chrono::steady_clock::now());
      timeout_ms = static_cast<int>(std::max<std::int64_t>(0, left.count()) + 1);
    }
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      fmt::print(stderr, "conform record: poll: {}\n", std::strerror(errno));
      break;
    }
    auto ready = [&](Slot s) {
      return slot_of[s] >= 0 && (fds[static_cast<std::size_t>(slot_of[s])].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR));
    };
    if (ready(kSig)) {
      unsigned char sigs[64];
      ssize_t k = ::read(sig_pipe[0], sigs, sizeof sigs);
      for (ssize_t i = 0; i < k; ++i) {
        int s = sigs[i];
        if (s == SIGCHLD || reaped) continue;
        ::kill(-pid, s);  // the child's process group (pgid == pid)
        tw.note(fmt::format("forwarded {} to the child's process group", trace::signalName(s)));
      }
    }
    if (ready(kIn)) readSome(e2p, tw);
    if (ready(kChildOut)) readSome(p2e, tw);
    if (ready(kChildIn)) writeSome(e2p);
    if (ready(kOut)) writeSome(p2e);
  }

  if (!reaped) {  // unreachable in practice (we only leave the loop once reaped), kept as a guard
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  // Anything the child wrote that we could not deliver in time is still traced (the decoder saw it).
  if (!p2e.src_eof) {
    p2e.decoder.feedEof();
    drainDecoder(p2e, tw);
  }
  closeFd(e2p.dst);
  closeFd(p2e.src);
  if (p2e.dst >= 0) ::close(p2e.dst);

  int exit_rc = 0;
  int die_of = 0;
  if (WIFSIGNALED(status)) {
    tw.exitSignal(WTERMSIG(status));
    die_of = WTERMSIG(status);
  } else {
    exit_rc = WEXITSTATUS(status);
    tw.exitCode(exit_rc);
  }
  tw.flush();
  if (!tw.ok()) fmt::print(stderr, "conform record: trace {} incomplete: {}\n", opt.out, tw.error());
  writer->reset();  // closes the trace file before we possibly die
  g_sig_write_fd = -1;
  ::close(sig_pipe[0]);
  ::close(sig_pipe[1]);
  if (die_of) return reraise(die_of);
  return exit_rc;
}

}  // namespace conform::runner
