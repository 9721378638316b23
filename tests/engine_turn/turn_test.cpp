// End to end (issue 5, HOOK-*): conform-engine runs the built conform-plugin (its default behaviour
// declares all 13 hooks and answers each with the pass-through result) and is driven over the
// driver protocol (docs/driver-protocol.md) through one full turn — a run whose model calls the
// plugin's `echo` tool — followed by a compaction, a fork and a revert. The engine's hook trace
// (`hooks.trace`) must show every hook exactly once, in the documented order
// (docs/reference-engine.md "Interception"), each answered normally.
//
// Two real processes; the engine runs on its virtual clock so no hook can time out by accident.
// Every wait has a deadline.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json/json.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// conform-engine with its driver on pipes.
class EngineProcess {
 public:
  explicit EngineProcess(const std::string& config) {
    int in[2], out[2];
    REQUIRE(::pipe(in) == 0);
    REQUIRE(::pipe(out) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      std::string bin = std::string(CONFORM_BIN_DIR) + "/conform-engine";
      ::execl(bin.c_str(), bin.c_str(), "--config", config.c_str(), "--driver", "stdio", "--virtual-clock",
              static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~EngineProcess() {
    if (to_ >= 0) ::close(to_);
    if (from_ >= 0) ::close(from_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // One driver request; returns the `result` of the reply with the same id (deadline 10 s).
  conform::json::Document call(const std::string& method, const std::string& params = "{}") {
    int id = ++next_id_;
    std::string frame = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
                        R"(","params":)" + params + "}\n";
    REQUIRE(::write(to_, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size()));
    auto deadline = Clock::now() + 10s;
    for (;;) {
      std::string line = readLine(deadline);
      INFO(method << " reply: " << line);
      auto parsed = conform::json::parse(line);
      REQUIRE(parsed);
      const conform::json::Value* rid = conform::json::member(parsed->doc, "id");
      if (!rid || !rid->IsInt() || rid->GetInt() != id) continue;
      REQUIRE(conform::json::member(parsed->doc, "result"));
      conform::json::Document out;
      out.CopyFrom(parsed->doc["result"], out.GetAllocator());
      return out;
    }
  }
  int waitExit(std::chrono::seconds limit) {
    auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      ::usleep(10'000);
    }
    return -2;
  }

 private:
  std::string readLine(Clock::time_point deadline) {
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      REQUIRE(left > 0);
      pollfd p{from_, POLLIN, 0};
      int n = ::poll(&p, 1, static_cast<int>(left));
      REQUIRE(n >= 0);
      if (n == 0) continue;
      char chunk[4096];
      ssize_t got = ::read(from_, chunk, sizeof chunk);
      REQUIRE(got > 0);  // the engine must not die
      buf_.append(chunk, static_cast<std::size_t>(got));
    }
  }
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  int next_id_ = 0;
  bool reaped_ = false;
  std::string buf_;
};

std::string s(const conform::json::Value& v, const char* k) {
  auto x = conform::json::stringMember(v, k);
  return x ? std::string(*x) : std::string("<none>");
}

}  // namespace

TEST_CASE("HOOK-01 HOOK-04 end to end: one full turn, a compaction, a fork and a revert fire all 13 hooks once, in the documented order", "[e2e][hooks]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("conform-turn-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string config = (dir / "engine.json").string();
  {
    std::ofstream f(config);
    f << R"({"plugins":{"probe":{"command":")" << CONFORM_BIN_DIR << R"(/conform-plugin","args":["--name","probe"]}},)"
      << R"("permissions":{"plugin":{"*":"allow"}}})";
  }
  EngineProcess eng(config);

  // The handshake completes on its own; poll the status (bounded).
  auto deadline = Clock::now() + 10s;
  for (;;) {
    auto st = eng.call("plugin.status", R"({"plugin":"probe"})");
    if (s(st, "state") == "connected") {
      REQUIRE(st["capabilities"]["intercept"].Size() == 13);
      break;
    }
    REQUIRE(s(st, "state") != "failed");
    REQUIRE(Clock::now() < deadline);
    ::usleep(20'000);
  }

  auto session = s(eng.call("session.create"), "session_id");
  auto run = eng.call("run.start", R"({"session_id":")" + session +
                                       R"(","input":"hello","wait":true,"turns":[{"deltas":["calling ","echo"],"tool_calls":[{"tool":"echo","arguments":{"text":"hi"}}]}]})");
  CHECK(s(run, "state") == "completed");
  REQUIRE(run["tool_calls"].Size() == 1);
  auto call = eng.call("tool.status", R"({"invocation_id":")" + std::string(run["tool_calls"][0].GetString()) + "\"}");
  CHECK(s(call, "state") == "completed");
  CHECK(s(call, "model_content") == "hi");
  auto compact = eng.call("compact", R"({"session_id":")" + session + R"(","instructions":"focus"})");
  CHECK(s(compact, "status") == "compacted");
  auto fork = eng.call("fork", R"({"session_id":")" + session + R"(","through_seq":1})");
  CHECK(s(fork, "status") == "forked");
  auto revert = eng.call("revert", R"({"session_id":")" + session + R"(","through_seq":1})");
  CHECK(s(revert, "status") == "reverted");

  auto trace = eng.call("hooks.trace");
  std::vector<std::string> fired;
  for (auto& c : trace["calls"].GetArray()) {
    fired.push_back(s(c, "hook"));
    CHECK(s(c, "plugin") == "probe");
    CHECK(s(c, "outcome") == "continue");
  }
  const std::vector<std::string> documented = {
      "model_before_select",   "user_before_input",       "agent_before_start",
      "model_before_request",  "provider_before_headers", "provider_before_request",
      "provider_after_response", "message_end",           "tool_before_call",
      "tool_after_result",     "session_before_compact",  "session_before_fork",
      "session_before_revert"};
  CHECK(fired == documented);

  // The tool really ran through the plugin, between the two tool hooks.
  auto events = eng.call("session.events", R"({"session_id":")" + session + "\"}");
  bool terminated = false;
  for (auto& e : events["events"].GetArray())
    terminated = terminated || s(e["event"], "type") == "tool_call_terminated";
  CHECK(terminated);

  eng.call("engine.shutdown", R"({"wait":true})");
  CHECK(eng.waitExit(std::chrono::seconds(15)) == 0);
  fs::remove_all(dir);
}
