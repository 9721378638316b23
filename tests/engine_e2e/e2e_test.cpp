// End-to-end tests of the real conform-engine executable (issue 4): the engine runs with
// `--virtual-clock --driver stdio` and the reference plugin (build/conform-plugin, sometimes with one
// of its faults) as its only plugin; the test drives it over the driver protocol
// (docs/driver-protocol.md) only. Every wait has a deadline (no sleeps: polls are driver round
// trips); the engine kills and reaps its plugin on shutdown, and Channel::close() kills and reaps
// the engine's process group when an EngineProc goes out of scope.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>

#include "core/json/json.h"
#include "core/wire/channel.h"

using namespace conform;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kStep{15000};  // one driver answer, generous for a loaded machine

std::string bin(const char* name) { return std::string(CONFORM_BIN_DIR) + "/" + name; }

// Writes an engine configuration with one plugin `cp` = conform-plugin `args`.
std::string writeConfig(const std::vector<std::string>& plugin_args, const std::string& tag,
                        const std::string& profile = "0.0.6") {
  std::string path = "/tmp/conform-e2e-" + std::to_string(::getpid()) + "-" + tag + ".json";
  std::string args = "[\"--name\",\"cp\"";
  for (auto& a : plugin_args) args += ",\"" + a + "\"";
  args += "]";
  std::ofstream f(path);
  f << R"({"protocol_version":")" << profile << R"(","plugins":{"cp":{"command":")"
    << bin("conform-plugin") << R"(","args":)" << args
    << R"(}},"permissions":{"plugin":{"*":"allow"}}})";
  return path;
}

struct EngineProc {
  wire::Reactor reactor;
  std::unique_ptr<wire::Channel> ch;
  std::string config;
  int next_id = 1;
  std::vector<std::string> stderr_lines;

  explicit EngineProc(std::vector<std::string> plugin_args, const std::string& tag,
                      const std::string& profile = "0.0.6")
      : config(writeConfig(plugin_args, tag, profile)) {
    wire::SpawnOptions o;
    o.program = bin("conform-engine");
    o.args = {"--config", config, "--virtual-clock", "--driver", "stdio"};
    wire::SpawnError err;
    ch = wire::spawnProcess(reactor, o, &err);
    if (!ch) throw std::runtime_error("spawn failed: " + err.message);
  }
  ~EngineProc() {
    if (ch) {
      // Orderly first (the engine kills and reaps its plugin), then the bounded kill + reap.
      ch->writeFrame(R"({"jsonrpc":"2.0","id":999999,"method":"engine.shutdown","params":{"wait":true}})");
      ch->closeWrite();
      auto deadline = Clock::now() + kStep;
      while (ch->running())
        if (!ch->next(deadline)) break;
      ch->close();
    }
    std::remove(config.c_str());
  }

  // One driver request; returns the `result` (or the whole error object under "error").
  json::Document call(const std::string& method, const std::string& params = "{}") {
    int id = next_id++;
    ch->writeFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
                   R"(","params":)" + params + "}");
    const auto deadline = Clock::now() + kStep;
    while (auto ev = ch->next(deadline)) {
      using K = wire::ChannelEvent::Kind;
      if (ev->kind == K::Stderr) { stderr_lines.push_back(ev->text); continue; }
      if (ev->kind == K::Exited) break;
      if (ev->kind != K::Frame) continue;
      auto p = json::parse(ev->frame.bytes);
      REQUIRE(p);
      const json::Value* fid = json::member(p->doc, "id");
      if (!fid || !fid->IsInt() || fid->GetInt() != id) continue;
      json::Document out;
      if (const json::Value* r = json::member(p->doc, "result")) out.CopyFrom(*r, out.GetAllocator());
      else out.CopyFrom(p->doc, out.GetAllocator());
      return out;
    }
    FAIL("no answer to driver request " << method << " within the deadline");
    return json::Document();
  }

  // Polls plugin.status (each poll is a round trip, never a sleep) until `pred` holds.
  json::Document statusUntil(const std::function<bool(const json::Value&)>& pred,
                             milliseconds bound = kStep) {
    const auto deadline = Clock::now() + bound;
    while (true) {
      json::Document s = call("plugin.status", R"({"plugin":"cp"})");
      if (pred(s) || Clock::now() > deadline) return s;
    }
  }
  json::Document connected() {
    return statusUntil([](const json::Value& s) {
      auto st = json::stringMember(s, "state");
      return st && *st != "connecting";
    });
  }
  std::string session() {
    auto r = call("session.create");
    return std::string(*json::stringMember(r, "session_id"));
  }
};

std::uint64_t num(const json::Value& v, const char* a, const char* b = nullptr) {
  const json::Value* x = json::member(v, a);
  if (x && b) x = json::member(*x, b);
  return x && x->IsUint64() ? x->GetUint64() : 0;
}
std::string str(const json::Value& v, const char* a, const char* b = nullptr) {
  const json::Value* x = json::member(v, a);
  if (x && b) x = json::member(*x, b);
  return x && x->IsString() ? x->GetString() : "<none>";
}

}  // namespace

TEST_CASE("INIT-23 e2e: conform-engine shakes hands with conform-plugin and reports it connected",
          "[engine_e2e]") {
  EngineProc e({}, "init");
  auto s = e.connected();
  CHECK(str(s, "state") == "connected");
  CHECK(json::compact(*json::member(s, "tools")) == R"(["echo","report","publish"])");
  CHECK(num(s, "spawn_count") == 1);
}

TEST_CASE("INIT-11 e2e: a plugin reporting another protocol version ends failed", "[engine_e2e]") {
  EngineProc e({"--fault", "wrong_version"}, "ver");
  auto s = e.connected();
  CHECK(str(s, "state") == "failed");
  CHECK(str(s, "reason").find("version mismatch: expected 0.0.6, found 0.0.5") != std::string::npos);
}

TEST_CASE("TOOL-09 e2e: a tool call through the driver returns the plugin's result", "[engine_e2e]") {
  EngineProc e({}, "tool");
  REQUIRE(str(e.connected(), "state") == "connected");
  std::string sid = e.session();
  auto c = e.call("tool.call", R"({"session_id":")" + sid +
                                   R"(","tool":"echo","arguments":{"text":"hello"},"wait":true})");
  CHECK(str(c, "state") == "completed");
  CHECK(json::compact(*json::member(c, "output")) == R"({"kind":"single","text":"hello"})");
  CHECK(str(c, "display") == "echoed");
  // The runtime recorded the termination (terminal class) in the session.
  auto ev = e.call("session.events", R"({"session_id":")" + sid + R"("})");
  CHECK(json::compact(ev).find(R"("type":"tool_call_terminated")") != std::string::npos);
}

TEST_CASE("EVT-14 e2e: 3,000 chunks and 5 terminals into a plugin that stopped reading evict by class",
          "[engine_e2e]") {
  EngineProc e({"--fault", "never_reads_stdin"}, "slow");
  REQUIRE(str(e.connected(), "state") == "connected");
  std::string sid = e.session();
  auto r = e.call("event.produce", R"({"session_id":")" + sid + R"(","class":"chunk","count":3000})");
  CHECK(num(r, "last_seq") == 3000);
  e.call("event.produce", R"({"session_id":")" + sid + R"(","class":"terminal","count":5})");
  auto s = e.call("plugin.status", R"({"plugin":"cp"})");
  // The pipe and the engine's channel buffer take ~1,000 frames; the 1024 queue the rest.
  CHECK(num(s, "queued") == 1024);
  CHECK(num(s, "dropped_by_class", "chunk") > 0);
  CHECK(num(s, "dropped_by_class", "chunk") == num(s, "dropped_events"));
  CHECK(num(s, "dropped_by_class", "terminal") == 0);  // terminals evict chunks, never the reverse
  CHECK(num(s, "diagnostics", "event_drop") == num(s, "dropped_events"));
}

TEST_CASE("EMIT-06 e2e: a plugin/event token used twice is rejected the second time", "[engine_e2e]") {
  EngineProc e({"--fault", "reuse_token"}, "reuse");
  REQUIRE(str(e.connected(), "state") == "connected");
  std::string sid = e.session();
  e.call("event.produce", R"({"session_id":")" + sid + R"(","class":"ordinary"})");
  // The ping answer follows the plugin's two emits on its stdout: a barrier, not a sleep.
  auto p = e.call("plugin.ping", R"({"plugin":"cp","wait":true})");
  REQUIRE(str(p, "state") == "ok");
  auto s = e.call("plugin.status", R"({"plugin":"cp"})");
  CHECK(num(s, "diagnostics", "context_mismatch") == 1);  // EMIT-14: the second use only
  CHECK(str(s, "state") == "connected");
}

TEST_CASE("QUOTA-05 e2e: the 41st emit within one virtual second is rate limited", "[engine_e2e]") {
  EngineProc e({"--fault", "emit_flood"}, "flood");
  REQUIRE(str(e.connected(), "state") == "connected");
  std::string sid = e.session();
  e.call("event.produce", R"({"session_id":")" + sid + R"(","class":"ordinary","count":40})");
  REQUIRE(str(e.call("plugin.ping", R"({"plugin":"cp","wait":true})"), "state") == "ok");
  auto s = e.call("plugin.status", R"({"plugin":"cp"})");
  CHECK(num(s, "diagnostics", "rate_limited") == 0);  // 40 admitted
  e.call("event.produce", R"({"session_id":")" + sid + R"(","class":"ordinary"})");
  REQUIRE(str(e.call("plugin.ping", R"({"plugin":"cp","wait":true})"), "state") == "ok");
  s = e.call("plugin.status", R"({"plugin":"cp"})");
  CHECK(num(s, "diagnostics", "rate_limited") == 1);  // the 41st
  // A new window after one virtual second admits again (QUOTA-07).
  e.call("clock.advance", R"({"ms":1000})");
  e.call("event.produce", R"({"session_id":")" + sid + R"(","class":"ordinary"})");
  REQUIRE(str(e.call("plugin.ping", R"({"plugin":"cp","wait":true})"), "state") == "ok");
  s = e.call("plugin.status", R"({"plugin":"cp"})");
  CHECK(num(s, "diagnostics", "rate_limited") == 1);
}

TEST_CASE("SHUT-01 e2e: engine.shutdown waits until the plugin exited and was reaped",
          "[engine_e2e]") {
  EngineProc e({}, "shut");
  REQUIRE(str(e.connected(), "state") == "connected");
  e.call("engine.shutdown", R"({"wait":true})");
  auto deadline = Clock::now() + kStep;
  while (e.ch->running())
    if (!e.ch->next(deadline)) break;
  REQUIRE(e.ch->exitStatus());
  CHECK(e.ch->exitStatus()->success());
}
