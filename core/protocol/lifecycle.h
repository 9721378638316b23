// core/protocol/lifecycle.h — handshake, liveness and shutdown (PROTOCOL.md §6, §7).
//
// Profiles: the 0.0.6 shapes live in conform::protocol, the 0.0.4 shapes that differ (DELTA §3.1–3.3:
// no `producer_messaging` in either capability object, version constant "0.0.4", tool declarations
// without `output`) in conform::protocol::v004. Separate types rather than a runtime flag because the
// whole point of a closed object is that a decoder rejects the other profile's member; a flag would
// make every decoder take a profile argument and every struct carry a member that half the time must
// not exist. The decoders check the `protocol_version` constant too (INIT-02, INIT-09), so a decoded
// InitializeParams/Result always carries its profile's version.
#pragma once

#include <string>
#include <vector>

#include "core/protocol/common.h"
#include "core/protocol/tools.h"

namespace conform::protocol {

// ExtensionEngineCapabilities (§6.1, closed, all required; INIT-03). 0.0.6: 7 booleans.
struct EngineCapabilities {
  bool ping = true;
  bool shutdown = true;
  bool tools = true;
  bool event_streaming = true;
  bool event_publishing = true;
  bool interception = true;
  bool producer_messaging = false;  // [chosen C1]: always present (INIT-03, INIT-05)
  friend bool operator==(const EngineCapabilities&, const EngineCapabilities&) = default;
};
bool fromJSON(const json::Value&, EngineCapabilities&, json::Path);
json::Value toJSON(const EngineCapabilities&, json::Allocator&);

// ExtensionInitializeParams (§6.1; INIT-02). protocol_version must be exactly "0.0.6".
struct InitializeParams {
  std::string protocol_version = "0.0.6";
  std::string engine_version;
  EngineCapabilities capabilities;
  friend bool operator==(const InitializeParams&, const InitializeParams&) = default;
};
bool fromJSON(const json::Value&, InitializeParams&, json::Path);
json::Value toJSON(const InitializeParams&, json::Allocator&);

// ExtensionPluginCapabilities (§6.2, closed, all required; INIT-16, INIT-17). 0.0.6: 8 members.
struct PluginCapabilities {
  bool tools = false;
  bool resources = false;  // reserved (INIT-25)
  bool subscribe_events = false;
  bool subscribe_bus = false;
  bool publish_bus = false;
  bool publish_session_events = false;  // legacy; route rejected in 0.0.6 (EMIT-16)
  bool producer_messaging = false;      // [chosen C1] required (INIT-17)
  std::vector<Hook> intercept;          // unknown names are malformed (INIT-16); duplicates kept
  friend bool operator==(const PluginCapabilities&, const PluginCapabilities&) = default;
};
bool fromJSON(const json::Value&, PluginCapabilities&, json::Path);
json::Value toJSON(const PluginCapabilities&, json::Allocator&);

// ExtensionInitializeResult (§6.2, closed, all required; INIT-09). protocol_version must be "0.0.6".
// Engines that need the §6.3 step order (string check, version check, then strict decode) inspect
// `protocol_version` themselves before calling fromJSON; errors under `tools[i].output` are the
// [chosen] "invalid output declaration" of §6.3 step 6 (TOOL-04).
struct InitializeResult {
  std::string protocol_version = "0.0.6";
  std::string name;
  std::string version;
  PluginCapabilities capabilities;
  std::vector<ToolDeclaration> tools;
  friend bool operator==(const InitializeResult&, const InitializeResult&) = default;
};
bool fromJSON(const json::Value&, InitializeResult&, json::Path);
json::Value toJSON(const InitializeResult&, json::Allocator&);

// plugin/ping params and result, plugin/shutdown params: exactly `{}` (PING-01, SHUT-01, SHUT-10).
using PingParams = Empty;
using PingResult = Empty;
using ShutdownParams = Empty;

namespace v004 {

// DELTA §3.2: six booleans; `producer_messaging` is an unknown member here.
struct EngineCapabilities {
  bool ping = true;
  bool shutdown = true;
  bool tools = true;
  bool event_streaming = true;
  bool event_publishing = true;
  bool interception = true;
  friend bool operator==(const EngineCapabilities&, const EngineCapabilities&) = default;
};
bool fromJSON(const json::Value&, EngineCapabilities&, json::Path);
json::Value toJSON(const EngineCapabilities&, json::Allocator&);

// DELTA §3.1: protocol_version must be exactly "0.0.4".
struct InitializeParams {
  std::string protocol_version = "0.0.4";
  std::string engine_version;
  EngineCapabilities capabilities;
  friend bool operator==(const InitializeParams&, const InitializeParams&) = default;
};
bool fromJSON(const json::Value&, InitializeParams&, json::Path);
json::Value toJSON(const InitializeParams&, json::Allocator&);

// DELTA §3.3: seven members (no `producer_messaging`).
struct PluginCapabilities {
  bool tools = false;
  bool resources = false;
  bool subscribe_events = false;
  bool subscribe_bus = false;
  bool publish_bus = false;
  bool publish_session_events = false;
  std::vector<Hook> intercept;
  friend bool operator==(const PluginCapabilities&, const PluginCapabilities&) = default;
};
bool fromJSON(const json::Value&, PluginCapabilities&, json::Path);
json::Value toJSON(const PluginCapabilities&, json::Allocator&);

struct InitializeResult {
  std::string protocol_version = "0.0.4";
  std::string name;
  std::string version;
  PluginCapabilities capabilities;
  std::vector<ToolDeclaration> tools;  // v004::ToolDeclaration: no `output`
  friend bool operator==(const InitializeResult&, const InitializeResult&) = default;
};
bool fromJSON(const json::Value&, InitializeResult&, json::Path);
json::Value toJSON(const InitializeResult&, json::Allocator&);

}  // namespace v004
}  // namespace conform::protocol
