// tests/engine/hook_rig.h — the hook-test rig shared by hooks_chain_test.cpp and
// hooks_runtime_test.cpp (the engine in process on the virtual clock, plugins played with raw frames).
#pragma once

#include <set>

#include "core/protocol/hooks.h"
#include "mock_engine/runtime.h"
#include "tests/engine/rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

inline json::Document obj(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p);
  return std::move(p->doc);
}

// A Rig whose plugins answer hooks by hand: open() lists the intercept requests a plugin has not
// answered yet, reply() answers the oldest one.
struct HookRig : Rig {
  std::unique_ptr<Runtime> rt;
  std::map<std::string, std::set<std::int64_t>> answered;

  explicit HookRig(std::vector<std::string> names = {"alpha"}) : Rig(std::move(names)) {}

  // Starts the engine, answers every handshake with `intercept[name]` (JSON array text) and the
  // given tools, and installs the runtime (and so the tool gate).
  Runtime& up(std::map<std::string, std::string> intercept, const std::string& tools = "[]",
              Caps base = {}) {
    start();
    for (auto& p : cfg.plugins) {
      Caps c = base;
      c.intercept = intercept.count(p.name) ? intercept[p.name] : "[]";
      answerInit(p.name, c, p.name == cfg.plugins.front().name ? tools : "[]");
    }
    rt = std::make_unique<Runtime>(*engine);
    return *rt;
  }
  std::vector<json::Document> open(const std::string& plugin) {
    std::vector<json::Document> out;
    for (auto& f : written(plugin)) {
      auto p = json::parse(f);
      REQUIRE(p);
      auto m = json::stringMember(p->doc, "method");
      const json::Value* id = json::member(p->doc, "id");
      if (!m || !id || m->rfind("plugin/intercept/", 0) != 0) continue;
      if (answered[plugin].count(id->GetInt64())) continue;
      out.push_back(std::move(p->doc));
    }
    return out;
  }
  static std::string hookOf(const json::Value& req) { return str(req, "method").substr(17); }
  json::Document next(const std::string& plugin, const std::string& hook = "") {
    auto v = open(plugin);
    REQUIRE(!v.empty());
    if (!hook.empty()) REQUIRE(hookOf(v.front()) == hook);
    return std::move(v.front());
  }
  json::Document reply(const std::string& plugin, const std::string& result, const std::string& hook = "") {
    auto req = next(plugin, hook);
    std::int64_t id = req["id"].GetInt64();
    answered[plugin].insert(id);
    send(plugin, R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":)" + result + "}");
    return req;
  }
  json::Document replyError(const std::string& plugin, const std::string& hook = "") {
    auto req = next(plugin, hook);
    std::int64_t id = req["id"].GetInt64();
    answered[plugin].insert(id);
    send(plugin, R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                     R"(,"error":{"code":-32000,"message":"boom"}})");
    return req;
  }
  std::size_t hookFrames(const std::string& plugin, const std::string& hook) {
    return framesOf(plugin, "plugin/intercept/" + hook).size();
  }
  std::string run(const std::string& session, const std::string& script_json,
                  std::optional<protocol::ModelSelection> model = std::nullopt) {
    auto script = parseRunScript(obj(script_json));
    REQUIRE(script);
    auto id = rt->startRun(session, std::move(*script), std::move(model));
    REQUIRE(id);
    return *id;
  }
  const RunRecord& record(const std::string& id) { return *rt->run(id); }
  std::vector<std::string> types(const std::string& session) {
    std::vector<std::string> out;
    for (auto& e : engine->session(session)->log) out.push_back(e.type);
    return out;
  }
};

const std::string kUserInput = R"(["user_before_input"])";

inline std::string echoTool(const std::string& name = "echo") {
  return R"({"name":")" + name + R"(","description":"d","permission_name":")" + name +
         R"(","primary_resource_param":"path","parameters":{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer"}},"additionalProperties":false}})";
}

}  // namespace
