// core/protocol/common.h — scalar aliases, enumerations and the copyable JSON holder shared by every
// message of the cookie-agent extension protocol (PROTOCOL.md §5).
//
// Why a header of its own: engine, plugin SDK and monitors all need the enumerations (hooks, emit
// statuses, diagnostic kinds …) without pulling in the shapes of every message. Every enumeration has
// toString() (the exact wire spelling) and parseX() (nullopt for anything else, never an exception),
// plus fromJSON/toJSON so message structs can use them directly with json::ObjectMapper.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json/json.h"

namespace conform::protocol {

// ---------------------------------------------------------------------------------------------
// Scalars (§5.1). Kept as plain strings so callers can echo them byte-exactly (a ContextToken is
// opaque and MUST be echoed unchanged); the decoders check the UUID / date-time formats.
// ---------------------------------------------------------------------------------------------
using SessionId = std::string;          // UUID (§5.1)
using AttemptId = std::string;          // UUID (§5.1)
using ToolCallId = std::string;         // UUID (§5.1)
using ContextToken = std::string;       // opaque (§5.1, §11.3)
using Timestamp = std::string;          // RFC 3339 date-time (§5.1)
using ProducerId = std::string;         // UUID, runtime only (§5.1, 0.0.6)
using ProducerMessageId = std::string;  // UUID [chosen C10] (§5.1, 0.0.6)

// A JsonValue member (§5.1 "any JSON"): a deep copy in its own allocator, copyable so message structs
// stay regular value types (rapidjson::Document alone is move-only).
class JsonValue {
 public:
  JsonValue() = default;  // null
  explicit JsonValue(const json::Value& v) { json::deepCopy(doc_, v, doc_.GetAllocator()); }
  JsonValue(const JsonValue& o) { json::deepCopy(doc_, o.doc_, doc_.GetAllocator()); }
  JsonValue(JsonValue&& o) noexcept : doc_(std::move(o.doc_)) {}
  JsonValue& operator=(const JsonValue& o) {
    if (this != &o) json::deepCopy(doc_, o.doc_, doc_.GetAllocator());
    return *this;
  }
  JsonValue& operator=(JsonValue&& o) noexcept {
    doc_ = std::move(o.doc_);
    return *this;
  }
  // Parses trusted text (tests, constants). Returns a null value on error.
  static JsonValue fromText(std::string_view text);

  const json::Value& get() const { return doc_; }
  json::Document& doc() { return doc_; }
  bool isNull() const { return doc_.IsNull(); }
  friend bool operator==(const JsonValue& a, const JsonValue& b) { return json::equal(a.doc_, b.doc_); }

 private:
  json::Document doc_;
};
bool fromJSON(const json::Value&, JsonValue&, json::Path);
json::Value toJSON(const JsonValue&, json::Allocator&);

// The closed empty object `{}` (ping params/result, shutdown params, recovery start params, the
// `{}` results of §4 #17, #24, #25, #27). Any member makes it malformed (PING-01, RPC-12).
struct Empty {
  friend bool operator==(const Empty&, const Empty&) { return true; }
};
bool fromJSON(const json::Value&, Empty&, json::Path);
json::Value toJSON(const Empty&, json::Allocator&);

// ---------------------------------------------------------------------------------------------
// Enumerations (§5.2). X-macro free on purpose: each has a small table in common.cpp.
// ---------------------------------------------------------------------------------------------

// ExtensionInterceptionHook: the 13 hooks, in the order of PROTOCOL §5.2 (HOOK-03).
enum class Hook : std::uint8_t {
  ToolBeforeCall,
  ToolAfterResult,
  AgentBeforeStart,
  SessionBeforeCompact,
  UserBeforeInput,
  ModelBeforeRequest,
  ProviderBeforeHeaders,
  ProviderBeforeRequest,
  ProviderAfterResponse,
  MessageEnd,
  ModelBeforeSelect,
  SessionBeforeFork,
  SessionBeforeRevert,
};
inline constexpr std::size_t kHookCount = 13;  // HOOK-03, §5.2
std::string_view toString(Hook);
std::optional<Hook> parseHook(std::string_view);
const std::array<Hook, kHookCount>& allHooks();
// "plugin/intercept/<hook>" (HOOK-02).
std::string_view hookMethod(Hook);
// The hook of a "plugin/intercept/<hook>" method name, nullopt otherwise.
std::optional<Hook> hookOfMethod(std::string_view method);

// ExtensionEmitStatus (§5.2, §11.2, EMIT-03).
enum class EmitStatus : std::uint8_t { Published, Dropped, Rejected };
std::string_view toString(EmitStatus);
std::optional<EmitStatus> parseEmitStatus(std::string_view);

// ExtensionMessageRole (§5.2).
enum class MessageRole : std::uint8_t { System, User, Assistant, Tool };
std::string_view toString(MessageRole);
std::optional<MessageRole> parseMessageRole(std::string_view);

// ExtensionModelSelectSource (§5.2, HOOK-51).
enum class SelectSource : std::uint8_t { User, Config, FallbackRestore };
std::string_view toString(SelectSource);
std::optional<SelectSource> parseSelectSource(std::string_view);

// PluginDiagnosticKind (§5.2, §12.3). The last two exist only in 0.0.6 (QUOTA-17); a Profile says
// which kinds it knows (Profile::diagnosticKinds()).
enum class DiagnosticKind : std::uint8_t {
  EventDrop,
  InterceptionTimeout,
  InterceptionCrash,
  HookBlocked,
  OversizedEvent,
  InvalidModification,
  UnsupportedCapability,
  ContextMismatch,
  RateLimited,
  RecoveryFailed,    // 0.0.6
  RecoveryDisabled,  // 0.0.6
};
inline constexpr std::size_t kDiagnosticKindCount = 11;  // QUOTA-17: 9 in 0.0.4, 11 in 0.0.6
std::string_view toString(DiagnosticKind);
std::optional<DiagnosticKind> parseDiagnosticKind(std::string_view);

// ProducerDeliveryMode (§5.2, §14.4, PROD-10). 0.0.6 only.
enum class DeliveryMode : std::uint8_t { Steer, Queue };
std::string_view toString(DeliveryMode);
std::optional<DeliveryMode> parseDeliveryMode(std::string_view);

// PluginRecoveryStatus (§15.3, RECOV-08). Runtime only, never on the wire; 0.0.6 only.
enum class RecoveryStatus : std::uint8_t { Starting, Ready, Failed, Disabled };
std::string_view toString(RecoveryStatus);
std::optional<RecoveryStatus> parseRecoveryStatus(std::string_view);

// AdaptorId (§5.2; ResolvedModelRef.adapter_id).
enum class AdaptorId : std::uint8_t {
  Anthropic,
  OpenaiChat,
  OpenaiResponses,
  OpenaiCompatible,
  GoogleGemini,
  GoogleVertexGemini,
  AwsBedrockConverse,
  AzureOpenaiChat,
  AzureOpenaiResponses,
  CohereV2Chat,
};
std::string_view toString(AdaptorId);
std::optional<AdaptorId> parseAdaptorId(std::string_view);

// Hook result actions (§13.2). Separate enums so a decoder rejects e.g. "transform" in a tool hook.
enum class AllowBlock : std::uint8_t { Allow, Block };
std::string_view toString(AllowBlock);
std::optional<AllowBlock> parseAllowBlock(std::string_view);

enum class KeepReplace : std::uint8_t { Keep, Replace };
std::string_view toString(KeepReplace);
std::optional<KeepReplace> parseKeepReplace(std::string_view);

enum class InputAction : std::uint8_t { Allow, Transform, Handled };  // user_before_input
std::string_view toString(InputAction);
std::optional<InputAction> parseInputAction(std::string_view);

enum class RevertAction : std::uint8_t { Allow, Block, Override };  // session_before_revert
std::string_view toString(RevertAction);
std::optional<RevertAction> parseRevertAction(std::string_view);

// JSON codecs of the enumerations: a string with exactly one of the wire spellings.
bool fromJSON(const json::Value&, Hook&, json::Path);
bool fromJSON(const json::Value&, EmitStatus&, json::Path);
bool fromJSON(const json::Value&, MessageRole&, json::Path);
bool fromJSON(const json::Value&, SelectSource&, json::Path);
bool fromJSON(const json::Value&, DiagnosticKind&, json::Path);
bool fromJSON(const json::Value&, DeliveryMode&, json::Path);
bool fromJSON(const json::Value&, AdaptorId&, json::Path);
bool fromJSON(const json::Value&, AllowBlock&, json::Path);
bool fromJSON(const json::Value&, KeepReplace&, json::Path);
bool fromJSON(const json::Value&, InputAction&, json::Path);
bool fromJSON(const json::Value&, RevertAction&, json::Path);
template <class E>
  requires std::is_enum_v<E>
json::Value toJSON(E e, json::Allocator& a) {
  return json::str(toString(e), a);
}

}  // namespace conform::protocol
