// tests/nanopi/host_load_test — the reference nanopi host's load sequence and grants against a
// scripted fake guest (NANOPI.md NP-05…NP-15, NP-31, NP-33…NP-37; NANOPI-HOST.md §2).
#include <catch2/catch.hpp>

#include "core/json/json.h"
#include "mock_engine/nanopi/config.h"
#include "mock_engine/nanopi/events.h"
#include "tests/nanopi/fake_guest.h"

using namespace conform;
using namespace conform::nanopi;
using namespace conform::nanopi::test;

namespace {
const std::vector<std::string> kAll(kEventNames.begin(), kEventNames.end());

std::string names(std::size_t n) {
  std::string s = "[";
  for (std::size_t i = 0; i < n; ++i) s += (i ? "," : "") + std::string("\"") + std::string(kEventNames[i % 11]) + "\"";
  return s + "]";
}
}  // namespace

TEST_CASE("NP-37 a list-events over 32 names is a hard load error — exactly 32 loads", "[nanopi]") {
  Rig bad(grant(kAll));
  bad.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok(names(33)); };
  CHECK(bad.load().loadState() == Host::LoadState::Failed);
  CHECK(bad.host->loadErrorRule() == "NP-37");
  CHECK(bad.hasFault("NP-37"));
  Rig good(grant(kAll));
  good.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok(names(32)); };
  CHECK(good.load().loadState() == Host::LoadState::Loaded);
  CHECK_FALSE(good.hasFault("NP-37"));
}

TEST_CASE("NP-37 a list-events that traps or returns malformed JSON is a hard load error", "[nanopi]") {
  Rig t(grant(kAll));
  t.guest.on["list-events"] = [](Host&, const GuestCall&) { return trap("unreachable"); };
  CHECK(t.load().loadState() == Host::LoadState::Failed);
  CHECK(t.host->loadErrorRule() == "NP-37");
  Rig m(grant(kAll));
  m.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok("[\"turn_start\","); };
  CHECK(m.load().loadState() == Host::LoadState::Failed);
  CHECK(m.host->loadErrorRule() == "NP-37");
  CHECK(m.hasFault("NP-06"));
  // No event is ever delivered by a plugin that failed to load.
  CHECK(m.emit("turn_start") == Delivery::Status::NotLoaded);
}

TEST_CASE("NP-06 list-events must be an array of PI names: objects, numbers and unknown names are reported", "[nanopi]") {
  Rig obj(grant(kAll));
  obj.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok(R"({"events":["turn_start"]})"); };
  CHECK(obj.load().loadState() == Host::LoadState::Failed);
  CHECK(obj.hasFault("NP-06"));
  Rig num(grant(kAll));
  num.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok("[1,2]"); };
  CHECK(num.load().loadState() == Host::LoadState::Failed);
  CHECK(num.hasFault("NP-06"));
  Rig unk(grant(kAll));
  unk.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok(R"(["turn_start","bogus_event"])"); };
  CHECK(unk.load().loadState() == Host::LoadState::Loaded);  // nanopi does not check names
  CHECK(unk.hasFault("NP-06"));
  CHECK(unk.host->subscriptions() == std::vector<std::string>{"turn_start"});
  Rig good(grant(kAll));
  good.load();
  CHECK_FALSE(good.hasFault("NP-06"));
}

TEST_CASE("NP-35 a non-empty list-events without handle-event is a hard load error — [] needs no handler", "[nanopi]") {
  LoadInfo li = eventsWorld();
  li.exports.pop_back();  // no handle-event
  Rig bad(grant(kAll));
  CHECK(bad.load(li).loadState() == Host::LoadState::Failed);
  CHECK(bad.host->loadErrorRule() == "NP-35");
  Rig empty(grant(kAll));
  empty.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok("[]"); };
  CHECK(empty.load(li).loadState() == Host::LoadState::Loaded);
}

TEST_CASE("NP-36 without list-events the plugin loads with no subscriptions and list-events is never called", "[nanopi]") {
  LoadInfo li = eventsWorld();
  li.world = "extension-commands";
  li.exports = {"list-tools", "execute-tool", "list-commands", "execute-command"};
  Rig r(grant(kAll));
  CHECK(r.load(li).loadState() == Host::LoadState::Loaded);
  CHECK(r.host->subscriptions().empty());
  CHECK(r.guest.count("list-events") == 0);
  CHECK(r.emit("turn_start") == Delivery::Status::NotSubscribed);
}

TEST_CASE("NP-33 list-tools and execute-tool are required — list-commands limits — events world needs command stubs", "[nanopi]") {
  LoadInfo li = eventsWorld();
  li.exports.erase(li.exports.begin());  // no list-tools
  Rig a(grant(kAll));
  CHECK(a.load(li).loadState() == Host::LoadState::Failed);
  CHECK(a.host->loadErrorRule() == "NP-33");
  Rig many(grant(kAll));
  many.guest.on["list-commands"] = [](Host&, const GuestCall&) {
    std::string s = "[";
    for (int i = 0; i < 65; ++i) s += (i ? "," : "") + std::string(R"({"name":"c","description":"d"})");
    return ok(s + "]");
  };
  CHECK(many.load().loadState() == Host::LoadState::Failed);
  LoadInfo nocmd = eventsWorld();
  nocmd.exports = {"list-tools", "execute-tool", "list-events", "handle-event"};
  Rig stubs(grant(kAll));
  CHECK(stubs.load(nocmd).loadState() == Host::LoadState::Loaded);  // nanopi loads it …
  CHECK(stubs.hasFault("NP-33"));                                     // … conform reports it
  Rig good(grant(kAll));
  good.load();
  CHECK_FALSE(good.hasFault("NP-33"));
}

TEST_CASE("NP-34 a component importing wasi:* is refused at load", "[nanopi]") {
  LoadInfo li = eventsWorld();
  li.unsupported_imports = {"wasi:random/random@0.2.0"};
  li.instantiated = false;
  Rig r(grant(kAll));
  CHECK(r.load(li).loadState() == Host::LoadState::Failed);
  CHECK(r.host->loadErrorRule() == "NP-34");
  CHECK(r.host->loadError().find("wasi:random") != std::string::npos);
  CHECK(r.guest.calls.empty());
}

TEST_CASE("NP-05 the subscription is requested ∩ granted in the plugin's order", "[nanopi]") {
  Rig r(grant({"session_start", "input", "turn_start"}));
  r.load();
  CHECK(r.host->subscriptions() == std::vector<std::string>{"turn_start", "input"});
  CHECK(r.emit("tool_execution_start") == Delivery::Status::NotSubscribed);  // requested, not granted
  CHECK(r.emit("session_start") == Delivery::Status::NotSubscribed);         // granted, not requested
  CHECK(r.emit("input") == Delivery::Status::Delivered);
  CHECK(r.guest.count("handle-event") == 1);
}

TEST_CASE("NP-09 an event requested but not granted is named at startup with the seed's wording", "[nanopi]") {
  Rig r(grant({"turn_start"}));
  r.load();
  CHECK(r.hasDiag("NP-09", "requested event \"input\" but the config's `events` did not grant it — not delivered."));
  CHECK(r.hasDiag("NP-09", "\"tool_execution_start\""));
  CHECK(r.hasFault("NP-09"));
  Rig all(grant(kAll));
  all.load();
  CHECK_FALSE(all.hasFault("NP-09"));
}

TEST_CASE("NP-10 an absent or empty events grant delivers nothing", "[nanopi]") {
  for (auto cfg : {grant({}), ExtensionConfig{}}) {
    Rig r(cfg);
    r.load();
    CHECK(r.host->loadState() == Host::LoadState::Loaded);
    CHECK(r.host->subscriptions().empty());
    for (auto n : kEventNames) CHECK(r.emit(std::string(n)) == Delivery::Status::NotSubscribed);
    CHECK(r.guest.count("handle-event") == 0);
  }
}

TEST_CASE("NP-12 an unknown event name is a warning listing the eleven names, and the plugin loads", "[nanopi]") {
  Rig r(grant({"bogus", "turn_start"}));
  CHECK(r.load().loadState() == Host::LoadState::Loaded);
  CHECK(r.hasDiag("NP-12", "\"bogus\""));
  CHECK(r.hasDiag("NP-12", validNamesList()));
  CHECK(r.host->subscriptions() == std::vector<std::string>{"turn_start"});
}

TEST_CASE("NP-13 pre_tool_use gets the rewrite suggestion — the other retired names are plain unknowns", "[nanopi]") {
  auto g = parseEventGrants({"pre_tool_use", "post_tool_use"});
  REQUIRE(g.diagnostics.size() == 2);
  CHECK(g.diagnostics[0].rule == "NP-13");
  CHECK(g.diagnostics[0].text.find("did you mean \"tool_execution_start\"") != std::string::npos);
  CHECK(g.diagnostics[1].rule == "NP-12");
  CHECK(g.deliverable.empty());
  Rig r(grant(kAll));
  r.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok(R"(["turn_start","pre_tool_use"])"); };
  r.load();
  CHECK(r.hasFault("NP-13"));
}

TEST_CASE("NP-14 message_update and tool_execution_update are refused with their own message and never delivered", "[nanopi]") {
  Rig r(grant({"message_update", "tool_execution_update", "turn_start"}));
  r.guest.on["list-events"] = [](Host&, const GuestCall&) { return ok(R"(["turn_start","message_update"])"); };
  r.load();
  CHECK(r.hasDiag("NP-14", "message_update"));
  CHECK(r.hasDiag("NP-14", "tool_execution_update"));
  CHECK_FALSE(r.hasDiag("NP-12", "message_update"));
  CHECK(r.emit("message_update") == Delivery::Status::NotSubscribed);
  CHECK(r.hasFault("NP-14"));
}

TEST_CASE("NP-15 a misspelled grant key is a configuration error — an unknown event name is not", "[nanopi]") {
  auto bad = json::parse(R"({"path":"x.wasm","evnets":["turn_start"]})");
  auto c = parseExtensionConfig(bad->doc);
  REQUIRE_FALSE(c);
  CHECK(c.error().find("`evnets`") != std::string::npos);
  CHECK(c.error().find("did you mean `events`") != std::string::npos);
  CHECK(c.error().find("NP-15") != std::string::npos);
  auto fine = json::parse(R"({"path":"x.wasm","events":["not_an_event"],"allow_tools":["greet"]})");
  auto f = parseExtensionConfig(fine->doc);
  REQUIRE(f);
  CHECK(f->allow_tools == std::vector<std::string>{"greet"});
  auto typ = json::parse(R"({"allow_network":"yes"})");
  CHECK_FALSE(parseExtensionConfig(typ->doc));
}

TEST_CASE("NP-31 events together with allow_network warn about exfiltration and still load", "[nanopi]") {
  ExtensionConfig c = grant(kAll);
  c.allow_network = true;
  Rig r(c);
  CHECK(r.load().loadState() == Host::LoadState::Loaded);
  CHECK(r.hasDiag("NP-31", "exfiltrate"));
  Rig quiet(grant(kAll));
  quiet.load();
  CHECK_FALSE(quiet.hasDiag("NP-31", "exfiltrate"));
}

TEST_CASE("NP-07 list-events is called once at load and never again, even after a rebuild", "[nanopi]") {
  Rig r(grant(kAll));
  r.load();
  r.guest.on["handle-event"] = [](Host&, const GuestCall&) { return trap("boom"); };
  r.emit("turn_start");
  r.guest.on["handle-event"] = [](Host&, const GuestCall&) { return ok("{}"); };
  r.emit("input");
  CHECK(r.guest.count("list-events") == 1);
  CHECK(r.guest.count("list-tools") == 1);
  CHECK(r.host->listCalls(GuestCall::Purpose::ListEvents) == 1);
}

TEST_CASE("NP-08 the subscription fixed at load does not follow a later list-events answer", "[nanopi]") {
  Rig r(grant(kAll));
  int n = 0;
  r.guest.on["list-events"] = [&n](Host&, const GuestCall&) { return ok(n++ ? names(11) : R"(["turn_start"])"); };
  r.load();
  r.emit("input");
  CHECK(r.host->subscriptions() == std::vector<std::string>{"turn_start"});
  CHECK(n == 1);
}
