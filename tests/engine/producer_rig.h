// tests/engine/producer_rig — the engine rig plus a ProducerService, producer-enabled plugins and
// helpers to play plugin->engine requests and read their responses by id (raw frames: the plugin
// side is never mock_plugin code).
#pragma once

#include <filesystem>
#include <unistd.h>

#include "mock_engine/producer.h"
#include "tests/engine/rig.h"

namespace enginetest {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/conform-journal-XXXXXX";
    char* p = ::mkdtemp(tmpl);
    REQUIRE(p != nullptr);
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

struct ProdRig : Rig {
  std::unique_ptr<ProducerService> svc;
  std::optional<std::string> journal_dir;
  std::int64_t next_id = 100;

  explicit ProdRig(std::vector<std::string> names = {"alpha"}, bool opt_in = true) : Rig(names) {
    cfg.producer_handler = true;
    for (auto& p : cfg.plugins) p.producer_messaging = opt_in;
  }
  Engine& boot(bool plugin_caps = true) {
    engine = std::make_unique<Engine>(cfg, host, clk);
    std::optional<Journal> j;
    if (journal_dir) {
      auto o = Journal::open(*journal_dir);
      REQUIRE(o);
      j.emplace(std::move(*o));
    }
    svc = std::make_unique<ProducerService>(*engine, std::move(j));
    engine->start();
    for (auto& p : cfg.plugins) {
      Caps c;
      c.producer_messaging = plugin_caps;
      answerInit(p.name, c);
    }
    return *engine;
  }
  // Simulates an engine restart on the same journal: everything in memory is gone.
  void restart(bool plugin_caps = true) {
    svc.reset();
    engine.reset();
    host.procs.clear();
    boot(plugin_caps);
  }
  // Sends a request from `plugin` and returns its id.
  std::int64_t request(const std::string& plugin, const std::string& method, const std::string& params) {
    std::int64_t id = next_id++;
    send(plugin, R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
                     R"(","params":)" + params + "}");
    return id;
  }
  // The response with `id` written to `plugin`, if any.
  std::optional<json::Document> response(const std::string& plugin, std::int64_t id) {
    for (auto& f : written(plugin)) {
      auto p = json::parse(f);
      REQUIRE(p);
      const json::Value* i = json::member(p->doc, "id");
      if (i && i->IsInt64() && i->GetInt64() == id && !json::member(p->doc, "method"))
        return std::move(p->doc);
    }
    return std::nullopt;
  }
  json::Document call(const std::string& plugin, const std::string& method, const std::string& params) {
    auto id = request(plugin, method, params);
    auto r = response(plugin, id);
    REQUIRE(r);
    return std::move(*r);
  }
  static int code(const json::Value& resp) {
    const json::Value* e = json::member(resp, "error");
    return e ? (*e)["code"].GetInt() : 0;
  }
  std::string registerProducer(const std::string& plugin, const std::string& session) {
    auto r = call(plugin, "plugin/producer/register", R"({"session_id":")" + session + R"("})");
    REQUIRE(code(r) == 0);
    return r["result"]["producer_id"].GetString();
  }
  static std::string sendParams(const std::string& session, const std::string& producer,
                                const std::string& key, const std::string& body = "hello",
                                const std::string& mode = "steer", const std::string& description = "note") {
    return R"({"session_id":")" + session + R"(","producer_id":")" + producer + R"(","mode":")" + mode +
           R"(","idempotency_key":)" + quoteJson(key) + R"(,"description":)" + quoteJson(description) +
           R"(,"body":)" + quoteJson(body) + "}";
  }
  json::Document sendMsg(const std::string& plugin, const std::string& session, const std::string& producer,
                         const std::string& key, const std::string& body = "hello",
                         const std::string& mode = "steer") {
    return call(plugin, "plugin/producer/send", sendParams(session, producer, key, body, mode));
  }
};

}  // namespace enginetest
