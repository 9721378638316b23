// core/wire/channel — Reactor, process/fd channels and in-memory pairs (see channel.h).
//
// Why it is built this way:
//  * Spawning uses posix_spawn(3), not Boost.Process v2. We tried v2 first (its launcher plus an
//    exec-setup initializer for setpgid/signals): its sources call Boost.Filesystem's compiled
//    `status()`, and Debian 12 ships Boost.Filesystem only for 1.74 while the headers are 1.81, so
//    it does not link (and BOOST_PROCESS_USE_STD_FS does not compile). It also forks, which costs
//    ~100 ms from a 2 GiB parent against ~1.3 ms for glibc's posix_spawn (clone(CLONE_VFORK);
//    DEPENDENCIES.md) — fuzzing restarts children constantly. posix_spawn does natively all the
//    child setup we need: its own process group (POSIX_SPAWN_SETPGROUP), every signal back to its
//    default (SETSIGDEF: conform ignores SIGPIPE, the child must not inherit that), an empty
//    signal mask (SETSIGMASK), dup2 of the pipes, chdir, and closefrom(3) so no other channel's
//    pipe end leaks into the child (a leaked write end would keep a peer from ever seeing EOF).
//    glibc reports exec failures (ENOENT, EACCES) as posix_spawn's return value.
//  * I/O is Boost.Asio: one io_context per Reactor, all fds non-blocking. stdout (the hot path)
//    uses async_read_some into one 64 KiB buffer per channel: Asio reads speculatively and needs
//    no epoll_ctl per read, so a round trip costs write + epoll_wait + read (async_wait would add
//    an epoll_ctl(MOD) each time: bench_roundtrip measured it). stderr and blocked writes use
//    async_wait plus our own read(2)/write(2) loops. To keep bytes in order when the child exits,
//    the pending stdout read is cancelled first and the pipe is then drained synchronously
//    (finishExit); direct reads happen only while no Asio read is in flight.
//  * Exit: a pidfd (pidfd_open) becomes readable when the child dies. We read the status with
//    waitid(WNOWAIT) and leave the zombie in place until close(): while the zombie exists its pid
//    is also its process-group id and cannot be recycled, so close() can SIGKILL the whole group
//    (an orphaned grandchild holding stdout) without ever signalling a pid we no longer own. No
//    SIGCHLD handler is installed (that is process-wide state). Without pidfd (old kernels,
//    seccomp) a 10 ms timer polls waitid instead.
//  * Handlers hold a shared_ptr to the channel's state, so a channel destroyed while a completion
//    is already queued never leaves a dangling pointer.
#include "core/wire/channel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>

extern char** environ;

namespace conform::wire {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// One read(2) at most this much: the default Linux pipe capacity, so one read usually empties it.
constexpr std::size_t kReadChunk = 64 * 1024;
// Bytes read per handler before yielding to other channels (fairness under a flood).
constexpr std::size_t kReadBudget = 1u << 20;
// channel.h: a stderr line is capped at 64 KiB; the rest is dropped and the drop is noted.
constexpr std::size_t kStderrLineCap = 64 * 1024;
// Events queued but not yet taken by the owner: above this we stop reading the peer (it blocks on
// a full pipe) so a flooding peer cannot grow our memory without bound. Must exceed a frame.
constexpr std::size_t kEventHighWater = 16u << 20;
// What we drain synchronously from stdout/stderr when the child exits, before reporting Exited.
// The child's own output is at most one pipe's worth; the bound stops a grandchild that keeps
// writing from holding us here.
constexpr std::size_t kExitDrainBudget = 1u << 20;
// PROTOCOL.md §7.2 step 4 and §limits "Reap after kill: 5 s": after SIGKILL we wait at most this
// long to reap. SIGKILL normally takes effect within milliseconds.
constexpr milliseconds kReapBound{5000};
// Fallback exit polling when pidfd_open is unavailable.
constexpr milliseconds kExitPollInterval{10};
// Default write queue limit of memory/fd channels (same as SpawnOptions::max_write_buffer).
constexpr std::size_t kDefaultMaxWriteBuffer = 64u << 20;

std::string errnoText(int e) { return std::strerror(e); }

// Children that did not die within kReapBound (uninterruptible sleep): reaped later, never lost.
std::mutex g_leftover_mu;
std::vector<int> g_leftover;

void reapLeftovers() {
  std::lock_guard<std::mutex> lock(g_leftover_mu);
  std::erase_if(g_leftover, [](int p) {
    int st = 0;
    const pid_t r = ::waitpid(p, &st, WNOHANG);
    return r == p || (r < 0 && errno == ECHILD);
  });
}

int openPidfd(int pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  return -1;
}

void setNonBlocking(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK)) ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

// Moves fd to >= 3 so dup2 onto 0/1/2 in the child can never clobber another pipe end (a process
// that closed its own stdin gets fd 0 back from pipe2()).
int aboveStdio(int fd) {
  if (fd >= 3) return fd;
  const int n = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return n;
}

ExitStatus decodeSiginfo(const siginfo_t& si) {
  ExitStatus s;
  if (si.si_code == CLD_EXITED) {
    s.code = si.si_status;
  } else {
    s.signaled = true;
    s.signal = si.si_status;
  }
  return s;
}

ExitStatus decodeWaitStatus(int st) {
  ExitStatus s;
  if (WIFSIGNALED(st)) {
    s.signaled = true;
    s.signal = WTERMSIG(st);
  } else {
    s.code = WEXITSTATUS(st);
  }
  return s;
}

std::size_t eventCost(const ChannelEvent& e) {
  return sizeof(ChannelEvent) + e.frame.bytes.size() + e.text.size();
}

}  // namespace

std::string ExitStatus::str() const {
  if (!signaled) return "exit " + std::to_string(code);
  const char* abbrev = ::sigabbrev_np(signal);
  return "killed by signal " + std::to_string(signal) +
         (abbrev ? std::string(" (SIG") + abbrev + ")" : std::string());
}

void ignoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGPIPE, &sa, nullptr);
  });
}

// ---------------------------------------------------------------------------------------------
// Reactor

namespace {
class ChannelBase : public Channel {
 public:
  virtual bool hasEvents() const = 0;
  // The reactor is being destroyed before this channel: kill, reap, drop every Asio object now.
  virtual void reactorGone() = 0;
};
}  // namespace

struct Reactor::Impl {
  // Concurrency hint 1: exactly one thread runs this io_context (channel.h threading model).
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard{ioc.get_executor()};
  std::vector<ChannelBase*> channels;

  // Runs at most one handler, waiting no later than `deadline`. False once the deadline passed.
  bool runOne(SteadyTime deadline) {
    if (Clock::now() >= deadline) return false;
    ioc.run_one_until(deadline);
    return true;
  }
  void add(ChannelBase* c) { channels.push_back(c); }
  void remove(ChannelBase* c) { std::erase(channels, c); }
};

Reactor::Reactor() : impl_(std::make_unique<Impl>()) { ignoreSigpipe(); }

Reactor::~Reactor() {
  // Channels should die first; if they did not, kill their processes and drop their descriptors
  // while the io_context still exists.
  auto left = impl_->channels;
  for (ChannelBase* c : left) c->reactorGone();
  impl_->channels.clear();
  impl_->guard.reset();
  reapLeftovers();
}

Channel* Reactor::waitAny(SteadyTime deadline) {
  for (;;) {
    for (ChannelBase* c : impl_->channels)
      if (c->hasEvents()) return c;
    if (!impl_->runOne(deadline)) return nullptr;
  }
}

void Reactor::pollOnce() { impl_->ioc.poll(); }

// ---------------------------------------------------------------------------------------------
// Stream channels: a child process (pipes + pidfd) or fds we were given.

namespace {

using Descriptor = asio::posix::stream_descriptor;

struct StreamCore : std::enable_shared_from_this<StreamCore> {
  StreamCore(Reactor& r, std::size_t max_frame, std::size_t max_write)
      : reactor(r), rx(r.impl()), decoder(max_frame), max_write_buffer(max_write),
        rbuf(new char[kReadChunk]), ebuf(new char[kReadChunk]) {}

  Reactor& reactor;
  Reactor::Impl& rx;
  FrameDecoder decoder;
  std::size_t max_write_buffer;
  // stdout's buffer. An Asio read into it may have completed with its completion handler still
  // queued (Asio reads speculatively when armed, and in the epoll round before our handler runs),
  // so nothing else may read into it until onOutRead has consumed it.
  std::unique_ptr<char[]> rbuf;
  // stderr's own buffer. readErr used to share rbuf: a stderr handler that ran between a stdout
  // read and its onOutRead overwrote the bytes, and stderr text was decoded as stdout frames
  // (tests/core/channel_reuse_test.cpp).
  std::unique_ptr<char[]> ebuf;

  // Peer output (stdout of a child / read fd).
  std::optional<Descriptor> out;
  bool out_pollable = true, out_armed = false, out_scheduled = false;
  bool out_stalled = false;  // stallReading()
  bool out_paused = false;   // event queue above kEventHighWater

  // Peer stderr (children with capture_stderr).
  std::optional<Descriptor> err;
  bool err_armed = false, err_scheduled = false;
  std::string err_line;
  std::size_t err_dropped = 0;

  // Our writes (stdin of a child / write fd).
  std::optional<Descriptor> in;
  bool in_pollable = true, in_armed = false, in_scheduled = false;
  bool write_open = false, write_failed = false, close_after_flush = false, blocked_noted = false;
  std::string wbuf;
  std::size_t woff = 0;

  // Process state (pid < 0 for fd channels).
  int pid = -1;
  std::optional<Descriptor> pidfd;
  std::optional<asio::steady_timer> exit_poll;  // fallback without pidfd
  bool exited = false, exited_reported = false, reaped = false;
  bool exit_draining = false;  // between the pidfd event and finishExit()
  ExitStatus status;

  std::deque<ChannelEvent> events;
  std::size_t queued = 0;
  bool shut = false;
  std::string peer_name;  // for messages: "./plugin (pid 123)"

  std::size_t pending() const { return wbuf.size() - woff; }

  void push(ChannelEvent&& e) {
    e.at = Clock::now();
    queued += eventCost(e);
    events.push_back(std::move(e));
  }

  std::optional<ChannelEvent> pop() {
    if (events.empty()) return std::nullopt;
    ChannelEvent e = std::move(events.front());
    events.pop_front();
    queued -= eventCost(e);
    if (out_paused && queued < kEventHighWater / 2) {
      out_paused = false;
      scheduleOut();
    }
    return e;
  }

  // Nothing more can ever be queued: next() need not wait for its deadline.
  bool finished() const {
    return !out && !err && (pid < 0 || exited_reported || reaped) && !exit_poll;
  }

  // --- reading stdout ----------------------------------------------------------------------

  void drainDecoder() {
    while (auto fe = decoder.next()) {
      ChannelEvent e;
      switch (fe->kind) {
        case FrameEvent::Kind::Frame: e.kind = ChannelEvent::Kind::Frame; break;
        case FrameEvent::Kind::Oversized:
        case FrameEvent::Kind::InvalidUtf8: e.kind = ChannelEvent::Kind::FrameError; break;
        case FrameEvent::Kind::Eof: e.kind = ChannelEvent::Kind::Eof; break;
      }
      e.frame = std::move(*fe);
      push(std::move(e));
    }
  }

  void readOut(std::size_t budget) {
    if (!out || out_stalled || out_paused || shut || out_armed) return;
    const int fd = out->native_handle();
    std::size_t total = 0;
    for (;;) {
      const ssize_t n = ::read(fd, rbuf.get(), kReadChunk);
      if (n > 0) {
        decoder.feed(std::string_view(rbuf.get(), static_cast<std::size_t>(n)));
        drainDecoder();
        total += static_cast<std::size_t>(n);
        if (queued >= kEventHighWater) {
          out_paused = true;  // resumed by pop()
          return;
        }
        // A short read emptied the pipe at that instant: any later byte raises a new edge.
        if (out_pollable && static_cast<std::size_t>(n) < kReadChunk) return armOut();
        if (total >= budget) return scheduleOut();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return armOut();
      return outEof();  // 0 = EOF; EIO and friends end the stream too
    }
  }

  // Only one read of stdout is ever in flight (Asio's or our own): both use rbuf, and rbuf is
  // stdout's alone (see ebuf).
  void armOut() {
    if (!out_pollable) return scheduleOut();
    if (out_armed || !out || out_stalled || out_paused || exit_draining) return;
    out_armed = true;
    out->async_read_some(asio::buffer(rbuf.get(), kReadChunk),
                         [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                           self->onOutRead(ec, n);
                         });
  }

  void onOutRead(boost::system::error_code ec, std::size_t n) {
    out_armed = false;
    if (shut || !out) return;
    if (n > 0) {  // bytes read before a cancel are never dropped
      decoder.feed(std::string_view(rbuf.get(), n));
      drainDecoder();
    }
    if (ec == asio::error::operation_aborted) {  // cancelled by a stall or the exit drain
      if (!out_stalled && !exit_draining) scheduleOut();  // the stall already ended
      return;
    }
    if (ec == asio::error::operation_not_supported) {   // a regular file: epoll cannot watch it
      out_pollable = false;
      return scheduleOut();
    }
    if (ec) return outEof();  // eof, or EIO and friends
    if (queued >= kEventHighWater) {
      out_paused = true;  // resumed by pop()
      return;
    }
    armOut();
  }

  void scheduleOut() {
    if (out_scheduled || !out) return;
    out_scheduled = true;
    asio::post(rx.ioc, [self = shared_from_this()] {
      self->out_scheduled = false;
      if (!self->out_armed) self->readOut(kReadBudget);
    });
  }

  void outEof() {
    decoder.feedEof();
    drainDecoder();
    closeDescriptor(out);
    if (exited && !exited_reported) reportExited();
  }

  // --- reading stderr ----------------------------------------------------------------------

  void emitStderrLine() {
    ChannelEvent e;
    e.kind = ChannelEvent::Kind::Stderr;
    if (!err_line.empty() && err_line.back() == '\r') err_line.pop_back();
    e.text = std::move(err_line);
    if (err_dropped)
      e.text += " [line longer than 64 KiB: " + std::to_string(err_dropped) + " more bytes dropped]";
    err_line.clear();
    err_dropped = 0;
    push(std::move(e));
  }

  void consumeStderr(std::string_view data) {
    while (!data.empty()) {
      const void* lf = std::memchr(data.data(), '\n', data.size());
      const std::size_t take = lf ? static_cast<std::size_t>(static_cast<const char*>(lf) - data.data())
                                  : data.size();
      const std::size_t room = kStderrLineCap - std::min(kStderrLineCap, err_line.size());
      err_line.append(data.data(), std::min(take, room));
      err_dropped += take - std::min(take, room);
      if (!lf) return;
      emitStderrLine();
      data.remove_prefix(take + 1);
    }
  }

  void readErr(std::size_t budget) {
    if (!err || shut) return;
    const int fd = err->native_handle();
    std::size_t total = 0;
    for (;;) {
      const ssize_t n = ::read(fd, ebuf.get(), kReadChunk);
      if (n > 0) {
        consumeStderr(std::string_view(ebuf.get(), static_cast<std::size_t>(n)));
        total += static_cast<std::size_t>(n);
        if (static_cast<std::size_t>(n) < kReadChunk) return armErr();
        if (total >= budget) return scheduleErr();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return armErr();
      if (!err_line.empty() || err_dropped) emitStderrLine();
      closeDescriptor(err);
      return;
    }
  }

  void armErr() {
    if (err_armed || !err) return;
    err_armed = true;
    err->async_wait(Descriptor::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
      self->err_armed = false;
      if (ec == asio::error::operation_aborted || self->shut) return;
      self->readErr(kReadBudget);
    });
  }

  void scheduleErr() {
    if (err_scheduled || !err) return;
    err_scheduled = true;
    asio::post(rx.ioc, [self = shared_from_this()] {
      self->err_scheduled = false;
      if (!self->err_armed) self->readErr(kReadBudget);
    });
  }

  // --- writing -----------------------------------------------------------------------------

  void failWrite(int e) {
    write_failed = true;
    write_open = false;
    wbuf.clear();
    woff = 0;
    ChannelEvent ev;
    ev.kind = ChannelEvent::Kind::WriteFailed;
    ev.text = "cannot write to " + peer_name + ": " + errnoText(e) +
              (e == EPIPE ? " (EPIPE: the peer closed its input or exited)" : "");
    push(std::move(ev));
    closeDescriptor(in);
  }

  // Writes as much as the pipe takes now. Returns bytes written, or -1 after failWrite().
  ssize_t writeSome(const char* p, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(in->native_handle(), p + done, n - done);
      if (w > 0) {
        done += static_cast<std::size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      failWrite(w < 0 ? errno : EIO);
      return -1;
    }
    return static_cast<ssize_t>(done);
  }

  bool write(std::string_view bytes) {
    if (!write_open || write_failed || !in) return false;
    if (pending() + bytes.size() > max_write_buffer) {
      if (!blocked_noted) {  // one event per episode, not one per rejected write
        blocked_noted = true;
        ChannelEvent ev;
        ev.kind = ChannelEvent::Kind::WriteFailed;
        ev.text = "write buffer limit of " + std::to_string(max_write_buffer) + " bytes reached: " +
                  peer_name + " is not reading its input";
        push(std::move(ev));
      }
      return false;
    }
    if (pending() == 0) {
      const ssize_t w = writeSome(bytes.data(), bytes.size());
      if (w < 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(w));
      if (bytes.empty()) return true;
    }
    wbuf.append(bytes);
    armIn();
    return true;
  }

  void flushIn() {
    if (!in || write_failed) return;
    const ssize_t w = writeSome(wbuf.data() + woff, pending());
    if (w < 0) return;
    woff += static_cast<std::size_t>(w);
    if (pending() == 0) {
      wbuf.clear();
      woff = 0;
      blocked_noted = false;
      if (close_after_flush) closeDescriptor(in);
      return;
    }
    if (woff > (1u << 20) && woff > wbuf.size() / 2) {  // keep the queue from only growing
      wbuf.erase(0, woff);
      woff = 0;
    }
    armIn();
  }

  void armIn() {
    if (!in) return;
    if (!in_pollable) {
      if (in_scheduled) return;
      in_scheduled = true;
      asio::post(rx.ioc, [self = shared_from_this()] {
        self->in_scheduled = false;
        self->flushIn();
      });
      return;
    }
    if (in_armed) return;
    in_armed = true;
    in->async_wait(Descriptor::wait_write, [self = shared_from_this()](boost::system::error_code ec) {
      self->in_armed = false;
      if (ec == asio::error::operation_aborted || self->shut) return;
      if (ec == asio::error::operation_not_supported) self->in_pollable = false;
      self->flushIn();
    });
  }

  void closeWrite(bool discard) {
    write_open = false;
    if (discard || pending() == 0) {
      wbuf.clear();
      woff = 0;
      closeDescriptor(in);
    } else {
      close_after_flush = true;
    }
  }

  // --- process exit ------------------------------------------------------------------------

  void armExit() {
    if (pidfd) {
      pidfd->async_wait(Descriptor::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
        if (ec == asio::error::operation_aborted || self->shut) return;
        self->checkExit();
      });
    } else {
      if (!exit_poll) exit_poll.emplace(rx.ioc);
      exit_poll->expires_after(kExitPollInterval);
      exit_poll->async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec == asio::error::operation_aborted || self->shut) return;
        self->checkExit();
      });
    }
  }

  // Learns the exit status without reaping (WNOWAIT): see the top of the file.
  bool peekExit() {
    if (exited || reaped || pid < 0) return exited;
    siginfo_t si{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == ECHILD) {  // reaped by someone else (SIGCHLD set to SIG_IGN): status unknown
        exited = reaped = true;
        status = ExitStatus{false, -1, 0};
      }
      return exited;
    }
    if (si.si_pid == 0) return false;
    exited = true;
    status = decodeSiginfo(si);
    return true;
  }

  void checkExit() {
    if (!peekExit()) return armExit();  // spurious wake-up
    if (pidfd) closeDescriptor(pidfd);
    exit_poll.reset();
    // Cancel the in-flight stdout read; its completion (with any bytes it already read) is queued
    // before finishExit, which then drains the rest synchronously.
    exit_draining = true;
    if (out_armed && out) {
      boost::system::error_code ignored;
      out->cancel(ignored);
    }
    asio::post(rx.ioc, [self = shared_from_this()] { self->finishExit(); });
  }

  // Drains what the child wrote before dying, so its Stderr lines and Eof come before Exited.
  void finishExit() {
    if (shut) return;
    if (out_armed) {  // the cancelled read has not completed yet: come back after it
      asio::post(rx.ioc, [self = shared_from_this()] { self->finishExit(); });
      return;
    }
    exit_draining = false;
    readErr(kExitDrainBudget);
    readOut(kExitDrainBudget);  // ends by re-arming the async read if stdout is still open
    if (!exited_reported) reportExited();
  }

  void reportExited() {
    exited_reported = true;
    ChannelEvent e;
    e.kind = ChannelEvent::Kind::Exited;
    e.status = status;
    push(std::move(e));
  }

  // Reaps the child, waiting at most `bound`. Only called once the group was SIGKILLed (or the
  // child is known to have exited).
  void reap(milliseconds bound) {
    if (pid < 0 || reaped) return;
    const auto deadline = Clock::now() + bound;
    const int pfd = pidfd ? pidfd->native_handle() : -1;
    for (;;) {
      int st = 0;
      const pid_t r = ::waitpid(pid, &st, WNOHANG);
      if (r == pid) {
        if (!exited) {
          exited = true;
          status = decodeWaitStatus(st);
        }
        reaped = true;
        break;
      }
      if (r < 0 && errno != EINTR) {  // ECHILD: already gone
        if (!exited) status = ExitStatus{false, -1, 0};
        exited = reaped = true;
        break;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        std::lock_guard<std::mutex> lock(g_leftover_mu);
        g_leftover.push_back(pid);
        reaped = true;  // never touch this pid again; reapLeftovers() owns it now
        break;
      }
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - now).count() + 1;
      if (pfd >= 0) {
        pollfd p{pfd, POLLIN, 0};
        ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
      } else {
        ::poll(nullptr, 0, 1);  // 1 ms between waitpid polls, bounded by `bound`
      }
    }
  }

  // --- teardown ----------------------------------------------------------------------------

  void closeDescriptor(std::optional<Descriptor>& d) {
    if (!d) return;
    boost::system::error_code ignored;
    d->close(ignored);
    d.reset();
  }

  // Graceful: SIGTERM, keep pumping I/O (a child blocked on a full stdout pipe could never act
  // on SIGTERM otherwise) until it exits or `grace` passes; then SIGKILL the group and reap.
  void close(bool graceful, milliseconds grace, bool may_run_reactor) {
    if (shut) return;
    if (graceful && may_run_reactor) {
      closeWrite(false);
      if (pid > 0 && !exited) {
        ::kill(-pid, SIGTERM);
        const auto deadline = Clock::now() + grace;
        while (!exited && rx.runOne(deadline)) {
        }
      }
    }
    closeWrite(true);
    if (pid > 0 && !reaped) {
      // The leader is alive or a zombie we have not reaped: its pid (= the group id) is still
      // ours. Kill the leader by pid too in case it left the group.
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      reap(kReapBound);
    }
    shut = true;
    closeDescriptor(out);
    closeDescriptor(err);
    closeDescriptor(pidfd);
    exit_poll.reset();
    if (pid > 0 && exited && !exited_reported) reportExited();
  }
};

class StreamChannel final : public ChannelBase {
 public:
  StreamChannel(Reactor& r, std::shared_ptr<StreamCore> core) : r_(r), c_(std::move(core)) {
    r_.impl().add(this);
  }
  ~StreamChannel() override {
    c_->close(false, milliseconds(0), false);
    if (!gone_) r_.impl().remove(this);
  }

  bool write(std::string_view bytes) override { return c_->write(bytes); }
  bool flush(SteadyTime deadline) override {
    while (c_->pending() > 0 && !c_->write_failed && c_->in) {
      if (!c_->rx.runOne(deadline)) break;
    }
    return c_->pending() == 0 && !c_->write_failed;
  }
  std::size_t pendingWriteBytes() const override { return c_->pending(); }
  void closeWrite(bool discard_pending) override { c_->closeWrite(discard_pending); }
  void stallReading(bool stall) override {
    c_->out_stalled = stall;
    if (stall && c_->out_armed && c_->out) {
      boost::system::error_code ignored;
      c_->out->cancel(ignored);  // its completion still delivers whatever it had read
    }
    if (!stall && !c_->out_armed) c_->scheduleOut();
  }
  std::optional<ChannelEvent> next(SteadyTime deadline) override {
    for (;;) {
      if (!c_->events.empty()) return c_->pop();
      if (c_->finished() || gone_) return std::nullopt;
      if (!c_->rx.runOne(deadline)) return std::nullopt;
    }
  }
  std::optional<ChannelEvent> poll() override { return c_->pop(); }
  void close(bool graceful, milliseconds grace) override { c_->close(graceful, grace, !gone_); }
  void signal(int signo) override {
    if (c_->pid > 0 && !c_->reaped) ::kill(-c_->pid, signo);
  }
  bool running() const override {
    return c_->pid > 0 ? !c_->exited && !c_->reaped : !c_->shut;
  }
  std::optional<ExitStatus> exitStatus() const override {
    if (c_->exited) return c_->status;
    return std::nullopt;
  }
  int pid() const override { return c_->pid; }
  Reactor& reactor() override { return r_; }

  bool hasEvents() const override { return !c_->events.empty(); }
  void reactorGone() override {
    c_->close(false, milliseconds(0), false);
    gone_ = true;
  }

 private:
  Reactor& r_;
  std::shared_ptr<StreamCore> c_;
  bool gone_ = false;
};

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  bool open() {
    if (::pipe2(fd, O_CLOEXEC) != 0) return false;
    fd[0] = aboveStdio(fd[0]);
    fd[1] = aboveStdio(fd[1]);
    return fd[0] >= 0 && fd[1] >= 0;
  }
  int take(int i) { return std::exchange(fd[i], -1); }
};

}  // namespace

std::unique_ptr<Channel> spawnProcess(Reactor& reactor, const SpawnOptions& opt, SpawnError* err) {
  auto fail = [&](std::string msg) -> std::unique_ptr<Channel> {
    if (err) err->message = std::move(msg);
    return nullptr;
  };
  if (!g_leftover.empty()) reapLeftovers();
  if (opt.program.empty()) return fail("cannot start a plugin: the program name is empty");
  if (opt.cwd) {
    struct stat sb {};
    if (::stat(opt.cwd->c_str(), &sb) != 0)
      return fail("cannot start " + opt.program + ": working directory " + *opt.cwd + ": " +
                  errnoText(errno));
    if (!S_ISDIR(sb.st_mode))
      return fail("cannot start " + opt.program + ": working directory " + *opt.cwd +
                  " is not a directory");
  }

  Pipe pin, pout, perr;
  if (!pin.open() || !pout.open() || (opt.capture_stderr && !perr.open()))
    return fail("cannot start " + opt.program + ": pipe: " + errnoText(errno));

  // argv / envp as C arrays (posix_spawn takes char* const[]).
  std::vector<char*> argv;
  argv.reserve(opt.args.size() + 2);
  argv.push_back(const_cast<char*>(opt.program.c_str()));
  for (const auto& a : opt.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_store;
  std::vector<char*> envp;
  if (opt.env) {
    env_store.reserve(opt.env->size());
    for (const auto& [k, v] : *opt.env) env_store.push_back(k + "=" + v);
    for (auto& s : env_store) envp.push_back(s.data());
    envp.push_back(nullptr);
  }

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, pin.fd[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, pout.fd[1], STDOUT_FILENO);
  if (opt.capture_stderr) posix_spawn_file_actions_adddup2(&fa, perr.fd[1], STDERR_FILENO);
  if (opt.cwd) posix_spawn_file_actions_addchdir_np(&fa, opt.cwd->c_str());
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  pid_t pid = -1;
  char* const* env = opt.env ? envp.data() : environ;
  // No '/' in the name: posix_spawnp searches PATH of *our* environment (glibc reads getenv).
  const bool search = opt.program.find('/') == std::string::npos;
  const int rc = search ? ::posix_spawnp(&pid, opt.program.c_str(), &fa, &attr, argv.data(), env)
                        : ::posix_spawn(&pid, opt.program.c_str(), &fa, &attr, argv.data(), env);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail("cannot start " + opt.program + ": " + errnoText(rc));

  auto core = std::make_shared<StreamCore>(reactor, opt.max_frame, opt.max_write_buffer);
  core->pid = pid;
  core->peer_name = opt.program + " (pid " + std::to_string(pid) + ")";
  auto& ioc = reactor.impl().ioc;
  const int w = pin.take(1), r = pout.take(0);
  setNonBlocking(w);
  setNonBlocking(r);
  core->in.emplace(ioc, w);
  core->out.emplace(ioc, r);
  core->write_open = true;
  if (opt.capture_stderr) {
    const int e = perr.take(0);
    setNonBlocking(e);
    core->err.emplace(ioc, e);
  }
  const int pfd = openPidfd(pid);
  if (pfd >= 0) core->pidfd.emplace(ioc, pfd);
  // The pipe ends the child owns are closed by ~Pipe at return.
  core->armOut();
  core->armErr();
  core->armExit();
  return std::make_unique<StreamChannel>(reactor, std::move(core));
}

std::unique_ptr<Channel> fdChannel(Reactor& reactor, int read_fd, int write_fd, std::size_t max_frame) {
  auto core = std::make_shared<StreamCore>(reactor, max_frame, kDefaultMaxWriteBuffer);
  core->peer_name = "fd " + std::to_string(write_fd);
  auto& ioc = reactor.impl().ioc;
  // One fd cannot be registered twice with epoll (a socket used both ways): write through a dup.
  if (read_fd >= 0 && write_fd == read_fd) write_fd = ::fcntl(read_fd, F_DUPFD_CLOEXEC, 3);
  if (read_fd >= 0) {
    setNonBlocking(read_fd);
    core->out.emplace(ioc, read_fd);
  }
  if (write_fd >= 0) {
    setNonBlocking(write_fd);
    core->in.emplace(ioc, write_fd);
    core->write_open = true;
  }
  // Reading starts with a read, not a wait: the fd may already hold data (or be a regular file).
  core->scheduleOut();
  return std::make_unique<StreamChannel>(reactor, std::move(core));
}

// ---------------------------------------------------------------------------------------------
// In-memory pairs: a's write() feeds b's decoder directly (or b's inbox while b stalls).

namespace {

class MemoryChannel;
struct MemLink {
  MemoryChannel* end[2] = {nullptr, nullptr};
};

class MemoryChannel final : public ChannelBase {
 public:
  MemoryChannel(Reactor& r, std::shared_ptr<MemLink> link, int side, std::size_t max_frame)
      : r_(r), link_(std::move(link)), side_(side), decoder_(max_frame) {
    link_->end[side_] = this;
    r_.impl().add(this);
  }
  ~MemoryChannel() override {
    close(false, milliseconds(0));
    link_->end[side_] = nullptr;
    if (!gone_) r_.impl().remove(this);
  }

  bool write(std::string_view bytes) override {
    if (!write_open_) return false;
    MemoryChannel* p = peer();
    if (!p || !p->read_open_) {
      write_open_ = false;
      note("cannot write to the memory peer: it closed its input (EPIPE)");
      return false;
    }
    if (p->stalled_) {
      if (p->inbox_.size() + bytes.size() > kDefaultMaxWriteBuffer) {
        if (!blocked_noted_) {
          blocked_noted_ = true;
          note("write buffer limit of " + std::to_string(kDefaultMaxWriteBuffer) +
               " bytes reached: the memory peer is not reading");
        }
        return false;
      }
      p->inbox_.append(bytes);
      return true;
    }
    p->receive(bytes);
    return true;
  }
  bool flush(SteadyTime deadline) override {
    while (pendingWriteBytes() > 0 && !gone_ && r_.impl().runOne(deadline)) {
    }
    return pendingWriteBytes() == 0;
  }
  std::size_t pendingWriteBytes() const override {
    const MemoryChannel* p = peer();
    return p ? p->inbox_.size() : 0;
  }
  void closeWrite(bool discard_pending) override {
    if (!write_open_ && eof_sent_) return;
    write_open_ = false;
    MemoryChannel* p = peer();
    if (!p) return;
    if (discard_pending) p->inbox_.clear();
    if (p->inbox_.empty()) {
      eof_sent_ = true;
      p->receiveEof();
    } else {
      p->eof_after_inbox_ = true;
      eof_sent_ = true;
    }
  }
  void stallReading(bool stall) override {
    stalled_ = stall;
    if (stall) return;
    std::string data = std::move(inbox_);
    inbox_.clear();
    if (!data.empty()) receive(data);
    if (eof_after_inbox_) receiveEof();
    if (MemoryChannel* p = peer()) p->blocked_noted_ = false;
  }
  std::optional<ChannelEvent> next(SteadyTime deadline) override {
    for (;;) {
      if (!events_.empty()) return poll();
      // Only the peer (same thread) can produce our events; once it is gone nothing will come.
      if (!read_open_ || decoder_.eof() || !peer() || gone_) return std::nullopt;
      if (!r_.impl().runOne(deadline)) return std::nullopt;
    }
  }
  std::optional<ChannelEvent> poll() override {
    if (events_.empty()) return std::nullopt;
    ChannelEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  void close(bool, milliseconds) override {
    closeWrite(true);
    read_open_ = false;
    inbox_.clear();
  }
  void signal(int) override {}
  bool running() const override { return read_open_ || write_open_; }
  std::optional<ExitStatus> exitStatus() const override { return std::nullopt; }
  int pid() const override { return -1; }
  Reactor& reactor() override { return r_; }
  bool hasEvents() const override { return !events_.empty(); }
  void reactorGone() override {
    gone_ = true;
  }

 private:
  MemoryChannel* peer() const { return link_->end[1 - side_]; }
  void push(ChannelEvent&& e) {
    e.at = Clock::now();
    events_.push_back(std::move(e));
  }
  void note(std::string text) {
    ChannelEvent e;
    e.kind = ChannelEvent::Kind::WriteFailed;
    e.text = std::move(text);
    push(std::move(e));
  }
  void drain() {
    while (auto fe = decoder_.next()) {
      ChannelEvent e;
      e.kind = fe->kind == FrameEvent::Kind::Frame ? ChannelEvent::Kind::Frame
               : fe->kind == FrameEvent::Kind::Eof ? ChannelEvent::Kind::Eof
                                                   : ChannelEvent::Kind::FrameError;
      e.frame = std::move(*fe);
      push(std::move(e));
    }
  }
  void receive(std::string_view bytes) {
    if (!read_open_) return;
    decoder_.feed(bytes);
    drain();
  }
  void receiveEof() {
    eof_after_inbox_ = false;
    if (!read_open_) return;
    decoder_.feedEof();
    drain();
  }

  Reactor& r_;
  std::shared_ptr<MemLink> link_;
  int side_;
  FrameDecoder decoder_;
  std::deque<ChannelEvent> events_;
  std::string inbox_;  // bytes from the peer while we stall
  bool stalled_ = false, read_open_ = true, write_open_ = true, eof_sent_ = false;
  bool eof_after_inbox_ = false, blocked_noted_ = false, gone_ = false;
};

}  // namespace

ChannelPair memoryPair(Reactor& reactor, std::size_t max_frame) {
  auto link = std::make_shared<MemLink>();
  ChannelPair p;
  p.a = std::make_unique<MemoryChannel>(reactor, link, 0, max_frame);
  p.b = std::make_unique<MemoryChannel>(reactor, link, 1, max_frame);
  return p;
}

}  // namespace conform::wire
