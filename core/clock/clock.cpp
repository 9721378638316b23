#include "core/clock/clock.h"

#include <ctime>
#include <fmt/format.h>

namespace conform::clock {

TimePoint RealClock::now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}
WallTime RealClock::wallNow() const {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}
RealClock& RealClock::instance() {
  static RealClock c;
  return c;
}

VirtualClock::VirtualClock(WallTime wall_start) : wall_start_(wall_start) {}
TimePoint VirtualClock::now() const {
  std::lock_guard<std::mutex> g(mu_);
  return now_;
}
WallTime VirtualClock::wallNow() const {
  std::lock_guard<std::mutex> g(mu_);
  return wall_start_ + std::chrono::duration_cast<std::chrono::microseconds>(now_.time_since_epoch());
}
void VirtualClock::advance(Duration d) {
  std::lock_guard<std::mutex> g(mu_);
  if (d.count() > 0) now_ += d;
}
void VirtualClock::set(TimePoint t) {
  std::lock_guard<std::mutex> g(mu_);
  if (t > now_) now_ = t;
}
WallTime VirtualClock::defaultWallStart() {
  // 2026-01-01T00:00:00Z
  return WallTime(std::chrono::microseconds(1767225600LL * 1000000LL));
}

std::string formatRfc3339(WallTime t) {
  auto us = t.time_since_epoch().count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  if (frac < 0) { frac += 1000000; --secs; }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

TimerQueue::Id TimerQueue::schedule(TimePoint at, std::function<void()> fn) {
  Id id = next_++;
  timers_.emplace(std::make_pair(at, id), std::move(fn));
  index_.emplace(id, at);
  return id;
}
bool TimerQueue::cancel(Id id) {
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  timers_.erase({it->second, id});
  index_.erase(it);
  return true;
}
std::size_t TimerQueue::runDue(TimePoint now) {
  std::size_t n = 0;
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    index_.erase(node.key().second);
    node.mapped()();
    ++n;
  }
  return n;
}
TimePoint TimerQueue::nextDue() const {
  return timers_.empty() ? TimePoint::max() : timers_.begin()->first.first;
}

}  // namespace conform::clock
