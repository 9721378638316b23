// fuzz_schema — core/json Schema: compile an arbitrary schema, validate an arbitrary instance.
//
// Input layout: the first line (up to the first LF) is the schema text, the rest the instance, so
// seeds stay readable one-line-schema files.
// Invariants: compile() and checkSchemaDocument() never crash or throw; compiling the text and the
// parsed value agree; validate() and validateAll() agree (a first violation exactly when the list
// is non-empty, at most `max` entries); no hang — PCRE2 patterns run under match limits and std::regex never sees long
// subjects (libFuzzer's -timeout turns a hang into a reported crash).
#include "core/json/json.h"
#include "core/json/schema.h"
#include "fuzz/fuzz_common.h"

namespace json = conform::json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = conform::fuzz::asText(data, size);
  const std::size_t lf = input.find('\n');
  const std::string_view schema_text = input.substr(0, lf);
  const std::string_view instance_text = lf == std::string_view::npos ? std::string_view{} : input.substr(lf + 1);

  auto schema_doc = json::parse(schema_text);
  if (!schema_doc) return 0;
  if (auto problem = json::checkSchemaDocument(schema_doc->doc)) (void)problem->str();
  auto schema = json::Schema::compile(schema_doc->doc);
  if (!schema) return 0;
  auto from_text = json::Schema::compile(schema_text);
  FUZZ_CHECK(from_text.has_value(), "compile(text) refused what compile(value) accepted");
  FUZZ_CHECK(json::canonical(from_text->source()) == json::canonical(schema->source()),
             "compile(text) kept a different source");

  auto instance = json::parse(instance_text);
  if (!instance) return 0;
  // Two validations only (accepts() is !validate() inline): a pattern that runs into PCRE2's
  // match limit costs ~0.4 s CPU per validation here, and every call spent on it is lost exec/s.
  const auto first = schema->validate(instance->doc);
  const auto all = schema->validateAll(instance->doc, 4);
  FUZZ_CHECK(first.has_value() == !all.empty(), "validate() and validateAll() disagree");
  FUZZ_CHECK(all.size() <= 4, "validateAll() returned more than max");
  return 0;
}
