// reports/results — the results model every command produces and every writer renders:
//   Run → Cases → Findings (with evidence), plus per-rule coverage.
//
// Why one model: check, check-engine, fuzz, replay and lint differ only in where wire events come
// from (ARCHITECTURE.md); they all end in the same findings, so one model and one set of writers
// serve them all. This layer knows nothing of harness/ (the monitors produce Findings; the runner
// groups them into Cases).
//
// Verdicts (ARCHITECTURE.md §Verdicts; Autobahn-style outcomes beyond pass/fail):
//   PASS, FAIL (a MUST broken), NON-STRICT (a SHOULD broken), NOT-APPLICABLE, UNTESTED,
//   ERROR (the harness broke — never the target's fault).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/rule_catalog.h"

namespace conform::reports {

enum class Verdict : std::uint8_t { Pass, Fail, NonStrict, NotApplicable, Untested, Error };
const char* toString(Verdict);  // "PASS", "FAIL", "NON-STRICT", "NOT-APPLICABLE", "UNTESTED", "ERROR"
std::optional<Verdict> verdictFromString(std::string_view);

// Requirement level of a finding. MUST comes from Lvl M; SHOULD from Lvl I ("implementation") and
// Lvl C ("profile") unless the active profile pins the rule, which makes it MUST.
enum class Level : std::uint8_t { Must, Should };
enum class LevelKind : std::uint8_t { Normative, Implementation, Profile };
const char* toString(Level);      // "MUST", "SHOULD"
const char* toString(LevelKind);  // "normative", "implementation", "profile"

struct EffectiveLevel {
  Level level = Level::Must;
  LevelKind kind = LevelKind::Normative;
};
// The mapping above. `pinned`: the profile makes this I/C rule a hard requirement.
EffectiveLevel effectiveLevel(RuleLevel, bool pinned = false);
// Verdict for a broken requirement of this level: FAIL for MUST, NON-STRICT for SHOULD.
Verdict breachVerdict(Level);

// One piece of evidence: a trace line and, when available, the frame text (possibly shortened).
struct Evidence {
  std::uint64_t line = 0;  // 1-based trace line; 0 = not tied to a line
  std::string text;        // frame text or a short description; may be empty
};

// Frame text is cut to this many bytes in evidence: a 4 MiB frame must not make a 4 MiB report
// (FRAME-06 allows frames that large), and a report reader needs the start of the frame.
inline constexpr std::size_t kMaxEvidenceTextBytes = 512;
// Cuts at a UTF-8 boundary and appends "… (N bytes)" when shortened.
std::string shortenEvidence(std::string_view text, std::size_t max = kMaxEvidenceTextBytes);

struct Finding {
  std::string rule_id;                  // "FRAME-06"; must exist in the catalogue
  Level level = Level::Must;
  LevelKind kind = LevelKind::Normative;
  Verdict verdict = Verdict::Fail;
  std::uint8_t binds = 0;               // who broke it: kBindsEngine / kBindsPlugin / kBindsSdk
  std::string message;                  // what happened, one sentence
  std::string expected;
  std::string actual;
  std::vector<Evidence> evidence;
  // Set by applyStrict(): a NON-STRICT finding that --strict made a FAIL (reports mark it, so a
  // reader sees which failures exist only because Lvl I/C rules were made binding).
  bool strict_only = false;

  // The rule's requirement text from the catalogue ("" for an unknown id).
  std::string_view requirement() const;
};

// Builds a finding whose level, kind and verdict follow the catalogue entry of `rule_id` (an
// unknown id gives an ERROR finding, so a typo in a monitor is visible, never silent).
Finding makeFinding(std::string_view rule_id, std::uint8_t binds, std::string message,
                    std::string expected, std::string actual, std::vector<Evidence> evidence,
                    bool pinned = false);

struct CaseResult {
  std::string id;                  // stable slug, usually a rule id ("EMIT-04") or "lint"
  std::string title;
  std::vector<std::string> rules;  // rules this case covers (for coverage)
  Verdict verdict = Verdict::Pass; // see caseVerdict()
  std::vector<Finding> findings;
  std::string error;               // harness error text when verdict == Error
  std::string skip_reason;         // why NOT-APPLICABLE / UNTESTED
  double duration_ms = 0;
  std::string trace_path;          // where the wire log of this case is, if kept
  // The case's wire log itself (core/trace text, header line first), as the runner recorded it.
  // Kept in the model so the HTML report can show every case's raw exchange (STYLE.md, Autobahn)
  // without reading files back; empty when the run kept no trace.
  std::string trace;
};

// A case with its header fields set (verdict PASS until finalize()).
CaseResult newCase(std::string id, std::string title, std::vector<std::string> rules);

struct RunResult {
  std::string tool = "conform";
  std::string tool_version;
  std::string command;             // "check", "lint", …
  std::string target;              // what was tested
  std::string profile;             // "v006", "v004"
  std::string started_at;          // RFC 3339; writers print it as is (goldens fix it)
  bool strict = false;             // --strict: Lvl I/C rules bind the target (applyStrict)
  double duration_ms = 0;
  std::vector<CaseResult> cases;
};

// Worst-of combination: ERROR > FAIL > NON-STRICT > PASS > NOT-APPLICABLE > UNTESTED.
Verdict worse(Verdict a, Verdict b);
// A case's verdict from its findings: the worst finding, PASS when there is none; an explicitly
// set ERROR / NOT-APPLICABLE / UNTESTED is kept.
Verdict caseVerdict(const CaseResult&);
// Sets c.verdict = caseVerdict(c).
void finalize(CaseResult& c);

// Strict mode (`conform check --strict`, `check-engine --strict`; h2spec's strict mode; docs/check.md
// §Strict mode). PROTOCOL.md §0.2: [chosen] (Lvl C) is binding for the reference implementations
// and reported separately; [impl] (Lvl I) is a warning unless a profile pins it. --strict is that
// pin for every I/C rule: a NON-STRICT finding becomes FAIL when
//   - the finding is against the side under test (`side`: kBindsPlugin|kBindsSdk for check,
//     kBindsEngine for check-engine), and
//   - its catalogue rule binds that side (Binds column), and
//   - the rule is Lvl I or C, or it is an M rule whose text states a "should" clause (FRAME-08
//     "writers should not send CR") — h2spec strict makes SHOULD a MUST.
// Everything else stays as it was: advisory findings on rules that bind only the OTHER side (the
// plugin-side emit/quota findings: EMIT-*/QUOTA-* bind the engine, which must reject), and advisory
// findings on M rules that are advisory because the trace cannot prove the breach (FRAME-03's
// unterminated last frame of a killed process) — a FAIL there would be a false FAIL.
bool strictBinding(const Finding& f, std::uint8_t side);
// Promotes the findings strictBinding() selects (verdict FAIL, level MUST, strict_only) and
// re-derives the case verdict. Returns how many findings were promoted.
std::size_t applyStrict(CaseResult& c, std::uint8_t side);

struct Counts {
  std::size_t pass = 0, fail = 0, non_strict = 0, not_applicable = 0, untested = 0, error = 0;
  std::size_t total() const { return pass + fail + non_strict + not_applicable + untested + error; }
};
Counts countCases(const RunResult&);

// Exit code of a run (ARCHITECTURE.md): 0 all pass, 1 any FAIL, 2 harness error (wins).
int exitCode(const RunResult&);

// Per-rule coverage: for every catalogue rule, the worst verdict over the findings naming it and
// the cases listing it (PASS when covered and never broken), UNTESTED when nothing covered it.
struct RuleCoverage {
  std::string_view rule_id;
  Verdict verdict = Verdict::Untested;
  std::size_t findings = 0;
};
std::vector<RuleCoverage> coverage(const RunResult&);

}  // namespace conform::reports
