// core/clock — every time-dependent rule (grant expiry, quotas, interception/tool timeouts,
// shutdown grace, diagnostic flushing) reads a Clock, so tests run them exactly and fast on a
// VirtualClock that they advance by hand, and live runs use the RealClock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace conform::clock {

using Duration = std::chrono::nanoseconds;
// A monotonic instant: time since the clock's own epoch (the RealClock's steady_clock epoch, or
// the VirtualClock's start at 0).
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;
using WallTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

using namespace std::chrono_literals;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Wall-clock time for timestamps (RFC 3339 in events). A virtual clock derives it from a fixed
  // start so output is reproducible.
  virtual WallTime wallNow() const = 0;
  virtual bool isVirtual() const = 0;
};

class RealClock final : public Clock {
 public:
  TimePoint now() const override;
  WallTime wallNow() const override;
  bool isVirtual() const override { return false; }
  static RealClock& instance();
};

// Starts at TimePoint{0} and wall time `wall_start` (default 2026-01-01T00:00:00Z); only moves when
// advance() or set() is called. Thread-safe.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(WallTime wall_start = defaultWallStart());
  TimePoint now() const override;
  WallTime wallNow() const override;
  bool isVirtual() const override { return true; }
  void advance(Duration d);
  // Moves to t; never backwards (a t before now() is ignored).
  void set(TimePoint t);
  static WallTime defaultWallStart();

 private:
  mutable std::mutex mu_;
  TimePoint now_{};
  WallTime wall_start_;
};

// RFC 3339 UTC with microseconds: 2026-01-01T00:00:00.000000Z
std::string formatRfc3339(WallTime t);

// Timers for single-threaded state machines: schedule callbacks at clock instants, then call
// runDue(clock.now()) from the owner's loop (or after VirtualClock::advance). Callbacks due at
// the same instant run in scheduling order. A callback may schedule or cancel others.
class TimerQueue {
 public:
  using Id = std::uint64_t;
  Id schedule(TimePoint at, std::function<void()> fn);
  bool cancel(Id id);
  // Runs every callback with at <= now, in (at, id) order. Returns how many ran.
  std::size_t runDue(TimePoint now);
  // Earliest pending instant, or TimePoint::max() when empty.
  TimePoint nextDue() const;
  bool empty() const { return timers_.empty(); }
  std::size_t size() const { return timers_.size(); }

 private:
  std::map<std::pair<TimePoint, Id>, std::function<void()>> timers_;
  std::map<Id, TimePoint> index_;
  Id next_ = 1;
};

}  // namespace conform::clock
