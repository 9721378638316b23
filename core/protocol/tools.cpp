// core/protocol/tools.cpp — codecs of §8 (tool declarations, tools/call) and the declaration/output
// checks of §6.3 step 6 and TOOL-11/12.
#include "core/protocol/tools.h"

#include <algorithm>
#include <set>

#include "core/protocol/detail/codec.h"
#include "core/protocol/limits.h"

namespace conform::protocol {
using detail::ObjectWriter;

std::string_view toString(OutputKind k) { return k == OutputKind::Single ? "single" : "named"; }
std::optional<OutputKind> parseOutputKind(std::string_view s) {
  if (s == "single") return OutputKind::Single;
  if (s == "named") return OutputKind::Named;
  return std::nullopt;
}
bool fromJSON(const json::Value& v, OutputKind& out, json::Path p) {
  if (!v.IsString()) return p.report(std::string("expected \"single\" or \"named\", found ") + json::typeName(v));
  auto k = parseOutputKind(std::string_view(v.GetString(), v.GetStringLength()));
  if (!k) return p.report("expected \"single\" or \"named\"");
  out = *k;
  return true;
}

bool fromJSON(const json::Value& v, ToolOutputDeclaration& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("kind", r.kind)) return false;
  r.streams.clear();
  if (r.kind == OutputKind::Single) return o.closed();  // `streams` is then an unknown member
  if (!o.map("streams", r.streams)) return false;
  json::Path sp = p.field("streams");
  // TOOL-03: 1–8 entries; TOOL-04: unreserved characters, 1–64; pairwise distinct (case-sensitive).
  if (r.streams.size() < limits::kNamedStreamsMin || r.streams.size() > limits::kNamedStreamsMax)
    return sp.report("a named output declares 1–8 streams, found " + std::to_string(r.streams.size()));
  for (std::size_t i = 0; i < r.streams.size(); ++i) {
    if (!isUriSafeStreamName(r.streams[i]))
      return sp.index(i).report("stream name must be 1–64 characters of A–Z a–z 0–9 - . _ ~");
    for (std::size_t j = 0; j < i; ++j)
      if (r.streams[j] == r.streams[i]) return sp.index(i).report("duplicate stream name \"" + r.streams[i] + "\"");
  }
  return o.closed();
}
json::Value toJSON(const ToolOutputDeclaration& r, json::Allocator& a) {
  ObjectWriter w(a);
  w.set("kind", r.kind);
  if (r.kind == OutputKind::Named) w.set("streams", r.streams);
  return w.take();
}

namespace {
template <class Decl>
bool mapDeclarationCommon(json::ObjectMapper& o, Decl& r) {
  return o.map("name", r.name) && o.map("description", r.description) && o.map("parameters", r.parameters) &&
         o.map("permission_name", r.permission_name) &&
         o.mapNullable("primary_resource_param", r.primary_resource_param);
}
template <class Decl>
void writeDeclarationCommon(ObjectWriter& w, const Decl& r) {
  w.set("name", r.name)
      .set("description", r.description)
      .set("parameters", r.parameters)
      .set("permission_name", r.permission_name)
      .setNullable("primary_resource_param", r.primary_resource_param);
}
}  // namespace

bool fromJSON(const json::Value& v, ToolDeclaration& r, json::Path p) {
  json::ObjectMapper o(v, p);
  r.output = {};
  return o && mapDeclarationCommon(o, r) && o.mapDefault("output", r.output) && o.closed();
}
json::Value toJSON(const ToolDeclaration& r, json::Allocator& a) {
  ObjectWriter w(a);
  writeDeclarationCommon(w, r);
  w.set("output", r.output);  // the reference SDK always serializes it (§8.1)
  return w.take();
}

std::optional<DeclarationProblem> checkToolDeclarations(const std::vector<ToolDeclaration>& tools) {
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const auto& t = tools[i];
    std::string at = "tools[" + std::to_string(i) + "]";
    if (!isSnakeCase(t.name))
      return DeclarationProblem{at + ".name", "tool name `" + t.name + "` is not snake_case", "INIT-20"};
    if (!seen.insert(t.name).second)
      return DeclarationProblem{at + ".name", "duplicate tool name `" + t.name + "`", "INIT-20"};
    if (t.description.empty())
      return DeclarationProblem{at + ".description", "tool `" + t.name + "` has an empty description", "INIT-21"};
    if (!isSnakeCase(t.permission_name))
      return DeclarationProblem{at + ".permission_name",
                                "permission name `" + t.permission_name + "` is not snake_case", "INIT-21"};
    const json::Value& params = t.parameters.get();
    if (!params.IsObject())
      return DeclarationProblem{at + ".parameters", "tool `" + t.name + "` parameters must be a JSON Schema object",
                                "INIT-21"};
    if (t.primary_resource_param) {
      const json::Value* props = json::member(params, "properties");
      if (!props || !json::member(*props, *t.primary_resource_param))
        return DeclarationProblem{at + ".primary_resource_param",
                                  "primary_resource_param `" + *t.primary_resource_param +
                                      "` is not declared in properties",
                                  "INIT-21"};
    }
  }
  return std::nullopt;
}

bool fromJSON(const json::Value& v, ToolCallParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("tool", r.tool) && detail::mapUuid(o, "session_id", r.session_id) &&
         o.map("context_id", r.context_id) && detail::mapUuid(o, "invocation_id", r.invocation_id) &&
         o.map("arguments", r.arguments) && o.mapNullable("resource", r.resource) &&
         o.mapOptional("cancellation_token", r.cancellation_token) && o.closed();
}
json::Value toJSON(const ToolCallParams& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("tool", r.tool)
      .set("session_id", r.session_id)
      .set("context_id", r.context_id)
      .set("invocation_id", r.invocation_id)
      .set("arguments", r.arguments)
      .setNullable("resource", r.resource)
      .setOpt("cancellation_token", r.cancellation_token)
      .take();
}

bool fromJSON(const json::Value& v, StreamText& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("stream", r.stream) && o.map("text", r.text) && o.closed();
}
json::Value toJSON(const StreamText& r, json::Allocator& a) {
  return ObjectWriter(a).set("stream", r.stream).set("text", r.text).take();
}

bool fromJSON(const json::Value& v, ToolOutput& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("kind", r.kind)) return false;
  r.text.clear();
  r.streams.clear();
  if (r.kind == OutputKind::Single) return o.map("text", r.text) && o.closed();
  return o.map("streams", r.streams) && o.closed();
}
json::Value toJSON(const ToolOutput& r, json::Allocator& a) {
  ObjectWriter w(a);
  w.set("kind", r.kind);
  if (r.kind == OutputKind::Single)
    w.set("text", r.text);
  else
    w.set("streams", r.streams);
  return w.take();
}

bool fromJSON(const json::Value& v, ToolCallResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("output", r.output) && o.mapOptional("display", r.display) && o.map("is_error", r.is_error) &&
         o.closed();
}
json::Value toJSON(const ToolCallResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("output", r.output).setOpt("display", r.display).set("is_error", r.is_error).take();
}

std::optional<std::string> checkToolOutput(const ToolOutputDeclaration& decl, const ToolOutput& out) {
  if (decl.kind != out.kind)
    return "output kind \"" + std::string(toString(out.kind)) + "\" does not match the declared kind \"" +
           std::string(toString(decl.kind)) + "\"";
  if (out.kind == OutputKind::Single) return std::nullopt;
  std::vector<int> count(decl.streams.size(), 0);
  for (std::size_t i = 0; i < out.streams.size(); ++i) {
    auto it = std::find(decl.streams.begin(), decl.streams.end(), out.streams[i].stream);
    if (it == decl.streams.end())
      return "output.streams[" + std::to_string(i) + "]: undeclared stream \"" + out.streams[i].stream + "\"";
    if (++count[static_cast<std::size_t>(it - decl.streams.begin())] > 1)
      return "output.streams[" + std::to_string(i) + "]: stream \"" + out.streams[i].stream + "\" appears twice";
  }
  for (std::size_t k = 0; k < decl.streams.size(); ++k)
    if (count[k] == 0) return "output.streams: declared stream \"" + decl.streams[k] + "\" is missing";
  return std::nullopt;
}

namespace v004 {
bool fromJSON(const json::Value& v, ToolDeclaration& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && mapDeclarationCommon(o, r) && o.closed();
}
json::Value toJSON(const ToolDeclaration& r, json::Allocator& a) {
  ObjectWriter w(a);
  writeDeclarationCommon(w, r);
  return w.take();
}
bool fromJSON(const json::Value& v, ToolCallResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("content", r.content) && o.map("is_error", r.is_error) && o.closed();
}
json::Value toJSON(const ToolCallResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("content", r.content).set("is_error", r.is_error).take();
}
}  // namespace v004

}  // namespace conform::protocol
