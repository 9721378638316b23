// tests/protocol/messages_test.cpp — every message type of both profiles: a canonical example
// round-trips through its typed codec (fromJSON → toJSON → equal) and passes the profile's JSON
// Schema; malformed examples are rejected by BOTH the typed decoder and the schema, at the expected
// JSON path. This is what keeps the two descriptions of each shape in agreement (RPC-12).
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "core/protocol/emit.h"
#include "core/protocol/events.h"
#include "core/protocol/hooks.h"
#include "core/protocol/lifecycle.h"
#include "core/protocol/producer.h"
#include "core/protocol/profile.h"
#include "core/protocol/recovery.h"
#include "core/protocol/tools.h"

namespace cp = conform::protocol;
namespace json = conform::json;

namespace {

#define SID "0191c0de-0000-7000-8000-000000000001"
#define UID2 "0191c0de-0000-7000-8000-0000000000aa"
#define HEAD "\"session_id\":\"" SID "\",\"context_id\":\"ctx-1\""

json::Document parseOrFail(const std::string& text) {
  auto p = json::parse(text);
  INFO(text);
  REQUIRE(p.has_value());
  return std::move(p->doc);
}

// Round trip through T; returns the canonical text written back, or the decode error.
template <class T>
std::string roundTrip(const json::Value& v) {
  json::Path::Root root;
  T out{};
  if (!fromJSON(v, out, json::Path(root))) return "DECODE ERROR " + root.error().value_or("?");
  json::Document d;
  json::Value back = toJSON(out, d.GetAllocator());
  // Decoding the written form again must give an equal struct.
  json::Path::Root root2;
  T again{};
  if (!fromJSON(back, again, json::Path(root2))) return "RE-DECODE ERROR " + root2.error().value_or("?");
  if (!(again == out)) return "RE-DECODE MISMATCH";
  return json::canonical(back);
}
template <class T>
std::string decodeErrorPath(const json::Value& v) {
  json::Path::Root root;
  T out{};
  if (fromJSON(v, out, json::Path(root))) return "(accepted)";
  return root.errorPath();
}

struct Codec {
  std::function<std::string(const json::Value&)> round_trip;
  std::function<std::string(const json::Value&)> error_path;
};
template <class T>
Codec codec() {
  return {roundTrip<T>, decodeErrorPath<T>};
}

struct Bad {
  std::string text;
  std::string path;         // decoder error path
  std::string schema_path;  // the schema's violation lies at or beneath this ("" = path)
};
struct Case {
  std::string profiles;  // "both", "0.0.6" or "0.0.4"
  std::string_view method;
  cp::Part part;
  Codec codec;
  std::string good;
  std::vector<Bad> bad;
};

bool isAtOrBeneath(const std::string& path, const std::string& scope) {
  if (scope == "<root>" || scope.empty()) return true;
  if (path.rfind(scope, 0) != 0) return false;
  return path.size() == scope.size() || path[scope.size()] == '.' || path[scope.size()] == '[';
}

void runCase(const Case& c) {
  for (const cp::Profile* prof : cp::allProfiles()) {
    if (c.profiles != "both" && c.profiles != prof->version()) continue;
    INFO("profile " << prof->version() << " " << c.method << " " << cp::toString(c.part));
    json::Document good = parseOrFail(c.good);
    INFO("good: " << c.good);
    CHECK(c.codec.round_trip(good) == json::canonical(good));
    auto v = prof->validate(c.method, c.part, good);
    CHECK_FALSE(v.has_value());
    if (v) FAIL_CHECK(v->str());
    for (const Bad& b : c.bad) {
      json::Document bad = parseOrFail(b.text);
      INFO("bad: " << b.text);
      CHECK(c.codec.error_path(bad) == b.path);
      auto sv = prof->validate(c.method, c.part, bad);
      REQUIRE(sv.has_value());
      // The schema's violation must lie at or beneath `scope` (a oneOf reports the member of the
      // branch it tried, e.g. `output.kind` for a bad named output).
      std::string scope = b.schema_path.empty() ? b.path : b.schema_path;
      INFO("schema said: " << sv->str());
      CHECK(isAtOrBeneath(sv->path, scope));
    }
  }
}

const std::string kCaps006 =
    R"({"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true,"producer_messaging":false})";
const std::string kPluginCaps006 =
    R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":false,"publish_bus":true,"publish_session_events":false,"producer_messaging":true,"intercept":["tool_before_call","message_end"]})";
const std::string kPluginCaps004 =
    R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":false,"publish_bus":true,"publish_session_events":false,"intercept":["tool_before_call"]})";
const std::string kTool006 =
    R"({"name":"echo_tool","description":"Echo","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"permission_name":"echo","primary_resource_param":"path","output":{"kind":"named","streams":["results","errors"]}})";
const std::string kTool004 =
    R"({"name":"echo_tool","description":"Echo","parameters":{"type":"object"},"permission_name":"echo","primary_resource_param":null})";
const std::string kModel =
    R"({"selection":{"model":"anthropic/claude-x","variant":null},"provider_id":"anthropic","model_id":"claude-x","adapter_id":"anthropic","selection_fingerprint":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})";

}  // namespace

TEST_CASE("INIT-02 INIT-03 initialize params of both profiles round-trip and reject faults", "[protocol][init]") {
  using cp::Part;
  runCase({"0.0.6", cp::method::kInitialize, Part::Params, codec<cp::InitializeParams>(),
           R"({"protocol_version":"0.0.6","engine_version":"0.2.0","capabilities":)" + kCaps006 + "}",
           {{R"({"protocol_version":"0.0.4","engine_version":"0.2.0","capabilities":)" + kCaps006 + "}",
             "protocol_version", ""},
            {R"({"protocol_version":"0.0.6","engine_version":"0.2.0","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true}})",
             "capabilities.producer_messaging", "capabilities"},
            {R"({"protocol_version":"0.0.6","capabilities":)" + kCaps006 + "}", "engine_version", "<root>"}}});
  runCase({"0.0.4", cp::method::kInitialize, Part::Params, codec<cp::v004::InitializeParams>(),
           R"({"protocol_version":"0.0.4","engine_version":"0.2.0","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true}})",
           {{R"({"protocol_version":"0.0.4","engine_version":"0.2.0","capabilities":)" + kCaps006 + "}",
             "capabilities.producer_messaging", "capabilities"}}});
}

TEST_CASE("INIT-09 INIT-16 INIT-17 TOOL-04 initialize result shapes", "[protocol][init]") {
  using cp::Part;
  const std::string head006 = R"({"protocol_version":"0.0.6","name":"fixture","version":"1.0","capabilities":)";
  runCase({"0.0.6", cp::method::kInitialize, Part::Result, codec<cp::InitializeResult>(),
           head006 + kPluginCaps006 + R"(,"tools":[)" + kTool006 + "]}",
           {{head006 + kPluginCaps006 + "}", "tools", "<root>"},
            {head006 + kPluginCaps004 + R"(,"tools":[]})", "capabilities.producer_messaging", "capabilities"},
            {R"({"protocol_version":"0.0.6","name":"fixture","version":"1.0","capabilities":{"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":false,"publish_bus":true,"publish_session_events":false,"producer_messaging":true,"intercept":["tool_before_run"]},"tools":[]})",
             "capabilities.intercept[0]", ""},
            {head006 + kPluginCaps006 +
                 R"(,"tools":[{"name":"t","description":"d","parameters":{},"permission_name":"p","primary_resource_param":null,"output":{"kind":"named","streams":["a b"]}}]})",
             "tools[0].output.streams[0]", "tools[0].output"},
            {head006 + kPluginCaps006 +
                 R"(,"tools":[{"name":"t","description":"d","parameters":{},"permission_name":"p","primary_resource_param":null,"output":{"kind":"named","streams":["a","a"]}}]})",
             "tools[0].output.streams[1]", "tools[0].output"},
            {head006 + kPluginCaps006 +
                 R"(,"tools":[{"name":"t","description":"d","parameters":{},"permission_name":"p","primary_resource_param":null,"output":{"kind":"named","streams":[]}}]})",
             "tools[0].output.streams", "tools[0].output"},
            {head006 + kPluginCaps006 + R"(,"tools":[],"extra":1})", "extra", "<root>"}}});
  const std::string head004 = R"({"protocol_version":"0.0.4","name":"fixture","version":"1.0","capabilities":)";
  runCase({"0.0.4", cp::method::kInitialize, Part::Result, codec<cp::v004::InitializeResult>(),
           head004 + kPluginCaps004 + R"(,"tools":[)" + kTool004 + "]}",
           {{head004 + kPluginCaps004 + R"(,"tools":[)" + kTool006 + "]}", "tools[0].output", "tools[0]"},
            {head004 + kPluginCaps006 + R"(,"tools":[]})", "capabilities.producer_messaging", "capabilities"}}});
}

TEST_CASE("PING-01 SHUT-01 RECOV-01 empty objects accept only {}", "[protocol][ping]") {
  using cp::Part;
  for (auto [method, part] : {std::pair{cp::method::kPing, Part::Params}, {cp::method::kPing, Part::Result},
                              {cp::method::kShutdown, Part::Params},
                              {cp::method::kProviderAfterResponse, Part::Result}})
    runCase({"both", method, part, codec<cp::Empty>(), "{}", {{R"({"x":1})", "x", "<root>"}, {"[]", "<root>", ""}}});
  for (auto [method, part] : {std::pair{cp::method::kRecoveryStart, Part::Params},
                              {cp::method::kRecoveryComplete, Part::Result},
                              {cp::method::kProducerUnregister, Part::Result},
                              {cp::method::kProducerDiscard, Part::Result}})
    runCase({"0.0.6", method, part, codec<cp::Empty>(), "{}", {{R"({"x":1})", "x", "<root>"}}});
}

TEST_CASE("TOOL-05 TOOL-09 TOOL-10 tools/call params and results", "[protocol][tool]") {
  using cp::Part;
  runCase({"both", cp::method::kToolsCall, Part::Params, codec<cp::ToolCallParams>(),
           R"({"tool":"echo_tool","session_id":")" SID R"(","context_id":"c","invocation_id":")" UID2
           R"(","arguments":{"path":"a"},"resource":"a","cancellation_token":")" UID2 R"("})",
           {{R"({"tool":"echo_tool","session_id":")" SID R"(","context_id":"c","invocation_id":")" UID2
             R"(","arguments":{}})",
             "resource", "<root>"},
            {R"({"tool":"echo_tool","session_id":"not-a-uuid","context_id":"c","invocation_id":")" UID2
             R"(","arguments":{},"resource":null})",
             "session_id", ""}}});
  runCase({"0.0.6", cp::method::kToolsCall, Part::Result, codec<cp::ToolCallResult>(),
           R"({"output":{"kind":"single","text":"hello"},"display":"echoed 5 bytes","is_error":false})",
           {{R"({"content":"hello","is_error":false})", "output", "<root>"},
            {R"({"output":{"kind":"single","text":"x"},"content":"hello","is_error":false})", "content", "<root>"},
            {R"({"output":{"kind":"named","text":"x"},"is_error":false})", "output.streams", "output"}}});
  runCase({"0.0.6", cp::method::kToolsCall, Part::Result, codec<cp::ToolCallResult>(),
           R"({"output":{"kind":"named","streams":[{"stream":"results","text":"r"},{"stream":"errors","text":""}]},"is_error":true})",
           {}});
  runCase({"0.0.4", cp::method::kToolsCall, Part::Result, codec<cp::v004::ToolCallResult>(),
           R"({"content":"hello","is_error":false})",
           {{R"({"output":{"kind":"single","text":"x"},"is_error":false})", "content", "<root>"}}});
}

TEST_CASE("EVT-02 BUS-02 EMIT-01 EMIT-03 event, bus event, emit and emit_result", "[protocol][event]") {
  using cp::Part;
  runCase({"both", cp::method::kEvent, Part::Params, codec<cp::EventParams>(),
           R"({)" HEAD R"(,"seq":7,"event":{"type":"future_event","anything":[1,2]},"timestamp":"2025-01-02T03:04:05.123Z"})",
           {{R"({)" HEAD R"(,"seq":0,"event":{"type":"x"},"timestamp":"2025-01-02T03:04:05Z"})", "seq", ""},
            {R"({)" HEAD R"(,"seq":1,"event":{"kind":"x"},"timestamp":"2025-01-02T03:04:05Z"})", "event.type", "event"},
            {R"({)" HEAD R"(,"seq":1,"event":{"type":"x"},"timestamp":"yesterday"})", "timestamp", ""}}});
  runCase({"both", cp::method::kBusEvent, Part::Params, codec<cp::BusEventParams>(),
           R"({)" HEAD R"(,"plugin":"a","name":"n","payload":{"k":[true,null]}})",
           {{R"({"session_id":")" SID R"(","plugin":"a","name":"n"})", "payload", "<root>"}}});
  runCase({"both", cp::method::kEmit, Part::Params, codec<cp::EmitParams>(),
           R"({)" HEAD R"(,"name":"progress","payload":42})",
           {{R"({"session_id":")" SID R"(","name":"n","payload":1})", "context_id", "<root>"},
            {R"({)" HEAD R"(,"name":"n","payload":1,"owner":"x"})", "owner", "<root>"}}});
  runCase({"both", cp::method::kEmitResult, Part::Params, codec<cp::EmitResultParams>(),
           R"({"name":"progress","bus":"published","durable":"rejected","reason":"durable session publication is not supported; use plugin/producer/send"})",
           {{R"({"name":"n","bus":"lost","durable":"rejected"})", "bus", ""}}});
}

TEST_CASE("HOOK-17 HOOK-23 HOOK-28 HOOK-33 HOOK-37 tool, agent, compaction and input hooks", "[protocol][hook]") {
  using cp::Part;
  runCase({"both", cp::method::kToolBeforeCall, Part::Params, codec<cp::ToolBeforeCallParams>(),
           R"({)" HEAD R"(,"tool":"t","arguments":{"a":1},"permission_name":"p","resource":null})",
           {{R"({)" HEAD R"(,"tool":"t","arguments":{},"permission_name":"p"})", "resource", "<root>"}}});
  runCase({"both", cp::method::kToolBeforeCall, Part::Result, codec<cp::ToolBeforeCallResult>(),
           R"({"action":"allow","reason":"ok","modified_arguments":{"a":2},"message_to_model":"m"})",
           {{R"({"action":"transform"})", "action", ""}}});
  runCase({"both", cp::method::kToolAfterResult, Part::Params, codec<cp::ToolAfterResultParams>(),
           R"({)" HEAD R"(,"tool":"t","arguments":{},"result_content":"out","is_error":false})",
           {{R"({)" HEAD R"(,"tool":"t","arguments":{},"result_content":"out","is_error":"no"})", "is_error", ""}}});
  runCase({"both", cp::method::kToolAfterResult, Part::Result, codec<cp::ToolAfterResultResult>(),
           R"({"action":"replace","replacement_content":"new","note":"n"})",
           {{R"({"replacement_content":"new"})", "action", "<root>"}}});
  runCase({"both", cp::method::kAgentBeforeStart, Part::Params, codec<cp::AgentBeforeStartParams>(),
           R"({)" HEAD R"(,"agent_path":"main","prompt_context":{"input":"hi"}})",
           {{R"({)" HEAD R"(,"prompt_context":{}})", "agent_path", "<root>"}}});
  runCase({"both", cp::method::kAgentBeforeStart, Part::Result, codec<cp::AgentBeforeStartResult>(),
           R"({"append_to_system_prompt":"A","inject_message":{"role":"user","content":"hello"}})",
           {{R"({"inject_message":{"role":"robot","content":"x"}})", "inject_message.role", "inject_message"}}});
  runCase({"both", cp::method::kSessionBeforeCompact, Part::Params, codec<cp::SessionBeforeCompactParams>(),
           R"({)" HEAD R"(,"checkpoint_id":")" SID R"(:12","additions":["a","b"],"instructions":"focus"})",
           {{R"({)" HEAD R"(,"checkpoint_id":"c","additions":[1]})", "additions[0]", ""}}});
  runCase({"both", cp::method::kSessionBeforeCompact, Part::Result, codec<cp::SessionBeforeCompactResult>(),
           R"({"addendum":"more","cancel":true,"reason":"no"})",
           {{R"({"cancel":null})", "cancel", ""}}});
  runCase({"both", cp::method::kUserBeforeInput, Part::Params, codec<cp::UserBeforeInputParams>(),
           R"({)" HEAD R"(,"text":"hello"})", {{R"({)" HEAD R"(})", "text", "<root>"}}});
  runCase({"both", cp::method::kUserBeforeInput, Part::Result, codec<cp::UserBeforeInputResult>(),
           R"({"action":"transform","new_text":"HELLO"})", {{R"({"action":"block"})", "action", ""}}});
}

TEST_CASE("HOOK-42 HOOK-45 HOOK-46 HOOK-47 HOOK-48 model and provider hooks", "[protocol][hook]") {
  using cp::Part;
  runCase({"both", cp::method::kModelBeforeRequest, Part::Params, codec<cp::ModelBeforeRequestParams>(),
           R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"model":)" +
               kModel + R"(,"params":{"max_tokens":100,"temperature":0.5}})",
           {{R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","messages":[],"model":)" + kModel +
                 R"(,"params":{"seed":1}})",
             "params.seed", "params"},
            {R"({)" HEAD R"(,"attempt_id":")" UID2
             R"(","messages":[],"model":{"selection":{"model":"anthropic/claude-x"},"provider_id":"anthropic","model_id":"claude-x","adapter_id":"anthropic","selection_fingerprint":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},"params":{}})",
             "model.selection.variant", "model.selection"}}});
  runCase({"both", cp::method::kModelBeforeRequest, Part::Result, codec<cp::ModelBeforeRequestResult>(),
           R"({"action":"replace","messages":[{"role":"system","content":"be brief"}],"params_adjustments":{"top_p":0.9}})",
           {{R"({"action":"replace","messages":[{"role":"system"}]})", "messages[0].content", "messages[0]"}}});
  runCase({"both", cp::method::kProviderBeforeHeaders, Part::Params, codec<cp::ProviderBeforeHeadersParams>(),
           R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","headers":{}})",
           {{R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","headers":{"a":1}})", "headers.a", ""}}});
  runCase({"both", cp::method::kProviderBeforeHeaders, Part::Result, codec<cp::ProviderBeforeHeadersResult>(),
           R"({"set":{"x-a":"1"},"delete":["x-b"]})", {{R"({"delete":null})", "delete", ""}}});
  runCase({"both", cp::method::kProviderBeforeRequest, Part::Params, codec<cp::ProviderBeforeRequestParams>(),
           R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","payload":{"model":"m"}})",
           {{R"({)" HEAD R"(,"attempt_id":"x","payload":{}})", "attempt_id", ""}}});
  runCase({"both", cp::method::kProviderBeforeRequest, Part::Result, codec<cp::ProviderBeforeRequestResult>(),
           R"({"action":"replace","payload":{"model":"m2"}})", {{R"({"action":1})", "action", ""}}});
  runCase({"both", cp::method::kProviderAfterResponse, Part::Params, codec<cp::ProviderAfterResponseParams>(),
           R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","status":200,"headers":{}})",
           {{R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","status":70000,"headers":{}})", "status", ""}}});
  runCase({"both", cp::method::kMessageEnd, Part::Params, codec<cp::MessageEndParams>(),
           R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","role":"assistant","content":[{"type":"text","text":"hi","metadata":null}]})",
           {{R"({)" HEAD R"(,"attempt_id":")" UID2 R"(","role":"assistant","content":[{"text":"hi"}]})", "content[0].type",
             "content[0]"}}});
  runCase({"both", cp::method::kMessageEnd, Part::Result, codec<cp::MessageEndResult>(),
           R"({"action":"replace","content":[{"type":"reasoning","text":"t","metadata":{}}]})",
           {{R"({"action":"keep","content":[7]})", "content[0]", ""}}});
}

TEST_CASE("HOOK-50 HOOK-52 HOOK-53 selection, fork and revert hooks", "[protocol][hook]") {
  using cp::Part;
  runCase({"both", cp::method::kModelBeforeSelect, Part::Params, codec<cp::ModelBeforeSelectParams>(),
           R"({)" HEAD R"(,"from":{"model":"openai/gpt-x"},"to":{"model":"anthropic/claude-x","variant":"fast"},"source":"user"})",
           {{R"({)" HEAD R"(,"to":{"model":"anthropic/claude-x","variant":"base"},"source":"user"})", "to.variant", "to"},
            {R"({)" HEAD R"(,"to":{"model":"anthropic/claude-x"},"source":"robot"})", "source", ""}}});
  runCase({"both", cp::method::kModelBeforeSelect, Part::Result, codec<cp::AllowBlockResult>(),
           R"({"action":"block","reason":"no"})", {{R"({"action":"allow","extra":true})", "extra", "<root>"}}});
  runCase({"both", cp::method::kSessionBeforeFork, Part::Params, codec<cp::SessionBeforeForkParams>(),
           R"({)" HEAD R"(,"through_seq":12})", {{R"({)" HEAD R"(,"through_seq":-1})", "through_seq", ""}}});
  runCase({"both", cp::method::kSessionBeforeFork, Part::Result, codec<cp::AllowBlockResult>(), R"({"action":"allow"})",
           {{R"({"action":"override"})", "action", ""}}});
  runCase({"both", cp::method::kSessionBeforeRevert, Part::Params, codec<cp::SessionBeforeRevertParams>(),
           R"({)" HEAD R"(,"through_seq":3,"instructions":"i"})", {{R"({)" HEAD R"(,"through_seq":1.5})", "through_seq", ""}}});
  runCase({"both", cp::method::kSessionBeforeRevert, Part::Result, codec<cp::SessionBeforeRevertResult>(),
           R"({"action":"override","instructions_override":"new"})", {{R"({"action":"keep"})", "action", ""}}});
}

TEST_CASE("PROD-05 PROD-09 PROD-10 PROD-11 PROD-12 PROD-23 PROD-26 producer shapes", "[protocol][prod]") {
  using cp::Part;
  runCase({"0.0.6", cp::method::kProducerRegister, Part::Params, codec<cp::ProducerRegisterParams>(),
           R"({"session_id":")" SID R"("})", {{R"({"session_id":")" SID R"(","owner":"other"})", "owner", "<root>"}}});
  runCase({"0.0.6", cp::method::kProducerRegister, Part::Result, codec<cp::ProducerRegisterResult>(),
           R"({"producer_id":")" UID2 R"("})", {{R"({"producer_id":"p-1"})", "producer_id", ""}}});
  const std::string send = R"({"session_id":")" SID R"(","producer_id":")" UID2 R"(","mode":"steer","idempotency_key":"job-1","description":"Build finished","body":""})";
  runCase({"0.0.6", cp::method::kProducerSend, Part::Params, codec<cp::ProducerSendParams>(), send,
           {{R"({"session_id":")" SID R"(","producer_id":")" UID2 R"(","mode":"later","idempotency_key":"k","description":"d","body":"b"})",
             "mode", ""},
            {R"({"session_id":")" SID R"(","producer_id":")" UID2 R"(","mode":"queue","idempotency_key":"","description":"d","body":"b"})",
             "idempotency_key", ""},
            {R"({"session_id":")" SID R"(","producer_id":")" UID2 R"(","mode":"queue","idempotency_key":"a\tb","description":"d","body":"b"})",
             "idempotency_key", ""},
            {R"({"session_id":")" SID R"(","producer_id":")" UID2 R"(","mode":"queue","idempotency_key":"k","description":"   ","body":"b"})",
             "description", ""},
            {R"({"session_id":")" SID R"(","producer_id":")" UID2 R"(","mode":"queue","idempotency_key":"k","description":"a\nb","body":"b"})",
             "description", ""},
            {R"({"session_id":")" SID R"(","producer_id":")" UID2 R"(","mode":"queue","idempotency_key":"k","description":"d","body":{}})",
             "body", ""}}});
  runCase({"0.0.6", cp::method::kProducerSend, Part::Result, codec<cp::ProducerSendResult>(),
           R"({"message_id":")" UID2 R"("})", {{R"({"message_id":5})", "message_id", ""}}});
  runCase({"0.0.6", cp::method::kProducerUnregister, Part::Params, codec<cp::ProducerUnregisterParams>(),
           R"({"session_id":")" SID R"(","producer_id":")" UID2 R"("})", {{R"({"session_id":")" SID R"("})", "producer_id", "<root>"}}});
  runCase({"0.0.6", cp::method::kProducerDiscard, Part::Params, codec<cp::ProducerDiscardParams>(),
           R"({"session_id":")" SID R"(","message_id":")" UID2 R"("})", {{R"({"message_id":")" UID2 R"("})", "session_id", "<root>"}}});
}

TEST_CASE("RECOV-05 recovery complete carries exactly one of the two outcome forms", "[protocol][recov]") {
  using cp::Part;
  runCase({"0.0.6", cp::method::kRecoveryComplete, Part::Params, codec<cp::RecoveryCompleteParams>(),
           R"({"outcome":{"status":"ready"}})",
           {{R"({"outcome":{"status":"ready","message":"x"}})", "outcome.message", "outcome"},
            {R"({"outcome":{"status":"failed"}})", "outcome.message", "outcome"},
            {R"({"outcome":{"status":"done"}})", "outcome.status", "outcome"},
            {R"({})", "outcome", "<root>"}}});
  runCase({"0.0.6", cp::method::kRecoveryComplete, Part::Params, codec<cp::RecoveryCompleteParams>(),
           R"({"outcome":{"status":"failed","message":"could not reach the job store"}})", {}});
}
