// core/protocol/hooks.h — params and results of the 13 plugin/intercept/* hooks (PROTOCOL.md §13.2,
// §5.3). Identical in both profiles (DELTA §3 "unchanged types"); semantics differ (HOOK-22, HOOK-25)
// but not shapes.
//
// Every params object starts with session_id and context_id (§13.2). Members whose shape the
// protocol leaves open are kept as JsonValue: `arguments`, `prompt_context`, `payload`, message
// `content`, and PersistedAssistantPart (a tagged union of 8 closed variants whose nested content is
// engine-defined; the JSON Schema checks the variant members, the typed decoder only requires an
// object with a string `type` — checkPersistedPart() runs the variant member check for callers that
// want it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/protocol/common.h"

namespace conform::protocol {

// ---------------------------------------------------------------------------------------------
// Structured types of §5.3
// ---------------------------------------------------------------------------------------------

// ModelSelection (§5.3). `variant` is opt inside ModelBeforeSelectParams and req/null inside
// ResolvedModelRef.selection; ResolvedModelRef's codec enforces the latter and always writes it.
struct ModelSelection {
  std::string model;                   // 3–512 chars, provider/model form
  std::optional<std::string> variant;  // 1–64 chars, not "base"
  friend bool operator==(const ModelSelection&, const ModelSelection&) = default;
};
bool fromJSON(const json::Value&, ModelSelection&, json::Path);
json::Value toJSON(const ModelSelection&, json::Allocator&);

// ResolvedModelRef (§5.3).
struct ResolvedModelRef {
  ModelSelection selection;
  std::string provider_id;            // 1–128, ^[a-z0-9][a-z0-9._-]{0,127}$
  std::string model_id;               // 1–384 chars
  AdaptorId adapter_id = AdaptorId::Anthropic;
  std::string selection_fingerprint;  // 64 lowercase hex
  friend bool operator==(const ResolvedModelRef&, const ResolvedModelRef&) = default;
};
bool fromJSON(const json::Value&, ResolvedModelRef&, json::Path);
json::Value toJSON(const ResolvedModelRef&, json::Allocator&);

// ExtensionModelMessage (§5.3).
struct ModelMessage {
  MessageRole role = MessageRole::User;
  JsonValue content;  // engine's serialized role-specific content
  friend bool operator==(const ModelMessage&, const ModelMessage&) = default;
};
bool fromJSON(const json::Value&, ModelMessage&, json::Path);
json::Value toJSON(const ModelMessage&, json::Allocator&);

// ExtensionModelParamsAdjustments (§5.3): `{}` means no adjustment.
struct ParamsAdjustments {
  std::optional<std::uint64_t> max_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  friend bool operator==(const ParamsAdjustments&, const ParamsAdjustments&) = default;
};
bool fromJSON(const json::Value&, ParamsAdjustments&, json::Path);
json::Value toJSON(const ParamsAdjustments&, json::Allocator&);

// ExtensionInjectedMessage (§5.3).
struct InjectedMessage {
  MessageRole role = MessageRole::User;
  std::string content;
  friend bool operator==(const InjectedMessage&, const InjectedMessage&) = default;
};
bool fromJSON(const json::Value&, InjectedMessage&, json::Path);
json::Value toJSON(const InjectedMessage&, json::Allocator&);

// PersistedAssistantPart (§5.3), kept as JSON: an object with a string `type`.
using PersistedAssistantPart = JsonValue;
// Variant check of §5.3's table: known `type` and exactly its members. nullopt when it conforms.
std::optional<std::string> checkPersistedPart(const json::Value& part);

// ---------------------------------------------------------------------------------------------
// Hooks (§13.2), in the order of §5.2
// ---------------------------------------------------------------------------------------------

struct ToolBeforeCallParams {  // HOOK-17
  SessionId session_id;
  ContextToken context_id;
  std::string tool;
  JsonValue arguments;
  std::string permission_name;
  std::optional<std::string> resource;  // req/null
  friend bool operator==(const ToolBeforeCallParams&, const ToolBeforeCallParams&) = default;
};
struct ToolBeforeCallResult {  // HOOK-17
  AllowBlock action = AllowBlock::Allow;
  std::optional<std::string> reason;
  std::optional<JsonValue> modified_arguments;
  std::optional<std::string> message_to_model;
  friend bool operator==(const ToolBeforeCallResult&, const ToolBeforeCallResult&) = default;
};

struct ToolAfterResultParams {  // HOOK-23
  SessionId session_id;
  ContextToken context_id;
  std::string tool;
  JsonValue arguments;
  std::string result_content;
  bool is_error = false;
  friend bool operator==(const ToolAfterResultParams&, const ToolAfterResultParams&) = default;
};
struct ToolAfterResultResult {  // HOOK-23
  KeepReplace action = KeepReplace::Keep;
  std::optional<std::string> replacement_content;
  std::optional<std::string> note;
  friend bool operator==(const ToolAfterResultResult&, const ToolAfterResultResult&) = default;
};

struct AgentBeforeStartParams {  // HOOK-28
  SessionId session_id;
  ContextToken context_id;
  std::string agent_path;
  JsonValue prompt_context;
  friend bool operator==(const AgentBeforeStartParams&, const AgentBeforeStartParams&) = default;
};
struct AgentBeforeStartResult {  // HOOK-28
  std::optional<std::string> addendum;
  std::optional<std::string> append_to_system_prompt;
  std::optional<std::string> replace_system_prompt;
  std::optional<InjectedMessage> inject_message;
  friend bool operator==(const AgentBeforeStartResult&, const AgentBeforeStartResult&) = default;
};

struct SessionBeforeCompactParams {  // HOOK-33
  SessionId session_id;
  ContextToken context_id;
  std::string checkpoint_id;
  std::vector<std::string> additions;
  std::optional<std::string> instructions;
  friend bool operator==(const SessionBeforeCompactParams&, const SessionBeforeCompactParams&) = default;
};
struct SessionBeforeCompactResult {  // HOOK-33
  std::optional<std::string> addendum;
  bool cancel = false;  // opt=false
  std::optional<std::string> reason;
  std::optional<std::string> instructions_override;
  friend bool operator==(const SessionBeforeCompactResult&, const SessionBeforeCompactResult&) = default;
};

struct UserBeforeInputParams {  // HOOK-37
  SessionId session_id;
  ContextToken context_id;
  std::string text;
  friend bool operator==(const UserBeforeInputParams&, const UserBeforeInputParams&) = default;
};
struct UserBeforeInputResult {  // HOOK-37
  InputAction action = InputAction::Allow;
  std::optional<std::string> new_text;
  std::optional<std::string> reason;
  friend bool operator==(const UserBeforeInputResult&, const UserBeforeInputResult&) = default;
};

struct ModelBeforeRequestParams {  // HOOK-42
  SessionId session_id;
  ContextToken context_id;
  AttemptId attempt_id;
  std::vector<ModelMessage> messages;
  ResolvedModelRef model;
  ParamsAdjustments params;
  friend bool operator==(const ModelBeforeRequestParams&, const ModelBeforeRequestParams&) = default;
};
struct ModelBeforeRequestResult {  // HOOK-42
  KeepReplace action = KeepReplace::Keep;
  std::optional<std::vector<ModelMessage>> messages;
  std::optional<ParamsAdjustments> params_adjustments;
  friend bool operator==(const ModelBeforeRequestResult&, const ModelBeforeRequestResult&) = default;
};

using HeaderMap = std::map<std::string, std::string>;

struct ProviderBeforeHeadersParams {  // HOOK-45
  SessionId session_id;
  ContextToken context_id;
  AttemptId attempt_id;
  HeaderMap headers;  // always {} in 0.0.6
  friend bool operator==(const ProviderBeforeHeadersParams&, const ProviderBeforeHeadersParams&) = default;
};
struct ProviderBeforeHeadersResult {  // HOOK-45
  HeaderMap set;                     // opt={}
  std::vector<std::string> delete_;  // wire name `delete` (a C++ keyword); opt=[]
  friend bool operator==(const ProviderBeforeHeadersResult&, const ProviderBeforeHeadersResult&) = default;
};

struct ProviderBeforeRequestParams {  // HOOK-46
  SessionId session_id;
  ContextToken context_id;
  AttemptId attempt_id;
  JsonValue payload;
  friend bool operator==(const ProviderBeforeRequestParams&, const ProviderBeforeRequestParams&) = default;
};
struct ProviderBeforeRequestResult {  // HOOK-46
  KeepReplace action = KeepReplace::Keep;
  std::optional<JsonValue> payload;
  friend bool operator==(const ProviderBeforeRequestResult&, const ProviderBeforeRequestResult&) = default;
};

struct ProviderAfterResponseParams {  // HOOK-47
  SessionId session_id;
  ContextToken context_id;
  AttemptId attempt_id;
  std::uint16_t status = 200;
  HeaderMap headers;  // always {} in 0.0.6
  friend bool operator==(const ProviderAfterResponseParams&, const ProviderAfterResponseParams&) = default;
};
using ProviderAfterResponseResult = Empty;  // exactly {} (HOOK-47)

struct MessageEndParams {  // HOOK-48
  SessionId session_id;
  ContextToken context_id;
  AttemptId attempt_id;
  MessageRole role = MessageRole::Assistant;
  std::vector<PersistedAssistantPart> content;
  friend bool operator==(const MessageEndParams&, const MessageEndParams&) = default;
};
struct MessageEndResult {  // HOOK-48
  KeepReplace action = KeepReplace::Keep;
  std::optional<std::vector<PersistedAssistantPart>> content;
  friend bool operator==(const MessageEndResult&, const MessageEndResult&) = default;
};

struct ModelBeforeSelectParams {  // HOOK-50
  SessionId session_id;
  ContextToken context_id;
  std::optional<ModelSelection> from;  // absent for the first use
  ModelSelection to;
  SelectSource source = SelectSource::Config;
  friend bool operator==(const ModelBeforeSelectParams&, const ModelBeforeSelectParams&) = default;
};
// ExtensionAllowBlockResult: model_before_select and session_before_fork (HOOK-50, HOOK-52).
struct AllowBlockResult {
  AllowBlock action = AllowBlock::Allow;
  std::optional<std::string> reason;
  friend bool operator==(const AllowBlockResult&, const AllowBlockResult&) = default;
};

struct SessionBeforeForkParams {  // HOOK-52
  SessionId session_id;
  ContextToken context_id;
  std::uint64_t through_seq = 0;
  friend bool operator==(const SessionBeforeForkParams&, const SessionBeforeForkParams&) = default;
};

struct SessionBeforeRevertParams {  // HOOK-53
  SessionId session_id;
  ContextToken context_id;
  std::uint64_t through_seq = 0;
  std::optional<std::string> instructions;
  friend bool operator==(const SessionBeforeRevertParams&, const SessionBeforeRevertParams&) = default;
};
struct SessionBeforeRevertResult {  // HOOK-53
  RevertAction action = RevertAction::Allow;
  std::optional<std::string> reason;
  std::optional<std::string> instructions_override;
  friend bool operator==(const SessionBeforeRevertResult&, const SessionBeforeRevertResult&) = default;
};

#define CONFORM_PROTOCOL_CODEC(T)                     \
  bool fromJSON(const json::Value&, T&, json::Path); \
  json::Value toJSON(const T&, json::Allocator&);
CONFORM_PROTOCOL_CODEC(ToolBeforeCallParams)
CONFORM_PROTOCOL_CODEC(ToolBeforeCallResult)
CONFORM_PROTOCOL_CODEC(ToolAfterResultParams)
CONFORM_PROTOCOL_CODEC(ToolAfterResultResult)
CONFORM_PROTOCOL_CODEC(AgentBeforeStartParams)
CONFORM_PROTOCOL_CODEC(AgentBeforeStartResult)
CONFORM_PROTOCOL_CODEC(SessionBeforeCompactParams)
CONFORM_PROTOCOL_CODEC(SessionBeforeCompactResult)
CONFORM_PROTOCOL_CODEC(UserBeforeInputParams)
CONFORM_PROTOCOL_CODEC(UserBeforeInputResult)
CONFORM_PROTOCOL_CODEC(ModelBeforeRequestParams)
CONFORM_PROTOCOL_CODEC(ModelBeforeRequestResult)
CONFORM_PROTOCOL_CODEC(ProviderBeforeHeadersParams)
CONFORM_PROTOCOL_CODEC(ProviderBeforeHeadersResult)
CONFORM_PROTOCOL_CODEC(ProviderBeforeRequestParams)
CONFORM_PROTOCOL_CODEC(ProviderBeforeRequestResult)
CONFORM_PROTOCOL_CODEC(ProviderAfterResponseParams)
CONFORM_PROTOCOL_CODEC(MessageEndParams)
CONFORM_PROTOCOL_CODEC(MessageEndResult)
CONFORM_PROTOCOL_CODEC(ModelBeforeSelectParams)
CONFORM_PROTOCOL_CODEC(AllowBlockResult)
CONFORM_PROTOCOL_CODEC(SessionBeforeForkParams)
CONFORM_PROTOCOL_CODEC(SessionBeforeRevertParams)
CONFORM_PROTOCOL_CODEC(SessionBeforeRevertResult)
#undef CONFORM_PROTOCOL_CODEC

}  // namespace conform::protocol
