// tests/cognipeer/fake_guest — a scripted Guest for the sans-IO host: each (plugin index, target, name)
// answers from a function; every batch is recorded as "send …" for all requests, then "await …" for
// each reply, so a test can prove the observers' invokes were all sent before any reply was awaited.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "mock_engine/cognipeer/host.h"

namespace conform::cognipeer::test {

inline json::Document lit(std::string_view s) {
  auto p = json::parse(s);
  return p ? std::move(p->doc) : json::Document();
}

inline InvokeResult returns(std::string_view v) {
  InvokeResult r;
  r.value = lit(v);
  return r;
}
inline InvokeResult undefinedResult() { return returns(R"({"$type":"undefined"})"); }
inline InvokeResult throws(std::string msg, std::string name = "Error") {
  InvokeResult r;
  r.outcome = InvokeResult::Outcome::Threw;
  r.error_name = std::move(name);
  r.error_message = std::move(msg);
  return r;
}
inline InvokeResult timesOut() {
  InvokeResult r;
  r.outcome = InvokeResult::Outcome::Timeout;
  return r;
}

class FakeGuest final : public Guest {
 public:
  using Fn = std::function<InvokeResult(const InvokeRequest&)>;
  // key: "<index>:<name>" (hook or target name); missing = returns undefined.
  std::map<std::string, Fn> on;
  std::vector<std::string> events;
  std::vector<json::Document> inputs;
  std::vector<InvokeResult> invokeAll(std::vector<InvokeRequest> batch) override {
    for (const auto& r : batch) events.push_back("send " + std::to_string(r.plugin) + ":" + (r.name.empty() ? r.target : r.name));
    std::vector<InvokeResult> out;
    for (const auto& r : batch) {
      events.push_back("await " + std::to_string(r.plugin) + ":" + (r.name.empty() ? r.target : r.name));
      inputs.push_back(json::copy(r.input));
      auto it = on.find(std::to_string(r.plugin) + ":" + (r.name.empty() ? r.target : r.name));
      out.push_back(it == on.end() ? undefinedResult() : it->second(r));
    }
    return out;
  }
};

inline PluginShape shape(int index, std::string name, std::vector<std::string> hooks, std::int64_t priority = kDefaultPriority,
                         bool closed = false) {
  PluginShape p;
  p.index = index;
  p.name = std::move(name);
  p.hooks = std::move(hooks);
  p.priority = priority;
  p.closed = closed;
  return p;
}

}  // namespace conform::cognipeer::test
