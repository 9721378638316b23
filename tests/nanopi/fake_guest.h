// tests/nanopi/fake_guest — a scripted guest for the sans-IO nanopi host (mock_engine/nanopi/host.h):
// each export answers from a function that may call host imports first, as a component would
// while the call is in flight. No process, no Node: the host's rules alone.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "core/clock/clock.h"
#include "mock_engine/nanopi/host.h"

namespace conform::nanopi::test {

using Reply = std::function<CallResult(Host&, const GuestCall&)>;

inline CallResult ok(std::string v) {
  CallResult r;
  r.value = std::move(v);
  return r;
}
inline CallResult trap(std::string m) {
  CallResult r;
  r.outcome = CallResult::Outcome::Trap;
  r.message = std::move(m);
  r.rebuilt = true;
  return r;
}
inline CallResult timeout() {
  CallResult r;
  r.outcome = CallResult::Outcome::Timeout;
  r.rebuilt = true;
  r.guest_ms = 2000;
  r.elapsed_ms = 2010;
  return r;
}

struct FakeGuest {
  std::map<std::string, Reply> on;
  std::vector<GuestCall> calls;  // every call the host made, in order
  FakeGuest() {
    on["list-tools"] = [](Host&, const GuestCall&) { return ok(R"([{"name":"greet","description":"d","parameters":{}}])"); };
    on["list-commands"] = [](Host&, const GuestCall&) { return ok("[]"); };
    on["list-events"] = [](Host&, const GuestCall&) { return ok(R"(["turn_start","input","tool_execution_start"])"); };
    on["handle-event"] = [](Host&, const GuestCall&) { return ok("{}"); };
    on["execute-tool"] = [](Host&, const GuestCall&) { return ok(R"({"content":"hi"})"); };
  }
  // Runs every call the host queued.
  void run(Host& h) {
    while (auto c = h.takeCall()) {
      calls.push_back(*c);
      auto it = on.find(c->export_name);
      h.onCallResult(c->seq, it == on.end() ? ok("{}") : it->second(h, *c));
    }
  }
  std::size_t count(const std::string& exp) const {
    std::size_t n = 0;
    for (const auto& c : calls) n += c.export_name == exp;
    return n;
  }
};

inline LoadInfo eventsWorld() {
  LoadInfo li;
  li.world = "extension-events";
  li.exports = {"list-tools", "execute-tool", "list-commands", "execute-command", "list-events", "handle-event"};
  li.imports = {"host-log", "host-notify"};
  li.instantiated = true;
  return li;
}

inline ExtensionConfig grant(std::vector<std::string> events) {
  ExtensionConfig c;
  c.path = "/tmp/audit-watcher.wasm";
  c.events = std::move(events);
  return c;
}

// Loads with the fake guest; returns the host.
struct Rig {
  clock::VirtualClock clk;
  FakeGuest guest;
  std::unique_ptr<Host> host;
  explicit Rig(ExtensionConfig cfg, HostOptions o = {}) : host(std::make_unique<Host>(std::move(cfg), std::move(o), clk)) {}
  Host& load(const LoadInfo& li = eventsWorld()) {
    host->beginLoad(li);
    guest.run(*host);
    return *host;
  }
  Delivery::Status emit(const std::string& ev, const std::string& payload = "{}") {
    auto st = host->deliver(ev, payload);
    guest.run(*host);
    return st;
  }
  bool hasFault(const std::string& rule) const {
    for (const auto& f : host->faults())
      if (f.rule == rule) return true;
    return false;
  }
  bool hasDiag(const std::string& rule, const std::string& text) const {
    for (const auto& d : host->diagnostics())
      if (d.rule == rule && d.text.find(text) != std::string::npos) return true;
    return false;
  }
};

}  // namespace conform::nanopi::test
