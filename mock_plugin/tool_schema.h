// mock_plugin/tool_schema — JSON Schema handling for tool declarations (SDK-03) and for validating
// tool arguments before a handler runs (issue 3: "JSON Schema parameters validated by the SDK").
// valijson does the work (DEPENDENCIES.md: RapidJSON's own validator is unsafe for 2020-12
// schemas); it lives in this one .cpp because its headers are slow to compile.
// Note: core/json/schema.h (json::Schema, checkSchemaDocument) is the project-wide home of this;
// when it lands, this file should become a thin forwarder to it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::plugin {

class ToolSchema {
 public:
  ~ToolSchema();
  // Fails when `schema` is not an object schema that valijson can compile (the SDK's stand-in for
  // draft 2020-12 meta-validation, INIT-21 / SDK-03).
  static Expected<std::shared_ptr<const ToolSchema>, std::string> compile(const json::Value& schema);
  // nullopt when `instance` is valid; otherwise the first error with its JSON path.
  std::optional<std::string> validate(const json::Value& instance) const;

 private:
  ToolSchema();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conform::plugin
