// The fault gallery (issue 3 §4): at least 40 faults, each with a rule ID, and each one changes the
// plugin's wire behaviour compared with the conforming run of the same engine conversation.
// Driven in-process on the VirtualClock; the three process-level faults (two aborts, one linger)
// are proved by spawning the executable in e2e_test.cpp.
#include <catch2/catch.hpp>

#include <set>

#include "mock_plugin/behaviour.h"
#include "mock_plugin/faults.h"
#include "tests/plugin/harness.h"

using namespace conform;
using namespace conform::plugin;
using namespace conform::plugin::test;

namespace {

// Plays one normal engine conversation and returns the transcript of everything the plugin did.
std::vector<std::string> converse(const Fault* fault) {
  BehaviourOptions o;
  Engine e(builtinBehaviour(o));
  if (fault) installFault(*fault, *e.srv, o.profile);
  std::vector<std::string> log;
  auto pump = [&] {
    for (int round = 0; round < 4; ++round) {
      auto out = e.drainText();
      if (out.empty()) break;
      for (auto& f : out) {
        log.push_back(f);
        auto d = parseTrusted(f);
        if (!d.IsObject()) continue;
        std::string m = method(d);
        const json::Value* id = json::member(d, "id");
        if (m == "plugin/emit") {
          e.srv->receiveFrame(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":)" +
                              json::compact(*at(d, "params", "name")) + R"(,"bus":"published","durable":"rejected"}})");
        } else if (!m.empty() && id) {
          std::string result = m == "plugin/producer/register" ? R"({"producer_id":"0191c0de-0000-7000-8000-0000000000a1"})"
                               : m == "plugin/producer/send"   ? R"({"message_id":"0191c0de-0000-7000-8000-0000000000b1"})"
                                                               : "{}";
          e.srv->receiveFrame(R"({"jsonrpc":"2.0","id":)" + json::compact(*id) + R"(,"result":)" + result + "}");
        }
      }
      e.srv->process();
    }
  };
  e.send(kInit006);
  e.send(R"({"jsonrpc":"2.0","method":"plugin/recovery/start","params":{}})");
  pump();
  e.send(R"({"jsonrpc":"2.0","id":2,"method":"plugin/ping","params":{}})");
  pump();
  e.send(toolCall(3, "echo", R"({"text":"hi"})", "ctx-3"));
  e.send(toolCall(4, "report", R"({"path":"a"})", "ctx-4"));
  e.send(toolCall(5, "publish", R"({"name":"n","payload":1})", "ctx-5"));
  pump();
  for (int i = 1; i <= 50; ++i) {
    e.srv->receiveFrame(event(i, "ctx-e" + std::to_string(i)));
    if (!e.srv->canAcceptFrame()) e.srv->process();
  }
  e.srv->process();
  pump();
  int id = 10;
  for (Hook h : allHooks()) {
    e.send(hookRequest(id++, h));
    pump();
  }
  for (int i = 0; i < 70; ++i) e.advance(std::chrono::milliseconds(100));  // timers (slow hooks, late emits)
  pump();
  e.send(R"({"jsonrpc":"2.0","method":"plugin/shutdown","params":{}})");
  e.srv->receiveEof();
  e.srv->process();
  pump();
  log.push_back(std::string("state=") + (e.srv->state() == ServerState::Finished ? "finished"
                                         : e.srv->state() == ServerState::Failed ? "failed" : "running"));
  return log;
}

// Faults visible only at process level (an abort, or a process that outlives its stdin EOF).
bool processOnly(std::string_view name) {
  return name == "crash_during_tool" || name == "crash_after_initialize" || name == "ignores_shutdown";
}

}  // namespace

TEST_CASE("conform-plugin lists at least 40 faults, each with a rule ID and a description", "[faults]") {
  const auto& t = faultTable();
  CHECK(t.size() >= 40);
  std::set<std::string> names;
  for (const auto& f : t) {
    CHECK(names.insert(f.name).second);
    std::string rule = f.rule;
    CHECK(rule.find('-') != std::string::npos);
    CHECK(std::string(f.description).size() > 10);
    CHECK(findFault(f.name) == &f);
  }
  CHECK(findFault("no_such_fault") == nullptr);
}

TEST_CASE("the conforming run answers every request exactly once and ends finished", "[faults]") {
  auto log = converse(nullptr);
  CHECK(log.back() == "state=finished");
  std::set<std::string> ids;
  int responses = 0;
  for (const auto& f : log) {
    auto d = parseTrusted(f);
    if (!d.IsObject() || !method(d).empty() || !json::member(d, "id")) continue;
    ++responses;
    CHECK(ids.insert(json::compact(*json::member(d, "id"))).second);  // RPC-08: one answer per request
    CHECK(json::member(d, "error") == nullptr);
  }
  CHECK(responses == 1 + 1 + 3 + 13);  // initialize, ping, 3 tools, 13 hooks
}

TEST_CASE("every fault and every engine stimulus changes the wire behaviour of the conversation", "[faults]") {
  const auto good = converse(nullptr);
  for (const auto* table : {&faultTable(), &stimulusTable()})
    for (const auto& f : *table) {
      if (processOnly(f.name)) continue;
      INFO("fault " << f.name << " (" << f.rule << ")");
      CHECK(converse(&f) != good);
    }
}
