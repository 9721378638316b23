// mock_engine/delivery_queue — the per-plugin bounded FIFO of pending deliveries (PROTOCOL §9.1;
// EVT-12…16, BUS-08). One queue per connection, shared by plugin/event and plugin/bus_event, at
// most 1024 records (S6 §Event streaming). Admission on a full queue evicts by class, oldest first:
//   chunk    evicts the oldest chunk, else the incoming chunk is dropped;
//   ordinary evicts the oldest chunk, else the oldest ordinary, else it is dropped;
//   terminal evicts the oldest chunk, else ordinary, else terminal.
// An admitted record always goes to the tail (EVT-15). push() reports what was lost so the engine
// can count dropped_events per class and raise `event_drop` diagnostics (EVT-16) and spend the
// lost records' grants before activation (EMIT-12).
//
// Cost: O(1) amortised per push/pop. Evicted records leave holes that are compacted once they
// outnumber the live ones, so memory stays bounded by the capacity even when the plugin never
// reads (bench/engine_memory.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

namespace conform::engine {

// PROTOCOL §9.1 / §18: 1024 records per plugin (S6 §Event streaming).
inline constexpr std::size_t kDeliveryQueueCapacity = 1024;

enum class RecordClass { Chunk = 0, Ordinary = 1, Terminal = 2 };
const char* toString(RecordClass);

// One pending delivery. `frame_prefix` + token + `frame_suffix` is the frame: the context token
// is the only per-write part, so the payload is serialised once per event for all recipients.
struct Delivery {
  RecordClass cls = RecordClass::Ordinary;
  std::string session_id;
  std::string token;
  std::shared_ptr<const std::string> frame_prefix;
  std::shared_ptr<const std::string> frame_suffix;
};

struct PushResult {
  bool admitted = true;
  // The record that was lost: the evicted one, or the incoming one when not admitted.
  std::optional<Delivery> lost;
};

class DeliveryQueue {
 public:
  explicit DeliveryQueue(std::size_t capacity = kDeliveryQueueCapacity) : cap_(capacity) {}
  PushResult push(Delivery d);
  std::optional<Delivery> pop();
  std::size_t size() const { return live_; }
  bool empty() const { return live_ == 0; }
  std::size_t capacity() const { return cap_; }
  // Connection ended: drops everything (EVT-22); returns the dropped records (grants to spend).
  std::deque<Delivery> clear();
  // Fault gallery only (evict_terminal_first, EVT-14 broken): an incoming terminal record evicts
  // the oldest terminal before any chunk or ordinary record.
  void setTerminalFirstEviction(bool v) { terminal_first_ = v; }

 private:
  struct Slot {
    Delivery d;
    bool alive = true;
  };
  void compact();
  std::size_t cap_;
  std::deque<Slot> slots_;          // FIFO, with holes left by eviction
  std::uint64_t front_id_ = 0;      // id of slots_.front()
  std::deque<std::uint64_t> by_class_[3];  // ids of live slots per class, oldest first
  std::size_t live_ = 0;
  bool terminal_first_ = false;
};

}  // namespace conform::engine
