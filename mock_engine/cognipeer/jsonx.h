// mock_engine/cognipeer/jsonx — small helpers to build and edit owned RapidJSON documents in the host
// (the host keeps every value as an owning json::Document, never a pointer into a foreign buffer).
#pragma once

#include <string>
#include <string_view>

#include "core/json/json.h"

namespace conform::cognipeer::jx {

inline json::Document obj() { return json::Document(rapidjson::kObjectType); }
inline json::Document arr() { return json::Document(rapidjson::kArrayType); }
inline json::Document strDoc(std::string_view s) {
  json::Document d;
  d.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), d.GetAllocator());
  return d;
}
// Sets (or replaces) member `key` of object `d` to a deep copy of `v`.
inline void set(json::Document& d, std::string_view key, const json::Value& v) {
  if (!d.IsObject()) d.SetObject();
  auto& a = d.GetAllocator();
  json::Value copy;
  json::deepCopy(copy, v, a);
  json::Value k(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size())));
  if (d.HasMember(k)) d[k] = copy;
  else d.AddMember(json::str(key, a), copy, a);
}
inline void set(json::Document& d, std::string_view key, std::string_view s) { set(d, key, strDoc(s)); }
inline void set(json::Document& d, std::string_view key, std::int64_t n) {
  json::Value v(n);
  set(d, key, v);
}
inline void setBool(json::Document& d, std::string_view key, bool b) {
  json::Value v(b);
  set(d, key, v);
}
inline void remove(json::Document& d, std::string_view key) {
  if (d.IsObject()) d.RemoveMember(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size())));
}
// Appends a deep copy of `v` to array member `key` of `d` (created when absent).
inline void push(json::Document& d, std::string_view key, const json::Value& v) {
  if (!d.IsObject()) d.SetObject();
  auto& a = d.GetAllocator();
  json::Value k(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size())));
  if (!d.HasMember(k) || !d[k].IsArray()) set(d, key, arr());
  json::Value copy;
  json::deepCopy(copy, v, a);
  d[k].PushBack(copy, a);
}
inline void pushTo(json::Document& array_doc, const json::Value& v) {
  if (!array_doc.IsArray()) array_doc.SetArray();
  json::Value copy;
  json::deepCopy(copy, v, array_doc.GetAllocator());
  array_doc.PushBack(copy, array_doc.GetAllocator());
}
inline std::string getStr(const json::Value& v, std::string_view key, std::string dflt = "") {
  auto s = json::stringMember(v, key);
  return s ? std::string(*s) : dflt;
}
inline bool getBool(const json::Value& v, std::string_view key) {
  const json::Value* m = json::member(v, key);
  return m && m->IsBool() && m->GetBool();
}
// Parses trusted literal text (host-built); an invalid literal is a programming error -> null.
inline json::Document lit(std::string_view text) {
  auto p = json::parse(text);
  return p ? std::move(p->doc) : json::Document();
}

}  // namespace conform::cognipeer::jx
