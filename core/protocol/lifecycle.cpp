// core/protocol/lifecycle.cpp — codecs of §6 (handshake) for both profiles.
#include "core/protocol/lifecycle.h"

#include "core/protocol/detail/codec.h"
#include "core/protocol/limits.h"

namespace conform::protocol {
using detail::ObjectWriter;

namespace {
template <class Caps>
bool mapEngineCommon(json::ObjectMapper& o, Caps& r) {
  return o.map("ping", r.ping) && o.map("shutdown", r.shutdown) && o.map("tools", r.tools) &&
         o.map("event_streaming", r.event_streaming) && o.map("event_publishing", r.event_publishing) &&
         o.map("interception", r.interception);
}
template <class Caps>
void writeEngineCommon(ObjectWriter& w, const Caps& r) {
  w.set("ping", r.ping)
      .set("shutdown", r.shutdown)
      .set("tools", r.tools)
      .set("event_streaming", r.event_streaming)
      .set("event_publishing", r.event_publishing)
      .set("interception", r.interception);
}
template <class Caps>
bool mapPluginCommon(json::ObjectMapper& o, Caps& r) {
  return o.map("tools", r.tools) && o.map("resources", r.resources) &&
         o.map("subscribe_events", r.subscribe_events) && o.map("subscribe_bus", r.subscribe_bus) &&
         o.map("publish_bus", r.publish_bus) && o.map("publish_session_events", r.publish_session_events);
}
template <class Caps>
void writePluginCommon(ObjectWriter& w, const Caps& r) {
  w.set("tools", r.tools)
      .set("resources", r.resources)
      .set("subscribe_events", r.subscribe_events)
      .set("subscribe_bus", r.subscribe_bus)
      .set("publish_bus", r.publish_bus)
      .set("publish_session_events", r.publish_session_events);
}
template <class Params>
bool mapInitParams(const json::Value& v, Params& r, json::Path p, std::string_view version) {
  json::ObjectMapper o(v, p);
  return o && detail::mapConst(o, "protocol_version", r.protocol_version, version) &&
         o.map("engine_version", r.engine_version) && o.map("capabilities", r.capabilities) && o.closed();
}
template <class Params>
json::Value writeInitParams(const Params& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("protocol_version", r.protocol_version)
      .set("engine_version", r.engine_version)
      .set("capabilities", r.capabilities)
      .take();
}
template <class Result>
bool mapInitResult(const json::Value& v, Result& r, json::Path p, std::string_view version) {
  json::ObjectMapper o(v, p);
  return o && detail::mapConst(o, "protocol_version", r.protocol_version, version) && o.map("name", r.name) &&
         o.map("version", r.version) && o.map("capabilities", r.capabilities) && o.map("tools", r.tools) &&
         o.closed();
}
template <class Result>
json::Value writeInitResult(const Result& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("protocol_version", r.protocol_version)
      .set("name", r.name)
      .set("version", r.version)
      .set("capabilities", r.capabilities)
      .set("tools", r.tools)
      .take();
}
}  // namespace

bool fromJSON(const json::Value& v, EngineCapabilities& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && mapEngineCommon(o, r) && o.map("producer_messaging", r.producer_messaging) && o.closed();
}
json::Value toJSON(const EngineCapabilities& r, json::Allocator& a) {
  ObjectWriter w(a);
  writeEngineCommon(w, r);
  w.set("producer_messaging", r.producer_messaging);
  return w.take();
}
bool fromJSON(const json::Value& v, InitializeParams& r, json::Path p) {
  return mapInitParams(v, r, p, limits::kVersion006);
}
json::Value toJSON(const InitializeParams& r, json::Allocator& a) { return writeInitParams(r, a); }

bool fromJSON(const json::Value& v, PluginCapabilities& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && mapPluginCommon(o, r) && o.map("producer_messaging", r.producer_messaging) &&
         o.map("intercept", r.intercept) && o.closed();
}
json::Value toJSON(const PluginCapabilities& r, json::Allocator& a) {
  ObjectWriter w(a);
  writePluginCommon(w, r);
  w.set("producer_messaging", r.producer_messaging).set("intercept", r.intercept);
  return w.take();
}
bool fromJSON(const json::Value& v, InitializeResult& r, json::Path p) {
  return mapInitResult(v, r, p, limits::kVersion006);
}
json::Value toJSON(const InitializeResult& r, json::Allocator& a) { return writeInitResult(r, a); }

namespace v004 {
bool fromJSON(const json::Value& v, EngineCapabilities& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && mapEngineCommon(o, r) && o.closed();
}
json::Value toJSON(const EngineCapabilities& r, json::Allocator& a) {
  ObjectWriter w(a);
  writeEngineCommon(w, r);
  return w.take();
}
bool fromJSON(const json::Value& v, InitializeParams& r, json::Path p) {
  return mapInitParams(v, r, p, limits::kVersion004);
}
json::Value toJSON(const InitializeParams& r, json::Allocator& a) { return writeInitParams(r, a); }
bool fromJSON(const json::Value& v, PluginCapabilities& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && mapPluginCommon(o, r) && o.map("intercept", r.intercept) && o.closed();
}
json::Value toJSON(const PluginCapabilities& r, json::Allocator& a) {
  ObjectWriter w(a);
  writePluginCommon(w, r);
  w.set("intercept", r.intercept);
  return w.take();
}
bool fromJSON(const json::Value& v, InitializeResult& r, json::Path p) {
  return mapInitResult(v, r, p, limits::kVersion004);
}
json::Value toJSON(const InitializeResult& r, json::Allocator& a) { return writeInitResult(r, a); }
}  // namespace v004

}  // namespace conform::protocol
