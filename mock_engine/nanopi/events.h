// mock_engine/nanopi/events — the nanopi 0.12 event vocabulary and the payload shape of each event.
//
// Why here: the event names, the retired Claude Code aliases and the payload builder are shared by
// the host (delivery, grant diagnostics) and the harness (fixture payloads, checks). NANOPI.md
// NP-11: the deliverable names are exactly the eleven PI names; NP-14: two per-delta names are never
// deliverable; NP-13: retired names get a rewrite suggestion; NP-16/NP-40: one payload builder.
//
// Payload shapes (docs/nanopi.md "Payloads"): the seed says a plugin gets exactly the JSON a shell
// hook gets on stdin, but the public facts do not give those shapes, so conform DEFINES one shape
// per event here and documents it. Every payload is an object with `hook_event_name` (the PI name,
// NP-17), `session_id` and `cwd`, plus the members of its event. message_end carries turn_count and
// response_length, never the assistant text (NP-40). tool_execution_start carries the model's
// original arguments (NP-18).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::nanopi {

// NP-11: the eleven deliverable names, in the seed's order (the order the warning lists them in).
inline constexpr std::array<std::string_view, 11> kEventNames = {
    "tool_execution_start", "tool_execution_end", "input",           "before_agent_start",
    "turn_start",           "turn_end",           "message_end",     "session_start",
    "session_shutdown",     "session_before_compact", "session_compact"};

// NP-14: per-streaming-delta events, never delivered to plugins whatever the grant.
inline constexpr std::array<std::string_view, 2> kNeverDeliverable = {"message_update", "tool_execution_update"};

bool isEventName(std::string_view name);
bool isNeverDeliverable(std::string_view name);
// NP-13: a retired Claude Code hook name. Only pre_tool_use -> tool_execution_start is given by
// the seed; the other three retired names are unknown (NANOPI.md gap 3), so only this one is
// recognised. Returns the suggested PI name, or nullopt.
std::optional<std::string_view> retiredRewrite(std::string_view name);
// "tool_execution_start, tool_execution_end, …" (for the unknown-name warning, NP-12).
std::string validNamesList();

// What the harness says about one emission; missing members get fixture defaults.
// Builds the documented payload of `event` (docs/nanopi.md): the common members, then the event's
// own members taken from `fields` (an object; unknown members are refused so a scenario typo is an
// error, not a silently different payload), each defaulted when absent. Error text names the event.
Expected<std::string, std::string> buildPayload(std::string_view event, const json::Value& fields);

}  // namespace conform::nanopi
