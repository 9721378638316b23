// core/protocol/events.cpp — codecs of §9 (plugin/event), §10 (plugin/bus_event), §11 (emit),
// the delivery classification of §9.1 and the emit limits of §11.4 row 4.
#include "core/protocol/emit.h"
#include "core/protocol/events.h"

#include "core/protocol/detail/codec.h"
#include "core/protocol/limits.h"

namespace conform::protocol {
using detail::ObjectWriter;

std::string_view EventParams::eventType() const {
  auto t = json::stringMember(event.get(), "type");
  return t ? *t : std::string_view();
}

bool fromJSON(const json::Value& v, EventParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !detail::mapUuid(o, "session_id", r.session_id) || !o.map("context_id", r.context_id) ||
      !o.map("seq", r.seq))
    return false;
  if (r.seq < 1) return p.field("seq").report("seq must be ≥ 1");
  if (!o.map("event", r.event)) return false;
  // EVT-10/11 [chosen C22]: opaque except for a string `type`.
  const json::Value& ev = r.event.get();
  if (!ev.IsObject()) return p.field("event").report(std::string("expected object, found ") + json::typeName(ev));
  const json::Value* type = json::member(ev, "type");
  if (!type) return p.field("event").field("type").report("required member is missing");
  if (!type->IsString())
    return p.field("event").field("type").report(std::string("expected string, found ") + json::typeName(*type));
  if (!o.map("timestamp", r.timestamp)) return false;
  if (!isDateTime(r.timestamp)) return p.field("timestamp").report("expected an RFC 3339 date-time (§5.1)");
  return o.closed();
}
json::Value toJSON(const EventParams& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("session_id", r.session_id)
      .set("context_id", r.context_id)
      .set("seq", r.seq)
      .set("event", r.event)
      .set("timestamp", r.timestamp)
      .take();
}

bool fromJSON(const json::Value& v, BusEventParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && detail::mapUuid(o, "session_id", r.session_id) && o.mapOptional("context_id", r.context_id) &&
         o.map("plugin", r.plugin) && o.map("name", r.name) && o.map("payload", r.payload) && o.closed();
}
json::Value toJSON(const BusEventParams& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("session_id", r.session_id)
      .setOpt("context_id", r.context_id)
      .set("plugin", r.plugin)
      .set("name", r.name)
      .set("payload", r.payload)
      .take();
}

std::string_view toString(DeliveryClass c) {
  switch (c) {
    case DeliveryClass::Chunk: return "chunk";
    case DeliveryClass::Ordinary: return "ordinary";
    case DeliveryClass::Terminal: return "terminal";
  }
  return "ordinary";
}

DeliveryClass classifyEvent(const json::Value& event) {
  auto type = json::stringMember(event, "type");
  if (!type) return DeliveryClass::Ordinary;
  if (*type == "tool_call_terminated") return DeliveryClass::Terminal;
  if (*type == "tool_call_progress") {
    const json::Value* chunk = json::member(event, "output_chunk");
    if (chunk && !chunk->IsNull()) return DeliveryClass::Chunk;
  }
  return DeliveryClass::Ordinary;
}

bool fromJSON(const json::Value& v, EmitParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && detail::mapUuid(o, "session_id", r.session_id) && o.map("context_id", r.context_id) &&
         o.map("name", r.name) && o.map("payload", r.payload) && o.closed();
}
json::Value toJSON(const EmitParams& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("session_id", r.session_id)
      .set("context_id", r.context_id)
      .set("name", r.name)
      .set("payload", r.payload)
      .take();
}

bool fromJSON(const json::Value& v, EmitResultParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("name", r.name) && o.map("bus", r.bus) && o.map("durable", r.durable) &&
         o.mapOptional("reason", r.reason) && o.closed();
}
json::Value toJSON(const EmitResultParams& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("name", r.name)
      .set("bus", r.bus)
      .set("durable", r.durable)
      .setOpt("reason", r.reason)
      .take();
}

std::optional<std::string> checkEmitLimits(std::string_view plugin, const EmitParams& e) {
  auto chars = utf8Length(e.name);
  if (!chars || *chars == 0 || *chars > limits::kEmitNameMaxChars)
    return "event name must be 1–" + std::to_string(limits::kEmitNameMaxChars) + " characters";
  if (!isControlFree(e.name)) return std::string("event name must not contain control characters");
  std::string payload = json::compact(e.payload.get());
  if (payload.size() > limits::kEmitPayloadMaxBytes)
    return "event payload is " + std::to_string(payload.size()) + " bytes, limit " +
           std::to_string(limits::kEmitPayloadMaxBytes);
  // The durable record R4 measures: {"type":"plugin_event_added","plugin":…,"name":…,"payload":…}.
  json::Document rec(rapidjson::kObjectType);
  auto& a = rec.GetAllocator();
  rec.AddMember("type", "plugin_event_added", a);
  rec.AddMember("plugin", json::str(plugin, a), a);
  rec.AddMember("name", json::str(e.name, a), a);
  rec.AddMember("payload", json::Value(e.payload.get(), a), a);
  std::size_t size = json::compact(rec).size();
  if (size > limits::kEmitSerializedEventMaxBytes)
    return "serialized event is " + std::to_string(size) + " bytes, limit " +
           std::to_string(limits::kEmitSerializedEventMaxBytes);
  return std::nullopt;
}

}  // namespace conform::protocol
