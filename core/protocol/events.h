// core/protocol/events.h — plugin/event and plugin/bus_event (PROTOCOL.md §9, §10).
//
// The event payload is kept opaque except for its string `type` [chosen C22; EVT-10/11]: history is
// additive and versionless, so a 0.0.6 receiver must never fail on an unknown variant or member.
// classifyEvent() implements the three delivery classes of §9.1 (EVT-13) for the engine's queue and
// for monitors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/protocol/common.h"

namespace conform::protocol {

// ExtensionEventParams (§9, closed; EVT-02). `event` must be an object with a string `type`.
struct EventParams {
  SessionId session_id;
  ContextToken context_id;
  std::uint64_t seq = 1;  // ≥ 1
  JsonValue event;
  Timestamp timestamp;
  friend bool operator==(const EventParams&, const EventParams&) = default;
  // The payload's `type` ("" if the payload has none, which the decoder never lets through).
  std::string_view eventType() const;
};
bool fromJSON(const json::Value&, EventParams&, json::Path);
json::Value toJSON(const EventParams&, json::Allocator&);

// ExtensionBusEventParams (§10, closed; BUS-02).
struct BusEventParams {
  SessionId session_id;
  std::optional<ContextToken> context_id;  // opt (BUS-05/06)
  std::string plugin;
  std::string name;
  JsonValue payload;
  friend bool operator==(const BusEventParams&, const BusEventParams&) = default;
};
bool fromJSON(const json::Value&, BusEventParams&, json::Path);
json::Value toJSON(const BusEventParams&, json::Allocator&);

// Delivery classes of §9.1 (EVT-13), ordered by priority: chunk < ordinary < terminal.
enum class DeliveryClass : std::uint8_t { Chunk = 0, Ordinary = 1, Terminal = 2 };
std::string_view toString(DeliveryClass);

// Class of an event payload (the `event` member of plugin/event): `tool_call_progress` with a
// non-null `output_chunk` is chunk, `tool_call_terminated` is terminal, everything else (including
// a payload that is not an object) is ordinary. Bus events are always ordinary (BUS-08).
DeliveryClass classifyEvent(const json::Value& event);

}  // namespace conform::protocol
