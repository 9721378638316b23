// core/protocol/tools.h — tool declarations, plugin/tools/call params and results (PROTOCOL.md §8).
//
// 0.0.6 adds the [chosen C3/C4] output declaration and replaces the call result `{content, is_error}`
// by `{output, display?, is_error}` [chosen C5/C6] (DELTA §3.4, §3.5). The 0.0.4 shapes are in
// namespace v004. Rules that need the declaration and the result together (TOOL-11/12: every declared
// stream exactly once, kinds match) cannot be decoding rules; checkToolOutput() implements them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/protocol/common.h"

namespace conform::protocol {

enum class OutputKind : std::uint8_t { Single, Named };
std::string_view toString(OutputKind);
std::optional<OutputKind> parseOutputKind(std::string_view);
bool fromJSON(const json::Value&, OutputKind&, json::Path);

// ToolOutputDeclaration [chosen C3/C4] (§8.1; TOOL-03, TOOL-04): `{"kind":"single"}` or
// `{"kind":"named","streams":[1..8 distinct names of 1–64 unreserved characters]}`. The decoder
// enforces all of it (errors name `…output.streams[i]`).
struct ToolOutputDeclaration {
  OutputKind kind = OutputKind::Single;
  std::vector<std::string> streams;  // empty for single
  friend bool operator==(const ToolOutputDeclaration&, const ToolOutputDeclaration&) = default;
};
bool fromJSON(const json::Value&, ToolOutputDeclaration&, json::Path);
json::Value toJSON(const ToolOutputDeclaration&, json::Allocator&);

// ExtensionToolDeclaration (§8.1, closed; TOOL-01). Shape only: snake_case names, non-empty
// description, schema meta-validity and primary_resource_param membership are declaration checks of
// §6.3 step 6 (INIT-20/21), done by checkToolDeclaration() (all but the meta-schema check).
struct ToolDeclaration {
  std::string name;
  std::string description;
  JsonValue parameters;
  std::string permission_name;
  std::optional<std::string> primary_resource_param;  // req/null
  ToolOutputDeclaration output;                       // opt={"kind":"single"}; always written
  friend bool operator==(const ToolDeclaration&, const ToolDeclaration&) = default;
};
bool fromJSON(const json::Value&, ToolDeclaration&, json::Path);
json::Value toJSON(const ToolDeclaration&, json::Allocator&);

// A declaration problem of §6.3 step 6 / INIT-20/21 (without the JSON Schema meta-validation, which
// needs core/json/schema.h), e.g. {"tools[1].name", "tool name `EchoTool` is not snake_case", "INIT-20"}.
struct DeclarationProblem {
  std::string path;
  std::string message;
  std::string rule_id;
};
// Checks one list of declarations: snake_case and unique names, snake_case permission, non-empty
// description, object `parameters`, primary_resource_param ∈ parameters.properties.
std::optional<DeclarationProblem> checkToolDeclarations(const std::vector<ToolDeclaration>&);

// ExtensionToolCallParams (§8.2, closed; TOOL-05). Identical in both profiles.
struct ToolCallParams {
  std::string tool;
  SessionId session_id;
  ContextToken context_id;
  ToolCallId invocation_id;
  JsonValue arguments;
  std::optional<std::string> resource;            // req/null (TOOL-06)
  std::optional<std::string> cancellation_token;  // opt (TOOL-19)
  friend bool operator==(const ToolCallParams&, const ToolCallParams&) = default;
};
bool fromJSON(const json::Value&, ToolCallParams&, json::Path);
json::Value toJSON(const ToolCallParams&, json::Allocator&);

// One entry of a named output (§8.3).
struct StreamText {
  std::string stream;
  std::string text;
  friend bool operator==(const StreamText&, const StreamText&) = default;
};
bool fromJSON(const json::Value&, StreamText&, json::Path);
json::Value toJSON(const StreamText&, json::Allocator&);

// ToolOutput (§8.3; TOOL-09): `{"kind":"single","text"}` or `{"kind":"named","streams":[…]}`.
struct ToolOutput {
  OutputKind kind = OutputKind::Single;
  std::string text;                 // single only
  std::vector<StreamText> streams;  // named only
  friend bool operator==(const ToolOutput&, const ToolOutput&) = default;
};
bool fromJSON(const json::Value&, ToolOutput&, json::Path);
json::Value toJSON(const ToolOutput&, json::Allocator&);

// ExtensionToolCallResult 0.0.6 (§8.3, closed; TOOL-09, TOOL-10): `content` is not accepted.
struct ToolCallResult {
  ToolOutput output;
  std::optional<std::string> display;  // opt [chosen C6]
  bool is_error = false;
  friend bool operator==(const ToolCallResult&, const ToolCallResult&) = default;
};
bool fromJSON(const json::Value&, ToolCallResult&, json::Path);
json::Value toJSON(const ToolCallResult&, json::Allocator&);

// TOOL-11/TOOL-12 [chosen C7/C8]: the output kind matches the declaration, each declared stream
// appears exactly once and no other stream appears. nullopt when the output conforms; otherwise a
// message naming the first offending stream.
std::optional<std::string> checkToolOutput(const ToolOutputDeclaration&, const ToolOutput&);

namespace v004 {

// ExtensionToolDeclaration 0.0.4 (DELTA §3.4): no `output` member (its presence is malformed).
struct ToolDeclaration {
  std::string name;
  std::string description;
  JsonValue parameters;
  std::string permission_name;
  std::optional<std::string> primary_resource_param;  // req/null
  friend bool operator==(const ToolDeclaration&, const ToolDeclaration&) = default;
};
bool fromJSON(const json::Value&, ToolDeclaration&, json::Path);
json::Value toJSON(const ToolDeclaration&, json::Allocator&);

// ExtensionToolCallResult 0.0.4 (DELTA §3.5): `{content, is_error}`, both required.
struct ToolCallResult {
  std::string content;
  bool is_error = false;
  friend bool operator==(const ToolCallResult&, const ToolCallResult&) = default;
};
bool fromJSON(const json::Value&, ToolCallResult&, json::Path);
json::Value toJSON(const ToolCallResult&, json::Allocator&);

}  // namespace v004
}  // namespace conform::protocol
