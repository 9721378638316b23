// End-to-end tests of the real conform-plugin executable (issue 3 "Done when"): spawned with
// wire::spawnProcess, driven by hand over its stdin/stdout. Every wait has a deadline; every child
// is killed and reaped by Channel::close() when its Proc goes out of scope.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

#include "core/wire/channel.h"
#include "mock_plugin/behaviour.h"
#include "tests/plugin/harness.h"

using namespace conform;
using namespace conform::plugin;
using namespace conform::plugin::test;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kShutdownGrace{3000};  // PROTOCOL §1.2 shutdown_grace_ms default (SHUT-08)
constexpr milliseconds kStep{10000};          // generous bound for one answer on a loaded machine

std::string pluginPath() { return std::string(CONFORM_BIN_DIR) + "/conform-plugin"; }

// One spawned conform-plugin and the engine side of its conversation.
struct Proc {
  wire::Reactor reactor;
  std::unique_ptr<wire::Channel> ch;
  std::vector<std::string> stderr_lines;
  std::vector<std::string> unexpected_frames;  // frames that are neither answers nor handled requests
  std::optional<wire::ExitStatus> exit;
  bool eof = false;
  int next_id = 1;

  explicit Proc(std::vector<std::string> args, std::optional<std::map<std::string, std::string>> env = std::nullopt) {
    wire::SpawnOptions o;
    o.program = pluginPath();
    o.args = std::move(args);
    o.env = std::move(env);
    wire::SpawnError err;
    ch = wire::spawnProcess(reactor, o, &err);
    if (!ch) throw std::runtime_error("spawn failed: " + err.message);
  }
  ~Proc() {
    if (ch) ch->close();  // kills the process group if still running, then reaps (bounded)
  }

  // Next frame from the plugin before the deadline (stderr, EOF and exit are recorded on the way).
  std::optional<json::Document> nextFrame(Clock::time_point deadline) {
    while (true) {
      auto ev = ch->next(deadline);
      if (!ev) return std::nullopt;
      using K = wire::ChannelEvent::Kind;
      switch (ev->kind) {
        case K::Frame: return parseTrusted(ev->frame.bytes);
        case K::FrameError: return json::Document();  // a null document: not JSON at all
        case K::Stderr: stderr_lines.push_back(ev->text); break;
        case K::Eof: eof = true; break;
        case K::Exited: exit = ev->status; return std::nullopt;
        case K::WriteFailed: break;
      }
    }
  }
  // Answers what the plugin asks of the engine on the way (emits, producer calls, recovery).
  void serve(const json::Value& f) {
    std::string m = method(f);
    const json::Value* id = json::member(f, "id");
    if (m == "plugin/emit") {
      ch->writeFrame(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":)" +
                     json::compact(*at(f, "params", "name")) + R"(,"bus":"published","durable":"rejected"}})");
    } else if (m == "plugin/producer/register" && id) {
      ch->writeFrame(R"({"jsonrpc":"2.0","id":)" + json::compact(*id) + R"(,"result":{"producer_id":")" + uuid(901) + R"("}})");
    } else if (m == "plugin/producer/send" && id) {
      ch->writeFrame(R"({"jsonrpc":"2.0","id":)" + json::compact(*id) + R"(,"result":{"message_id":")" + uuid(902) + R"("}})");
    } else if (!m.empty() && id) {  // unregister, discard, recovery/complete: {}
      ch->writeFrame(R"({"jsonrpc":"2.0","id":)" + json::compact(*id) + R"(,"result":{}})");
    } else {
      unexpected_frames.push_back(json::compact(f));
    }
  }
  // Sends a request and returns its answer, serving plugin requests meanwhile.
  json::Document call(std::string_view method_name, std::string_view params, milliseconds bound = kStep) {
    int id = next_id++;
    ch->writeFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method_name) +
                   R"(","params":)" + std::string(params) + "}");
    return awaitAnswer(id, bound);
  }
  json::Document awaitAnswer(int id, milliseconds bound = kStep) {
    const auto deadline = Clock::now() + bound;
    while (auto f = nextFrame(deadline)) {
      if (!f->IsObject()) { unexpected_frames.push_back("<not JSON>"); continue; }
      const json::Value* fid = json::member(*f, "id");
      if (method(*f).empty() && fid && fid->IsInt() && fid->GetInt() == id) return std::move(*f);
      serve(*f);
    }
    return json::Document();  // null: no answer in time
  }
  void notify(std::string_view method_name, std::string_view params) {
    ch->writeFrame(R"({"jsonrpc":"2.0","method":")" + std::string(method_name) + R"(","params":)" + std::string(params) + "}");
  }
  // Waits for the exit (serving anything the plugin still asks). nullopt when still running.
  std::optional<wire::ExitStatus> awaitExit(milliseconds bound) {
    const auto deadline = Clock::now() + bound;
    while (!exit && Clock::now() < deadline) {
      if (auto f = nextFrame(deadline)) {
        if (f->IsObject()) serve(*f);
        else unexpected_frames.push_back("<not JSON>");
      }
    }
    return exit;
  }
  bool logged(std::string_view needle) const {
    for (const auto& l : stderr_lines)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
};

std::string initParams(bool producers = true) {
  return std::string(R"({"protocol_version":"0.0.6","engine_version":"e2e","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true,"producer_messaging":)") +
         (producers ? "true" : "false") + "}}";
}

std::string toolParams(std::string_view tool, std::string_view args, int n) {
  return std::string(R"({"tool":")") + std::string(tool) + R"(","session_id":")" + kSession +
         R"(","context_id":"ctx-e2e-)" + std::to_string(n) + R"(","invocation_id":")" + uuid(n) +
         R"(","arguments":)" + std::string(args) + R"(,"resource":null})";
}
std::string eventParams(int seq) {
  return std::string(R"({"session_id":")") + kSession + R"(","context_id":"ctx-ev-)" + std::to_string(seq) +
         R"(","seq":)" + std::to_string(seq) + R"(,"event":{"type":"run_started"},"timestamp":"2026-01-01T00:00:00Z"})";
}

// Arguments that satisfy a declared parameter schema: a string for each string property, 1 otherwise.
std::string argumentsFor(const json::Value& params) {
  std::string s = "{";
  if (const json::Value* props = json::member(params, "properties"); props && props->IsObject()) {
    bool first = true;
    for (const auto& p : props->GetObject()) {
      auto type = json::stringMember(p.value, "type");
      s += std::string(first ? "" : ",") + quote(std::string_view(p.name.GetString(), p.name.GetStringLength())) + ":" +
           (type && *type == "string" ? "\"e2e\"" : "1");
      first = false;
    }
  }
  return s + "}";
}

}  // namespace

TEST_CASE("SHUT-08 FRAME-18 e2e: handshake, ping, every tool, every hook, 500 events, shutdown within grace",
          "[e2e]") {
  Proc p({});
  auto init = p.call("plugin/initialize", initParams());
  REQUIRE(at(init, "result") != nullptr);
  CHECK(std::string(at(init, "result", "protocol_version")->GetString()) == "0.0.6");  // INIT-10
  CHECK(std::string(at(init, "result", "name")->GetString()) == "conform-plugin");
  const json::Value& caps = *at(init, "result", "capabilities");
  CHECK(caps["producer_messaging"].GetBool());
  CHECK(caps["intercept"].Size() == kHookCount);  // the built-in behaviour registers every hook

  // Recovery (0.0.6, producer messaging on both sides): the built-in behaviour reports ready.
  p.notify("plugin/recovery/start", "{}");
  auto ping = p.call("plugin/ping", "{}");
  CHECK(json::compact(ping) == R"({"jsonrpc":"2.0","id":2,"result":{}})");  // PING-01

  // One call per declared tool, with arguments built from its declared schema.
  const json::Value& tools = *at(init, "result", "tools");
  REQUIRE(tools.Size() >= 3);
  int n = 100;
  for (const auto& t : tools.GetArray()) {
    std::string name = t["name"].GetString();
    INFO("tool " << name);
    auto answer = p.call("plugin/tools/call", toolParams(name, argumentsFor(t["parameters"]), n++));
    REQUIRE(at(answer, "result") != nullptr);
    CHECK(at(answer, "result", "is_error")->GetBool() == false);
    CHECK(std::string(at(answer, "result", "output")->GetObject()["kind"].GetString()) ==
          t["output"]["kind"].GetString());  // TOOL-12
  }

  // One request per registered hook, with valid params: each gets a result object.
  int hid = 1000;
  for (const auto& h : caps["intercept"].GetArray()) {
    auto hook = parseHook(h.GetString());
    REQUIRE(hook);
    INFO("hook " << h.GetString());
    p.ch->writeFrame(hookRequest(hid, *hook));
    auto answer = p.awaitAnswer(hid++);
    REQUIRE(at(answer, "result") != nullptr);
    CHECK(at(answer, "result")->IsObject());
  }

  // An event burst: 500 notifications, no answers; the plugin keeps up and still answers ping.
  for (int seq = 1; seq <= 500; ++seq) p.notify("plugin/event", eventParams(seq));
  p.next_id = 5000;
  auto after = p.call("plugin/ping", "{}");
  CHECK(at(after, "result") != nullptr);
  CHECK_FALSE(p.logged("dropped plugin/event"));

  // The recovery completion arrived (and was answered) along the way; nothing else unexpected.
  CHECK(p.unexpected_frames.empty());

  // Shutdown: the process exits 0 within the grace period (SHUT-08), without answering (RPC-16).
  const auto t0 = Clock::now();
  p.notify("plugin/shutdown", "{}");
  auto status = p.awaitExit(kShutdownGrace);
  REQUIRE(status);
  CHECK(status->success());
  CHECK(Clock::now() - t0 < kShutdownGrace);
  CHECK(p.unexpected_frames.empty());
}

TEST_CASE("FRAME-18 e2e: EOF on stdin ends the plugin with exit 0", "[e2e]") {
  Proc p({});
  REQUIRE(at(p.call("plugin/initialize", initParams()), "result"));
  p.ch->closeWrite();
  auto status = p.awaitExit(kShutdownGrace);
  REQUIRE(status);
  CHECK(status->success());
}

TEST_CASE("FRAME-05 e2e: an invalid UTF-8 frame (FF 0A) ends the plugin with a nonzero exit and no response", "[e2e]") {
  Proc p({});
  p.ch->write("\xff\n");
  auto status = p.awaitExit(kStep);
  REQUIRE(status);
  CHECK_FALSE(status->success());
  CHECK(p.unexpected_frames.empty());
  CHECK(p.logged("FRAME-05"));
}

TEST_CASE("TOOL-15 e2e: fault crash_during_tool dies on a tool call without answering it", "[e2e][faults]") {
  Proc p({"--fault", "crash_during_tool"});
  REQUIRE(at(p.call("plugin/initialize", initParams()), "result"));
  auto answer = p.call("plugin/tools/call", toolParams("echo", R"({"text":"x"})", 1));
  CHECK(answer.IsNull());  // no answer: the process is gone
  auto status = p.awaitExit(kStep);
  REQUIRE(status);
  CHECK(status->signaled);
}

TEST_CASE("LIFE-03 e2e: fault crash_after_initialize answers the handshake, then dies", "[e2e][faults]") {
  Proc p({"--fault", "crash_after_initialize"});
  REQUIRE(at(p.call("plugin/initialize", initParams()), "result"));
  auto status = p.awaitExit(kStep);
  REQUIRE(status);
  CHECK(status->signaled);
}

TEST_CASE("SHUT-08 e2e: fault ignores_shutdown is still running after the grace period", "[e2e][faults]") {
  Proc p({"--fault", "ignores_shutdown"});
  REQUIRE(at(p.call("plugin/initialize", initParams()), "result"));
  p.notify("plugin/shutdown", "{}");
  p.ch->closeWrite();
  CHECK_FALSE(p.awaitExit(kShutdownGrace));  // the conforming run exits well inside this bound
  CHECK(p.ch->running());
  p.ch->close();  // killed and reaped here, not left behind
  CHECK_FALSE(p.ch->running());
}

TEST_CASE("conform-plugin --list-faults prints at least 40 faults as `name rule description` lines", "[e2e][faults]") {
  Proc p({"--list-faults"});
  auto status = p.awaitExit(kStep);
  REQUIRE(status);
  CHECK(status->success());
  // stdout lines are not JSON, so they arrive as frames that do not parse: count them instead.
  // (nextFrame returned them to awaitExit, which recorded each as "<not JSON>".)
  CHECK(p.unexpected_frames.size() >= 40);
}

namespace {
// A behaviour file that uses every kind of member (the example of docs/reference-plugin.md).
const char* kBehaviourFile = R"({
  "name": "weather",
  "version": "2.1.0",
  "profile": "0.0.6",
  "tools": [
    {"name": "forecast", "description": "Canned forecast", "permission_name": "weather_read",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
     "primary_resource_param": "city",
     "response": {"text": "sunny", "display": "forecast ready"}},
    {"name": "say", "description": "Echo one argument", "permission_name": "say",
     "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
     "response": {"echo": "text"}},
    {"name": "split", "description": "Two streams", "permission_name": "split",
     "parameters": {"type": "object"},
     "output": {"kind": "named", "streams": ["out", "err"]},
     "response": {"streams": {"out": "all good", "err": ""}, "delay_ms": 10}},
    {"name": "broken", "description": "Always fails", "permission_name": "broken",
     "parameters": {"type": "object"},
     "response": {"error": {"code": -32001, "message": "backend down"}}}
  ],
  "subscribe_events": true,
  "subscribe_bus": true,
  "publish_bus": true,
  "hooks": {
    "tool_before_call": {"answer": {"action": "block", "reason": "not today"}},
    "user_before_input": {"answer": {"action": "transform", "new_text": "hello"}, "delay_ms": 5}
  },
  "emits": [{"name": "weather.seen", "payload": {"n": 1}, "count": 2}],
  "producer": {"on": "recovery", "session_id": "0191c0de-0000-7000-8000-000000000001",
               "sends": [{"key": "k-1", "mode": "queue", "description": "forecast update", "body": "rain later"}],
               "unregister": true},
  "recovery": {"status": "ready"}
})";

std::string writeTemp(std::string_view name, std::string_view text) {
  std::string path = std::string(CONFORM_BIN_DIR) + "/test_plugin_" + std::string(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}
}  // namespace

TEST_CASE("conform-plugin --behaviour: a behaviour file sets the handshake and the tool answers", "[e2e][behaviour]") {
  Proc p({"--behaviour", writeTemp("weather.json", kBehaviourFile)});
  auto init = p.call("plugin/initialize", initParams());
  REQUIRE(at(init, "result") != nullptr);
  CHECK(std::string(at(init, "result", "name")->GetString()) == "weather");
  CHECK(std::string(at(init, "result", "version")->GetString()) == "2.1.0");
  CHECK(json::compact(*at(init, "result", "capabilities")) ==
        R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":true,"publish_bus":true,"publish_session_events":false,"producer_messaging":true,"intercept":["tool_before_call","user_before_input"]})");
  CHECK(at(init, "result", "tools")->Size() == 4);

  auto forecast = p.call("plugin/tools/call", toolParams("forecast", R"({"city":"Oslo"})", 1));
  CHECK(json::compact(*at(forecast, "result")) ==
        R"({"output":{"kind":"single","text":"sunny"},"display":"forecast ready","is_error":false})");
  auto say = p.call("plugin/tools/call", toolParams("say", R"({"text":"hej"})", 2));
  CHECK(json::compact(*at(say, "result", "output")) == R"({"kind":"single","text":"hej"})");
  auto split = p.call("plugin/tools/call", toolParams("split", "{}", 3));
  CHECK(json::compact(*at(split, "result", "output")) ==
        R"({"kind":"named","streams":[{"stream":"out","text":"all good"},{"stream":"err","text":""}]})");
  auto broken = p.call("plugin/tools/call", toolParams("broken", "{}", 4));
  CHECK(json::compact(*at(broken, "error")) == R"({"code":-32001,"message":"backend down"})");
  auto bad_args = p.call("plugin/tools/call", toolParams("forecast", R"({"city":7})", 5));
  CHECK(at(bad_args, "error", "code")->GetInt() == kInvalidParams);  // validated before the handler

  p.ch->writeFrame(hookRequest(50, Hook::ToolBeforeCall));
  CHECK(json::compact(*at(p.awaitAnswer(50), "result")) == R"({"action":"block","reason":"not today"})");
  p.ch->writeFrame(hookRequest(51, Hook::UserBeforeInput));
  CHECK(json::compact(*at(p.awaitAnswer(51), "result")) == R"({"action":"transform","new_text":"hello"})");

  // Producer actions on recovery, then the configured outcome. `serve` answers each request; the
  // completion is the last request of the sequence.
  std::vector<std::string> asked;
  p.notify("plugin/recovery/start", "{}");
  const auto deadline = Clock::now() + kStep;
  while (asked.empty() || asked.back() != "plugin/recovery/complete") {
    auto f = p.nextFrame(deadline);
    REQUIRE(f);
    asked.push_back(method(*f));
    if (asked.back() == "plugin/producer/send")
      CHECK(json::compact(*at(*f, "params")) ==
            std::string(R"({"session_id":")") + kSession + R"(","producer_id":")" + uuid(901) +
                R"(","mode":"queue","idempotency_key":"k-1","description":"forecast update","body":"rain later"})");
    if (asked.back() == "plugin/recovery/complete")
      CHECK(json::compact(*at(*f, "params")) == R"({"outcome":{"status":"ready"}})");
    p.serve(*f);
  }
  CHECK(asked == std::vector<std::string>{"plugin/producer/register", "plugin/producer/send",
                                          "plugin/producer/unregister", "plugin/recovery/complete"});

  // Emits: the first two events each emit once with their own grant; the third does not.
  std::vector<std::string> tokens;
  for (int seq = 1; seq <= 3; ++seq) p.notify("plugin/event", eventParams(seq));
  p.next_id = 60;
  p.ch->writeFrame(R"({"jsonrpc":"2.0","id":60,"method":"plugin/ping","params":{}})");
  const auto d2 = Clock::now() + kStep;
  while (auto f = p.nextFrame(d2)) {
    if (method(*f) == "plugin/emit") {
      tokens.push_back(at(*f, "params", "context_id")->GetString());
      p.serve(*f);
      continue;
    }
    if (at(*f, "id") && at(*f, "id")->IsInt() && at(*f, "id")->GetInt() == 60) break;
  }
  CHECK(tokens == std::vector<std::string>{"ctx-ev-1", "ctx-ev-2"});

  p.notify("plugin/shutdown", "{}");
  auto status = p.awaitExit(kShutdownGrace);
  REQUIRE(status);
  CHECK(status->success());
}

TEST_CASE("conform-plugin --behaviour: a bad behaviour file exits 2 naming the key path", "[e2e][behaviour]") {
  Proc p({"--behaviour", writeTemp("bad.json", R"({"tools":[{"name":"t","description":"d","permission_name":"t","parameters":{},"response":{"echo":7}}]})")});
  auto status = p.awaitExit(kStep);
  REQUIRE(status);
  CHECK(status->code == 2);
  CHECK(p.logged("behaviour.tools[0].response.echo"));
  Proc missing({"--behaviour", std::string(CONFORM_BIN_DIR) + "/no/such/behaviour.json"});
  auto s2 = missing.awaitExit(kStep);
  REQUIRE(s2);
  CHECK(s2->code == 2);
}

TEST_CASE("SDK-27 e2e: --example producer registers, steers with a stable key, unregisters, completes recovery",
          "[e2e][producer]") {
  Proc p({"--example", "producer"}, std::map<std::string, std::string>{{"COOKIE_SESSION_ID", kSession}});
  REQUIRE(at(p.call("plugin/initialize", initParams()), "result"));
  p.notify("plugin/recovery/start", "{}");
  std::vector<std::string> asked;
  const auto deadline = Clock::now() + kStep;
  while (asked.empty() || asked.back() != "plugin/recovery/complete") {
    auto f = p.nextFrame(deadline);
    REQUIRE(f);
    asked.push_back(method(*f));
    if (asked.back() == "plugin/producer/send")
      CHECK(std::string(at(*f, "params", "idempotency_key")->GetString()) == producerExampleKey(kSession));
    if (asked.back() == "plugin/recovery/complete")
      CHECK(json::compact(*at(*f, "params")) == R"({"outcome":{"status":"ready"}})");
    p.serve(*f);
  }
  CHECK(asked == std::vector<std::string>{"plugin/producer/register", "plugin/producer/send",
                                          "plugin/producer/unregister", "plugin/recovery/complete"});
}
