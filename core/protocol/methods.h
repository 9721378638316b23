// core/protocol/methods.h — the method catalogue (PROTOCOL.md §4): name, direction, kind, params and
// result type names, the version that introduced it, and the rule a shape violation cites.
//
// The 0.0.6 table has 27 rows in §4 order; the 0.0.4 table is its first 21 rows (DELTA §2). Tables
// are constexpr so engine, SDK and monitors can switch on them without allocation.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace conform::protocol {

namespace method {
inline constexpr std::string_view kInitialize = "plugin/initialize";
inline constexpr std::string_view kPing = "plugin/ping";
inline constexpr std::string_view kShutdown = "plugin/shutdown";
inline constexpr std::string_view kToolsCall = "plugin/tools/call";
inline constexpr std::string_view kEvent = "plugin/event";
inline constexpr std::string_view kBusEvent = "plugin/bus_event";
inline constexpr std::string_view kEmit = "plugin/emit";
inline constexpr std::string_view kEmitResult = "plugin/emit_result";
inline constexpr std::string_view kInterceptPrefix = "plugin/intercept/";
inline constexpr std::string_view kToolBeforeCall = "plugin/intercept/tool_before_call";
inline constexpr std::string_view kToolAfterResult = "plugin/intercept/tool_after_result";
inline constexpr std::string_view kAgentBeforeStart = "plugin/intercept/agent_before_start";
inline constexpr std::string_view kSessionBeforeCompact = "plugin/intercept/session_before_compact";
inline constexpr std::string_view kUserBeforeInput = "plugin/intercept/user_before_input";
inline constexpr std::string_view kModelBeforeRequest = "plugin/intercept/model_before_request";
inline constexpr std::string_view kProviderBeforeHeaders = "plugin/intercept/provider_before_headers";
inline constexpr std::string_view kProviderBeforeRequest = "plugin/intercept/provider_before_request";
inline constexpr std::string_view kProviderAfterResponse = "plugin/intercept/provider_after_response";
inline constexpr std::string_view kMessageEnd = "plugin/intercept/message_end";
inline constexpr std::string_view kModelBeforeSelect = "plugin/intercept/model_before_select";
inline constexpr std::string_view kSessionBeforeFork = "plugin/intercept/session_before_fork";
inline constexpr std::string_view kSessionBeforeRevert = "plugin/intercept/session_before_revert";
inline constexpr std::string_view kProducerRegister = "plugin/producer/register";
inline constexpr std::string_view kProducerSend = "plugin/producer/send";
inline constexpr std::string_view kProducerUnregister = "plugin/producer/unregister";
inline constexpr std::string_view kProducerDiscard = "plugin/producer/discard";
inline constexpr std::string_view kRecoveryStart = "plugin/recovery/start";
inline constexpr std::string_view kRecoveryComplete = "plugin/recovery/complete";
}  // namespace method

// E→P: written on plugin stdin; P→E: written on plugin stdout (§4).
enum class Direction : std::uint8_t { EngineToPlugin, PluginToEngine };
enum class MessageKind : std::uint8_t { Request, Notification };
std::string_view toString(Direction);  // "E->P" / "P->E"
std::string_view toString(MessageKind);  // "request" / "notification"

struct MethodInfo {
  std::string_view name;
  Direction direction;
  MessageKind kind;
  std::string_view params_type;  // schema/type name, e.g. "ExtensionInitializeParams"
  std::string_view result_type;  // "" for notifications
  std::string_view since;        // "0.0.4" or "0.0.6"
  std::string_view params_rule;  // rule cited for a params shape violation (default RPC-12)
  std::string_view result_rule;  // rule cited for a result shape violation (default RPC-12)
  bool isRequest() const { return kind == MessageKind::Request; }
};

namespace detail {
using D = Direction;
using K = MessageKind;
inline constexpr std::array<MethodInfo, 27> kMethods006 = {{
    {method::kInitialize, D::EngineToPlugin, K::Request, "ExtensionInitializeParams", "ExtensionInitializeResult", "0.0.4", "INIT-02", "INIT-09"},
    {method::kPing, D::EngineToPlugin, K::Request, "ExtensionPingParams", "ExtensionPingResult", "0.0.4", "PING-01", "PING-01"},
    {method::kShutdown, D::EngineToPlugin, K::Notification, "ExtensionShutdownParams", "", "0.0.4", "SHUT-01", ""},
    {method::kToolsCall, D::EngineToPlugin, K::Request, "ExtensionToolCallParams", "ExtensionToolCallResult", "0.0.4", "TOOL-05", "TOOL-10"},
    {method::kEvent, D::EngineToPlugin, K::Notification, "ExtensionEventParams", "", "0.0.4", "EVT-02", ""},
    {method::kBusEvent, D::EngineToPlugin, K::Notification, "ExtensionBusEventParams", "", "0.0.4", "BUS-02", ""},
    {method::kEmit, D::PluginToEngine, K::Notification, "ExtensionEmitParams", "", "0.0.4", "EMIT-01", ""},
    {method::kEmitResult, D::EngineToPlugin, K::Notification, "ExtensionEmitResultParams", "", "0.0.4", "EMIT-03", ""},
    {method::kToolBeforeCall, D::EngineToPlugin, K::Request, "ExtensionToolBeforeCallParams", "ExtensionToolBeforeCallResult", "0.0.4", "HOOK-17", "HOOK-17"},
    {method::kToolAfterResult, D::EngineToPlugin, K::Request, "ExtensionToolAfterResultParams", "ExtensionToolAfterResultResult", "0.0.4", "HOOK-23", "HOOK-23"},
    {method::kAgentBeforeStart, D::EngineToPlugin, K::Request, "ExtensionAgentBeforeStartParams", "ExtensionAgentBeforeStartResult", "0.0.4", "HOOK-28", "HOOK-28"},
    {method::kSessionBeforeCompact, D::EngineToPlugin, K::Request, "ExtensionSessionBeforeCompactParams", "ExtensionSessionBeforeCompactResult", "0.0.4", "HOOK-33", "HOOK-33"},
    {method::kUserBeforeInput, D::EngineToPlugin, K::Request, "ExtensionUserBeforeInputParams", "ExtensionUserBeforeInputResult", "0.0.4", "HOOK-37", "HOOK-37"},
    {method::kModelBeforeRequest, D::EngineToPlugin, K::Request, "ExtensionModelBeforeRequestParams", "ExtensionModelBeforeRequestResult", "0.0.4", "HOOK-42", "HOOK-42"},
    {method::kProviderBeforeHeaders, D::EngineToPlugin, K::Request, "ExtensionProviderBeforeHeadersParams", "ExtensionProviderBeforeHeadersResult", "0.0.4", "HOOK-45", "HOOK-13"},
    {method::kProviderBeforeRequest, D::EngineToPlugin, K::Request, "ExtensionProviderBeforeRequestParams", "ExtensionProviderBeforeRequestResult", "0.0.4", "HOOK-46", "HOOK-13"},
    {method::kProviderAfterResponse, D::EngineToPlugin, K::Request, "ExtensionProviderAfterResponseParams", "ExtensionProviderAfterResponseResult", "0.0.4", "HOOK-47", "HOOK-47"},
    {method::kMessageEnd, D::EngineToPlugin, K::Request, "ExtensionMessageEndParams", "ExtensionMessageEndResult", "0.0.4", "HOOK-48", "HOOK-13"},
    {method::kModelBeforeSelect, D::EngineToPlugin, K::Request, "ExtensionModelBeforeSelectParams", "ExtensionAllowBlockResult", "0.0.4", "HOOK-50", "HOOK-13"},
    {method::kSessionBeforeFork, D::EngineToPlugin, K::Request, "ExtensionSessionBeforeForkParams", "ExtensionAllowBlockResult", "0.0.4", "HOOK-52", "HOOK-13"},
    {method::kSessionBeforeRevert, D::EngineToPlugin, K::Request, "ExtensionSessionBeforeRevertParams", "ExtensionSessionBeforeRevertResult", "0.0.4", "HOOK-53", "HOOK-53"},
    {method::kProducerRegister, D::PluginToEngine, K::Request, "ExtensionProducerRegisterParams", "ExtensionProducerRegisterResult", "0.0.6", "PROD-05", "PROD-05"},
    {method::kProducerSend, D::PluginToEngine, K::Request, "ExtensionProducerSendParams", "ExtensionProducerSendResult", "0.0.6", "PROD-09", "PROD-09"},
    {method::kProducerUnregister, D::PluginToEngine, K::Request, "ExtensionProducerUnregisterParams", "ExtensionProducerUnregisterResult", "0.0.6", "PROD-23", "PROD-23"},
    {method::kProducerDiscard, D::PluginToEngine, K::Request, "ExtensionProducerDiscardParams", "ExtensionProducerDiscardResult", "0.0.6", "PROD-26", "PROD-26"},
    {method::kRecoveryStart, D::EngineToPlugin, K::Notification, "ExtensionRecoveryStartParams", "", "0.0.6", "RECOV-01", ""},
    {method::kRecoveryComplete, D::PluginToEngine, K::Request, "ExtensionRecoveryCompleteParams", "ExtensionRecoveryCompleteResult", "0.0.6", "RECOV-05", "RECOV-05"},
}};
}  // namespace detail

inline constexpr std::size_t kMethodCount006 = 27;  // §4
inline constexpr std::size_t kMethodCount004 = 21;  // DELTA §2
inline constexpr std::span<const MethodInfo> methods006() { return {detail::kMethods006.data(), kMethodCount006}; }
inline constexpr std::span<const MethodInfo> methods004() { return {detail::kMethods006.data(), kMethodCount004}; }

}  // namespace conform::protocol
