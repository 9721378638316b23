// tests/nanopi/host_delivery_test — delivery, busy-drop, budgets, host imports and the /tools
// report of the reference nanopi host, against the scripted fake guest (NANOPI.md NP-03, NP-11,
// NP-16…NP-40).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/json/json.h"
#include "mock_engine/nanopi/events.h"
#include "tests/nanopi/fake_guest.h"

using namespace conform;
using namespace conform::nanopi;
using namespace conform::nanopi::test;

namespace {
const std::vector<std::string> kAll(kEventNames.begin(), kEventNames.end());
std::string payload(const std::string& ev) {
  json::Document d(rapidjson::kObjectType);
  return *buildPayload(ev, d);
}
}  // namespace

TEST_CASE("NP-20 a delivery while a guest call is in flight is dropped at once and counted", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  REQUIRE(r.host->callTool("greet", "{}"));
  auto c = r.host->takeCall();  // the tool call is now in flight: the plugin is busy
  REQUIRE(c);
  CHECK(r.host->busy());
  CHECK(r.host->deliver("turn_start", payload("turn_start")) == Delivery::Status::Dropped);
  CHECK(r.host->deliver("input", payload("input")) == Delivery::Status::Dropped);
  CHECK_FALSE(r.host->hasCall());  // nothing queued: dropped, never waited for
  CHECK(r.host->droppedEvents() == 2);
  r.host->onCallResult(c->seq, ok(R"({"content":"x"})"));
  CHECK(r.emit("turn_start", payload("turn_start")) == Delivery::Status::Delivered);
  CHECK(r.host->droppedEvents() == 2);
  auto rep = r.host->reportJson();
  CHECK(rep["dropped_events"].GetUint64() == 2);
  // Another delivery in flight makes the plugin busy too.
  REQUIRE(r.host->deliver("input", payload("input")) == Delivery::Status::Delivered);
  auto d = r.host->takeCall();
  CHECK(r.host->deliver("turn_start", payload("turn_start")) == Delivery::Status::Dropped);
  r.host->onCallResult(d->seq, ok("{}"));
}

TEST_CASE("NP-21 a busy drop is logged with the exact line", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  r.host->deliver("turn_start", payload("turn_start"));
  auto c = r.host->takeCall();
  r.host->deliver("input", payload("input"));
  const auto& log = r.host->log();
  CHECK(std::find(log.begin(), log.end(), "nanopi: dropped event delivery, plugin busy [event=input]") != log.end());
  r.host->onCallResult(c->seq, ok("{}"));
}

TEST_CASE("NP-03 the handle-event value is discarded — anything but {} is reported", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  r.guest.on["handle-event"] = [](Host&, const GuestCall&) { return ok(R"({"veto":true})"); };
  CHECK(r.emit("turn_start", payload("turn_start")) == Delivery::Status::Delivered);
  CHECK(r.hasFault("NP-03"));
  CHECK(r.emit("input", payload("input")) == Delivery::Status::Delivered);  // nothing changed
  Rig good(grant(kAll));
  good.load();
  good.emit("turn_start", payload("turn_start"));
  CHECK_FALSE(good.hasFault("NP-03"));
}

TEST_CASE("NP-24 NP-22 a trapping handler is logged, the instance rebuilt, and delivery goes on", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  r.guest.on["handle-event"] = [](Host&, const GuestCall& c) {
    return c.args.at(1).find("conform-trap") != std::string::npos ? trap("unreachable executed") : ok("{}");
  };
  json::Document f(rapidjson::kObjectType);
  f.AddMember("session_id", "conform-trap", f.GetAllocator());
  r.emit("turn_start", *buildPayload("turn_start", f));
  CHECK(r.hasFault("NP-24"));
  CHECK(r.host->rebuilds() == 1);
  CHECK(r.emit("input", payload("input")) == Delivery::Status::Delivered);
  CHECK(r.host->deliveries().back().status == Delivery::Status::Delivered);
  bool logged = false;
  for (const auto& l : r.host->log()) logged = logged || l.find("nanopi: handle-event trapped, resetting plugin [event=turn_start]: unreachable executed") != std::string::npos;
  CHECK(logged);
}

TEST_CASE("NP-26 handle-event gets a 2 s budget, tools and load calls 30 s — an overrun is reported", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  for (const auto& c : r.guest.calls) CHECK(c.budget_ms == kToolBudgetMs);
  r.guest.on["handle-event"] = [](Host&, const GuestCall&) { return timeout(); };
  r.emit("turn_start", payload("turn_start"));
  CHECK(r.guest.calls.back().budget_ms == kEventBudgetMs);
  CHECK(kEventBudgetMs == 2000);
  CHECK(r.hasFault("NP-26"));
  CHECK(r.host->deliveries().back().status == Delivery::Status::TimedOut);
  r.host->callTool("greet", "{}");
  r.guest.run(*r.host);
  CHECK(r.guest.calls.back().budget_ms == 30000);
}

TEST_CASE("NP-32 with hooks off nothing is delivered", "[nanopi]") {
  HostOptions o;
  o.hooks_active = false;
  Rig r(grant(kAll), o);
  r.load();
  for (auto n : kEventNames) CHECK(r.emit(std::string(n)) == Delivery::Status::HooksOff);
  CHECK(r.guest.count("handle-event") == 0);
}

TEST_CASE("NP-38 host-notify: 10 lines per turn, then an in-band error — a new turn resets — 64 KiB cap", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  r.guest.on["handle-event"] = [](Host& h, const GuestCall&) {
    for (int i = 0; i < 11; ++i) h.onImport("host-notify", {"line " + std::to_string(i)});
    return ok("{}");
  };
  r.host->startTurn();
  r.emit("turn_start", payload("turn_start"));
  CHECK(r.host->notifications().size() == 10);
  CHECK(r.host->imports().back().answer->rfind("error: notify suppressed", 0) == 0);
  CHECK(r.hasFault("NP-38"));
  CHECK(r.host->notifications()[0] == "[audit-watcher] line 0");
  r.host->startTurn();
  CHECK(r.host->onImport("host-notify", {"again"}) == std::string());
  CHECK(r.host->onImport("host-notify", {std::string(kNotifyMaxBytes + 1, 'x')})->rfind("error: ", 0) == 0);
  CHECK(r.host->onImport("host-notify", {"a\nb"}) == std::string());
  CHECK(r.host->notifications().back() == "[audit-watcher] a b");
  Rig quiet(grant(kAll));
  quiet.load();
  quiet.host->startTurn();
  for (int i = 0; i < 10; ++i) quiet.host->onImport("host-notify", {"x"});
  CHECK_FALSE(quiet.hasFault("NP-38"));
}

TEST_CASE("NP-39 host-call-tool and host-send-user-message need their grants — refusals are in-band", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  r.guest.on["handle-event"] = [](Host& h, const GuestCall&) {
    CHECK(h.onImport("host-call-tool", {"bash", "{}"})->rfind("error: ", 0) == 0);
    CHECK(h.onImport("host-send-user-message", {"hi"})->rfind("error: ", 0) == 0);
    return ok("{}");
  };
  r.emit("turn_start", payload("turn_start"));
  CHECK(r.hasFault("NP-39"));
  ExtensionConfig c = grant(kAll);
  c.allow_tools = {"bash"};
  c.allow_send_message = true;
  Rig g(c);
  g.load();
  g.host->startTurn();
  CHECK(g.host->onImport("host-call-tool", {"bash", "{}"})->find("conform fixture result of bash") != std::string::npos);
  CHECK(g.host->onImport("host-call-tool", {"rm", "{}"})->rfind("error: ", 0) == 0);  // per tool
  CHECK(g.host->onImport("host-send-user-message", {"hi"}) == std::string());
  CHECK(g.host->onImport("host-send-user-message", {"again"})->find("loop guard") != std::string::npos);
  CHECK_FALSE(g.hasFault("NP-39"));
}

TEST_CASE("NP-28 host-http-get from a handler is reported — it is answered locally, never from the network", "[nanopi]") {
  ExtensionConfig c = grant(kAll);
  c.allow_network = true;
  c.url_allowlist = {"example.com"};
  HostOptions o;
  o.http_fixtures["https://example.com/a"] = "fixture body";
  Rig r(c, o);
  r.load();
  CHECK(r.host->onImport("host-http-get", {"https://example.com/a"}) == std::string("fixture body"));
  CHECK(r.host->onImport("host-http-get", {"https://example.com/b"})->find("never from the network") != std::string::npos);
  CHECK(r.host->onImport("host-http-get", {"https://evil.example/x"})->find("url_allowlist") != std::string::npos);
  CHECK_FALSE(r.hasFault("NP-28"));  // outside a handler: fine
  r.guest.on["handle-event"] = [](Host& h, const GuestCall&) {
    h.onImport("host-http-get", {"https://example.com/a"});
    return ok("{}");
  };
  r.emit("turn_start", payload("turn_start"));
  CHECK(r.hasFault("NP-28"));
  Rig off(grant(kAll));
  off.load();
  CHECK(off.host->onImport("host-http-get", {"https://example.com/a"})->find("allow_network") != std::string::npos);
}

TEST_CASE("host-fs-read is granted by allow_fs and confined to the working directory", "[nanopi]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("conform-np-fs-" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "a.txt") << "hello";
  ExtensionConfig c = grant(kAll);
  c.allow_fs = true;
  HostOptions o;
  o.cwd = dir.string();
  Rig r(c, o);
  r.load();
  CHECK(r.host->onImport("host-fs-read", {"sub/a.txt"}) == std::string("hello"));
  CHECK(r.host->onImport("host-fs-read", {"../etc/passwd"})->find("outside the working directory") != std::string::npos);
  CHECK(r.host->onImport("host-fs-read", {"/etc/passwd"})->rfind("error: ", 0) == 0);
  Rig no(grant(kAll), o);
  no.load();
  CHECK(no.host->onImport("host-fs-read", {"sub/a.txt"})->find("allow_fs") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("host-store and host-set-context follow their grants — the store survives a rebuild", "[nanopi]") {
  ExtensionConfig c = grant(kAll);
  c.allow_store = true;
  c.allow_context = true;
  Rig r(c);
  r.load();
  CHECK(r.host->onImport("host-store-set", {"k", "v"}) == std::string());
  r.guest.on["handle-event"] = [](Host&, const GuestCall&) { return trap("x"); };
  r.emit("turn_start", payload("turn_start"));
  CHECK(r.host->onImport("host-store-get", {"k"}) == std::string("v"));
  CHECK(r.host->onImport("host-set-context", {std::string(kContextMaxBytes + 1, 'c')})->rfind("error: ", 0) == 0);
  CHECK(r.host->onImport("host-set-context", {"ctx"}) == std::string());
  CHECK(r.host->onImport("host-log", {"1", "hello"}) == std::nullopt);
  CHECK(r.host->onImport("host-exec", {"ls"})->rfind("error: ", 0) == 0);
  Rig no(grant(kAll));
  no.load();
  CHECK(no.host->onImport("host-store-get", {"k"})->find("allow_store") != std::string::npos);
  CHECK(no.host->onImport("host-set-context", {"x"})->find("allow_context") != std::string::npos);
}

TEST_CASE("NP-29 NP-30 the /tools report shows the effective subscription and an events(...) grants token", "[nanopi]") {
  Rig r(grant({"input", "turn_start", "session_start"}));
  r.load();
  std::string rep = r.host->toolsReport();
  CHECK(rep.find("Watching events (1 plugins)") != std::string::npos);
  CHECK(rep.find("audit-watcher       turn_start, input") != std::string::npos);
  CHECK(rep.find("events(turn_start, input)") != std::string::npos);
  Rig none(grant({}));
  none.load();
  CHECK(none.host->toolsReport().find("Watching events (0 plugins)") != std::string::npos);
  CHECK(none.host->toolsReport().find("events(") == std::string::npos);
}

TEST_CASE("NP-11 NP-17 NP-40 payloads: eleven names, the PI name inside, message_end without text", "[nanopi]") {
  CHECK(kEventNames.size() == 11);
  for (auto n : kEventNames) {
    auto p = buildPayload(n, json::Document(rapidjson::kObjectType));
    REQUIRE(p);
    auto d = json::parse(*p);
    REQUIRE(d);
    CHECK(json::stringMember(d->doc, "hook_event_name") == n);
  }
  auto me = json::parse(payload("message_end"));
  CHECK(json::member(me->doc, "turn_count"));
  CHECK(json::member(me->doc, "response_length"));
  CHECK_FALSE(json::member(me->doc, "text"));
  json::Document f(rapidjson::kObjectType);
  f.AddMember("text", "the answer", f.GetAllocator());
  CHECK_FALSE(buildPayload("message_end", f));  // no member for the text: refused
  CHECK_FALSE(buildPayload("pre_tool_use", json::Document(rapidjson::kObjectType)));
  CHECK_FALSE(isEventName("message_update"));
}

TEST_CASE("NP-18 tool_execution_start carries the arguments it is given, unchanged", "[nanopi]") {
  auto f = json::parse(R"({"tool_name":"bash","arguments":{"command":"rm -rf build","timeout":30}})");
  auto p = buildPayload("tool_execution_start", f->doc);
  REQUIRE(p);
  auto d = json::parse(*p);
  CHECK(json::canonical(d->doc["arguments"]) == R"({"command":"rm -rf build","timeout":30})");
  auto wrong = json::parse(R"({"arguments":"ls"})");
  CHECK_FALSE(buildPayload("tool_execution_start", wrong->doc));  // a type typo is an error
}
