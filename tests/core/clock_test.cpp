#include <catch2/catch.hpp>

#include <vector>

#include "core/clock/clock.h"

using namespace conform::clock;

TEST_CASE("VirtualClock moves only when told", "[clock]") {
  VirtualClock c;
  CHECK(c.now() == TimePoint{});
  c.advance(1500ms);
  CHECK(c.now() == TimePoint{} + 1500ms);
  c.set(TimePoint{} + 1s);  // never backwards
  CHECK(c.now() == TimePoint{} + 1500ms);
  CHECK(formatRfc3339(c.wallNow()) == "2026-01-01T00:00:01.500000Z");
  CHECK(c.isVirtual());
}

TEST_CASE("RealClock is monotonic", "[clock]") {
  auto& c = RealClock::instance();
  auto a = c.now();
  auto b = c.now();
  CHECK(b >= a);
  CHECK_FALSE(c.isVirtual());
}

TEST_CASE("TimerQueue runs due callbacks in order and supports cancel", "[clock]") {
  VirtualClock c;
  TimerQueue q;
  std::vector<int> ran;
  q.schedule(c.now() + 2s, [&] { ran.push_back(2); });
  auto id = q.schedule(c.now() + 1s, [&] { ran.push_back(1); });
  q.schedule(c.now() + 1s, [&] { ran.push_back(11); });
  CHECK(q.nextDue() == TimePoint{} + 1s);
  CHECK(q.cancel(id));
  CHECK_FALSE(q.cancel(id));
  c.advance(999ms);
  CHECK(q.runDue(c.now()) == 0);
  c.advance(1ms);
  CHECK(q.runDue(c.now()) == 1);
  // A callback that schedules another due now runs it in the same pass.
  q.schedule(c.now(), [&] { q.schedule(c.now(), [&] { ran.push_back(99); }); });
  CHECK(q.runDue(c.now()) == 2);
  c.advance(1s);
  q.runDue(c.now());
  CHECK(ran == std::vector<int>{11, 99, 2});
  CHECK(q.empty());
}
