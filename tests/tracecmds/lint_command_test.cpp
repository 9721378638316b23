// tests/tracecmds/lint_command_test — `conform lint` end to end (a real conform process): exit codes
// 0 clean / 1 findings / 2 unreadable, findings as TRACE:LINE, report files. Traces come from
// tests/data/traces (the monitors' fixtures): a clean session and dirty ones with known findings.
#include <catch2/catch.hpp>

#include <filesystem>

#include "tests/tracecmds/proc.h"

using namespace tracecmds;

TEST_CASE("lint: a conforming trace exits 0 with no findings", "[lint]") {
  TempDir dir;
  const std::string t = traceData("lint_clean_session.ndjson");
  Result r = run({conformBin(), "lint", t}, "", dir);
  INFO(r.out << r.err);
  CHECK(r.code() == 0);
  CHECK(r.out.find("0 finding(s)") != std::string::npos);
}

TEST_CASE("EMIT-02 lint prints a finding as TRACE:LINE: RULE-ID (MUST) and exits 1", "[lint]") {
  TempDir dir;
  const std::string t = traceData("lint_dirty_emit02.ndjson");
  Result r = run({conformBin(), "lint", t}, "", dir);
  INFO(r.out << r.err);
  CHECK(r.code() == 1);
  CHECK(r.out.find(t + ":") != std::string::npos);
  CHECK(r.out.find(": EMIT-02 (MUST) ") != std::string::npos);
}

TEST_CASE("lint: every dirty fixture exits 1, never 0 or 2", "[lint]") {
  TempDir dir;
  for (const auto& e : std::filesystem::directory_iterator(std::string(CONFORM_SOURCE_DIR) + "/tests/data/traces")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("lint_dirty_", 0) != 0) continue;
    Result r = run({conformBin(), "lint", e.path().string()}, "", dir);
    INFO(name << "\n" << r.out << r.err);
    CHECK(r.code() == 1);
  }
}

TEST_CASE("lint: unreadable input exits 2 naming the line and the reason", "[lint]") {
  TempDir dir;
  SECTION("missing file") {
    Result r = run({conformBin(), "lint", dir / "nope.ndjson"}, "", dir);
    CHECK(r.code() == 2);
    CHECK(r.err.find("nope.ndjson") != std::string::npos);
  }
  SECTION("bad header") {
    writeFile(dir / "h.ndjson", "{\"hello\":1}\n");
    Result r = run({conformBin(), "lint", dir / "h.ndjson"}, "", dir);
    INFO(r.err);
    CHECK(r.code() == 2);
    CHECK(r.err.find("h.ndjson:1:") != std::string::npos);
  }
  SECTION("a malformed line in the middle of a clean trace") {
    std::string text = readFile(traceData("lint_clean_session.ndjson"));
    // Line 3 becomes garbage; the rest stays clean.
    std::size_t l2 = text.find('\n') + 1, l3 = text.find('\n', l2) + 1, l4 = text.find('\n', l3) + 1;
    text.replace(l3, l4 - l3, "{\"t\":5,\"dir\":\"p2e\",\"frame\":\n");
    writeFile(dir / "m.ndjson", text);
    Result r = run({conformBin(), "lint", dir / "m.ndjson"}, "", dir);
    INFO(r.out << r.err);
    CHECK(r.code() == 2);
    CHECK(r.err.find("m.ndjson:3:") != std::string::npos);
  }
  SECTION("unknown profile is a usage error") {
    Result r = run({conformBin(), "lint", "--profile", "9.9.9", traceData("lint_clean_session.ndjson")}, "", dir);
    CHECK(r.code() == 2);
  }
}

TEST_CASE("lint: --report-dir writes JSON, JUnit, SARIF and Markdown — --format json on stdout", "[lint]") {
  TempDir dir;
  const std::string t = traceData("lint_dirty_emit02.ndjson");
  Result r = run({conformBin(), "lint", "--format", "json", "--report-dir", dir / "rep", t}, "", dir);
  INFO(r.out << r.err);
  CHECK(r.code() == 1);
  CHECK(r.out.find("EMIT-02") != std::string::npos);
  CHECK(r.out.find('{') != std::string::npos);
  for (const char* f : {"lint.json", "lint.junit.xml", "lint.sarif", "lint.md"}) {
    INFO(f);
    std::string body = readFile(dir / ("rep/" + std::string(f)));
    CHECK(body.find("EMIT-02") != std::string::npos);
  }
}

TEST_CASE("lint: reads a trace from stdin with -", "[lint]") {
  TempDir dir;
  Result r = run({conformBin(), "lint", "-"}, readFile(traceData("lint_dirty_emit02.ndjson")), dir);
  CHECK(r.code() == 1);
  CHECK(r.out.find("EMIT-02 (MUST)") != std::string::npos);
}
