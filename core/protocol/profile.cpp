// core/protocol/profile.cpp — the two profiles, their schema sets and validate().
//
// Schema layout (core/protocol/schemas, embedded at build time by cmake/embed.cmake):
//   common/<Type>.json   message shapes identical in both profiles (DELTA §3 "unchanged types")
//   <version>/<Type>.json shapes that differ, or exist only in that version
//   common/defs.json, <version>/defs.json  shared `$defs`
// A message schema refers to definitions as "#/$defs/X"; before compiling, the `$defs` of
// common/defs and <version>/defs are merged into the message schema (its own `$defs` win), so each
// compiled schema is one self-contained document and valijson never resolves anything remote.
//
// Compilation happens once per profile on first use (std::call_once: thread-safe, lazy). validate()
// is then a hash lookup plus one valijson run, and a few byte-length checks a schema cannot express.
#include "core/protocol/profile.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "core/json/schema.h"
#include "core/protocol/producer.h"

namespace conform::protocol {
namespace {

constexpr std::array<DiagnosticKind, kDiagnosticKindCount> kAllDiagnosticKinds = {
    DiagnosticKind::EventDrop,           DiagnosticKind::InterceptionTimeout, DiagnosticKind::InterceptionCrash,
    DiagnosticKind::HookBlocked,         DiagnosticKind::OversizedEvent,      DiagnosticKind::InvalidModification,
    DiagnosticKind::UnsupportedCapability, DiagnosticKind::ContextMismatch,   DiagnosticKind::RateLimited,
    DiagnosticKind::RecoveryFailed,      DiagnosticKind::RecoveryDisabled};
constexpr std::size_t kDiagnosticKinds004 = 9;  // QUOTA-17, DELTA §3.7

std::string_view findText(std::string_view key) {
  for (const auto& [k, text] : detail::embeddedSchemas())
    if (k == key) return text;
  return {};
}

// Copies the members of `defs_doc["$defs"]` into `target["$defs"]` unless already present.
void mergeDefs(json::Document& target, std::string_view defs_text) {
  if (defs_text.empty()) return;
  auto defs = json::parse(defs_text);
  if (!defs) return;
  const json::Value* src = json::member(defs->doc, "$defs");
  if (!src || !src->IsObject() || !target.IsObject()) return;
  auto& a = target.GetAllocator();
  if (!target.HasMember("$defs")) target.AddMember("$defs", json::Value(rapidjson::kObjectType), a);
  json::Value& dst = target["$defs"];
  for (auto it = src->MemberBegin(); it != src->MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (!json::member(dst, name)) dst.AddMember(json::str(name, a), json::Value(it->value, a), a);
  }
}

struct Compiled {
  std::optional<json::Schema> schema;
  std::string error;  // why it did not compile (a bug in our schemas; reported, never thrown)
};

struct SchemaSet {
  std::once_flag once;
  std::unordered_map<std::string, Compiled> by_type;  // immutable after call_once
};

SchemaSet& schemaSet(Profile::Id id) {
  static SchemaSet sets[2];
  return sets[static_cast<int>(id)];
}

Compiled compileType(std::string_view version, std::string_view type) {
  std::string key = std::string(version) + "/" + std::string(type);
  std::string_view text = findText(key);
  if (text.empty()) text = findText("common/" + std::string(type));
  if (text.empty()) return {std::nullopt, "no schema for " + std::string(type)};
  auto parsed = json::parse(text);
  if (!parsed) return {std::nullopt, std::string(type) + ": " + parsed.error().message};
  json::Document doc = std::move(parsed->doc);
  mergeDefs(doc, findText(std::string(version) + "/defs"));
  mergeDefs(doc, findText("common/defs"));
  auto schema = json::Schema::compile(doc);
  if (!schema) return {std::nullopt, std::string(type) + ": " + schema.error()};
  return {std::move(*schema), {}};
}

const SchemaSet& compiledSet(const Profile& p) {
  SchemaSet& set = schemaSet(p.id());
  std::call_once(set.once, [&] {
    for (const MethodInfo& m : p.methods()) {
      for (std::string_view type : {m.params_type, m.result_type}) {
        if (type.empty() || set.by_type.count(std::string(type))) continue;
        set.by_type.emplace(std::string(type), compileType(p.version(), type));
      }
    }
  });
  return set;
}

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// A more specific rule than the method's own, chosen by where the violation is.
std::string_view specificRule(const Profile& p, const MethodInfo& m, Part part, std::string_view path) {
  bool v006 = p.id() == Profile::Id::V006;
  if (m.name == method::kInitialize && part == Part::Result) {
    if (startsWith(path, "protocol_version")) return "INIT-10";
    if (startsWith(path, "capabilities.intercept")) return "INIT-16";
    if (startsWith(path, "capabilities") && v006) return "INIT-17";
    if (startsWith(path, "tools[") && path.find("].output") != std::string_view::npos) return "TOOL-04";
    if (startsWith(path, "tools[")) return "TOOL-01";
  }
  if (m.name == method::kInitialize && part == Part::Params && startsWith(path, "capabilities")) return "INIT-03";
  if (m.name == method::kToolsCall && part == Part::Result) {
    if (!v006) return "TOOL-09";
    if (startsWith(path, "output")) return "TOOL-09";
  }
  if (m.name == method::kProducerSend && part == Part::Params) {
    if (startsWith(path, "mode")) return "PROD-10";
    if (startsWith(path, "idempotency_key")) return "PROD-11";
    if (startsWith(path, "description")) return "PROD-12";
    if (startsWith(path, "body")) return "PROD-13";
  }
  if (m.name == method::kEvent && startsWith(path, "event")) return "EVT-10";
  return part == Part::Params ? m.params_rule : m.result_rule;
}

}  // namespace

std::string_view toString(Part p) { return p == Part::Params ? "params" : "result"; }

std::string Violation::str() const {
  return (path.empty() ? std::string("<root>") : path) + ": " + message + " (" + rule_id + ")";
}

std::string_view toString(Direction d) { return d == Direction::EngineToPlugin ? "E->P" : "P->E"; }
std::string_view toString(MessageKind k) { return k == MessageKind::Request ? "request" : "notification"; }

std::string_view Profile::version() const { return id_ == Id::V006 ? limits::kVersion006 : limits::kVersion004; }
std::string_view Profile::name() const { return id_ == Id::V006 ? "v006" : "v004"; }

std::span<const MethodInfo> Profile::methods() const { return id_ == Id::V006 ? methods006() : methods004(); }

const MethodInfo* Profile::findMethod(std::string_view name) const {
  for (const MethodInfo& m : methods())
    if (m.name == name) return &m;
  return nullptr;
}

std::vector<LimitInfo> Profile::limits() const {
  std::vector<LimitInfo> out;
  for (const LimitInfo& l : kLimitTable)
    if (id_ == Id::V006 || !l.v006_only) out.push_back(l);
  return out;
}

std::span<const DiagnosticKind> Profile::diagnosticKinds() const {
  return {kAllDiagnosticKinds.data(), id_ == Id::V006 ? kAllDiagnosticKinds.size() : kDiagnosticKinds004};
}

EmitStatus Profile::contextRejectionBusStatus() const {
  return id_ == Id::V006 ? EmitStatus::Rejected : EmitStatus::Dropped;  // EMIT-15 [chosen C20]
}

std::optional<Violation> Profile::validate(std::string_view method_name, Part part, const json::Value& value) const {
  const MethodInfo* m = findMethod(method_name);
  if (!m)
    return Violation{"", "method \"" + std::string(method_name) + "\" does not exist in profile " +
                             std::string(version()),
                     "RPC-13"};
  std::string_view type = part == Part::Params ? m->params_type : m->result_type;
  if (type.empty()) return Violation{"", std::string(m->name) + " is a notification and has no result", "RPC-16"};
  const SchemaSet& set = compiledSet(*this);
  auto it = set.by_type.find(std::string(type));
  if (it == set.by_type.end() || !it->second.schema)
    return Violation{"", "internal: schema " + std::string(type) + " unavailable: " +
                             (it == set.by_type.end() ? std::string("missing") : it->second.error),
                     "RPC-12"};
  if (auto bad = it->second.schema->validate(value)) {
    std::string path = bad->path == "<root>" ? std::string() : bad->path;
    std::string rule(specificRule(*this, *m, part, path));
    return Violation{std::move(path), std::move(bad->message), std::move(rule)};
  }
  // Byte bounds JSON Schema cannot express (it counts characters): PROD-11, PROD-12.
  if (m->name == method::kProducerSend && part == Part::Params) {
    if (auto key = json::stringMember(value, "idempotency_key"); key && checkIdempotencyKey(*key))
      return Violation{"idempotency_key", *checkIdempotencyKey(*key), "PROD-11"};
    if (auto d = json::stringMember(value, "description"); d && checkDescription(*d))
      return Violation{"description", *checkDescription(*d), "PROD-12"};
  }
  return std::nullopt;
}

const Profile& profileV006() {
  static const Profile p(Profile::Id::V006);
  return p;
}
const Profile& profileV004() {
  static const Profile p(Profile::Id::V004);
  return p;
}

const Profile* findProfile(std::string_view v) {
  if (v == "0.0.6" || v == "v006") return &profileV006();
  if (v == "0.0.4" || v == "v004") return &profileV004();
  return nullptr;
}

std::span<const Profile* const> allProfiles() {
  static const std::array<const Profile*, 2> all = {&profileV006(), &profileV004()};
  return all;
}

}  // namespace conform::protocol
