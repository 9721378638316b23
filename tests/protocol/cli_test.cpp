// tests/protocol/cli_test.cpp — the `conform` executable's first two commands, run as a process
// (popen: no Channel needed for a one-shot command that reads nothing).
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "core/json/json.h"

namespace {
struct Run {
  std::string out;
  int exit_code = -1;
};
Run runConform(const std::string& args) {
  std::string cmd = std::string(CONFORM_BIN_DIR) + "/conform " + args + " 2>/dev/null";
  Run r;
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  int status = pclose(f);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}
}  // namespace

TEST_CASE("conform --version prints the version and exits 0", "[protocol][cli]") {
  Run r = runConform("--version");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("conform ") != std::string::npos);
  CHECK(r.out.find("0.0.6") != std::string::npos);
}

TEST_CASE("conform profiles --json lists 27 methods for 0.0.6 and 21 for 0.0.4", "[protocol][cli]") {
  Run r = runConform("profiles --json");
  REQUIRE(r.exit_code == 0);
  auto parsed = conform::json::parse(r.out);
  REQUIRE(parsed.has_value());
  const auto& arr = parsed->doc;
  REQUIRE(arr.IsArray());
  REQUIRE(arr.Size() == 2);
  CHECK(std::string(arr[0]["version"].GetString()) == "0.0.6");
  CHECK(arr[0]["methods"].Size() == 27);
  CHECK(arr[1]["methods"].Size() == 21);
  CHECK(arr[0]["limits"].Size() > 20);
  CHECK(std::string(arr[0]["limits"][0]["rule"].GetString()) == "FRAME-06");
}

TEST_CASE("conform profiles --profile 0.0.6 prints the method table and limits", "[protocol][cli]") {
  Run r = runConform("profiles --profile 0.0.6");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("27 methods") != std::string::npos);
  CHECK(r.out.find("plugin/recovery/complete") != std::string::npos);
  CHECK(r.out.find("emit_payload_max_bytes") != std::string::npos);
  CHECK(r.out.find("0.0.4 (v004)") == std::string::npos);
}

TEST_CASE("conform usage errors exit 2", "[protocol][cli]") {
  CHECK(runConform("profiles --no-such-flag").exit_code == 2);
  CHECK(runConform("profiles --profile 0.0.5").exit_code == 2);
  CHECK(runConform("no-such-command").exit_code == 2);
}
