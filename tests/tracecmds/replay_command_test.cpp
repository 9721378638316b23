// tests/tracecmds/replay_command_test — record a conversation with `conform record`, replay it with
// `conform replay` against the same program (no divergence) and against a faulty one (the first
// divergence reported side by side, exit 1). The scripted plugin puts a fresh UUID and timestamp in
// every notification, so a clean replay also proves the normalisation.
#include <catch2/catch.hpp>

#include "tests/tracecmds/proc.h"

using namespace tracecmds;

namespace {

const std::string kScript =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"plugin/ping\",\"params\":{}}\n"
    "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/event\",\"params\":{\"context_id\":\"c-1\"}}\n"
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"plugin/ping\",\"params\":{}}\n"
    "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/shutdown\",\"params\":{}}\n";

std::string recordTap(const TempDir& dir, const std::string& name) {
  Result r = run({conformBin(), "record", "--out", dir / name, "--", helper("tap_plugin")}, kScript, dir);
  REQUIRE(r.code() == 0);
  return dir / name;
}

}  // namespace

TEST_CASE("replay: the same plugin replays without divergence (fast and recorded timing)", "[replay]") {
  TempDir dir;
  const std::string t = recordTap(dir, "t.ndjson");
  for (const char* timing : {"fast", "recorded"}) {
    INFO(timing);
    Result r = run({conformBin(), "replay", t, "--timing", timing, "--out", dir / "r.ndjson", "--", helper("tap_plugin")},
                   "", dir);
    INFO(r.out << r.err);
    CHECK(r.code() == 0);
    CHECK(r.out.find("no divergence") != std::string::npos);
    // The replay's own trace is a readable trace of the same length of conversation.
    Result l = run({conformBin(), "lint", dir / "r.ndjson"}, "", dir);
    CHECK(l.code() != 2);
  }
}

TEST_CASE("replay: a changed answer is reported as the first divergence, both versions side by side", "[replay]") {
  TempDir dir;
  const std::string t = recordTap(dir, "t.ndjson");
  Result r = run({conformBin(), "replay", t, "--", helper("tap_plugin"), "--fault"}, "", dir);
  INFO(r.out << r.err);
  CHECK(r.code() == 1);
  CHECK(r.out.find("DIVERGENCE at " + t + ":") != std::string::npos);
  CHECK(r.out.find("the response to request id 1 differs") != std::string::npos);
  CHECK(r.out.find("  recorded  " + t + ":") != std::string::npos);
  CHECK(r.out.find("  replayed  ") != std::string::npos);
  CHECK(r.out.find("first difference at /result/len") != std::string::npos);
}

TEST_CASE("replay: a different exit status is a divergence", "[replay]") {
  TempDir dir;
  const std::string t = recordTap(dir, "t.ndjson");
  Result r = run({conformBin(), "replay", t, "--no-lint", "--", helper("tap_plugin"), "--exit", "3"}, "", dir);
  INFO(r.out << r.err);
  CHECK(r.code() == 1);
  CHECK(r.out.find("recorded exit 0, replayed exit 3") != std::string::npos);
}

TEST_CASE("replay: missing answers are a divergence, not a hang", "[replay]") {
  TempDir dir;
  const std::string t = recordTap(dir, "t.ndjson");
  // `--cat` echoes the engine's frames instead of answering: nothing matches.
  Result r = run({conformBin(), "replay", t, "--no-lint", "--step-timeout-ms", "300", "--", helper("tap_plugin"), "--cat"},
                 "", dir);
  INFO(r.out << r.err);
  CHECK(r.code() == 1);
  CHECK(r.out.find("DIVERGENCE") != std::string::npos);
}

TEST_CASE("replay: harness errors exit 2", "[replay]") {
  TempDir dir;
  SECTION("unreadable trace names the line") {
    writeFile(dir / "bad.ndjson", "not json\n");
    Result r = run({conformBin(), "replay", dir / "bad.ndjson", "--", helper("tap_plugin")}, "", dir);
    CHECK(r.code() == 2);
    CHECK(r.err.find("bad.ndjson:1:") != std::string::npos);
  }
  SECTION("the command cannot be started") {
    const std::string t = recordTap(dir, "t.ndjson");
    Result r = run({conformBin(), "replay", t, "--", dir / "no-such-plugin"}, "", dir);
    CHECK(r.code() == 2);
  }
  SECTION("--role plugin paces by the engine's frames only: --timing recorded is refused") {
    const std::string t = recordTap(dir, "t.ndjson");
    Result r = run({conformBin(), "replay", t, "--role", "plugin", "--timing", "recorded", "--", helper("tap_plugin")},
                   "", dir);
    CHECK(r.code() == 2);
    CHECK(r.err.find("--timing fast") != std::string::npos);
  }
  SECTION("--role plugin: an engine that never starts its plugin is a harness error, not a hang") {
    const std::string t = recordTap(dir, "t.ndjson");
    // tap_plugin is no engine: it never spawns the probe.
    Result r = run({conformBin(), "replay", t, "--role", "plugin", "--", helper("tap_plugin")}, "", dir);
    CHECK(r.code() == 2);
    CHECK(r.err.find("did not start its plugin") != std::string::npos);
  }
}

TEST_CASE("replay: record the reference plugin, replay clean, replay with a fault diverges", "[replay][conform-plugin]") {
  TempDir dir;
  // A scripted engine side: a full handshake, one ping, shutdown, then stdin EOF.
  const std::string init = readFile(traceData("lint_clean_session.ndjson"));
  const std::size_t a = init.find("\"frame\":", init.find('\n')) + 8;
  const std::size_t b = init.find('\n', a) - 1;  // the line ends with the event's closing brace
  const std::string script = init.substr(a, b - a) + "\n" +
                             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"plugin/ping\",\"params\":{}}\n"
                             "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/shutdown\",\"params\":{}}\n";
  const std::string plugin = std::string(CONFORM_BIN_DIR) + "/conform-plugin";
  Result rec = run({conformBin(), "record", "--out", dir / "p.ndjson", "--", plugin}, script, dir);
  INFO(rec.out << rec.err);
  REQUIRE(rec.code() == 0);
  REQUIRE(rec.out.find("\"id\":2,\"result\":{}") != std::string::npos);

  Result clean = run({conformBin(), "replay", dir / "p.ndjson", "--no-lint", "--", plugin}, "", dir);
  INFO(clean.out << clean.err);
  CHECK(clean.code() == 0);

  Result bad = run({conformBin(), "replay", dir / "p.ndjson", "--no-lint", "--", plugin, "--fault", "ping_result_not_empty"},
                   "", dir);
  INFO(bad.out << bad.err);
  CHECK(bad.code() == 1);
  CHECK(bad.out.find("the response to request id 2 differs") != std::string::npos);
}

// --role plugin (docs/trace-format.md "Replay as the plugin"): a check-engine trace carries the
// engine configuration and every driver request as notes; replaying its plugin side into the same
// engine gives the same engine frames, and into an engine with a fault the first different one.
TEST_CASE("replay --role plugin: a check-engine trace replays clean into conform-engine, and diverges under an engine fault",
          "[replay][conform-engine]") {
  TempDir dir;
  const std::string engine = std::string(CONFORM_BIN_DIR) + "/conform-engine";
  Result ce = run({conformBin(), "check-engine", "--only", "EMIT-06", "--report-dir", dir / "ce", "--", engine}, "", dir);
  INFO(ce.out << ce.err);
  REQUIRE(ce.code() == 0);
  const std::string t = dir / "ce/traces/EMIT-06.ndjson";
  REQUIRE(readFile(t).find("driver \xE2\x86\x92 ") != std::string::npos);

  Result clean = run({conformBin(), "replay", t, "--role", "plugin", "--out", dir / "r.ndjson", "--", engine}, "", dir);
  INFO(clean.out << clean.err);
  CHECK(clean.code() == 0);
  CHECK(clean.out.find("no divergence") != std::string::npos);
  CHECK(clean.out.find("5 driver request(s)") != std::string::npos);
  // The replay's own trace is a role-plugin trace with the driver notes: it replays again.
  Result again = run({conformBin(), "replay", dir / "r.ndjson", "--role", "plugin", "--", engine}, "", dir);
  INFO(again.out << again.err);
  CHECK(again.code() == 0);

  Result bad = run({conformBin(), "replay", t, "--role", "plugin", "--", engine, "--fault", "accept_reused_token"}, "", dir);
  INFO(bad.out << bad.err);
  CHECK(bad.code() == 1);
  CHECK(bad.out.find("DIVERGENCE at " + t + ":") != std::string::npos);
  CHECK(bad.out.find("plugin/emit_result differs") != std::string::npos);
  CHECK(bad.out.find("first difference at /params/bus") != std::string::npos);
}
