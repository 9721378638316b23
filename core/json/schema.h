// core/json/schema — compiled JSON Schema validation for (a) the protocol's own message schemas
// (core/protocol/schemas, draft 2020-12 style: `$defs` + `$ref: "#/$defs/X"`) and (b) the arbitrary
// tool `parameters` schemas plugins declare (TOOL-*, INIT-21, SDK-03).
//
// Built on valijson 1.0 (draft 7 engine) over RapidJSON — RapidJSON's own SchemaValidator drops
// `#/$defs` refs, `const`, `false` schemas (DEPENDENCIES.md). Before valijson sees a schema we
// rewrite it (a schema-aware walk that never touches `const`/`enum`/`default`/`examples` values or
// `properties` keys):
//   * `pattern` -> our PCRE2 constraint (PCRE2_UTF|PCRE2_UCP, compiled once, match limits; a match
//     error counts as a failure). valijson would use std::regex, which misreads `\p{L}` and
//     overflows the stack on ~200k-character subjects.
//   * `format` -> our constraint: `uuid` and `date-time` (RFC 3339) checked by hand; every other
//     format is an annotation only (ignored), as draft 2020-12 allows.
//   * draft 2020-12 keywords valijson's draft 7 engine does not know are mapped to their draft 7
//     form: `prefixItems`/`items` -> `items`/`additionalItems`, `dependentRequired` and
//     `dependentSchemas` -> `dependencies`; a `$ref` with sibling keywords becomes
//     `allOf:[{$ref}]` + siblings (2020-12 applies siblings, draft 7 ignores them); `$id` is
//     dropped so that refs stay document-local (no remote fetching, ever).
//   * `patternProperties` stays with valijson (std::regex), made safe: each key must compile under
//     PCRE2 and std::regex at compile time and must not use `\p`/`\P` (which std::regex misreads);
//     at validation time an instance whose member names exceed kMaxPatternSubjectBytes is refused
//     before valijson runs (so std::regex never sees a long subject).
// Not supported (ignored while validating, accepted by checkSchemaDocument): `unevaluatedProperties`,
// `unevaluatedItems`, `minContains`/`maxContains`, `$dynamicRef`, `$anchor`.
//
// A Schema is immutable after compile(), cheap to copy (shared state) and safe to validate from
// several threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::json {

// Member names longer than this are refused when the schema uses `patternProperties` (std::regex is
// recursive and overflowed the stack at ~200k characters; DEPENDENCIES.md). 4 KiB is far beyond any
// real property name.
inline constexpr std::size_t kMaxPatternSubjectBytes = 4096;

struct SchemaViolation {
  std::string path;     // Path::str() form: "capabilities.ping", "tools[2].name", "<root>"
  std::string message;  // "expected boolean, found string", "required member \"id\" is missing"
  std::string str() const { return path + ": " + message; }
};

class Schema {
 public:
  // A default Schema accepts every instance (like the schema `true`).
  Schema();

  // Compiles a schema document. Errors (unresolvable $ref, a pattern PCRE2 refuses, a keyword of the
  // wrong type that valijson cannot parse, ...) are returned as text, never thrown.
  static Expected<Schema, std::string> compile(const Value& schema);
  static Expected<Schema, std::string> compile(std::string_view schema_text);

  // The first violation, or nullopt when the instance is valid.
  std::optional<SchemaViolation> validate(const Value& instance) const;
  // Up to `max` violations (innermost causes first), empty when valid.
  std::vector<SchemaViolation> validateAll(const Value& instance, std::size_t max = 16) const;
  bool accepts(const Value& instance) const { return !validate(instance).has_value(); }

  // The schema as given to compile() (before rewriting); null for a default Schema.
  const Value& source() const;

  struct Impl;

 private:
  explicit Schema(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Structural check that a value is a usable draft 2020-12 JSON Schema (INIT-21, SDK-03), written by
// hand (no meta-schema text): an object or boolean; known keywords have the right JSON types (type
// names valid, `required` an array of unique strings, `properties` values are schemas, counts are
// non-negative integers, ...); every `pattern` / `patternProperties` key compiles under PCRE2; every
// local `$ref` ("#", "#/..." JSON pointer) resolves within the document. Unknown keywords are
// allowed (2020-12 ignores them). Returns the first problem, with the path inside the schema.
std::optional<SchemaViolation> checkSchemaDocument(const Value& schema);

// RFC 3339 date-time ("2024-01-02T03:04:05.678Z", offset "+01:00"; 'T'/'Z' case-insensitive).
bool isDateTime(std::string_view s);
// RFC 4122 textual form: 8-4-4-4-12 hex digits (any version/variant, either case).
bool isUuid(std::string_view s);

}  // namespace conform::json
