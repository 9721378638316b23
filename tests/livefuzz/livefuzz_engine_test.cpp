// tests/livefuzz — `conform fuzz --role plugin`: conform plays the plugin against a live engine
// (harness/runner/fuzz_engine.cpp), the engine started as check-engine starts it (the probe relay).
//
// Both ways (STYLE: no check that cannot fail): the conforming reference engine yields NO finding
// over a fixed seed; engines of the fault gallery (`conform-engine --fault NAME`) that break a rule
// the stimuli reach are found, minimised, and re-run on a fresh engine. Budgets are short; every
// wait inside is deadline-bound (the engine runs on its virtual clock).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "core/json/json.h"
#include "harness/runner/fuzz.h"

using namespace conform;
using namespace conform::runner;

namespace {

const std::string kEngine = std::string(CONFORM_BIN_DIR) + "/conform-engine";
const std::string kConform = std::string(CONFORM_BIN_DIR) + "/conform";

std::string tempDir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("conform-livefuzz-engine-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

json::Document readJson(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  auto p = json::parse(ss.str());
  REQUIRE(p);
  return std::move(p->doc);
}

FuzzOptions engineOptions(const std::string& out, std::vector<std::string> command) {
  FuzzOptions o;
  o.role = "plugin";
  o.command = std::move(command);
  o.probe = kConform;
  o.out = out;
  o.seed = 7;
  o.seconds = 60;
  o.minimize_seconds = 30;
  o.max_findings = 1;
  o.quiet = true;
  return o;
}

}  // namespace

TEST_CASE("livefuzz role plugin: the conforming reference engine yields no finding", "[livefuzz][engine]") {
  const std::string out = tempDir("clean");
  auto o = engineOptions(out, {kEngine});
  o.runs = 40;
  std::ostringstream so, se;
  const int rc = runFuzz(o, so, se);
  INFO(so.str() << se.str());
  CHECK(rc == 0);
  auto summary = readJson(out + "/summary.json");
  CHECK(summary["findings"].Size() == 0);
  CHECK(summary["batches"].GetUint64() == 40);
  CHECK(summary["frames_sent"].GetUint64() > 0);
  CHECK(summary["frames_received"].GetUint64() > 0);
  std::filesystem::remove_all(out);
}

TEST_CASE("RPC-13 livefuzz role plugin: an engine answering unknown requests with success is found and minimised",
          "[livefuzz][engine]") {
  const std::string out = tempDir("rpc13");
  auto o = engineOptions(out, {kEngine, "--fault", "unknown_request_success"});
  o.runs = 200;
  std::ostringstream so, se;
  const int rc = runFuzz(o, so, se);
  INFO(so.str() << se.str());
  REQUIRE(rc == 1);
  auto summary = readJson(out + "/summary.json");
  REQUIRE(summary["findings"].Size() >= 1);
  const auto& f = summary["findings"][0];
  // The fault answers every unserved plugin request with result {}: for plugin/no_such the monitors
  // cite RPC-13, for plugin/producer/register (not negotiated) the result's shape, PROD-05 —
  // whichever request the seed sends first.
  const std::string rule = f["rule"].GetString();
  CHECK((rule == "RPC-13" || rule == "PROD-05"));
  CHECK(f["reproduced"].GetBool());
  CHECK(f["steps_after"].GetUint64() <= f["steps_before"].GetUint64());
  CHECK(std::filesystem::exists(std::string(f["reproducer"].GetString())));
  std::filesystem::remove_all(out);
}

TEST_CASE("TOOL-05 livefuzz role plugin: an engine omitting the tool call's resource is found", "[livefuzz][engine]") {
  const std::string out = tempDir("tool05");
  auto o = engineOptions(out, {kEngine, "--fault", "tool_call_no_resource"});
  o.runs = 200;
  std::ostringstream so, se;
  const int rc = runFuzz(o, so, se);
  INFO(so.str() << se.str());
  REQUIRE(rc == 1);
  auto summary = readJson(out + "/summary.json");
  REQUIRE(summary["findings"].Size() >= 1);
  CHECK(std::string(summary["findings"][0]["rule"].GetString()) == "TOOL-05");
  CHECK(summary["findings"][0]["reproduced"].GetBool());
  std::filesystem::remove_all(out);
}

TEST_CASE("livefuzz role plugin: an engine that cannot start is a harness error (exit 2)", "[livefuzz][engine]") {
  const std::string out = tempDir("nostart");
  auto o = engineOptions(out, {"/nonexistent/conform-engine"});
  o.runs = 1;
  std::ostringstream so, se;
  CHECK(runFuzz(o, so, se) == 2);
  CHECK_THAT(se.str(), Catch::Contains("conform fuzz:"));
  std::filesystem::remove_all(out);
}
