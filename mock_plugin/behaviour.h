// mock_plugin/behaviour — what the conform-plugin executable does (docs/reference-plugin.md).
//   * builtinBehaviour(): declares every capability, every hook and a few tools and answers
//     everything correctly; faults (faults.h) then break exactly one rule on top of it.
//   * behaviour files (`--behaviour FILE`): a JSON description of name, tools and their answers,
//     subscriptions, hook answers, emits, producer actions and the recovery outcome, decoded
//     strictly with json::ObjectMapper so every error names its key path.
//   * examples (`--example producer`): the conform port of the seed's producer example (SDK-27).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/protocol/common.h"
#include "mock_plugin/sdk.h"

namespace conform::plugin {

struct BehaviourOptions {
  std::string name = "conform-plugin";  // the configured name it must report (INIT-13)
  std::string version = "0.1.0";
  Profile profile = Profile::V006;
};

// Tools of the built-in behaviour:
//   echo        {text}          single output: the text
//   report      {path}          named output (results, errors); primary resource `path`
//   publish     {name, payload} emits on the bus with the call's own grant, then answers
PluginBuilder builtinBehaviour(const BehaviourOptions& o);

// ---------------------------------------------------------------------------------------------
// Behaviour files. Every member is documented in docs/reference-plugin.md.
// ---------------------------------------------------------------------------------------------
struct BehaviourError {  // {code, message}: the tool fails with a JSON-RPC error (TOOL-31)
  std::int32_t code = kToolFailureCode;
  std::string message;
};
struct ToolResponse {
  std::optional<std::string> text;                      // canned single output
  std::optional<std::string> echo;                      // name of the argument echoed; "*" = all arguments
  std::optional<std::map<std::string, std::string>> streams;  // named output: stream → text
  bool is_error = false;
  std::optional<std::string> display;
  std::uint64_t delay_ms = 0;
  std::optional<BehaviourError> error;
};
struct ToolOutputSpec {
  std::string kind = "single";  // "single" | "named"
  std::vector<std::string> streams;
};
struct ToolSpec {
  std::string name, description, permission_name;
  protocol::JsonValue parameters;
  std::optional<std::string> primary_resource_param;
  ToolOutputSpec output;
  ToolResponse response;
};
struct HookSpec {
  protocol::JsonValue answer;  // the result object sent as is
  std::uint64_t delay_ms = 0;
};
struct EmitSpec {  // on each of the first `count` matching events, one emit with that event's grant
  std::string name;
  protocol::JsonValue payload;
  std::uint64_t count = 1;
  std::optional<std::string> event_type;  // only events of this `type`
};
struct ProducerSendSpec {
  std::string key, description, body;
  std::string mode = "steer";
};
struct ProducerSpec {
  std::string on = "first_event";          // "first_event" (of each session) | "recovery"
  std::optional<std::string> session_id;   // required for "recovery" (recovery has no session)
  std::vector<ProducerSendSpec> sends;
  bool unregister = false;
};
struct RecoverySpec {
  std::string status = "ready";  // "ready" | "failed"
  std::optional<std::string> message;
  std::uint64_t delay_ms = 0;
};
struct BehaviourSpec {
  std::string name = "conform-plugin";
  std::string version = "0.1.0";
  std::string profile = "0.0.6";
  std::vector<ToolSpec> tools;
  bool subscribe_events = false;
  bool subscribe_bus = false;
  bool publish_bus = false;
  std::map<std::string, HookSpec> hooks;  // hook name → answer
  std::vector<EmitSpec> emits;
  std::optional<ProducerSpec> producer;
  std::optional<RecoverySpec> recovery;
};

// Parses and checks a behaviour file. Errors read "behaviour.tools[0].response.echo: expected
// string, found number" (json::ObjectMapper paths) or name the key whose value is inconsistent.
Expected<BehaviourSpec, std::string> parseBehaviour(std::string_view json_text);
// The builder for a checked spec (declaration errors still surface from build(), SDK-03).
PluginBuilder behaviourBuilder(const BehaviourSpec& spec);

// SDK-27: the conform port of the seed's producer example. Reads COOKIE_SESSION_ID (optional) and
// COOKIE_DISCARD_MESSAGE_ID from `env` (the process environment in conform-plugin).
struct ProducerExampleEnv {
  std::optional<std::string> session_id;
  std::optional<std::string> discard_message_id;
  static ProducerExampleEnv fromProcess();
};
PluginBuilder producerExample(const ProducerExampleEnv& env, const BehaviourOptions& o = {});
// The stable idempotency key of the example for a session (same key after every restart, SDK-23).
std::string producerExampleKey(std::string_view session_id);

}  // namespace conform::plugin
