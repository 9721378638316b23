// core/protocol/hooks.cpp — codecs of the 13 interception hooks (§13.2) and the structured types of
// §5.3. Every params object starts with session_id (UUID) and context_id (§13.2).
#include "core/protocol/hooks.h"

#include <algorithm>
#include <set>

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
bool checkSelection(const ModelSelection& s, json::Path p) {
  auto n = utf8Length(s.model);
  if (!n || *n < 3 || *n > 512 || s.model.find('/') == std::string::npos)
    return p.field("model").report("expected a provider/model reference of 3–512 characters (§5.3)");
  if (s.variant) {
    auto m = utf8Length(*s.variant);
    if (!m || *m < 1 || *m > 64 || *s.variant == "base")
      return p.field("variant").report("expected a variant of 1–64 characters other than \"base\" (§5.3)");
  }
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
bool decodePart(const json::Value& v, PersistedAssistantPart& out, json::Path p) {
  if (!v.IsObject()) return p.report(std::string("expected object, found ") + json::typeName(v));
  const json::Value* t = json::member(v, "type");
  if (!t) return p.field("type").report("required member is missing");
  if (!t->IsString()) return p.field("type").report(std::string("expected string, found ") + json::typeName(*t));
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
  struct Variant {
    std::string_view type;
    std::vector<std::string_view> members;
  };
  static const std::vector<Variant> kVariants = {
      {"text", {"text", "metadata"}},
      {"reasoning", {"text", "metadata"}},
      {"tool_call", {"id", "provider_item_id", "name", "input", "raw_input", "metadata"}},
      {"tool_result", {"tool_call_id", "content", "is_error", "metadata"}},
      {"file", {"file"}},
      {"source", {"id", "url", "title", "media_type", "excerpt", "metadata"}},
      {"tool_approval", {"tool_call_id", "message", "metadata"}},
      {"custom", {"kind", "data", "metadata"}},
  };
  auto type = json::stringMember(part, "type");
  if (!type) return std::string("type: required string member is missing");
  auto it = std::find_if(kVariants.begin(), kVariants.end(), [&](const Variant& x) { return x.type == *type; });
  if (it == kVariants.end()) return "type: unknown part type \"" + std::string(*type) + "\"";
  for (auto m : it->members)
    if (!json::member(part, m)) return std::string(m) + ": required member is missing";
  for (auto& m : part.GetObject()) {
    std::string_view name(m.name.GetString(), m.name.GetStringLength());
    if (name != "type" && std::find(it->members.begin(), it->members.end(), name) == it->members.end())
      return std::string(name) + ": unknown member";
  }
  return std::nullopt;
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
