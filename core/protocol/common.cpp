// core/protocol/common.cpp — wire spellings of the enumerations of PROTOCOL.md §5.2 and the codecs
// of JsonValue / Empty. One table per enumeration; parse is a linear search (≤ 13 entries).
#include "core/protocol/common.h"

#include <string>

namespace conform::protocol {
namespace {

template <class E, std::size_t N>
std::string_view nameOf(const std::array<std::string_view, N>& names, E e) {
  auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : std::string_view("?");
}
template <class E, std::size_t N>
std::optional<E> parseIn(const std::array<std::string_view, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}
template <class E, std::size_t N>
bool decodeEnum(const std::array<std::string_view, N>& names, const json::Value& v, E& out, json::Path p,
                const char* what) {
  if (!v.IsString()) return p.report(std::string("expected ") + what + " string, found " + json::typeName(v));
  auto e = parseIn<E>(names, std::string_view(v.GetString(), v.GetStringLength()));
  if (!e) {
    std::string msg = std::string("unknown ") + what + " \"" + std::string(v.GetString(), v.GetStringLength()) +
                      "\" (expected one of";
    for (auto n : names) msg += " " + std::string(n);
    return p.report(msg + ")");
  }
  out = *e;
  return true;
}

constexpr std::array<std::string_view, kHookCount> kHookNames = {
    "tool_before_call",        "tool_after_result",       "agent_before_start",      "session_before_compact",
    "user_before_input",       "model_before_request",    "provider_before_headers", "provider_before_request",
    "provider_after_response", "message_end",             "model_before_select",     "session_before_fork",
    "session_before_revert"};
constexpr std::array<std::string_view, kHookCount> kHookMethods = {
    "plugin/intercept/tool_before_call",        "plugin/intercept/tool_after_result",
    "plugin/intercept/agent_before_start",      "plugin/intercept/session_before_compact",
    "plugin/intercept/user_before_input",       "plugin/intercept/model_before_request",
    "plugin/intercept/provider_before_headers", "plugin/intercept/provider_before_request",
    "plugin/intercept/provider_after_response", "plugin/intercept/message_end",
    "plugin/intercept/model_before_select",     "plugin/intercept/session_before_fork",
    "plugin/intercept/session_before_revert"};
constexpr std::array<std::string_view, 3> kEmitStatusNames = {"published", "dropped", "rejected"};
constexpr std::array<std::string_view, 4> kRoleNames = {"system", "user", "assistant", "tool"};
constexpr std::array<std::string_view, 3> kSourceNames = {"user", "config", "fallback_restore"};
constexpr std::array<std::string_view, kDiagnosticKindCount> kDiagNames = {
    "event_drop",          "interception_timeout",   "interception_crash", "hook_blocked",
    "oversized_event",     "invalid_modification",   "unsupported_capability",
    "context_mismatch",    "rate_limited",           "recovery_failed",    "recovery_disabled"};
constexpr std::array<std::string_view, 2> kModeNames = {"steer", "queue"};
constexpr std::array<std::string_view, 4> kRecoveryNames = {"starting", "ready", "failed", "disabled"};
constexpr std::array<std::string_view, 10> kAdaptorNames = {
    "anthropic",       "openai-chat",          "openai-responses",     "openai-compatible",
    "google-gemini",   "google-vertex-gemini", "aws-bedrock-converse", "azure-openai-chat",
    "azure-openai-responses", "cohere-v2-chat"};
constexpr std::array<std::string_view, 2> kAllowBlockNames = {"allow", "block"};
constexpr std::array<std::string_view, 2> kKeepReplaceNames = {"keep", "replace"};
constexpr std::array<std::string_view, 3> kInputActionNames = {"allow", "transform", "handled"};
constexpr std::array<std::string_view, 3> kRevertActionNames = {"allow", "block", "override"};

}  // namespace

JsonValue JsonValue::fromText(std::string_view text) {
  JsonValue out;
  auto parsed = json::parse(text);
  if (parsed) json::deepCopy(out.doc_, parsed->doc, out.doc_.GetAllocator());
  return out;
}
bool fromJSON(const json::Value& v, JsonValue& out, json::Path) {
  json::deepCopy(out.doc(), v, out.doc().GetAllocator());
  return true;
}
json::Value toJSON(const JsonValue& v, json::Allocator& a) { return json::Value(v.get(), a); }

bool fromJSON(const json::Value& v, Empty&, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.closed();
}
json::Value toJSON(const Empty&, json::Allocator&) { return json::Value(rapidjson::kObjectType); }

std::string_view toString(Hook h) { return nameOf(kHookNames, h); }
std::optional<Hook> parseHook(std::string_view s) { return parseIn<Hook>(kHookNames, s); }
const std::array<Hook, kHookCount>& allHooks() {
  static const std::array<Hook, kHookCount> all = [] {
    std::array<Hook, kHookCount> a{};
    for (std::size_t i = 0; i < kHookCount; ++i) a[i] = static_cast<Hook>(i);
    return a;
  }();
  return all;
}
std::string_view hookMethod(Hook h) { return nameOf(kHookMethods, h); }
std::optional<Hook> hookOfMethod(std::string_view m) { return parseIn<Hook>(kHookMethods, m); }

std::string_view toString(EmitStatus e) { return nameOf(kEmitStatusNames, e); }
std::optional<EmitStatus> parseEmitStatus(std::string_view s) { return parseIn<EmitStatus>(kEmitStatusNames, s); }
std::string_view toString(MessageRole e) { return nameOf(kRoleNames, e); }
std::optional<MessageRole> parseMessageRole(std::string_view s) { return parseIn<MessageRole>(kRoleNames, s); }
std::string_view toString(SelectSource e) { return nameOf(kSourceNames, e); }
std::optional<SelectSource> parseSelectSource(std::string_view s) { return parseIn<SelectSource>(kSourceNames, s); }
std::string_view toString(DiagnosticKind e) { return nameOf(kDiagNames, e); }
std::optional<DiagnosticKind> parseDiagnosticKind(std::string_view s) {
  return parseIn<DiagnosticKind>(kDiagNames, s);
}
std::string_view toString(DeliveryMode e) { return nameOf(kModeNames, e); }
std::optional<DeliveryMode> parseDeliveryMode(std::string_view s) { return parseIn<DeliveryMode>(kModeNames, s); }
std::string_view toString(RecoveryStatus e) { return nameOf(kRecoveryNames, e); }
std::optional<RecoveryStatus> parseRecoveryStatus(std::string_view s) {
  return parseIn<RecoveryStatus>(kRecoveryNames, s);
}
std::string_view toString(AdaptorId e) { return nameOf(kAdaptorNames, e); }
std::optional<AdaptorId> parseAdaptorId(std::string_view s) { return parseIn<AdaptorId>(kAdaptorNames, s); }
std::string_view toString(AllowBlock e) { return nameOf(kAllowBlockNames, e); }
std::optional<AllowBlock> parseAllowBlock(std::string_view s) { return parseIn<AllowBlock>(kAllowBlockNames, s); }
std::string_view toString(KeepReplace e) { return nameOf(kKeepReplaceNames, e); }
std::optional<KeepReplace> parseKeepReplace(std::string_view s) {
  return parseIn<KeepReplace>(kKeepReplaceNames, s);
}
std::string_view toString(InputAction e) { return nameOf(kInputActionNames, e); }
std::optional<InputAction> parseInputAction(std::string_view s) {
  return parseIn<InputAction>(kInputActionNames, s);
}
std::string_view toString(RevertAction e) { return nameOf(kRevertActionNames, e); }
std::optional<RevertAction> parseRevertAction(std::string_view s) {
  return parseIn<RevertAction>(kRevertActionNames, s);
}

bool fromJSON(const json::Value& v, Hook& o, json::Path p) { return decodeEnum(kHookNames, v, o, p, "hook"); }
bool fromJSON(const json::Value& v, EmitStatus& o, json::Path p) {
  return decodeEnum(kEmitStatusNames, v, o, p, "emit status");
}
bool fromJSON(const json::Value& v, MessageRole& o, json::Path p) {
  return decodeEnum(kRoleNames, v, o, p, "message role");
}
bool fromJSON(const json::Value& v, SelectSource& o, json::Path p) {
  return decodeEnum(kSourceNames, v, o, p, "select source");
}
bool fromJSON(const json::Value& v, DiagnosticKind& o, json::Path p) {
  return decodeEnum(kDiagNames, v, o, p, "diagnostic kind");
}
bool fromJSON(const json::Value& v, DeliveryMode& o, json::Path p) {
  return decodeEnum(kModeNames, v, o, p, "delivery mode");
}
bool fromJSON(const json::Value& v, AdaptorId& o, json::Path p) {
  return decodeEnum(kAdaptorNames, v, o, p, "adaptor id");
}
bool fromJSON(const json::Value& v, AllowBlock& o, json::Path p) {
  return decodeEnum(kAllowBlockNames, v, o, p, "action");
}
bool fromJSON(const json::Value& v, KeepReplace& o, json::Path p) {
  return decodeEnum(kKeepReplaceNames, v, o, p, "action");
}
bool fromJSON(const json::Value& v, InputAction& o, json::Path p) {
  return decodeEnum(kInputActionNames, v, o, p, "action");
}
bool fromJSON(const json::Value& v, RevertAction& o, json::Path p) {
  return decodeEnum(kRevertActionNames, v, o, p, "action");
}

}  // namespace conform::protocol
