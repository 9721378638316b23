// tests/engine/rig — an in-process test rig for the sans-IO reference engine: a scripted Host that
// records every frame the engine writes per connection, a VirtualClock, and helpers to play the
// plugin side with raw frames (never mock_plugin code: the engine and the plugin are independent
// implementations).
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "mock_engine/engine.h"

namespace enginetest {

using namespace conform;
using namespace conform::engine;

struct ScriptedHost : Host {
  struct Proc {
    PluginConfig cfg;
    std::vector<std::string> written;  // frames without LF
    std::string partial;
    bool stdin_closed = false, killed = false;
    bool writable = true;
  };
  std::map<ConnId, Proc> procs;
  std::vector<std::string> fail_spawn;  // plugin names whose spawn fails

  bool spawn(ConnId c, const PluginConfig& cfg, std::string& err) override {
    for (auto& n : fail_spawn)
      if (n == cfg.name) { err = "No such file or directory"; return false; }
    procs[c].cfg = cfg;
    return true;
  }
  void write(ConnId c, std::string_view bytes) override {
    Proc& p = procs[c];
    p.partial.append(bytes);
    std::size_t pos;
    while ((pos = p.partial.find('\n')) != std::string::npos) {
      p.written.push_back(p.partial.substr(0, pos));
      p.partial.erase(0, pos + 1);
    }
  }
  bool writable(ConnId c) override { return procs[c].writable; }
  void closeStdin(ConnId c) override { procs[c].stdin_closed = true; }
  void kill(ConnId c) override { procs[c].killed = true; }
};

inline std::string tool(const std::string& name, const std::string& extra = "") {
  return R"({"name":")" + name + R"(","description":"d","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"permission_name":")" +
         name + R"(","primary_resource_param":"path")" + extra + "}";
}

struct Caps {
  bool tools = true, subscribe_events = false, subscribe_bus = false, publish_bus = false,
       publish_session_events = false, producer_messaging = false;
  std::string intercept = "[]";
  std::string json() const {
    auto b = [](bool v) { return v ? "true" : "false"; };
    return std::string(R"({"tools":)") + b(tools) + R"(,"resources":false,"subscribe_events":)" +
           b(subscribe_events) + R"(,"subscribe_bus":)" + b(subscribe_bus) + R"(,"publish_bus":)" +
           b(publish_bus) + R"(,"publish_session_events":)" + b(publish_session_events) +
           R"(,"producer_messaging":)" + b(producer_messaging) + R"(,"intercept":)" + intercept + "}";
  }
};

struct Rig {
  clock::VirtualClock clk;
  ScriptedHost host;
  EngineConfig cfg;
  std::unique_ptr<Engine> engine;

  explicit Rig(std::vector<std::string> names = {"alpha"}, bool allow_plugins = true) {
    for (auto& n : names) {
      PluginConfig p;
      p.name = n;
      p.command = "/bin/" + n;
      cfg.plugins.push_back(p);
    }
    cfg.builtin_tools = defaultBuiltinTools();
    if (allow_plugins) cfg.permissions.push_back({"plugin", "*", Decision::Allow});
  }
  Engine& start() {
    engine = std::make_unique<Engine>(cfg, host, clk);
    engine->start();
    return *engine;
  }
  ConnId conn(const std::string& plugin) { return engine->connection(plugin); }
  std::vector<std::string>& written(const std::string& plugin) { return host.procs[conn(plugin)].written; }
  void send(const std::string& plugin, const std::string& frame) {
    engine->onBytes(conn(plugin), frame + "\n");
  }
  void answerInit(const std::string& plugin, const Caps& caps = {}, const std::string& tools = "[]",
                  const std::string& name_override = "", const std::string& version = "0.0.6") {
    std::string name = name_override.empty() ? plugin : name_override;
    send(plugin, R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":")" + version +
                     R"(","name":")" + name + R"(","version":"1.0","capabilities":)" + caps.json() +
                     R"(,"tools":)" + tools + "}}");
  }
  PluginStatus status(const std::string& plugin) { return *engine->status(plugin); }
  void advance(clock::Duration d) {
    clk.advance(d);
    engine->tick();
  }
  // Parsed frames written to `plugin` whose method equals `method`.
  std::vector<json::Document> framesOf(const std::string& plugin, std::string_view method) {
    std::vector<json::Document> out;
    for (auto& f : written(plugin)) {
      auto p = json::parse(f);
      REQUIRE(p);
      auto m = json::stringMember(p->doc, "method");
      if (m && *m == method) out.push_back(std::move(p->doc));
    }
    return out;
  }
  json::Document lastFrame(const std::string& plugin) {
    REQUIRE(!written(plugin).empty());
    auto p = json::parse(written(plugin).back());
    REQUIRE(p);
    return std::move(p->doc);
  }
};

inline std::string str(const json::Value& v, const char* a, const char* b = nullptr) {
  const json::Value* x = json::member(v, a);
  if (x && b) x = json::member(*x, b);
  return x && x->IsString() ? std::string(x->GetString()) : std::string("<none>");
}

}  // namespace enginetest
