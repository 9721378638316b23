// core/json — the subset-pattern matcher used by the scenario DSL's `expect` and by replay, plus
// capture resolution and substitution for `send` steps. Semantics are documented in json.h.
//
// Captures bound while matching one pattern are staged in a local map so that (a) a later part of
// the same pattern can refer to them ({"id": "$x", "echo": "$x"}) and (b) a failed match leaves the
// caller's map untouched, as json.h promises.
#include <cstring>

#include "core/json/json.h"

namespace conform::json {

namespace {

struct Ref {
  std::string_view name;                // capture name, without '$'
  std::vector<std::string_view> parts;  // member names / array indices after the name
};

bool identStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool identChar(char c) { return identStart(c) || (c >= '0' && c <= '9'); }

// "$name" or "$name.a.0.b"; nullopt for anything else ("$*", "$?", "$$x", "$ x", "plain").
std::optional<Ref> parseRef(std::string_view s) {
  if (s.size() < 2 || s[0] != '$' || !identStart(s[1])) return std::nullopt;
  Ref r;
  std::size_t pos = 1;
  bool first = true;
  while (true) {
    std::size_t dot = s.find('.', pos);
    std::string_view seg = s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (seg.empty()) return std::nullopt;
    for (char c : seg)
      if (!identChar(c)) return std::nullopt;
    if (first) { r.name = seg; first = false; }
    else r.parts.push_back(seg);
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  return r;
}

const Value* walk(const Value* v, const std::vector<std::string_view>& parts) {
  for (auto part : parts) {
    if (!v) return nullptr;
    if (v->IsObject()) {
      v = member(*v, part);
    } else if (v->IsArray()) {
      std::size_t idx = 0;
      for (char c : part) {
        if (c < '0' || c > '9') return nullptr;
        idx = idx * 10 + static_cast<std::size_t>(c - '0');
        if (idx > v->Size()) return nullptr;
      }
      if (idx >= v->Size()) return nullptr;
      v = &(*v)[static_cast<rapidjson::SizeType>(idx)];
    } else {
      return nullptr;
    }
  }
  return v;
}

const Value* lookup(const Captures& caps, const Captures* fresh, const Ref& r) {
  const Value* base = nullptr;
  if (fresh) {
    auto it = fresh->find(r.name);
    if (it != fresh->end()) base = &it->second;
  }
  if (!base) {
    auto it = caps.find(r.name);
    if (it != caps.end()) base = &it->second;
  }
  return base ? walk(base, r.parts) : nullptr;
}

bool isString(const Value& v, const char* lit) {
  std::size_t n = std::strlen(lit);
  return v.IsString() && v.GetStringLength() == n && std::memcmp(v.GetString(), lit, n) == 0;
}

std::string_view view(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

class Matcher {
 public:
  Matcher(const Captures& caps, Captures& fresh) : caps_(caps), fresh_(fresh) {}

  std::optional<Mismatch> match(const Value& pat, const Value& sub, const Path& p) {
    if (pat.IsString()) return matchString(pat, sub, p);
    if (pat.IsObject()) {
      if (!sub.IsObject()) return fail(p, pat, sub);
      for (auto& m : pat.GetObject()) {
        std::string_view key = view(m.name);
        const Value* sm = member(sub, key);
        Path mp = p.field(key);
        if (isString(m.value, "$?")) {
          if (sm) return Mismatch{mp.str(), "(absent)", compact(*sm)};
          continue;
        }
        if (!sm) return Mismatch{mp.str(), compact(m.value), "(absent)"};
        if (auto mm = match(m.value, *sm, mp)) return mm;
      }
      return std::nullopt;
    }
    if (pat.IsArray()) {
      if (!sub.IsArray() || sub.Size() != pat.Size()) return fail(p, pat, sub);
      for (rapidjson::SizeType i = 0; i < pat.Size(); ++i)
        if (auto mm = match(pat[i], sub[i], p.index(i))) return mm;
      return std::nullopt;
    }
    if (!equal(pat, sub)) return fail(p, pat, sub);
    return std::nullopt;
  }

 private:
  std::optional<Mismatch> matchString(const Value& pat, const Value& sub, const Path& p) {
    std::string_view s = view(pat);
    if (s == "$*") return std::nullopt;
    if (s.size() >= 2 && s[0] == '$' && s[1] == '$') {
      std::string_view lit = s.substr(1);
      if (sub.IsString() && view(sub) == lit) return std::nullopt;
      return Mismatch{p.str(), compact(Value(lit.data(), static_cast<rapidjson::SizeType>(lit.size()))),
                      compact(sub)};
    }
    if (auto ref = parseRef(s)) {
      if (const Value* bound = lookup(caps_, &fresh_, *ref)) {
        if (equal(*bound, sub)) return std::nullopt;
        return Mismatch{p.str(), compact(*bound) + " (" + std::string(s) + ")", compact(sub)};
      }
      if (ref->parts.empty() && !caps_.count(ref->name) && !fresh_.count(ref->name)) {
        fresh_.emplace(std::string(ref->name), copy(sub));
        return std::nullopt;
      }
      return Mismatch{p.str(), std::string(s) + " (unbound capture)", compact(sub)};
    }
    if (sub.IsString() && view(sub) == s) return std::nullopt;
    return fail(p, pat, sub);
  }

  static Mismatch fail(const Path& p, const Value& pat, const Value& sub) {
    return Mismatch{p.str(), compact(pat), compact(sub)};
  }

  const Captures& caps_;
  Captures& fresh_;
};

bool substituteInto(const Value& pat, Value& out, Allocator& a, const Captures& caps, const Path& p,
                    std::string& err) {
  if (pat.IsString()) {
    std::string_view s = view(pat);
    if (s.size() >= 2 && s[0] == '$' && s[1] == '$') {
      out = str(s.substr(1), a);
      return true;
    }
    if (auto ref = parseRef(s)) {
      const Value* v = lookup(caps, nullptr, *ref);
      if (!v) {
        err = p.str() + ": unbound capture " + std::string(s);
        return false;
      }
      deepCopy(out, *v, a);
      return true;
    }
    deepCopy(out, pat, a);
    return true;
  }
  if (pat.IsObject()) {
    out.SetObject();
    for (auto& m : pat.GetObject()) {
      Value v;
      if (!substituteInto(m.value, v, a, caps, p.field(view(m.name)), err)) return false;
      out.AddMember(Value(m.name, a), std::move(v), a);
    }
    return true;
  }
  if (pat.IsArray()) {
    out.SetArray();
    out.Reserve(pat.Size(), a);
    for (rapidjson::SizeType i = 0; i < pat.Size(); ++i) {
      Value v;
      if (!substituteInto(pat[i], v, a, caps, p.index(i), err)) return false;
      out.PushBack(std::move(v), a);
    }
    return true;
  }
  deepCopy(out, pat, a);
  return true;
}

}  // namespace

std::string Mismatch::str() const { return path + ": expected " + expected + ", found " + actual; }

std::optional<Mismatch> matchSubset(const Value& pattern, const Value& subject, Captures& caps) {
  Captures fresh;
  Matcher m(caps, fresh);
  Path::Root root;
  auto mm = m.match(pattern, subject, Path(root));
  if (mm) return mm;
  for (auto& [k, v] : fresh) caps.insert_or_assign(k, std::move(v));
  return std::nullopt;
}

const Value* resolveCapture(const Captures& caps, std::string_view ref) {
  std::string tmp;
  if (ref.empty() || ref[0] != '$') {
    tmp = "$" + std::string(ref);
    ref = tmp;
  }
  auto r = parseRef(ref);
  if (!r) return nullptr;
  return lookup(caps, nullptr, *r);
}

Expected<Document, std::string> substitute(const Value& pattern, const Captures& caps) {
  Document out;
  std::string err;
  Path::Root root;
  if (!substituteInto(pattern, out, out.GetAllocator(), caps, Path(root), err)) return unexpected(err);
  return out;
}

}  // namespace conform::json
