// reports/results — verdict arithmetic, the level mapping and rule coverage (see results.h).
#include "reports/results.h"

#include <algorithm>
#include <unordered_map>

#include "core/wire/framing.h"

namespace conform::reports {

// ---- catalogue helpers (rule_catalog.h; the table itself is generated) ----------------------
const RuleInfo* findRule(std::string_view id) {
  // 348 rules: a lazily built hash index keeps findings cheap on million-message lints.
  static const std::unordered_map<std::string_view, const RuleInfo*> index = [] {
    std::unordered_map<std::string_view, const RuleInfo*> m;
    for (RuleFamily f : {RuleFamily::Cookie, RuleFamily::Nanopi, RuleFamily::Cognipeer})
      for (const RuleInfo& r : ruleCatalog(f)) m.emplace(r.id, &r);
    return m;
  }();
  auto it = index.find(id);
  return it == index.end() ? nullptr : it->second;
}

const char* toString(RuleLevel l) {
  switch (l) {
    case RuleLevel::M: return "M";
    case RuleLevel::I: return "I";
    case RuleLevel::C: return "C";
  }
  return "?";
}

std::string_view areaOf(std::string_view id) {
  auto dash = id.find('-');
  return dash == std::string_view::npos ? id : id.substr(0, dash);
}

const char* bindsText(std::uint8_t b) {
  static const char* const names[16] = {"",  "E",   "P",   "E,P",   "S",   "E,S",   "P,S",   "E,P,S",
                                        "C", "E,C", "P,C", "E,P,C", "S,C", "E,S,C", "P,S,C", "E,P,S,C"};
  return names[b & 15];
}

RuleFamily familyOfProfile(std::string_view p) {
  if (p.rfind("nanopi", 0) == 0) return RuleFamily::Nanopi;
  if (p.rfind("cognipeer", 0) == 0) return RuleFamily::Cognipeer;
  return RuleFamily::Cookie;
}

// ---- verdicts -----------------------------------------------------------------------------
const char* toString(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "PASS";
    case Verdict::Fail: return "FAIL";
    case Verdict::NonStrict: return "NON-STRICT";
    case Verdict::NotApplicable: return "NOT-APPLICABLE";
    case Verdict::Untested: return "UNTESTED";
    case Verdict::Error: return "ERROR";
  }
  return "?";
}

std::optional<Verdict> verdictFromString(std::string_view s) {
  for (Verdict v : {Verdict::Pass, Verdict::Fail, Verdict::NonStrict, Verdict::NotApplicable,
                    Verdict::Untested, Verdict::Error})
    if (s == toString(v)) return v;
  return std::nullopt;
}

const char* toString(Level l) { return l == Level::Must ? "MUST" : "SHOULD"; }
const char* toString(LevelKind k) {
  switch (k) {
    case LevelKind::Normative: return "normative";
    case LevelKind::Implementation: return "implementation";
    case LevelKind::Profile: return "profile";
  }
  return "?";
}

EffectiveLevel effectiveLevel(RuleLevel l, bool pinned) {
  switch (l) {
    case RuleLevel::M: return {Level::Must, LevelKind::Normative};
    case RuleLevel::I: return {pinned ? Level::Must : Level::Should, LevelKind::Implementation};
    case RuleLevel::C: return {pinned ? Level::Must : Level::Should, LevelKind::Profile};
  }
  return {};
}

Verdict breachVerdict(Level l) { return l == Level::Must ? Verdict::Fail : Verdict::NonStrict; }

static int rank(Verdict v) {
  switch (v) {
    case Verdict::Untested: return 0;
    case Verdict::NotApplicable: return 1;
    case Verdict::Pass: return 2;
    case Verdict::NonStrict: return 3;
    case Verdict::Fail: return 4;
    case Verdict::Error: return 5;
  }
  return 5;
}

Verdict worse(Verdict a, Verdict b) { return rank(a) >= rank(b) ? a : b; }

std::string shortenEvidence(std::string_view text, std::size_t max) {
  // Evidence is printed in consoles, JSON and XML: invalid UTF-8 (FRAME-04 frames) and control
  // bytes are shown as \xNN so every writer stays valid.
  std::string out;
  std::size_t i = 0;
  while (i < text.size() && out.size() < max) {
    std::string_view rest = text.substr(i);
    std::size_t bad = wire::firstInvalidUtf8(rest);
    std::size_t good = bad == std::string_view::npos ? rest.size() : bad;
    for (std::size_t k = 0; k < good && out.size() < max;) {
      unsigned char c = static_cast<unsigned char>(rest[k]);
      std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      if (c < 0x20 || c == 0x7F) {
        static const char* hex = "0123456789ABCDEF";
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out.append(rest.substr(k, len));
      }
      k += len;
      i += len;
    }
    if (bad != std::string_view::npos && out.size() < max && i < text.size()) {
      static const char* hex = "0123456789ABCDEF";
      unsigned char c = static_cast<unsigned char>(text[i]);
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  if (i < text.size()) out += "… (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string_view Finding::requirement() const {
  const RuleInfo* r = findRule(rule_id);
  return r ? r->text : std::string_view{};
}

Finding makeFinding(std::string_view rule_id, std::uint8_t binds, std::string message,
                    std::string expected, std::string actual, std::vector<Evidence> evidence,
                    bool pinned) {
  Finding f;
  f.rule_id = std::string(rule_id);
  f.binds = binds;
  f.message = std::move(message);
  f.expected = std::move(expected);
  f.actual = std::move(actual);
  f.evidence = std::move(evidence);
  if (const RuleInfo* r = findRule(rule_id)) {
    EffectiveLevel e = effectiveLevel(r->level, pinned);
    f.level = e.level;
    f.kind = e.kind;
    f.verdict = breachVerdict(e.level);
  } else {
    f.verdict = Verdict::Error;
    f.message = "internal: finding names unknown rule `" + f.rule_id + "`: " + f.message;
  }
  return f;
}

Verdict caseVerdict(const CaseResult& c) {
  if (c.verdict == Verdict::Error || !c.error.empty()) return Verdict::Error;
  Verdict v = Verdict::Pass;
  if (c.findings.empty() &&
      (c.verdict == Verdict::NotApplicable || c.verdict == Verdict::Untested))
    return c.verdict;
  for (const Finding& f : c.findings) v = worse(v, f.verdict);
  return v;
}

CaseResult newCase(std::string id, std::string title, std::vector<std::string> rules) {
  CaseResult c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.rules = std::move(rules);
  return c;
}

void finalize(CaseResult& c) { c.verdict = caseVerdict(c); }

bool strictBinding(const Finding& f, std::uint8_t side) {
  if (f.verdict != Verdict::NonStrict || !(f.binds & side)) return false;
  const RuleInfo* r = findRule(f.rule_id);
  if (!r || !(r->binds & side)) return false;
  if (r->level != RuleLevel::M) return true;
  // An M rule with a lower-case "should" clause (RULES.md: FRAME-08, SDK-28): the advisory finding
  // is that clause's breach. Catalogue-driven, so a new rule of this shape needs no code here.
  return r->text.find("should") != std::string_view::npos;
}

std::size_t applyStrict(CaseResult& c, std::uint8_t side) {
  std::size_t n = 0;
  for (Finding& f : c.findings) {
    if (!strictBinding(f, side)) continue;
    f.verdict = Verdict::Fail;
    f.level = Level::Must;
    f.strict_only = true;
    ++n;
  }
  // A case whose verdict was set explicitly (ERROR, NOT-APPLICABLE) keeps it; caseVerdict() knows.
  if (n) finalize(c);
  return n;
}

Counts countCases(const RunResult& r) {
  Counts n;
  for (const CaseResult& c : r.cases) {
    switch (c.verdict) {
      case Verdict::Pass: ++n.pass; break;
      case Verdict::Fail: ++n.fail; break;
      case Verdict::NonStrict: ++n.non_strict; break;
      case Verdict::NotApplicable: ++n.not_applicable; break;
      case Verdict::Untested: ++n.untested; break;
      case Verdict::Error: ++n.error; break;
    }
  }
  return n;
}

int exitCode(const RunResult& r) {
  Counts n = countCases(r);
  if (n.error) return 2;
  if (n.fail) return 1;
  return 0;
}

std::vector<RuleCoverage> coverage(const RunResult& run) {
  std::vector<RuleCoverage> out;
  std::unordered_map<std::string_view, std::size_t> pos;
  for (const RuleInfo& r : ruleCatalog(familyOfProfile(run.profile))) {
    pos.emplace(r.id, out.size());
    out.push_back({r.id, Verdict::Untested, 0});
  }
  auto touch = [&](std::string_view id, Verdict v, bool is_finding) {
    auto it = pos.find(id);
    if (it == pos.end()) return;
    RuleCoverage& c = out[it->second];
    // A case that covers a rule and ends NOT-APPLICABLE must not mask a PASS elsewhere, and an
    // ERROR case says nothing about its rules' conformance, so only findings carry ERROR.
    if (!is_finding && v == Verdict::Error) v = Verdict::Untested;
    if (!is_finding && (v == Verdict::Fail || v == Verdict::NonStrict)) v = Verdict::Pass;
    c.verdict = worse(c.verdict, v);
    if (is_finding) ++c.findings;
  };
  for (const CaseResult& cs : run.cases) {
    for (const std::string& id : cs.rules) touch(id, cs.verdict, false);
    for (const Finding& f : cs.findings) touch(f.rule_id, f.verdict, true);
  }
  return out;
}

}  // namespace conform::reports
