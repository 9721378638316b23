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
// is then an indexed lookup, a fast pre-check (below), and only when that pre-check cannot vouch for
// the value one valijson run; then a few byte-length checks a schema cannot express.
//
// Why a fast pre-check: `conform lint` validates the params/result of nearly every frame of a
// million-message trace and must keep up with 500,000 frames/s (issue 6); valijson costs several
// microseconds per frame (virtual constraint visitors, std::string copies of every string, context
// vectors). FastSchema is compiled from the SAME merged schema document and evaluates the keyword
// subset our schemas use (type, properties, required, additionalProperties, const/enum of strings,
// integer minimum, min/maxLength, items, $ref, allOf/anyOf/oneOf/not, uuid/date-time formats) with
// three outcomes: Valid and Invalid only when certain, Unsure for anything else (pattern, an unknown
// keyword, a non-integral number under `integer`, duplicate member names under an Invalid verdict …).
// validate() trusts ONLY "Valid"; every other outcome runs valijson, so violations, their paths and
// their rules come from exactly the code that produced them before. Debug builds run valijson after
// every "Valid" too and abort on a disagreement (the test suites are the cross-check).
#include "core/protocol/profile.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

// ---- FastSchema (see the file comment) ---------------------------------------------------------
enum class Verdict : std::uint8_t { Valid, Invalid, Unsure };

class FastSchema {
 public:
  // Compiles `doc` (the merged, self-contained schema document). Never fails: what it does not
  // understand becomes an Unsure node.
  explicit FastSchema(const json::Value& doc) : doc_(&doc) {
    root_ = compile(doc);
    doc_ = nullptr;  // the caller frees the document after compilation
    defs_by_name_.clear();
    skipWrappers();
  }
  // no_dups: the caller knows no object in `v` repeats a member name (no scan for repeats).
  Verdict check(const json::Value& v, bool no_dups) const { return eval(root_, v, no_dups); }

 private:
  // Type bits; 0 = no `type` keyword.
  enum : std::uint8_t { kNull = 1, kBool = 2, kInt = 4, kNum = 8, kStr = 16, kArr = 32, kObj = 64 };
  struct Prop {
    std::string name;
    int node;
    int required_bit;  // index into the required mask, -1 when not required
    std::uint64_t head = 0;  // the name's first 8 bytes (zero-padded): most mismatches end here
    // Whether `n` is this property's name, without a library call for the usual short names.
    bool is(std::string_view n, std::uint64_t n_head) const {
      return n.size() == name.size() && n_head == head &&
             (n.size() <= 8 || std::memcmp(n.data() + 8, name.data() + 8, n.size() - 8) == 0);
    }
  };
  static std::uint64_t head8(std::string_view n) {
    std::uint64_t h = 0;
    std::memcpy(&h, n.data(), std::min<std::size_t>(n.size(), 8));
    return h;
  }
  struct Node {
    bool unsure = false;      // a keyword we do not evaluate: always Unsure
    bool never = false;       // the schema `false`
    std::uint8_t types = 0;
    std::vector<Prop> props;
    std::uint64_t required_mask = 0;           // bits of required members that are in props
    std::vector<std::string> required_other;   // required but not in props (looked up by name)
    int additional = -1;                       // -1 allowed, -2 forbidden, else a node
    bool has_enum = false;
    std::vector<std::string> enum_strings;     // const is a one-element enum
    std::optional<std::int64_t> minimum;
    std::optional<std::size_t> min_length, max_length;
    enum class Fmt : std::uint8_t { None, Uuid, DateTime } fmt = Fmt::None;
    int items = -1;
    int not_ = -1;
    std::vector<int> all_of, any_of, one_of;
  };

  const json::Value* doc_;  // only during construction
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> defs_by_name_;
  int root_ = -1;

  static std::string_view sv(const json::Value& v) { return {v.GetString(), v.GetStringLength()}; }

  int add() {
    nodes_.emplace_back();
    return static_cast<int>(nodes_.size() - 1);
  }
  int unsureNode() {
    int n = add();
    nodes_[static_cast<std::size_t>(n)].unsure = true;
    return n;
  }

  // "#/$defs/X" of the document root; recursion-safe (the index is reserved before compiling).
  int ref(std::string_view r) {
    constexpr std::string_view kPrefix = "#/$defs/";
    if (r.substr(0, kPrefix.size()) != kPrefix) return unsureNode();
    std::string name(r.substr(kPrefix.size()));
    if (auto it = defs_by_name_.find(name); it != defs_by_name_.end()) return it->second;
    const json::Value* defs = json::member(*doc_, "$defs");
    const json::Value* def = defs ? json::member(*defs, name) : nullptr;
    if (!def || name.find_first_of("~/%") != std::string::npos) return unsureNode();  // escapes: valijson's job
    int slot = add();
    defs_by_name_.emplace(name, slot);
    int body = compile(*def);
    nodes_[static_cast<std::size_t>(slot)].all_of.push_back(body);
    return slot;
  }

  int compile(const json::Value& s) {
    if (s.IsBool()) {
      int n = add();
      nodes_[static_cast<std::size_t>(n)].never = !s.GetBool();
      return n;
    }
    if (!s.IsObject()) return unsureNode();
    Node node;
    const json::Value* required = nullptr;
    for (auto it = s.MemberBegin(); it != s.MemberEnd(); ++it) {
      const std::string_view k = sv(it->name);
      const json::Value& v = it->value;
      if (k == "$schema" || k == "title" || k == "description" || k == "$defs" || k == "$comment" ||
          k == "default" || k == "examples") {
        continue;  // annotations
      } else if (k == "type") {
        auto bit = [&](const json::Value& t) -> bool {
          if (!t.IsString()) return false;
          std::string_view n = sv(t);
          if (n == "null") node.types |= kNull;
          else if (n == "boolean") node.types |= kBool;
          else if (n == "integer") node.types |= kInt;
          else if (n == "number") node.types |= kNum;
          else if (n == "string") node.types |= kStr;
          else if (n == "array") node.types |= kArr;
          else if (n == "object") node.types |= kObj;
          else return false;
          return true;
        };
        bool ok = true;
        if (v.IsArray()) {
          for (const json::Value& t : v.GetArray()) ok = ok && bit(t);
          ok = ok && v.Size() > 0;
        } else {
          ok = bit(v);
        }
        if (!ok) node.unsure = true;
      } else if (k == "properties") {
        if (!v.IsObject()) { node.unsure = true; continue; }
        for (auto p = v.MemberBegin(); p != v.MemberEnd(); ++p)
          node.props.push_back(Prop{std::string(sv(p->name)), -1, -1, head8(sv(p->name))});
        // Compiled after the loop over props: compile() appends to nodes_, never to node.props.
        std::size_t i = 0;
        for (auto p = v.MemberBegin(); p != v.MemberEnd(); ++p, ++i) node.props[i].node = compile(p->value);
      } else if (k == "required") {
        required = &v;
      } else if (k == "additionalProperties") {
        if (v.IsBool()) node.additional = v.GetBool() ? -1 : -2;
        else node.additional = compile(v);
      } else if (k == "const" || k == "enum") {
        // Only strings: their equality has no number/order subtleties to agree with valijson on.
        node.has_enum = true;
        auto one = [&](const json::Value& e) {
          if (e.IsString()) node.enum_strings.emplace_back(sv(e));
          else node.unsure = true;
        };
        if (k == "const") one(v);
        else if (v.IsArray()) for (const json::Value& e : v.GetArray()) one(e);
        else node.unsure = true;
      } else if (k == "minimum") {
        if (v.IsInt64()) node.minimum = v.GetInt64();
        else node.unsure = true;
      } else if (k == "minLength" || k == "maxLength") {
        if (!v.IsUint64()) { node.unsure = true; continue; }
        (k == "minLength" ? node.min_length : node.max_length) = static_cast<std::size_t>(v.GetUint64());
      } else if (k == "format") {
        std::string_view f = v.IsString() ? sv(v) : std::string_view{};
        if (f == "uuid") node.fmt = Node::Fmt::Uuid;
        else if (f == "date-time") node.fmt = Node::Fmt::DateTime;
        else node.unsure = true;  // other formats are annotations for valijson too; not worth the doubt
      } else if (k == "items") {
        if (v.IsObject() || v.IsBool()) node.items = compile(v);
        else node.unsure = true;
      } else if (k == "$ref") {
        if (v.IsString()) node.all_of.push_back(ref(sv(v)));  // siblings apply too (2020-12, as rewritten)
        else node.unsure = true;
      } else if (k == "allOf" || k == "anyOf" || k == "oneOf") {
        if (!v.IsArray() || v.Empty()) { node.unsure = true; continue; }
        std::vector<int> subs;
        for (const json::Value& e : v.GetArray()) subs.push_back(compile(e));
        (k == "allOf" ? node.all_of : k == "anyOf" ? node.any_of : node.one_of) = std::move(subs);
      } else if (k == "not") {
        node.not_ = compile(v);
      } else {
        node.unsure = true;  // pattern, patternProperties, min/maxItems, exclusive bounds, …
      }
    }
    if (required) {
      if (!required->IsArray()) {
        node.unsure = true;
      } else {
        for (const json::Value& r : required->GetArray()) {
          if (!r.IsString()) { node.unsure = true; break; }
          bool in_props = false;
          for (std::size_t i = 0; i < node.props.size(); ++i) {
            if (node.props[i].name != sv(r)) continue;
            in_props = true;
            if (node.props[i].required_bit < 0) {
              if (i >= 64) { node.unsure = true; break; }
              node.props[i].required_bit = static_cast<int>(i);
              node.required_mask |= std::uint64_t{1} << i;
            }
          }
          if (!in_props) node.required_other.emplace_back(sv(r));
        }
      }
    }
    // A repeated property name in the schema itself: leave it to valijson.
    for (std::size_t i = 0; i < node.props.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (node.props[i].name == node.props[j].name) node.unsure = true;
    int n = add();
    nodes_[static_cast<std::size_t>(n)] = std::move(node);
    return n;
  }

  // A `$ref` compiles to a node whose only keyword is allOf:[target] (and SessionId → Uuid is such
  // a chain). References to such wrappers are pointed at their target: same verdicts, one node
  // visit instead of three for a session_id.
  bool isWrapper(const Node& n) const {
    return !n.unsure && !n.never && !n.types && n.props.empty() && !n.required_mask && n.required_other.empty() &&
           n.additional == -1 && !n.has_enum && !n.minimum && !n.min_length && !n.max_length &&
           n.fmt == Node::Fmt::None && n.items < 0 && n.not_ < 0 && n.any_of.empty() && n.one_of.empty() &&
           n.all_of.size() == 1;
  }
  int target(int i) const {
    // Bounded: a cycle of wrappers ($defs A = {$ref B}, B = {$ref A}) stops after nodes_.size() steps.
    for (std::size_t steps = 0; i >= 0 && steps < nodes_.size() && isWrapper(nodes_[static_cast<std::size_t>(i)]); ++steps)
      i = nodes_[static_cast<std::size_t>(i)].all_of[0];
    return i;
  }
  void skipWrappers() {
    auto fix = [&](int& ref) {
      if (ref >= 0) ref = target(ref);
    };
    for (Node& n : nodes_) {
      for (Prop& p : n.props) fix(p.node);
      fix(n.additional);
      fix(n.items);
      fix(n.not_);
      for (int& r : n.all_of) fix(r);
      for (int& r : n.any_of) fix(r);
      for (int& r : n.one_of) fix(r);
    }
    fix(root_);
  }

  static Verdict both(Verdict a, Verdict b) {
    if (a == Verdict::Invalid || b == Verdict::Invalid) return Verdict::Invalid;
    return a == Verdict::Unsure || b == Verdict::Unsure ? Verdict::Unsure : Verdict::Valid;
  }

  static bool hasDuplicateNames(const json::Value& v) {
    for (auto i = v.MemberBegin(); i != v.MemberEnd(); ++i)
      for (auto j = v.MemberBegin(); j != i; ++j)
        if (sv(i->name) == sv(j->name)) return true;
    return false;
  }

  // Code points, as valijson's u8_strlen counts them (it stops at a NUL: such strings are Unsure).
  static std::optional<std::size_t> codePoints(std::string_view s) {
    std::size_t n = 0;
    for (unsigned char c : s) {
      if (c == 0) return std::nullopt;
      n += (c & 0xC0) != 0x80;
    }
    return n;
  }

  Verdict eval(int idx, const json::Value& v, bool no_dups) const {
    const Node& n = nodes_[static_cast<std::size_t>(idx)];
    if (n.never) return Verdict::Invalid;
    if (n.unsure) return Verdict::Unsure;
    Verdict r = Verdict::Valid;
    if (n.types) {
      std::uint8_t have = v.IsNull() ? kNull : v.IsBool() ? kBool : v.IsString() ? kStr : v.IsArray() ? kArr
                          : v.IsObject() ? kObj : 0;
      if (v.IsNumber()) {
        // An integral double (2.0) is an "integer" to some validators and not to others: Unsure.
        if (v.IsInt64() || v.IsUint64()) have = kInt | kNum;
        else if (n.types & kInt && !(n.types & kNum)) return Verdict::Unsure;
        else have = kNum;
      }
      if (!(have & n.types)) return Verdict::Invalid;
    }
    if (n.has_enum) {
      if (!v.IsString()) return Verdict::Invalid;
      const std::string_view s = sv(v);
      bool found = false;
      for (const std::string& e : n.enum_strings) found = found || e == s;
      if (!found) return Verdict::Invalid;
    }
    if (n.minimum && v.IsNumber()) {
      if (v.IsInt64()) { if (v.GetInt64() < *n.minimum) return Verdict::Invalid; }
      else r = Verdict::Unsure;  // a double, or a uint64 past int64: valijson compares as double
    }
    if (v.IsString() && (n.min_length || n.max_length || n.fmt != Node::Fmt::None)) {
      const std::string_view s = sv(v);
      if (n.min_length || n.max_length) {
        auto len = codePoints(s);
        if (!len) r = Verdict::Unsure;
        else if ((n.min_length && *len < *n.min_length) || (n.max_length && *len > *n.max_length))
          return Verdict::Invalid;
      }
      if (n.fmt == Node::Fmt::Uuid && !json::isUuid(s)) return Verdict::Invalid;
      if (n.fmt == Node::Fmt::DateTime && !json::isDateTime(s)) return Verdict::Invalid;
    }
    if (v.IsObject() && (!n.props.empty() || n.required_mask || !n.required_other.empty() || n.additional != -1)) {
      Verdict o = objectVerdict(n, v, no_dups);
      // With a repeated member name valijson may judge either occurrence (or both), so neither a
      // certain Invalid nor a certain Valid holds: leave it to valijson. (The fuzzer found a "Valid"
      // here for {"durable":"rejected",…,"durable":…} that valijson refuses.)
      if (!no_dups && hasDuplicateNames(v)) o = Verdict::Unsure;
      r = both(r, o);
      if (r == Verdict::Invalid) return r;
    }
    if (n.items >= 0 && v.IsArray()) {
      for (const json::Value& e : v.GetArray()) {
        r = both(r, eval(n.items, e, no_dups));
        if (r == Verdict::Invalid) return r;
      }
    }
    for (int sub : n.all_of) {
      r = both(r, eval(sub, v, no_dups));
      if (r == Verdict::Invalid) return r;
    }
    if (!n.any_of.empty()) {
      Verdict a = Verdict::Invalid;
      for (int sub : n.any_of) {
        Verdict x = eval(sub, v, no_dups);
        if (x == Verdict::Valid) { a = Verdict::Valid; break; }
        if (x == Verdict::Unsure) a = Verdict::Unsure;
      }
      r = both(r, a);
      if (r == Verdict::Invalid) return r;
    }
    if (!n.one_of.empty()) {
      int valid = 0, unsure = 0;
      for (int sub : n.one_of) {
        Verdict x = eval(sub, v, no_dups);
        valid += x == Verdict::Valid;
        unsure += x == Verdict::Unsure;
      }
      Verdict o = valid > 1 ? Verdict::Invalid
                  : unsure  ? Verdict::Unsure
                  : valid == 1 ? Verdict::Valid : Verdict::Invalid;
      r = both(r, o);
      if (r == Verdict::Invalid) return r;
    }
    if (n.not_ >= 0) {
      Verdict x = eval(n.not_, v, no_dups);
      r = both(r, x == Verdict::Valid ? Verdict::Invalid : x == Verdict::Invalid ? Verdict::Valid : Verdict::Unsure);
    }
    return r;
  }

  Verdict objectVerdict(const Node& n, const json::Value& v, bool no_dups) const {
    Verdict r = Verdict::Valid;
    std::uint64_t seen = 0;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
      const std::string_view name = sv(m->name);
      const std::uint64_t name_head = head8(name);
      const Prop* p = nullptr;
      for (const Prop& q : n.props)
        if (q.is(name, name_head)) { p = &q; break; }
      if (p) {
        if (p->required_bit >= 0) seen |= std::uint64_t{1} << p->required_bit;
        r = both(r, eval(p->node, m->value, no_dups));
      } else if (n.additional == -2) {
        return Verdict::Invalid;
      } else if (n.additional >= 0) {
        r = both(r, eval(n.additional, m->value, no_dups));
      }
      if (r == Verdict::Invalid) return r;
    }
    if ((seen & n.required_mask) != n.required_mask) return Verdict::Invalid;
    for (const std::string& req : n.required_other)
      if (!json::member(v, req)) return Verdict::Invalid;
    return r;
  }
};

struct Compiled {
  std::optional<json::Schema> schema;
  std::optional<FastSchema> fast;  // the pre-check; absent when the schema did not compile
  std::string error;  // why it did not compile (a bug in our schemas; reported, never thrown)
};

struct SchemaSet {
  std::once_flag once;
  std::unordered_map<std::string, Compiled> by_type;  // immutable after call_once
  // Per method (index into Profile::methods()): params and result entries of by_type, so that
  // validate() costs no string hashing and no allocation. nullptr: no such type.
  std::vector<std::array<const Compiled*, 2>> by_method;
};

SchemaSet& schemaSet(Profile::Id id) {
  static SchemaSet sets[2];
  return sets[static_cast<int>(id)];
}

Compiled compileType(std::string_view version, std::string_view type) {
  std::string key = std::string(version) + "/" + std::string(type);
  std::string_view text = findText(key);
  if (text.empty()) text = findText("common/" + std::string(type));
  if (text.empty()) return {std::nullopt, std::nullopt, "no schema for " + std::string(type)};
  auto parsed = json::parse(text);
  if (!parsed) return {std::nullopt, std::nullopt, std::string(type) + ": " + parsed.error().message};
  json::Document doc = std::move(parsed->doc);
  mergeDefs(doc, findText(std::string(version) + "/defs"));
  mergeDefs(doc, findText("common/defs"));
  auto schema = json::Schema::compile(doc);
  if (!schema) return {std::nullopt, std::nullopt, std::string(type) + ": " + schema.error()};
  Compiled c{std::move(*schema), std::nullopt, {}};
  c.fast.emplace(doc);
  return c;
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
    for (const MethodInfo& m : p.methods()) {
      std::array<const Compiled*, 2> e{nullptr, nullptr};
      std::size_t i = 0;
      for (std::string_view type : {m.params_type, m.result_type}) {
        if (auto it = set.by_type.find(std::string(type)); !type.empty() && it != set.by_type.end())
          e[i] = &it->second;
        ++i;
      }
      set.by_method.push_back(e);
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
  // Lint looks up the method of every frame. A linear scan compared the name with a dozen others of
  // the same "plugin/" prefix, and hashing it cost as much (issue 6): the candidates are the few
  // methods of the same length, told apart by their last 8 bytes (names differ at the end) before
  // one full comparison. Built once per profile, then read-only.
  struct Candidate {
    std::uint64_t tail;
    const MethodInfo* m;
  };
  using Index = std::vector<std::vector<Candidate>>;  // by name length
  auto tail8 = [](std::string_view n) {
    std::uint64_t t = 0;
    const std::size_t k = std::min<std::size_t>(n.size(), 8);
    std::memcpy(&t, n.data() + n.size() - k, k);
    return t;
  };
  static const std::array<Index, 2> indexes = [&] {
    std::array<Index, 2> out;
    for (const Profile* p : {&profileV006(), &profileV004()}) {
      Index& index = out[static_cast<std::size_t>(p->id())];
      for (const MethodInfo& m : p->methods()) {
        if (index.size() <= m.name.size()) index.resize(m.name.size() + 1);
        index[m.name.size()].push_back({tail8(m.name), &m});  // table order: the first name wins
      }
    }
    return out;
  }();
  const Index& index = indexes[static_cast<std::size_t>(id_)];
  if (name.size() >= index.size()) return nullptr;
  const std::uint64_t tail = tail8(name);
  for (const Candidate& c : index[name.size()])
    if (c.tail == tail && c.m->name == name) return c.m;
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
  return validate(*m, part, value, {});
}

std::optional<Violation> Profile::validate(const MethodInfo& info, Part part, const json::Value& value,
                                           ValidateHints hints) const {
  const std::span<const MethodInfo> all = methods();
  const MethodInfo* m = &info;
  const std::less<const MethodInfo*> before;  // a total order even across unrelated arrays
  if (before(m, all.data()) || !before(m, all.data() + all.size())) {  // another profile's entry
    m = findMethod(info.name);
    if (!m)
      return Violation{"", "method \"" + std::string(info.name) + "\" does not exist in profile " +
                               std::string(version()),
                       "RPC-13"};
  }
  std::string_view type = part == Part::Params ? m->params_type : m->result_type;
  if (type.empty()) return Violation{"", std::string(m->name) + " is a notification and has no result", "RPC-16"};
  const SchemaSet& set = compiledSet(*this);
  const Compiled* c = set.by_method[static_cast<std::size_t>(m - methods().data())][part == Part::Params ? 0 : 1];
  if (!c || !c->schema)
    return Violation{"", "internal: schema " + std::string(type) + " unavailable: " +
                             (!c ? std::string("missing") : c->error),
                     "RPC-12"};
  const bool fast_valid = c->fast && c->fast->check(value, hints.no_duplicate_names) == Verdict::Valid;
#ifndef NDEBUG
  // The pre-check must never accept what valijson refuses (a missed finding): Debug builds, and so
  // every test suite, verify each "Valid" against valijson.
  if (fast_valid && c->schema->validate(value)) {
    std::fprintf(stderr, "Profile::validate: fast pre-check accepted what valijson refuses (%.*s)\n",
                 static_cast<int>(type.size()), type.data());
    std::abort();
  }
#endif
  std::optional<json::SchemaViolation> bad;
  if (!fast_valid) bad = c->schema->validate(value);
  if (bad) {
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
