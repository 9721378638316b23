// See sdk_json.h.
#include "mock_plugin/sdk_json.h"

#include <algorithm>
#include <cmath>

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace conform::plugin::sj {
namespace {

// Depth of the deepest array/object nesting, counted outside strings, stopping early at the cap.
bool depthWithin(std::string_view t, std::size_t cap) {
  std::size_t depth = 0;
  bool in_str = false, esc = false;
  for (char c : t) {
    if (in_str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    else if (c == '[' || c == '{') { if (++depth > cap) return false; }
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return true;
}

bool allFinite(const json::Value& v) {  // depth is bounded by kMaxDepth, so recursion is safe
  if (v.IsDouble()) return std::isfinite(v.GetDouble());
  if (v.IsArray()) {
    for (const auto& e : v.GetArray()) if (!allFinite(e)) return false;
  } else if (v.IsObject()) {
    for (const auto& m : v.GetObject()) if (!allFinite(m.value)) return false;
  }
  return true;
}

const char* kindName(Kind k) {
  switch (k) {
    case Kind::String: return "string";
    case Kind::Object: return "object";
    case Kind::Array: return "array";
    case Kind::Bool: return "boolean";
    case Kind::U64: return "unsigned integer";
    case Kind::Any: return "value";
  }
  return "value";
}

}  // namespace

Expected<json::Document, std::string> parse(std::string_view text) {
  if (!depthWithin(text, kMaxDepth)) return unexpected(std::string("JSON nesting deeper than 512 levels"));
  json::Document d;
  d.Parse<rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
  if (d.HasParseError())
    return unexpected(std::string(rapidjson::GetParseError_En(d.GetParseError())) + " at offset " +
                      std::to_string(d.GetErrorOffset()));
  if (!allFinite(d)) return unexpected(std::string("number out of range (not finite)"));
  return d;
}

std::string write(const json::Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

const json::Value* member(const json::Value& v, std::string_view key) {
  if (!v.IsObject()) return nullptr;
  for (const auto& m : v.GetObject())
    if (std::string_view(m.name.GetString(), m.name.GetStringLength()) == key) return &m.value;
  return nullptr;
}

const char* typeName(const json::Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "boolean";
  if (v.IsInt64() || v.IsUint64()) return "integer";
  if (v.IsNumber()) return "number";
  if (v.IsString()) return "string";
  if (v.IsArray()) return "array";
  return "object";
}

std::string quote(std::string_view s) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(sb.GetString(), sb.GetSize());
}

json::Document copyOf(const json::Value& v) {
  json::Document d;
  d.CopyFrom(v, d.GetAllocator());
  return d;
}

json::Document parseOrNull(std::string_view text) {
  auto r = parse(text);
  if (!r) return json::Document();
  return std::move(r.value());
}

Fields::Fields(const json::Value& v, std::string path) : v_(&v), path_(std::move(path)) {
  if (!v.IsObject()) error_ = path_ + ": expected object, found " + typeName(v);
}

void Fields::fail(std::string_view key, std::string msg) {
  if (error_.empty()) error_ = path_ + "." + std::string(key) + ": " + msg;
}

bool Fields::check(const json::Value& m, std::string_view key, Kind k) {
  bool good = true;
  switch (k) {
    case Kind::String: good = m.IsString(); break;
    case Kind::Object: good = m.IsObject(); break;
    case Kind::Array: good = m.IsArray(); break;
    case Kind::Bool: good = m.IsBool(); break;
    case Kind::U64: good = m.IsUint64(); break;
    case Kind::Any: good = true; break;
  }
  if (!good) fail(key, std::string("expected ") + kindName(k) + ", found " + typeName(m));
  return good;
}

const json::Value* Fields::req(std::string_view key, Kind k) {
  known_.push_back(key);
  if (!error_.empty()) return nullptr;
  const json::Value* m = member(*v_, key);
  if (!m) { fail(key, "required member is missing"); return nullptr; }
  if (m->IsNull()) { fail(key, "required member is null"); return nullptr; }
  return check(*m, key, k) ? m : nullptr;
}

const json::Value* Fields::reqNullable(std::string_view key, Kind k, bool* present_null) {
  known_.push_back(key);
  if (present_null) *present_null = false;
  if (!error_.empty()) return nullptr;
  const json::Value* m = member(*v_, key);
  if (!m) { fail(key, "required member is missing (it may be null)"); return nullptr; }
  if (m->IsNull()) { if (present_null) *present_null = true; return nullptr; }
  return check(*m, key, k) ? m : nullptr;
}

const json::Value* Fields::opt(std::string_view key, Kind k) {
  known_.push_back(key);
  if (!error_.empty()) return nullptr;
  const json::Value* m = member(*v_, key);
  if (!m || m->IsNull()) return nullptr;
  return check(*m, key, k) ? m : nullptr;
}

bool Fields::closed() {
  if (!error_.empty()) return false;
  for (const auto& m : v_->GetObject()) {
    std::string_view name(m.name.GetString(), m.name.GetStringLength());
    if (std::find(known_.begin(), known_.end(), name) == known_.end()) {
      fail(name, "unknown member (the object is closed)");
      return false;
    }
  }
  return true;
}

std::string Fields::str(std::string_view key) {
  const json::Value* m = member(*v_, key);
  return (m && m->IsString()) ? std::string(m->GetString(), m->GetStringLength()) : std::string();
}

}  // namespace conform::plugin::sj
