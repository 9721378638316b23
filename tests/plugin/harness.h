// tests/plugin/harness — drives a PluginServer in-process on a VirtualClock, playing the engine
// side by hand: frames in, frames out, no IO, no sleeps.
#pragma once

#include <string>
#include <vector>

#include "core/clock/clock.h"
#include "mock_plugin/sdk.h"
#include <cstdio>

namespace conform::plugin::test {

inline const char* kInit006 =
    R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{"protocol_version":"0.0.6","engine_version":"t","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true,"producer_messaging":true}}})";
inline const char* kInit004 =
    R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{"protocol_version":"0.0.4","engine_version":"t","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true}}})";
inline const char* kSession = "0191c0de-0000-7000-8000-000000000001";

struct Engine {
  clock::VirtualClock clk;
  std::unique_ptr<PluginServer> srv;
  std::vector<std::string> logs;

  // The server is destroyed first, explicitly: its teardown may still log (a pending recovery's
  // callbacks are released then), and members are destroyed in reverse order, so without this the
  // log sink would append to `logs` after the vector itself was destroyed (LSan saw the buffer of
  // that use-after-destroy as a 108-byte leak in four recovery tests).
  ~Engine() { srv.reset(); }
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  explicit Engine(PluginBuilder b) {
    auto r = b.build(clk);
    if (!r) throw std::runtime_error(r.error());
    srv = std::move(r.value());
    srv->setLogSink([this](std::string_view l) { logs.emplace_back(l); });
  }
  void send(std::string_view frame) {
    srv->receiveFrame(frame);
    srv->process();
  }
  void advance(clock::Duration d) {
    clk.advance(d);
    srv->process();
  }
  std::vector<json::Document> drain() {
    std::vector<json::Document> out;
    while (auto f = srv->popOutbound()) out.push_back(parseTrusted(*f));
    return out;
  }
  std::vector<std::string> drainText() {
    std::vector<std::string> out;
    while (auto f = srv->popOutbound()) out.push_back(*f);
    return out;
  }
  json::Document handshake(const char* init = kInit006) {
    send(init);
    auto out = drain();
    if (out.size() != 1) throw std::runtime_error("no initialize answer");
    return std::move(out[0]);
  }
  bool logged(std::string_view needle) const {
    for (const auto& l : logs)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
};

// A distinct UUID per number (invocation ids must be UUIDs: TOOL-05, decoded strictly by the SDK).
inline std::string uuid(int n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "0191c0de-0000-7000-8000-%012d", n);
  return buf;
}

inline std::string toolCall(int id, std::string_view tool, std::string_view args, std::string_view ctx = "ctx-t") {
  return std::string(R"({"jsonrpc":"2.0","id":)") + std::to_string(id) +
         R"(,"method":"plugin/tools/call","params":{"tool":")" + std::string(tool) + R"(","session_id":")" + kSession +
         R"(","context_id":")" + std::string(ctx) + R"(","invocation_id":")" + uuid(id) +
         R"(","arguments":)" + std::string(args) + R"(,"resource":null}})";
}
inline std::string event(int seq, std::string_view ctx = "ctx-e", std::string_view type = "run_started") {
  return std::string(R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":")") + kSession +
         R"(","context_id":")" + std::string(ctx) + R"(","seq":)" + std::to_string(seq) + R"(,"event":{"type":")" +
         std::string(type) + R"("},"timestamp":"2026-01-01T00:00:00Z"}})";
}
// Valid params of every hook (PROTOCOL §13.2), as a conforming engine would send them; context "ctx-h".
inline std::string hookParams(Hook h) {
  std::string s = std::string("\"session_id\":\"") + kSession + "\",\"context_id\":\"ctx-h\"";
  const std::string att = ",\"attempt_id\":\"" + uuid(777) + "\"";
  const char* model =
      R"({"selection":{"model":"anthropic/claude-x","variant":null},"provider_id":"anthropic","model_id":"claude-x","adapter_id":"anthropic","selection_fingerprint":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})";
  switch (h) {
    case Hook::ToolBeforeCall: return s + R"(,"tool":"echo","arguments":{"text":"x"},"permission_name":"echo","resource":null)";
    case Hook::ToolAfterResult: return s + R"(,"tool":"echo","arguments":{},"result_content":"x","is_error":false)";
    case Hook::AgentBeforeStart: return s + R"(,"agent_path":"main","prompt_context":{})";
    case Hook::SessionBeforeCompact: return s + R"(,"checkpoint_id":"c:1","additions":[])";
    case Hook::UserBeforeInput: return s + R"(,"text":"hi")";
    case Hook::ModelBeforeRequest: return s + att + R"(,"messages":[],"model":)" + model + R"(,"params":{})";
    case Hook::ProviderBeforeHeaders: return s + att + R"(,"headers":{})";
    case Hook::ProviderBeforeRequest: return s + att + R"(,"payload":{})";
    case Hook::ProviderAfterResponse: return s + att + R"(,"status":200,"headers":{})";
    case Hook::MessageEnd: return s + att + R"(,"role":"assistant","content":[])";
    case Hook::ModelBeforeSelect: return s + R"(,"to":{"model":"anthropic/claude-x"},"source":"config")";
    case Hook::SessionBeforeFork: return s + R"(,"through_seq":3)";
    case Hook::SessionBeforeRevert: return s + R"(,"through_seq":3)";
  }
  return s;
}
inline std::string hookRequest(int id, Hook h) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"plugin/intercept/)" + hookName(h) +
         R"(","params":{)" + hookParams(h) + "}}";
}

inline std::string method(const json::Value& m) {
  const json::Value* v = json::member(m, "method");
  return v && v->IsString() ? v->GetString() : "";
}
inline const json::Value* at(const json::Value& m, const char* a, const char* b = nullptr) {
  const json::Value* v = json::member(m, a);
  return (v && b) ? json::member(*v, b) : v;
}

}  // namespace conform::plugin::test
