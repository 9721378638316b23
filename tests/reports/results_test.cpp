// The results model: level mapping, verdict arithmetic, coverage, exit codes, evidence shortening.
#include <catch2/catch.hpp>

#include "reports/results.h"

using namespace conform::reports;

TEST_CASE("level mapping: M is MUST, I and C are SHOULD unless pinned", "[results]") {
  CHECK(effectiveLevel(RuleLevel::M).level == Level::Must);
  CHECK(effectiveLevel(RuleLevel::I).level == Level::Should);
  CHECK(effectiveLevel(RuleLevel::I).kind == LevelKind::Implementation);
  CHECK(effectiveLevel(RuleLevel::C).kind == LevelKind::Profile);
  CHECK(effectiveLevel(RuleLevel::C, true).level == Level::Must);
  CHECK(makeFinding("EMIT-06", kBindsEngine, "m", "e", "a", {}).verdict == Verdict::Fail);
  CHECK(makeFinding("EMIT-07", kBindsEngine, "m", "e", "a", {}).verdict == Verdict::NonStrict);
  CHECK(makeFinding("EMIT-15", kBindsEngine, "m", "e", "a", {}, true).verdict == Verdict::Fail);
  Finding bad = makeFinding("EMIT-99", kBindsEngine, "m", "e", "a", {});
  CHECK(bad.verdict == Verdict::Error);
  CHECK(bad.message.find("EMIT-99") != std::string::npos);
}

TEST_CASE("verdicts combine worst-first and give exit codes 0/1/2", "[results]") {
  CHECK(worse(Verdict::Pass, Verdict::Fail) == Verdict::Fail);
  CHECK(worse(Verdict::Error, Verdict::Fail) == Verdict::Error);
  CHECK(worse(Verdict::NonStrict, Verdict::Pass) == Verdict::NonStrict);
  CHECK(worse(Verdict::NotApplicable, Verdict::Pass) == Verdict::Pass);
  CHECK(verdictFromString("NON-STRICT") == Verdict::NonStrict);
  CHECK(!verdictFromString("MAYBE"));

  RunResult run;
  CaseResult ok = newCase("PING-01", "ping", {"PING-01"});
  finalize(ok);
  CHECK(ok.verdict == Verdict::Pass);
  run.cases.push_back(ok);
  CHECK(exitCode(run) == 0);
  CaseResult warn = newCase("FRAME-19", "dup", {"FRAME-19"});
  warn.findings.push_back(makeFinding("FRAME-19", kBindsPlugin, "dup", "", "", {}));
  finalize(warn);
  CHECK(warn.verdict == Verdict::NonStrict);
  run.cases.push_back(warn);
  CHECK(exitCode(run) == 0);
  CaseResult bad = newCase("EMIT-06", "once", {"EMIT-06"});
  bad.findings.push_back(makeFinding("EMIT-06", kBindsEngine, "twice", "", "", {{3, "x"}}));
  finalize(bad);
  run.cases.push_back(bad);
  CHECK(exitCode(run) == 1);
  CaseResult na = newCase("RECOV-02", "", {"RECOV-02"});
  na.verdict = Verdict::NotApplicable;
  finalize(na);
  CHECK(na.verdict == Verdict::NotApplicable);
  run.cases.push_back(na);
  CaseResult err = newCase("X", "", {});
  err.error = "child did not start";
  finalize(err);
  CHECK(err.verdict == Verdict::Error);
  run.cases.push_back(err);
  CHECK(exitCode(run) == 2);
  Counts n = countCases(run);
  CHECK(n.pass == 1);
  CHECK(n.non_strict == 1);
  CHECK(n.fail == 1);
  CHECK(n.not_applicable == 1);
  CHECK(n.error == 1);

  auto cov = coverage(run);
  auto find = [&](std::string_view id) {
    for (auto& c : cov)
      if (c.rule_id == id) return c;
    return RuleCoverage{};
  };
  CHECK(find("PING-01").verdict == Verdict::Pass);
  CHECK(find("EMIT-06").verdict == Verdict::Fail);
  CHECK(find("EMIT-06").findings == 1);
  CHECK(find("RECOV-02").verdict == Verdict::NotApplicable);
  CHECK(find("HOOK-01").verdict == Verdict::Untested);
}

TEST_CASE("evidence text is shortened at UTF-8 boundaries and made printable", "[results]") {
  CHECK(shortenEvidence("abc") == "abc");
  std::string big(2000, 'x');
  std::string s = shortenEvidence(big, 10);
  CHECK(s.rfind("xxxxxxxxxx… (2000 bytes)", 0) == 0);
  CHECK(shortenEvidence("a\xFF" "b") == "a\\xFFb");
  CHECK(shortenEvidence("a\tb") == "a\\x09b");
  CHECK(shortenEvidence("é€") == "é€");
}

namespace {
Finding advisory(std::string_view rule, std::uint8_t who) {
  // As the monitors' advisory flag does (harness/rules/connection_state.cpp FindingSink::report).
  Finding f = makeFinding(rule, who, "m", "e", "a", {});
  f.level = Level::Should;
  f.verdict = Verdict::NonStrict;
  return f;
}
constexpr std::uint8_t kPluginSide = kBindsPlugin | kBindsSdk;
}  // namespace

TEST_CASE("INIT-17 strict mode: a Lvl C breach by the plugin FAILs under --strict only", "[results][strict]") {
  CaseResult c = newCase("INIT-17", "caps", {"INIT-17"});
  c.findings.push_back(makeFinding("INIT-17", kBindsPlugin, "m", "e", "a", {}));
  finalize(c);
  CHECK(c.verdict == Verdict::NonStrict);  // default: reported, exit 0
  CHECK(applyStrict(c, kPluginSide) == 1);
  CHECK(c.verdict == Verdict::Fail);
  CHECK(c.findings[0].strict_only);
  CHECK(c.findings[0].level == Level::Must);
  RunResult run;
  run.cases.push_back(c);
  CHECK(exitCode(run) == 1);
}

TEST_CASE("FRAME-19 strict mode: Lvl I rules binding the plugin become binding", "[results][strict]") {
  CHECK(strictBinding(makeFinding("FRAME-19", kBindsPlugin, "m", "e", "a", {}), kPluginSide));
  // The same Lvl I rule broken by the engine side is not the target's breach in check …
  CHECK_FALSE(strictBinding(makeFinding("FRAME-19", kBindsEngine, "m", "e", "a", {}), kPluginSide));
  // … but is in check-engine.
  CHECK(strictBinding(makeFinding("FRAME-19", kBindsEngine, "m", "e", "a", {}), kBindsEngine));
  // INIT-21 (I) binds only the engine: a plugin's bad declaration stays NON-STRICT under --strict.
  CHECK_FALSE(strictBinding(makeFinding("INIT-21", kBindsPlugin, "m", "e", "a", {}), kPluginSide));
  CHECK(strictBinding(makeFinding("INIT-21", kBindsEngine, "m", "e", "a", {}), kBindsEngine));
}

TEST_CASE("FRAME-08 strict mode: the should clause of an M rule binds — uncertain advisories do not", "[results][strict]") {
  // "writers should not send CR": an SDK writer's CR FAILs under --strict.
  CHECK(strictBinding(advisory("FRAME-08", kBindsPlugin), kPluginSide));
  // FRAME-03's advisory (a killed process's unterminated frame) is uncertainty, not a SHOULD.
  CHECK_FALSE(strictBinding(advisory("FRAME-03", kBindsPlugin), kPluginSide));
  // EMIT-06 binds the engine: a plugin reusing a token is an engine stimulus, never a plugin FAIL.
  CHECK_FALSE(strictBinding(advisory("EMIT-06", kBindsPlugin), kPluginSide));
  CHECK_FALSE(strictBinding(advisory("QUOTA-05", kBindsPlugin), kPluginSide));
  // A FAIL or PASS is never touched, and an unknown rule (an ERROR finding) neither.
  CHECK_FALSE(strictBinding(makeFinding("INIT-10", kBindsPlugin, "m", "e", "a", {}), kPluginSide));
  CHECK_FALSE(strictBinding(makeFinding("NOPE-01", kBindsPlugin, "m", "e", "a", {}), kPluginSide));
}

TEST_CASE("EMIT-06 strict mode keeps a case of engine stimuli NON-STRICT and an explicit verdict as set", "[results][strict]") {
  CaseResult c = newCase("EMIT-06", "t", {"EMIT-06"});
  c.findings.push_back(advisory("EMIT-06", kBindsPlugin));
  finalize(c);
  CHECK(applyStrict(c, kPluginSide) == 0);
  CHECK(c.verdict == Verdict::NonStrict);
  CaseResult e = newCase("INIT-17", "t", {"INIT-17"});
  e.error = "harness broke";
  e.findings.push_back(makeFinding("INIT-17", kBindsPlugin, "m", "e", "a", {}));
  finalize(e);
  applyStrict(e, kPluginSide);
  CHECK(e.verdict == Verdict::Error);
}
