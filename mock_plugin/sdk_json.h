// mock_plugin/sdk_json — small JSON helpers private to the SDK: hardened parsing of engine frames,
// compact writing, and a closed-object field checker that produces "params.tool: expected
// string" style errors. The SDK is an independent implementation of the rules (ARCHITECTURE.md:
// reference engine, plugin and monitors must not share verdict code), so it decodes the few
// shapes it needs itself instead of borrowing the monitors' decoders.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::plugin::sj {

// Nesting cap applied before RapidJSON builds a DOM (DEPENDENCIES.md: ~10^6 levels overflow the
// stack); the same 512 as core/json's default.
inline constexpr std::size_t kMaxDepth = 512;

// Parses one JSON value: UTF-8 validated, depth capped, non-finite numbers rejected (RapidJSON
// parses 1e400 to +inf without error and then cannot write it back).
Expected<json::Document, std::string> parse(std::string_view text);
std::string write(const json::Value& v);       // compact
// Member lookup that never asserts (nullptr unless v is an object holding key); type names for errors.
const json::Value* member(const json::Value& v, std::string_view key);
const char* typeName(const json::Value& v);
std::string quote(std::string_view s);          // a JSON string literal
json::Document copyOf(const json::Value& v);
json::Document parseOrNull(std::string_view text);  // for literals in code; null on error

enum class Kind { String, Object, Array, Bool, U64, Any };

// Checks one closed object. Every accessor records the member as known; closed() fails on any
// member nobody asked for (PROTOCOL §0.3: all protocol objects are closed).
class Fields {
 public:
  Fields(const json::Value& v, std::string path);
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // `req`: present, non-null, of kind k.
  const json::Value* req(std::string_view key, Kind k);
  // `req/null`: present; null allowed.
  const json::Value* reqNullable(std::string_view key, Kind k, bool* present_null);
  // `opt`: absent or null means absent.
  const json::Value* opt(std::string_view key, Kind k);
  bool closed();
  std::string str(std::string_view key);  // value of a string member already checked (else "")

 private:
  bool check(const json::Value& m, std::string_view key, Kind k);
  void fail(std::string_view key, std::string msg);
  const json::Value* v_;
  std::string path_;
  std::vector<std::string_view> known_;
  std::string error_;
};

}  // namespace conform::plugin::sj
