// core/protocol/emit.h — plugin/emit and plugin/emit_result (PROTOCOL.md §11).
//
// Decoding is shape-only: name length/controls and payload size are the §11.4 row-4 checks, which
// produce an emit_result (bus dropped, oversized_event), not a decode failure — a decode failure of
// plugin/emit is fatal (EMIT-22). checkEmitLimits() implements row 4 for engines and monitors.
#pragma once

#include <optional>
#include <string>

#include "core/protocol/common.h"

namespace conform::protocol {

// ExtensionEmitParams (§11.1, closed; EMIT-01).
struct EmitParams {
  SessionId session_id;
  ContextToken context_id;
  std::string name;
  JsonValue payload;
  friend bool operator==(const EmitParams&, const EmitParams&) = default;
};
bool fromJSON(const json::Value&, EmitParams&, json::Path);
json::Value toJSON(const EmitParams&, json::Allocator&);

// ExtensionEmitResultParams (§11.2, closed; EMIT-03).
struct EmitResultParams {
  std::string name;
  EmitStatus bus = EmitStatus::Rejected;
  EmitStatus durable = EmitStatus::Rejected;
  std::optional<std::string> reason;
  friend bool operator==(const EmitResultParams&, const EmitResultParams&) = default;
};
bool fromJSON(const json::Value&, EmitResultParams&, json::Path);
json::Value toJSON(const EmitResultParams&, json::Allocator&);

// §11.4 row 4 (EMIT-23): name 1–128 characters and control-free, compact payload ≤ 262,144 bytes,
// serialized `plugin_event_added` record ≤ 278,528 bytes. nullopt when within limits, else a reason.
// `plugin` is the configured name of the emitting plugin (part of the serialized record).
std::optional<std::string> checkEmitLimits(std::string_view plugin, const EmitParams&);

}  // namespace conform::protocol
