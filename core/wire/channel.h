// core/wire/channel — a connection to a peer that speaks newline-delimited frames: a child process
// (stdin/stdout pipes, stderr captured line by line and never parsed as protocol), or one end of
// an in-memory pair for tests.
//
// Threading model: single-threaded and event driven. A Reactor (Boost.Asio io_context underneath,
// hidden in the .cpp) owns all I/O; channels created on it queue their events, and the owner pulls
// them with next()/Reactor::waitAny() under a deadline. Writes are queued and flushed by the
// reactor while it waits, so a peer that never reads stdin can never block us: the queue only
// grows up to `max_write_buffer`, after which write() returns false and a WriteFailed event names
// the limit. After the child exits its zombie is kept until close(), so the process-group id stays
// reserved and close() can kill leftover grandchildren without signalling a recycled pid.
//
// Survival guarantees (tests/core/channel_*): a child that floods stdout, never reads stdin,
// writes giant lines or invalid UTF-8, exits mid-frame, ignores SIGTERM, or leaves a grandchild
// holding its stdout cannot hang or crash the caller. Every wait takes a deadline. close() kills
// the whole process group (SIGKILL) and reaps it; the destructor does the same. conform ignores
// SIGPIPE process-wide (ignoreSigpipe()); children get default signal dispositions and an empty
// signal mask, in a process group of their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/wire/framing.h"

namespace conform::wire {

using SteadyTime = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

// How a process ended. Exit-by-signal is kept apart from exit codes (Boost.Process v1 reported 11
// both for SIGSEGV and exit(11)).
struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // signal number when signaled
  std::string str() const;  // "exit 0", "killed by signal 9 (SIGKILL)"
  bool success() const { return !signaled && code == 0; }
};

struct ChannelEvent {
  enum class Kind {
    Frame,        // frame: a complete frame from the peer (see FrameEvent for flags)
    FrameError,   // frame: Oversized or InvalidUtf8 from the decoder
    Stderr,       // text: one stderr line (without LF; capped at 64 KiB, rest dropped and noted)
    Eof,          // the peer's output stream ended (stdout EOF / memory peer closed its write side)
    Exited,       // status: the process ended and was reaped (after its Eof when possible)
    WriteFailed,  // text: a write could not be completed (EPIPE: peer closed stdin; or blocked)
  };
  Kind kind = Kind::Frame;
  FrameEvent frame;        // Frame, FrameError
  std::string text;        // Stderr, WriteFailed
  ExitStatus status;       // Exited
  SteadyTime at{};         // when the reactor saw it (real time)
};

class Reactor;

class Channel {
 public:
  virtual ~Channel() = default;

  // Queues bytes exactly as given (the caller adds the LF: use writeFrame for JSON frames).
  // Returns false when the write side is closed or the buffer limit is hit.
  virtual bool write(std::string_view bytes) = 0;
  bool writeFrame(std::string_view json) { return write(encodeFrame(json)); }
  // Runs the reactor until every queued byte is written or the deadline passes.
  virtual bool flush(SteadyTime deadline) = 0;
  virtual std::size_t pendingWriteBytes() const = 0;

  // Closes our write side (the peer sees EOF on stdin) once queued bytes are flushed… or at once
  // when `discard_pending`.
  virtual void closeWrite(bool discard_pending = false) = 0;

  // Fault injection: stop reading the peer's output (its pipe fills and it blocks) / resume.
  virtual void stallReading(bool stall) = 0;

  // Next event, running the reactor until one is available or the deadline passes.
  virtual std::optional<ChannelEvent> next(SteadyTime deadline) = 0;
  // Event already queued, without running the reactor.
  virtual std::optional<ChannelEvent> poll() = 0;

  // Process channels: kill the process group (SIGKILL unless `graceful`, which sends SIGTERM
  // first and waits up to `grace`), then reap, bounded. Memory channels: close both directions.
  virtual void close(bool graceful = false, milliseconds grace = milliseconds(0)) = 0;
  // Sends a signal to the whole process group (no-op after reaping or for memory channels).
  virtual void signal(int signo) = 0;
  virtual bool running() const = 0;
  virtual std::optional<ExitStatus> exitStatus() const = 0;
  virtual int pid() const = 0;  // -1 for memory channels
  virtual Reactor& reactor() = 0;
};

struct SpawnOptions {
  std::string program;                 // resolved with PATH of *our* environment if not a path
  std::vector<std::string> args;
  // When set, the child's environment is exactly this (PROTOCOL §1.2: an engine clears the
  // environment and sets only configured variables). When unset, the child inherits ours.
  std::optional<std::map<std::string, std::string>> env;
  std::optional<std::string> cwd;
  std::size_t max_frame = kMaxFrameBytes;
  std::size_t max_write_buffer = 64u << 20;  // bytes queued for a peer that does not read
  bool capture_stderr = true;                // false: inherit our stderr (record passes through)
};

struct SpawnError {
  std::string message;  // "cannot start ./my-plugin: No such file or directory"
};

class Reactor {
 public:
  Reactor();
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // Runs I/O until some channel of this reactor has an event queued, or the deadline passes.
  // Returns the channel with an event (its event stays queued: call poll()), or nullptr.
  Channel* waitAny(SteadyTime deadline);
  // Runs ready handlers without blocking.
  void pollOnce();

  // Impl is private to channel.cpp (Boost.Asio + Boost.Process v2 live only there).
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<Channel> spawnProcess(Reactor&, const SpawnOptions&, SpawnError* err = nullptr);

// A channel over file descriptors we already own: a plugin's own stdin (read) and stdout (write),
// or `conform record`'s side of a tap. The fds are set non-blocking; close() closes them.
std::unique_ptr<Channel> fdChannel(Reactor&, int read_fd, int write_fd,
                                   std::size_t max_frame = kMaxFrameBytes);

// Two connected in-memory ends (a's writes are b's frames and vice versa), for tests. Frames go
// through the same FrameDecoder as pipes, so limits and UTF-8 checks behave identically.
struct ChannelPair {
  std::unique_ptr<Channel> a, b;
};
ChannelPair memoryPair(Reactor&, std::size_t max_frame = kMaxFrameBytes);

// Ignores SIGPIPE for this process (idempotent). Called by every executable's main and by the
// Reactor constructor: a write to a dead child must be an error value, never death by signal.
void ignoreSigpipe();

inline SteadyTime deadlineIn(std::chrono::nanoseconds d) { return std::chrono::steady_clock::now() + d; }

}  // namespace conform::wire
