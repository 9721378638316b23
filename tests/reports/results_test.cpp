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
