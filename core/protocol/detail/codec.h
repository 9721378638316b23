// core/protocol/detail/codec.h — private helpers of the protocol codecs (not for other layers).
// Writing: ObjectWriter builds a JSON object member by member with the presence rules of §0.3
// (set = req, setNullable = req/null, setOpt = opt: omitted when empty, as senders SHOULD).
// Reading: small additions to json::ObjectMapper for the format checks every decoder repeats.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "core/protocol/validate.h"

namespace conform::protocol::detail {

inline json::Value val(const std::string& s, json::Allocator& a) { return json::str(s, a); }
inline json::Value val(bool b, json::Allocator&) { return json::Value(b); }
inline json::Value val(std::uint64_t n, json::Allocator&) { return json::Value(n); }
inline json::Value val(std::uint16_t n, json::Allocator&) { return json::Value(static_cast<unsigned>(n)); }
inline json::Value val(double d, json::Allocator&) { return json::Value(d); }
template <class T>
  requires requires(const T& x, json::Allocator& a) { toJSON(x, a); }
json::Value val(const T& x, json::Allocator& a) {
  return toJSON(x, a);
}
template <class T>
json::Value val(const std::vector<T>& xs, json::Allocator& a) {
  json::Value arr(rapidjson::kArrayType);
  for (const auto& x : xs) arr.PushBack(val(x, a), a);
  return arr;
}
template <class T>
json::Value val(const std::map<std::string, T>& m, json::Allocator& a) {
  json::Value obj(rapidjson::kObjectType);
  for (const auto& [k, x] : m) obj.AddMember(json::str(k, a), val(x, a), a);
  return obj;
}

class ObjectWriter {
 public:
  explicit ObjectWriter(json::Allocator& a) : a_(a), v_(rapidjson::kObjectType) {}
  template <class T>
  ObjectWriter& set(const char* key, const T& x) {
    v_.AddMember(json::Value(rapidjson::StringRef(key)), val(x, a_), a_);
    return *this;
  }
  ObjectWriter& setValue(const char* key, json::Value&& x) {
    v_.AddMember(json::Value(rapidjson::StringRef(key)), x, a_);
    return *this;
  }
  template <class T>
  ObjectWriter& setNullable(const char* key, const std::optional<T>& x) {
    if (x) return set(key, *x);
    v_.AddMember(json::Value(rapidjson::StringRef(key)), json::Value(), a_);
    return *this;
  }
  template <class T>
  ObjectWriter& setOpt(const char* key, const std::optional<T>& x) {
    if (x) set(key, *x);
    return *this;
  }
  json::Value take() { return std::move(v_); }

 private:
  json::Allocator& a_;
  json::Value v_;
};

// `req` string member holding a UUID (§5.1).
inline bool mapUuid(json::ObjectMapper& o, std::string_view key, std::string& out) {
  if (!o.map(key, out)) return false;
  if (!isUuid(out)) return o.path().field(key).report("expected a UUID string (§5.1)");
  return true;
}
// `req` string member that must equal `expected` (JSON Schema `const`).
inline bool mapConst(json::ObjectMapper& o, std::string_view key, std::string& out, std::string_view expected) {
  if (!o.map(key, out)) return false;
  if (out != expected)
    return o.path().field(key).report("expected \"" + std::string(expected) + "\", found \"" + out + "\"");
  return true;
}
// `req` string with a minimum/maximum length in characters.
inline bool checkChars(json::ObjectMapper& o, std::string_view key, const std::string& s, std::size_t min,
                       std::size_t max) {
  auto n = utf8Length(s);
  if (!n || *n < min || *n > max)
    return o.path().field(key).report("expected " + std::to_string(min) + "–" + std::to_string(max) +
                                      " characters");
  return true;
}

}  // namespace conform::protocol::detail
