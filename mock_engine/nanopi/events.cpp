// mock_engine/nanopi/events — event names and the documented payload builder (events.h).
#include "mock_engine/nanopi/events.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace conform::nanopi {

namespace {

// Fixture defaults of the common members (docs/nanopi.md "Payloads").
constexpr std::string_view kDefaultSession = "conform-session-1";
constexpr std::string_view kDefaultCwd = "/conform/fixture";

struct Shape {
  std::string_view event;
  // The event's own members with their default value as JSON text; the default fixes the type.
  std::vector<std::pair<std::string_view, std::string_view>> members;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      // NP-18: `arguments` are the model's original arguments, before any hook rewrite.
      {"tool_execution_start", {{"tool_name", "\"bash\""}, {"tool_call_id", "\"call-1\""}, {"arguments", "{\"command\":\"ls\"}"}}},
      {"tool_execution_end",
       {{"tool_name", "\"bash\""}, {"tool_call_id", "\"call-1\""}, {"result", "{\"content\":\"ok\",\"is_error\":false}"},
        {"duration_ms", "12"}}},
      {"input", {{"prompt", "\"hello\""}}},
      {"before_agent_start", {{"prompt", "\"hello\""}}},
      {"turn_start", {{"turn", "1"}}},
      {"turn_end", {{"turn", "1"}}},
      // NP-40: counts only, never the assistant's text.
      {"message_end", {{"turn_count", "1"}, {"response_length", "42"}}},
      {"session_start", {{"source", "\"startup\""}}},
      {"session_shutdown", {{"reason", "\"exit\""}}},
      {"session_before_compact", {{"message_count", "10"}, {"reason", "\"auto\""}}},
      {"session_compact", {{"message_count", "3"}}},
  };
  return s;
}

bool sameType(const json::Value& a, const json::Value& b) {
  if (a.IsNumber() && b.IsNumber()) return a.IsInt64() == b.IsInt64();
  return a.GetType() == b.GetType() || (a.IsBool() && b.IsBool());
}

}  // namespace

bool isEventName(std::string_view name) {
  return std::find(kEventNames.begin(), kEventNames.end(), name) != kEventNames.end();
}

bool isNeverDeliverable(std::string_view name) {
  return std::find(kNeverDeliverable.begin(), kNeverDeliverable.end(), name) != kNeverDeliverable.end();
}

std::optional<std::string_view> retiredRewrite(std::string_view name) {
  if (name == "pre_tool_use") return std::string_view("tool_execution_start");
  return std::nullopt;
}

std::string validNamesList() {
  std::string s;
  for (auto n : kEventNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

Expected<std::string, std::string> buildPayload(std::string_view event, const json::Value& fields) {
  const Shape* shape = nullptr;
  for (const Shape& s : shapes())
    if (s.event == event) shape = &s;
  if (!shape) return unexpected(fmt::format("no payload shape for event `{}` (the eleven PI names: {})", event, validNamesList()));
  if (!fields.IsObject()) return unexpected(fmt::format("{} payload fields: expected an object", event));
  json::Document out(rapidjson::kObjectType);
  auto& a = out.GetAllocator();
  auto common = [&](std::string_view key, std::string_view dflt) {
    const json::Value* v = json::member(fields, key);
    if (v && !v->IsString()) return false;
    out.AddMember(json::str(key, a), json::str(v ? std::string_view(v->GetString(), v->GetStringLength()) : dflt, a), a);
    return true;
  };
  out.AddMember("hook_event_name", json::str(event, a), a);  // NP-17: the PI name
  if (!common("session_id", kDefaultSession) || !common("cwd", kDefaultCwd))
    return unexpected(fmt::format("{} payload: session_id and cwd must be strings", event));
  for (const auto& [key, dflt] : shape->members) {
    auto d = json::parse(dflt);
    if (!d) return unexpected(std::string("internal: bad payload default"));
    const json::Value* v = json::member(fields, key);
    if (v && !sameType(*v, d->doc))
      return unexpected(fmt::format("{} payload member `{}`: expected {}, found {}", event, key, json::typeName(d->doc),
                                    json::typeName(*v)));
    json::Value m;
    json::deepCopy(m, v ? *v : static_cast<const json::Value&>(d->doc), a);
    out.AddMember(json::str(key, a), m, a);
  }
  for (auto& m : fields.GetObject()) {
    std::string_view k(m.name.GetString(), m.name.GetStringLength());
    bool known = k == "session_id" || k == "cwd";
    for (const auto& [key, dflt] : shape->members) known = known || key == k;
    if (!known) {
      std::string list = "session_id, cwd";
      for (const auto& [key, dflt] : shape->members) list += ", " + std::string(key);
      return unexpected(fmt::format("{} payload has no member `{}` (members: {})", event, k, list));
    }
  }
  return json::compact(out);
}

}  // namespace conform::nanopi
