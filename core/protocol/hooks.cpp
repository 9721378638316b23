// core/protocol/hooks.cpp — codecs of the 13 interception hooks (§13.2) and the structured types of
// §5.3. Every params object starts with session_id (UUID) and context_id (§13.2).
#include "core/protocol/hooks.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/protocol/detail/codec.h"

namespace conform::protocol {
using detail::ObjectWriter;

namespace {
template <class P>
bool mapHead(json::ObjectMapper& o, P& r) {
  return o && detail::mapUuid(o, "session_id", r.session_id) && o.map("context_id", r.context_id);
}
template <class P>
ObjectWriter head(const P& r, json::Allocator& a) {
  ObjectWriter w(a);
  w.set("session_id", r.session_id).set("context_id", r.context_id);
  return w;
}
// The charset of §5.3's provider names and variants: [a-z0-9._-].
bool isSlugChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}
// `^[a-z0-9][a-z0-9._-]{0,N-1}$` (provider_id, the provider part of a model reference, a variant).
bool isSlug(std::string_view s, std::size_t max) {
  return !s.empty() && s.size() <= max && s[0] != '.' && s[0] != '_' && s[0] != '-' &&
         std::all_of(s.begin(), s.end(), isSlugChar);
}
// What the schema's `[^\s\p{Cc}\[\]]` refuses, as PCRE2 (PCRE2_UTF|PCRE2_UCP) reads it: \s is
// \p{Z} plus \h and \v (so also U+180E and U+0085), \p{Cc} is U+0000–U+001F and U+007F–U+009F.
// tests/fuzzregress/protocol_decoder_test.cpp checks this against PCRE2 for every code point.
bool isSpaceControlOrBracket(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) return true;
  switch (c) {
    case ' ': case '[': case ']': case 0xA0: case 0x1680: case 0x180E: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}
// Decodes one code point of valid UTF-8 (json::parse guarantees it: FRAME-04/05) and advances.
char32_t nextCodePoint(std::string_view s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (std::size_t k = 1; k < len && i + k < s.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return c;
}
// ModelRef (§5.3): `^[a-z0-9][a-z0-9._-]{0,127}/[^\s\p{Cc}\[\]]+(/[^\s\p{Cc}\[\]]+)*$`. The provider
// cannot hold '/', so it ends at the first one; the segment class admits '/', so the rest is any
// non-empty run of characters outside it (the `(/…)*` groups add nothing).
bool isModelRef(std::string_view m) {
  const std::size_t slash = m.find('/');
  if (slash == std::string_view::npos || !isSlug(m.substr(0, slash), 128) || slash + 1 == m.size()) return false;
  for (std::size_t i = slash + 1; i < m.size();)
    if (isSpaceControlOrBracket(nextCodePoint(m, i))) return false;
  return true;
}
// The typed decoders apply the schema's patterns too (HOOK-50), not only its lengths: a decoder
// that accepted what Profile::validate refuses made conform's reference engine and plugin take
// non-conforming selections for conforming ones and echo them (fuzz_profile_0_0_6).
bool checkSelection(const ModelSelection& s, json::Path p) {
  auto n = utf8Length(s.model);
  if (!n || *n < 3 || *n > 512 || !isModelRef(s.model))
    return p.field("model").report(
        "expected a provider/model reference of 3–512 characters: provider [a-z0-9][a-z0-9._-]{0,127}, then "
        "'/' and segments without whitespace, control characters or brackets (§5.3)");
  if (s.variant && (!isSlug(*s.variant, 64) || *s.variant == "base"))
    return p.field("variant").report(
        "expected a variant of 1–64 characters [a-z0-9][a-z0-9._-]* other than \"base\" (§5.3)");
  return true;
}
bool isLowerHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}
}  // namespace

// --- §5.3 ---------------------------------------------------------------------------------------------

bool fromJSON(const json::Value& v, ModelSelection& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("model", r.model) && o.mapOptional("variant", r.variant) && o.closed() && checkSelection(r, p);
}
json::Value toJSON(const ModelSelection& r, json::Allocator& a) {
  return ObjectWriter(a).set("model", r.model).setOpt("variant", r.variant).take();
}

bool fromJSON(const json::Value& v, ResolvedModelRef& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o) return false;
  // selection.variant is req/null here (§5.3).
  json::Path sp = p.field("selection");
  const json::Value* sel = o.get("selection");
  if (!sel) return sp.report("required member is missing");
  json::ObjectMapper so(*sel, sp);
  if (!so || !so.map("model", r.selection.model) || !so.mapNullable("variant", r.selection.variant) ||
      !so.closed() || !checkSelection(r.selection, sp))
    return false;
  if (!o.map("provider_id", r.provider_id) || !detail::checkChars(o, "provider_id", r.provider_id, 1, 128) ||
      (!isSlug(r.provider_id, 128) && !p.field("provider_id").report("expected [a-z0-9][a-z0-9._-]{0,127} (§5.3)")) ||
      !o.map("model_id", r.model_id) || !detail::checkChars(o, "model_id", r.model_id, 1, 384) ||
      !o.map("adapter_id", r.adapter_id) || !o.map("selection_fingerprint", r.selection_fingerprint))
    return false;
  if (!isLowerHex64(r.selection_fingerprint))
    return p.field("selection_fingerprint").report("expected 64 lowercase hex digits");
  return o.closed();
}
json::Value toJSON(const ResolvedModelRef& r, json::Allocator& a) {
  json::Value sel = ObjectWriter(a).set("model", r.selection.model).setNullable("variant", r.selection.variant).take();
  return ObjectWriter(a)
      .setValue("selection", std::move(sel))
      .set("provider_id", r.provider_id)
      .set("model_id", r.model_id)
      .set("adapter_id", r.adapter_id)
      .set("selection_fingerprint", r.selection_fingerprint)
      .take();
}

bool fromJSON(const json::Value& v, ModelMessage& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("role", r.role) && o.map("content", r.content) && o.closed();
}
json::Value toJSON(const ModelMessage& r, json::Allocator& a) {
  return ObjectWriter(a).set("role", r.role).set("content", r.content).take();
}

bool fromJSON(const json::Value& v, ParamsAdjustments& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.mapOptional("max_tokens", r.max_tokens) && o.mapOptional("temperature", r.temperature) &&
         o.mapOptional("top_p", r.top_p) && o.closed();
}
json::Value toJSON(const ParamsAdjustments& r, json::Allocator& a) {
  return ObjectWriter(a)
      .setOpt("max_tokens", r.max_tokens)
      .setOpt("temperature", r.temperature)
      .setOpt("top_p", r.top_p)
      .take();
}

bool fromJSON(const json::Value& v, InjectedMessage& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("role", r.role) && o.map("content", r.content) && o.closed();
}
json::Value toJSON(const InjectedMessage& r, json::Allocator& a) {
  return ObjectWriter(a).set("role", r.role).set("content", r.content).take();
}

namespace {

// PersistedAssistantPart (§5.3), the variant table of the schema's oneOf: `type` picks the variant,
// each variant is closed and every member listed is required.
enum class PartMember { String, StringOrNull, Metadata, Object, TaggedObject, Bool, Any, ToolCallId, Slug128 };
struct PartVariant {
  std::string_view type;
  std::vector<std::pair<std::string_view, PartMember>> members;
};
const std::vector<PartVariant>& partVariants() {
  using M = PartMember;
  static const std::vector<PartVariant> kVariants = {
      {"text", {{"text", M::String}, {"metadata", M::Metadata}}},
      {"reasoning", {{"text", M::String}, {"metadata", M::Metadata}}},
      {"tool_call",
       {{"id", M::ToolCallId}, {"provider_item_id", M::StringOrNull}, {"name", M::Slug128}, {"input", M::Any},
        {"raw_input", M::StringOrNull}, {"metadata", M::Metadata}}},
      {"tool_result",
       {{"tool_call_id", M::String}, {"content", M::TaggedObject}, {"is_error", M::Bool}, {"metadata", M::Metadata}}},
      {"file", {{"file", M::Object}}},
      {"source",
       {{"id", M::StringOrNull}, {"url", M::StringOrNull}, {"title", M::StringOrNull}, {"media_type", M::StringOrNull},
        {"excerpt", M::StringOrNull}, {"metadata", M::Metadata}}},
      {"tool_approval", {{"tool_call_id", M::String}, {"message", M::StringOrNull}, {"metadata", M::Metadata}}},
      {"custom", {{"kind", M::Slug128}, {"data", M::Any}, {"metadata", M::Metadata}}},
  };
  return kVariants;
}

// `^[a-z0-9][a-z0-9._-]*$`, at most 128 characters (tool_call `name`, custom `kind`).
bool isLowerName(std::string_view s) {
  return !s.empty() && s.size() <= 128 && s[0] != '.' && s[0] != '_' && s[0] != '-' &&
         std::all_of(s.begin(), s.end(), isSlugChar);
}

// nullopt when `v` has the member's shape, else what is wrong ("expected string, found integer").
std::optional<std::string> checkPartMember(const json::Value& v, PartMember kind) {
  auto found = [&](const char* what) { return std::string("expected ") + what + ", found " + json::typeName(v); };
  switch (kind) {
    case PartMember::String:
      if (!v.IsString()) return found("string");
      break;
    case PartMember::StringOrNull:
      if (!v.IsString() && !v.IsNull()) return found("string or null");
      break;
    case PartMember::Metadata:
      if (!v.IsObject() && !v.IsNull()) return found("object or null");
      break;
    case PartMember::Object:
      if (!v.IsObject()) return found("object");
      break;
    case PartMember::TaggedObject:
      if (!v.IsObject()) return found("object");
      if (!json::stringMember(v, "type")) return std::string("expected an object with a string member \"type\"");
      break;
    case PartMember::Bool:
      if (!v.IsBool()) return found("boolean");
      break;
    case PartMember::Any:
      break;
    case PartMember::ToolCallId: {
      if (!v.IsString()) return found("string");
      auto n = utf8Length(std::string_view(v.GetString(), v.GetStringLength()));
      if (!n || *n < 1 || *n > 512) return std::string("expected 1–512 characters");
      break;
    }
    case PartMember::Slug128:
      if (!v.IsString()) return found("string");
      if (!isLowerName(std::string_view(v.GetString(), v.GetStringLength())))
        return std::string("expected [a-z0-9][a-z0-9._-]*, at most 128 characters");
      break;
  }
  return std::nullopt;
}

struct PartProblem {
  std::string member;  // empty: the part itself
  std::string message;
};
std::optional<PartProblem> partProblem(const json::Value& part) {
  if (!part.IsObject()) return PartProblem{"", std::string("expected object, found ") + json::typeName(part)};
  const json::Value* t = json::member(part, "type");
  if (!t) return PartProblem{"type", "required member is missing"};
  if (!t->IsString()) return PartProblem{"type", std::string("expected string, found ") + json::typeName(*t)};
  const std::string_view type(t->GetString(), t->GetStringLength());
  const auto& variants = partVariants();
  auto it = std::find_if(variants.begin(), variants.end(), [&](const PartVariant& x) { return x.type == type; });
  if (it == variants.end()) return PartProblem{"type", "unknown part type \"" + std::string(type) + "\""};
  for (const auto& [name, kind] : it->members) {
    const json::Value* m = json::member(part, name);
    if (!m) return PartProblem{std::string(name), "required member is missing"};
    if (auto bad = checkPartMember(*m, kind)) return PartProblem{std::string(name), *bad};
  }
  for (auto& m : part.GetObject()) {
    std::string_view name(m.name.GetString(), m.name.GetStringLength());
    if (name != "type" && std::none_of(it->members.begin(), it->members.end(), [&](const auto& x) { return x.first == name; }))
      return PartProblem{std::string(name), "unknown member"};
  }
  return std::nullopt;
}

// The decoder keeps a part as JSON but checks it against its variant (HOOK-13/HOOK-48): accepting
// what Profile::validate refuses let conform's reference engine and plugin persist and echo
// non-conforming parts (fuzz_profile_0_0_6).
bool decodePart(const json::Value& v, PersistedAssistantPart& out, json::Path p) {
  if (auto bad = partProblem(v)) return (bad->member.empty() ? p : p.field(bad->member)).report(bad->message);
  out = PersistedAssistantPart(v);
  return true;
}
bool decodeParts(const json::Value& v, std::vector<PersistedAssistantPart>& out, json::Path p) {
  if (!v.IsArray()) return p.report(std::string("expected array, found ") + json::typeName(v));
  out.assign(v.Size(), {});
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
    if (!decodePart(v[i], out[i], p.index(i))) return false;
  return true;
}
struct PartsRef {  // adapts decodeParts to ObjectMapper::map
  std::vector<PersistedAssistantPart>* parts;
};
bool fromJSON(const json::Value& v, PartsRef& r, json::Path p) { return decodeParts(v, *r.parts, p); }
}  // namespace

std::optional<std::string> checkPersistedPart(const json::Value& part) {
  auto bad = partProblem(part);
  if (!bad) return std::nullopt;
  return bad->member.empty() ? bad->message : bad->member + ": " + bad->message;
}

// --- hooks --------------------------------------------------------------------------------------------

bool fromJSON(const json::Value& v, ToolBeforeCallParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.map("tool", r.tool) && o.map("arguments", r.arguments) &&
         o.map("permission_name", r.permission_name) && o.mapNullable("resource", r.resource) && o.closed();
}
json::Value toJSON(const ToolBeforeCallParams& r, json::Allocator& a) {
  return head(r, a)
      .set("tool", r.tool)
      .set("arguments", r.arguments)
      .set("permission_name", r.permission_name)
      .setNullable("resource", r.resource)
      .take();
}
bool fromJSON(const json::Value& v, ToolBeforeCallResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  // modified_arguments is `opt`: null equals absence (§0.3).
  return o && o.map("action", r.action) && o.mapOptional("reason", r.reason) &&
         o.mapOptional("modified_arguments", r.modified_arguments) &&
         o.mapOptional("message_to_model", r.message_to_model) && o.closed();
}
json::Value toJSON(const ToolBeforeCallResult& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("action", r.action)
      .setOpt("reason", r.reason)
      .setOpt("modified_arguments", r.modified_arguments)
      .setOpt("message_to_model", r.message_to_model)
      .take();
}

bool fromJSON(const json::Value& v, ToolAfterResultParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.map("tool", r.tool) && o.map("arguments", r.arguments) &&
         o.map("result_content", r.result_content) && o.map("is_error", r.is_error) && o.closed();
}
json::Value toJSON(const ToolAfterResultParams& r, json::Allocator& a) {
  return head(r, a)
      .set("tool", r.tool)
      .set("arguments", r.arguments)
      .set("result_content", r.result_content)
      .set("is_error", r.is_error)
      .take();
}
bool fromJSON(const json::Value& v, ToolAfterResultResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("action", r.action) && o.mapOptional("replacement_content", r.replacement_content) &&
         o.mapOptional("note", r.note) && o.closed();
}
json::Value toJSON(const ToolAfterResultResult& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("action", r.action)
      .setOpt("replacement_content", r.replacement_content)
      .setOpt("note", r.note)
      .take();
}

bool fromJSON(const json::Value& v, AgentBeforeStartParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.map("agent_path", r.agent_path) && o.map("prompt_context", r.prompt_context) &&
         o.closed();
}
json::Value toJSON(const AgentBeforeStartParams& r, json::Allocator& a) {
  return head(r, a).set("agent_path", r.agent_path).set("prompt_context", r.prompt_context).take();
}
bool fromJSON(const json::Value& v, AgentBeforeStartResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.mapOptional("addendum", r.addendum) &&
         o.mapOptional("append_to_system_prompt", r.append_to_system_prompt) &&
         o.mapOptional("replace_system_prompt", r.replace_system_prompt) &&
         o.mapOptional("inject_message", r.inject_message) && o.closed();
}
json::Value toJSON(const AgentBeforeStartResult& r, json::Allocator& a) {
  return ObjectWriter(a)
      .setOpt("addendum", r.addendum)
      .setOpt("append_to_system_prompt", r.append_to_system_prompt)
      .setOpt("replace_system_prompt", r.replace_system_prompt)
      .setOpt("inject_message", r.inject_message)
      .take();
}

bool fromJSON(const json::Value& v, SessionBeforeCompactParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.map("checkpoint_id", r.checkpoint_id) && o.map("additions", r.additions) &&
         o.mapOptional("instructions", r.instructions) && o.closed();
}
json::Value toJSON(const SessionBeforeCompactParams& r, json::Allocator& a) {
  return head(r, a)
      .set("checkpoint_id", r.checkpoint_id)
      .set("additions", r.additions)
      .setOpt("instructions", r.instructions)
      .take();
}
bool fromJSON(const json::Value& v, SessionBeforeCompactResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  r.cancel = false;
  return o && o.mapOptional("addendum", r.addendum) && o.mapDefault("cancel", r.cancel) &&
         o.mapOptional("reason", r.reason) && o.mapOptional("instructions_override", r.instructions_override) &&
         o.closed();
}
json::Value toJSON(const SessionBeforeCompactResult& r, json::Allocator& a) {
  ObjectWriter w(a);
  w.setOpt("addendum", r.addendum);
  if (r.cancel) w.set("cancel", true);  // opt=false: the default is omitted
  return w.setOpt("reason", r.reason).setOpt("instructions_override", r.instructions_override).take();
}

bool fromJSON(const json::Value& v, UserBeforeInputParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.map("text", r.text) && o.closed();
}
json::Value toJSON(const UserBeforeInputParams& r, json::Allocator& a) { return head(r, a).set("text", r.text).take(); }
bool fromJSON(const json::Value& v, UserBeforeInputResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("action", r.action) && o.mapOptional("new_text", r.new_text) &&
         o.mapOptional("reason", r.reason) && o.closed();
}
json::Value toJSON(const UserBeforeInputResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("action", r.action).setOpt("new_text", r.new_text).setOpt("reason", r.reason).take();
}

bool fromJSON(const json::Value& v, ModelBeforeRequestParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && detail::mapUuid(o, "attempt_id", r.attempt_id) && o.map("messages", r.messages) &&
         o.map("model", r.model) && o.map("params", r.params) && o.closed();
}
json::Value toJSON(const ModelBeforeRequestParams& r, json::Allocator& a) {
  return head(r, a)
      .set("attempt_id", r.attempt_id)
      .set("messages", r.messages)
      .set("model", r.model)
      .set("params", r.params)
      .take();
}
bool fromJSON(const json::Value& v, ModelBeforeRequestResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("action", r.action) && o.mapOptional("messages", r.messages) &&
         o.mapOptional("params_adjustments", r.params_adjustments) && o.closed();
}
json::Value toJSON(const ModelBeforeRequestResult& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("action", r.action)
      .setOpt("messages", r.messages)
      .setOpt("params_adjustments", r.params_adjustments)
      .take();
}

bool fromJSON(const json::Value& v, ProviderBeforeHeadersParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && detail::mapUuid(o, "attempt_id", r.attempt_id) && o.map("headers", r.headers) &&
         o.closed();
}
json::Value toJSON(const ProviderBeforeHeadersParams& r, json::Allocator& a) {
  return head(r, a).set("attempt_id", r.attempt_id).set("headers", r.headers).take();
}
bool fromJSON(const json::Value& v, ProviderBeforeHeadersResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  r.set.clear();
  r.delete_.clear();
  return o && o.mapDefault("set", r.set) && o.mapDefault("delete", r.delete_) && o.closed();
}
json::Value toJSON(const ProviderBeforeHeadersResult& r, json::Allocator& a) {
  ObjectWriter w(a);
  if (!r.set.empty()) w.set("set", r.set);  // opt={} / opt=[]: defaults are omitted
  if (!r.delete_.empty()) w.set("delete", r.delete_);
  return w.take();
}

bool fromJSON(const json::Value& v, ProviderBeforeRequestParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && detail::mapUuid(o, "attempt_id", r.attempt_id) && o.map("payload", r.payload) &&
         o.closed();
}
json::Value toJSON(const ProviderBeforeRequestParams& r, json::Allocator& a) {
  return head(r, a).set("attempt_id", r.attempt_id).set("payload", r.payload).take();
}
bool fromJSON(const json::Value& v, ProviderBeforeRequestResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("action", r.action) && o.mapOptional("payload", r.payload) && o.closed();
}
json::Value toJSON(const ProviderBeforeRequestResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("action", r.action).setOpt("payload", r.payload).take();
}

bool fromJSON(const json::Value& v, ProviderAfterResponseParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  std::uint32_t status = 0;
  if (!mapHead(o, r) || !detail::mapUuid(o, "attempt_id", r.attempt_id) || !o.map("status", status)) return false;
  if (status > 0xFFFF) return p.field("status").report("expected an HTTP status (u16)");
  r.status = static_cast<std::uint16_t>(status);
  return o.map("headers", r.headers) && o.closed();
}
json::Value toJSON(const ProviderAfterResponseParams& r, json::Allocator& a) {
  return head(r, a).set("attempt_id", r.attempt_id).set("status", r.status).set("headers", r.headers).take();
}

bool fromJSON(const json::Value& v, MessageEndParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  PartsRef parts{&r.content};
  return mapHead(o, r) && detail::mapUuid(o, "attempt_id", r.attempt_id) && o.map("role", r.role) &&
         o.map("content", parts) && o.closed();
}
json::Value toJSON(const MessageEndParams& r, json::Allocator& a) {
  return head(r, a).set("attempt_id", r.attempt_id).set("role", r.role).set("content", r.content).take();
}
bool fromJSON(const json::Value& v, MessageEndResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("action", r.action)) return false;
  r.content.reset();
  if (const json::Value* c = o.get("content"); c && !c->IsNull()) {
    r.content.emplace();
    if (!decodeParts(*c, *r.content, p.field("content"))) return false;
  }
  return o.closed();
}
json::Value toJSON(const MessageEndResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("action", r.action).setOpt("content", r.content).take();
}

bool fromJSON(const json::Value& v, ModelBeforeSelectParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.mapOptional("from", r.from) && o.map("to", r.to) && o.map("source", r.source) &&
         o.closed();
}
json::Value toJSON(const ModelBeforeSelectParams& r, json::Allocator& a) {
  return head(r, a).setOpt("from", r.from).set("to", r.to).set("source", r.source).take();
}
bool fromJSON(const json::Value& v, AllowBlockResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("action", r.action) && o.mapOptional("reason", r.reason) && o.closed();
}
json::Value toJSON(const AllowBlockResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("action", r.action).setOpt("reason", r.reason).take();
}

bool fromJSON(const json::Value& v, SessionBeforeForkParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.map("through_seq", r.through_seq) && o.closed();
}
json::Value toJSON(const SessionBeforeForkParams& r, json::Allocator& a) {
  return head(r, a).set("through_seq", r.through_seq).take();
}
bool fromJSON(const json::Value& v, SessionBeforeRevertParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return mapHead(o, r) && o.map("through_seq", r.through_seq) && o.mapOptional("instructions", r.instructions) &&
         o.closed();
}
json::Value toJSON(const SessionBeforeRevertParams& r, json::Allocator& a) {
  return head(r, a).set("through_seq", r.through_seq).setOpt("instructions", r.instructions).take();
}
bool fromJSON(const json::Value& v, SessionBeforeRevertResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("action", r.action) && o.mapOptional("reason", r.reason) &&
         o.mapOptional("instructions_override", r.instructions_override) && o.closed();
}
json::Value toJSON(const SessionBeforeRevertResult& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("action", r.action)
      .setOpt("reason", r.reason)
      .setOpt("instructions_override", r.instructions_override)
      .take();
}

}  // namespace conform::protocol
