// See tool_schema.h. valijson is configured to throw on schemas it cannot parse; the exception is
// caught right here and turned into an error value, so a bad declaration never escapes as a throw.
#define VALIJSON_USE_EXCEPTIONS 1
// valijson's RapidJSON adapter must be included before any RapidJSON header (it defines
// RAPIDJSON_ASSERT), so it comes first here.
#include <valijson/adapters/rapidjson_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <exception>

#include "mock_plugin/tool_schema.h"
#include "mock_plugin/sdk_json.h"

namespace conform::plugin {

struct ToolSchema::Impl {
  json::Document doc;  // keeps the schema alive for the parsed valijson::Schema
  valijson::Schema schema;
};

ToolSchema::ToolSchema() : impl_(std::make_unique<Impl>()) {}
ToolSchema::~ToolSchema() = default;

Expected<std::shared_ptr<const ToolSchema>, std::string> ToolSchema::compile(const json::Value& s) {
  if (!s.IsObject()) return unexpected(std::string("parameters must be a JSON Schema object, found ") + sj::typeName(s));
  if (const json::Value* t = sj::member(s, "type")) {
    if (!t->IsString() || std::string_view(t->GetString(), t->GetStringLength()) != "object")
      return unexpected(std::string("parameters must describe an object (\"type\":\"object\")"));
  }
  if (const json::Value* p = sj::member(s, "properties"); p && !p->IsObject())
    return unexpected(std::string("parameters.properties must be an object"));
  std::shared_ptr<ToolSchema> out(new ToolSchema());
  out->impl_->doc.CopyFrom(s, out->impl_->doc.GetAllocator());
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::RapidJsonAdapter adapter(out->impl_->doc);
    parser.populateSchema(adapter, out->impl_->schema);
  } catch (const std::exception& e) {
    return unexpected(std::string("invalid JSON Schema: ") + e.what());
  }
  return std::shared_ptr<const ToolSchema>(std::move(out));
}

std::optional<std::string> ToolSchema::validate(const json::Value& instance) const {
  try {
    valijson::Validator v;
    valijson::ValidationResults results;
    valijson::adapters::RapidJsonAdapter adapter(instance);
    if (v.validate(impl_->schema, adapter, &results)) return std::nullopt;
    valijson::ValidationResults::Error err;
    std::string msg = "arguments do not match the tool's parameter schema";
    if (results.popError(err)) {
      std::string path;
      for (const auto& c : err.context) path += c;
      msg += ": " + path + ": " + err.description;
    }
    return msg;
  } catch (const std::exception& e) {
    return std::string("argument validation failed: ") + e.what();
  }
}

}  // namespace conform::plugin
