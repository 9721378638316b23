// core/json/schema_rewrite — turns an author's draft 2020-12 schema into the draft 7 form valijson
// compiles, with `pattern`/`format` moved to our own keywords (see schema.h for why), and refuses
// what valijson cannot handle safely: non-local or dangling `$ref`s, `$ref` cycles that never
// descend into the instance (valijson would recurse until the stack overflows), and
// `patternProperties` keys std::regex would misread.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/json/schema_rewrite.h"

#include <pcre2.h>

#include <regex>
#include <unordered_map>
#include <unordered_set>

namespace conform::json::schema_detail {

namespace {

// PCRE2 limits (DEPENDENCIES.md: keep backtracking bounded on hostile subjects): at most this many
// internal match() calls and this much backtracking heap per search; hitting one counts as a failed
// match, never a crash or a hang. The match limit bounds the CPU a hostile schema + subject can
// take per validation: catastrophic `^(a+)+$` on 40 'a's + '!' stops after ~14 ms CPU at 10^6 (it
// took ~145 ms at 10^7, on the lint hot path). A legitimate long match still fits: `^(a|b)*$` on
// a 200k-character subject needs between 0.3 and 0.5 million calls (schema_validate_test.cpp).
// 128 MiB of heap is what that match needs with room to spare (64 MiB measured as the minimum).
constexpr uint32_t kMatchLimit = 1'000'000;
constexpr uint32_t kHeapLimitKiB = 128 * 1024;
// patternProperties keys are handed to std::regex; longer keys are refused (its compiler recurses).
constexpr std::size_t kMaxPatternPropertyKeyBytes = 1024;

std::string_view sv(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

const Value* resolveLocalRef(const Value& root, std::string_view ref) {
  if (ref.empty() || ref[0] != '#') return nullptr;
  // Percent-decode the fragment first (RFC 3986 URI fragment), then walk the JSON pointer.
  std::string frag;
  for (std::size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] == '%') {
      if (i + 2 >= ref.size()) return nullptr;
      int h = hexValue(ref[i + 1]), l = hexValue(ref[i + 2]);
      if (h < 0 || l < 0) return nullptr;
      frag += static_cast<char>(h * 16 + l);
      i += 2;
    } else {
      frag += ref[i];
    }
  }
  if (frag.empty()) return &root;
  if (frag[0] != '/') return nullptr;  // `#anchor` form: not supported
  const Value* cur = &root;
  std::size_t pos = 1;
  while (true) {
    std::size_t slash = frag.find('/', pos);
    std::string raw = frag.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    std::string tok;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        tok += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else if (raw[i] == '~') {
        return nullptr;
      } else {
        tok += raw[i];
      }
    }
    if (cur->IsObject()) {
      cur = member(*cur, tok);
    } else if (cur->IsArray()) {
      if (tok.empty() || tok.size() > 9 || (tok.size() > 1 && tok[0] == '0')) return nullptr;
      std::size_t idx = 0;
      for (char c : tok) {
        if (c < '0' || c > '9') return nullptr;
        idx = idx * 10 + static_cast<std::size_t>(c - '0');
      }
      if (idx >= cur->Size()) return nullptr;
      cur = &(*cur)[static_cast<rapidjson::SizeType>(idx)];
    } else {
      return nullptr;
    }
    if (!cur) return nullptr;
    if (slash == std::string::npos) return cur;
    pos = slash + 1;
  }
}

// ---------------------------------------------------------------------------------------------
// PCRE2
// ---------------------------------------------------------------------------------------------

Expected<std::shared_ptr<const Regex>, std::string> Regex::compile(std::string_view pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  // DOLLAR_ENDONLY and ALT_BSUX (\uHHHH) bring PCRE2 closer to the ECMA-262 dialect JSON Schema uses.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX, &err,
                                   &off, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    return unexpected("invalid regular expression at offset " + std::to_string(off) + ": " +
                      reinterpret_cast<const char*>(buf));
  }
  std::shared_ptr<Regex> re(new Regex());
  re->code_ = code;
  pcre2_match_context* mctx = pcre2_match_context_create(nullptr);
  if (mctx) {
    pcre2_set_match_limit(mctx, kMatchLimit);
    pcre2_set_heap_limit(mctx, kHeapLimitKiB);
  }
  re->mctx_ = mctx;
  re->source_ = std::string(pattern);
  return std::shared_ptr<const Regex>(std::move(re));
}

Regex::~Regex() {
  if (mctx_) pcre2_match_context_free(static_cast<pcre2_match_context*>(mctx_));
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

bool Regex::search(std::string_view subject, bool* error) const {
  if (error) *error = false;
  auto* code = static_cast<pcre2_code*>(code_);
  // Match data per call: the compiled code and context are shared read-only between threads.
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (!md) {
    if (error) *error = true;
    return false;
  }
  int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0, md,
                       static_cast<pcre2_match_context*>(mctx_));
  pcre2_match_data_free(md);
  if (rc >= 0) return true;
  if (rc != PCRE2_ERROR_NOMATCH && error) *error = true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Rewrite
// ---------------------------------------------------------------------------------------------

namespace {

enum class Kind { Verbatim, Schema, SchemaMap, SchemaArray, SchemaOrArray };

Kind kindOf(std::string_view k) {
  static const std::unordered_map<std::string_view, Kind> kinds = {
      {"additionalProperties", Kind::Schema}, {"additionalItems", Kind::Schema},
      {"contains", Kind::Schema},             {"propertyNames", Kind::Schema},
      {"if", Kind::Schema},                   {"then", Kind::Schema},
      {"else", Kind::Schema},                 {"not", Kind::Schema},
      {"unevaluatedItems", Kind::Schema},     {"unevaluatedProperties", Kind::Schema},
      {"items", Kind::SchemaOrArray},         {"properties", Kind::SchemaMap},
      {"patternProperties", Kind::SchemaMap}, {"$defs", Kind::SchemaMap},
      {"definitions", Kind::SchemaMap},       {"dependentSchemas", Kind::SchemaMap},
      {"allOf", Kind::SchemaArray},           {"anyOf", Kind::SchemaArray},
      {"oneOf", Kind::SchemaArray},           {"prefixItems", Kind::SchemaArray},
  };
  auto it = kinds.find(k);
  return it == kinds.end() ? Kind::Verbatim : it->second;
}

class Rewriter {
 public:
  Rewriter(const Value& root, Allocator& a) : root_(root), a_(a) {}
  bool uses_pattern_properties = false;
  std::string error;

  bool schema(const Value& in, Value& out, const Path& p) {
    if (!in.IsObject()) {
      deepCopy(out, in, a_);
      return true;
    }
    out.SetObject();
    const Value* ref = member(in, "$ref");
    const bool has_prefix = member(in, "prefixItems") != nullptr;
    bool wrap_ref = false;
    if (ref) {
      if (!ref->IsString()) return fail(p.field("$ref"), "$ref must be a string");
      if (!resolveLocalRef(root_, sv(*ref))) {
        if (sv(*ref).empty() || sv(*ref)[0] != '#')
          return fail(p.field("$ref"), "only document-local references (\"#/...\") are supported: " +
                                           std::string(sv(*ref)));
        return fail(p.field("$ref"), "unresolvable reference " + std::string(sv(*ref)));
      }
      for (auto& m : in.GetObject()) {
        std::string_view k = sv(m.name);
        if (k != "$ref" && k != "$id" && k != "$schema" && k != "$comment") wrap_ref = true;
      }
    }
    Value deps(rapidjson::kObjectType);
    Value all_of;  // rewritten allOf, when present
    for (auto& m : in.GetObject()) {
      std::string_view k = sv(m.name);
      Path mp = p.field(k);
      if (k == "$id" || k == "$schema") continue;
      if (k == "$ref") {
        if (!wrap_ref) out.AddMember(str(k, a_), Value(m.value, a_), a_);
        continue;
      }
      if (k == "pattern") {
        out.AddMember(str("x-conform-pattern", a_), Value(m.value, a_), a_);
        continue;
      }
      if (k == "format") {
        out.AddMember(str("x-conform-format", a_), Value(m.value, a_), a_);
        continue;
      }
      if (k == "dependentRequired" || k == "dependencies" || k == "dependentSchemas") {
        if (!m.value.IsObject()) return fail(mp, std::string("expected object, found ") + typeName(m.value));
        for (auto& d : m.value.GetObject()) {
          Value v;
          if (d.value.IsArray()) deepCopy(v, d.value, a_);
          else if (!schema(d.value, v, mp.field(sv(d.name)))) return false;
          if (!member(deps, sv(d.name))) deps.AddMember(Value(d.name, a_), std::move(v), a_);
        }
        continue;
      }
      Kind kind = kindOf(k);
      std::string_view out_name = k;
      if (k == "prefixItems") out_name = "items";
      if (k == "items" && has_prefix) { out_name = "additionalItems"; kind = Kind::Schema; }
      if (k == "patternProperties") {
        uses_pattern_properties = true;
        if (!checkPatternPropertyKeys(m.value, mp)) return false;
      }
      Value v;
      switch (kind) {
        case Kind::Verbatim: deepCopy(v, m.value, a_); break;
        case Kind::Schema:
          if (!schema(m.value, v, mp)) return false;
          break;
        case Kind::SchemaOrArray:
        case Kind::SchemaArray:
          if (m.value.IsArray()) {
            v.SetArray();
            for (rapidjson::SizeType i = 0; i < m.value.Size(); ++i) {
              Value e;
              if (!schema(m.value[i], e, mp.index(i))) return false;
              v.PushBack(std::move(e), a_);
            }
          } else if (kind == Kind::SchemaOrArray) {
            if (!schema(m.value, v, mp)) return false;
          } else {
            return fail(mp, std::string("expected array, found ") + typeName(m.value));
          }
          break;
        case Kind::SchemaMap:
          if (!m.value.IsObject()) return fail(mp, std::string("expected object, found ") + typeName(m.value));
          v.SetObject();
          for (auto& e : m.value.GetObject()) {
            Value ev;
            if (!schema(e.value, ev, mp.field(sv(e.name)))) return false;
            v.AddMember(Value(e.name, a_), std::move(ev), a_);
          }
          break;
      }
      if (k == "allOf") { all_of = std::move(v); continue; }
      if (!member(out, out_name)) out.AddMember(str(out_name, a_), std::move(v), a_);
    }
    if (deps.MemberCount() > 0) out.AddMember(str("dependencies", a_), std::move(deps), a_);
    if (wrap_ref) {
      // draft 2020-12 applies keywords beside $ref; valijson's draft 7 ignores them, so the ref
      // moves into allOf next to them.
      if (!all_of.IsArray()) all_of.SetArray();
      Value r(rapidjson::kObjectType);
      r.AddMember(str("$ref", a_), Value(*ref, a_), a_);
      all_of.PushBack(std::move(r), a_);
    }
    if (all_of.IsArray()) out.AddMember(str("allOf", a_), std::move(all_of), a_);
    return true;
  }

 private:
  bool fail(const Path& p, std::string msg) {
    error = p.str() + ": " + msg;
    return false;
  }

  bool checkPatternPropertyKeys(const Value& pp, const Path& p) {
    if (!pp.IsObject()) return true;  // reported by the SchemaMap case
    for (auto& m : pp.GetObject()) {
      std::string_view key = sv(m.name);
      Path kp = p.field(key);
      if (key.size() > kMaxPatternPropertyKeyBytes)
        return fail(kp, "patternProperties key longer than " + std::to_string(kMaxPatternPropertyKeyBytes) +
                            " bytes is not supported");
      if (auto re = Regex::compile(key); !re) return fail(kp, re.error());
      if (key.find("\\p") != std::string_view::npos || key.find("\\P") != std::string_view::npos)
        return fail(kp, "Unicode property escapes (\\p{..}) are not supported in patternProperties keys");
      try {
        std::regex test(key.begin(), key.end(), std::regex::ECMAScript);
      } catch (const std::exception& e) {
        return fail(kp, std::string("patternProperties key not supported by the validator: ") + e.what());
      }
    }
    return true;
  }

  const Value& root_;
  Allocator& a_;
};

// Subschemas applied to the same instance location as `s` (no descent into the instance).
void sameInstanceChildren(const Value& root, const Value& s, std::vector<const Value*>& out) {
  out.clear();
  if (!s.IsObject()) return;
  for (auto& m : s.GetObject()) {
    std::string_view k = sv(m.name);
    if (k == "$ref" && m.value.IsString()) {
      if (const Value* t = resolveLocalRef(root, sv(m.value))) out.push_back(t);
    } else if (k == "allOf" || k == "anyOf" || k == "oneOf") {
      if (m.value.IsArray())
        for (auto& e : m.value.GetArray()) out.push_back(&e);
    } else if (k == "not" || k == "if" || k == "then" || k == "else") {
      out.push_back(&m.value);
    } else if (k == "dependentSchemas" || k == "dependencies") {
      if (m.value.IsObject())
        for (auto& e : m.value.GetObject())
          if (e.value.IsObject()) out.push_back(&e.value);
    }
  }
}

// Every schema object reachable by following $ref from anywhere (a cycle needs a $ref).
bool findRefCycle(const Value& root, std::string& error) {
  std::vector<const Value*> starts;
  // Collect schemas with a $ref by a plain walk over the whole document.
  std::vector<const Value*> todo{&root};
  while (!todo.empty()) {
    const Value* v = todo.back();
    todo.pop_back();
    if (v->IsObject()) {
      if (member(*v, "$ref")) starts.push_back(v);
      for (auto& m : v->GetObject()) todo.push_back(&m.value);
    } else if (v->IsArray()) {
      for (auto& e : v->GetArray()) todo.push_back(&e);
    }
  }
  enum : char { kWhite = 0, kGrey, kBlack };
  std::unordered_map<const Value*, char> color;
  struct Frame {
    const Value* node;
    std::vector<const Value*> kids;
    std::size_t next = 0;
  };
  for (const Value* s : starts) {
    if (color[s] != kWhite) continue;
    std::vector<Frame> stack;
    stack.push_back({s, {}, 0});
    sameInstanceChildren(root, *s, stack.back().kids);
    color[s] = kGrey;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next == f.kids.size()) {
        color[f.node] = kBlack;
        stack.pop_back();
        continue;
      }
      const Value* k = f.kids[f.next++];
      char& c = color[k];
      if (c == kGrey) {
        error = "$ref cycle that never descends into the instance (infinite recursion)";
        return true;
      }
      if (c == kBlack) continue;
      c = kGrey;
      Frame nf{k, {}, 0};
      sameInstanceChildren(root, *k, nf.kids);
      stack.push_back(std::move(nf));
    }
  }
  return false;
}

}  // namespace

Expected<Ok, std::string> rewriteForValijson(const Value& schema, Document& out,
                                             bool& uses_pattern_properties) {
  out.SetNull();
  Rewriter r(schema, out.GetAllocator());
  Path::Root root;
  if (!r.schema(schema, out, Path(root))) return unexpected(r.error);
  std::string err;
  if (findRefCycle(schema, err)) return unexpected(err);
  uses_pattern_properties = r.uses_pattern_properties;
  return Ok{};
}

}  // namespace conform::json::schema_detail
