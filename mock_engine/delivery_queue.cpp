// mock_engine/delivery_queue — see delivery_queue.h.
#include "mock_engine/delivery_queue.h"

namespace conform::engine {

const char* toString(RecordClass c) {
  switch (c) {
    case RecordClass::Chunk: return "chunk";
    case RecordClass::Ordinary: return "ordinary";
    case RecordClass::Terminal: return "terminal";
  }
  return "ordinary";
}

PushResult DeliveryQueue::push(Delivery d) {
  PushResult r;
  if (live_ >= cap_) {
    // Evict the oldest record of the lowest class that ranks no higher than the incoming one.
    int victim = -1;
    if (terminal_first_ && d.cls == RecordClass::Terminal && !by_class_[2].empty()) victim = 2;
    for (int c = 0; victim < 0 && c <= static_cast<int>(d.cls); ++c)
      if (!by_class_[c].empty()) { victim = c; break; }
    if (victim < 0) {
      r.admitted = false;
      r.lost = std::move(d);
      return r;
    }
    std::uint64_t id = by_class_[victim].front();
    by_class_[victim].pop_front();
    Slot& s = slots_[static_cast<std::size_t>(id - front_id_)];
    s.alive = false;
    r.lost = std::move(s.d);
    s.d = Delivery{};
    --live_;
  }
  std::uint64_t id = front_id_ + slots_.size();
  by_class_[static_cast<int>(d.cls)].push_back(id);
  slots_.push_back(Slot{std::move(d), true});
  ++live_;
  if (slots_.size() > 2 * cap_ + 16) compact();
  return r;
}

std::optional<Delivery> DeliveryQueue::pop() {
  while (!slots_.empty() && !slots_.front().alive) {
    slots_.pop_front();
    ++front_id_;
  }
  if (slots_.empty()) return std::nullopt;
  Delivery d = std::move(slots_.front().d);
  by_class_[static_cast<int>(d.cls)].pop_front();  // FIFO within a class: it is the front
  slots_.pop_front();
  ++front_id_;
  --live_;
  return d;
}

std::deque<Delivery> DeliveryQueue::clear() {
  std::deque<Delivery> out;
  while (auto d = pop()) out.push_back(std::move(*d));
  slots_.clear();
  for (auto& q : by_class_) q.clear();
  live_ = 0;
  return out;
}

void DeliveryQueue::compact() {
  // Rebuild without holes; ids are renumbered from front_id_.
  std::deque<Slot> fresh;
  for (auto& q : by_class_) q.clear();
  for (auto& s : slots_) {
    if (!s.alive) continue;
    std::uint64_t id = front_id_ + fresh.size();
    by_class_[static_cast<int>(s.d.cls)].push_back(id);
    fresh.push_back(std::move(s));
  }
  slots_ = std::move(fresh);
}

}  // namespace conform::engine
