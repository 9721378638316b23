// mock_engine/nanopi/host_report — the /tools-style view of the reference host (NP-29, NP-30) and
// its JSON form for the harness (`drive report as $r`).
#include <fmt/format.h>

#include "mock_engine/nanopi/host.h"

namespace conform::nanopi {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

json::Value strings(const std::vector<std::string>& v, json::Allocator& a) {
  json::Value arr(rapidjson::kArrayType);
  for (const auto& s : v) arr.PushBack(json::str(s, a), a);
  return arr;
}

}  // namespace

std::string Host::toolsReport() const {
  std::string out;
  // NP-29: only plugins with a non-empty effective subscription have a row.
  const std::size_t watching = subs_.empty() ? 0 : 1;
  out += fmt::format("Watching events ({} plugins)\n", watching);
  if (watching) out += fmt::format("  {:<20}{}\n", stem_, join(subs_));
  // NP-30: the grants row carries the same subscription as an events(...) token.
  std::vector<std::string> g;
  if (!subs_.empty()) g.push_back("events(" + join(subs_) + ")");
  if (cfg_.allow_fs) g.push_back("fs");
  if (cfg_.allow_network) g.push_back("network(" + join(cfg_.url_allowlist) + ")");
  if (cfg_.allow_store) g.push_back("store");
  if (cfg_.allow_context) g.push_back("context");
  if (!cfg_.allow_tools.empty()) g.push_back("tools(" + join(cfg_.allow_tools) + ")");
  if (cfg_.allow_send_message) g.push_back("send_message");
  out += "Plugin grants\n";
  out += fmt::format("  {:<20}{}\n", stem_, g.empty() ? "(none)" : join(g));
  return out;
}

json::Document Host::reportJson() const {
  json::Document d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  const char* st = state_ == LoadState::Loaded ? "loaded" : state_ == LoadState::Failed ? "failed" : state_ == LoadState::Loading ? "loading" : "not-loaded";
  d.AddMember("plugin", json::str(stem_, a), a);
  d.AddMember("state", json::str(st, a), a);
  if (!load_error_.empty()) {
    d.AddMember("load_error", json::str(load_error_, a), a);
    d.AddMember("load_error_rule", json::str(load_error_rule_, a), a);
  }
  d.AddMember("requested", strings(requested_, a), a);
  d.AddMember("subscriptions", strings(subs_, a), a);
  d.AddMember("tools", strings(tools_, a), a);
  d.AddMember("dropped_events", json::Value(static_cast<std::uint64_t>(dropped_)), a);
  d.AddMember("rebuilds", json::Value(static_cast<std::uint64_t>(rebuilds_)), a);
  d.AddMember("list_events_calls", json::Value(static_cast<std::uint64_t>(listCalls(GuestCall::Purpose::ListEvents))), a);
  json::Value dl(rapidjson::kArrayType);
  for (const Delivery& x : deliveries_) {
    json::Value o(rapidjson::kObjectType);
    o.AddMember("event", json::str(x.event, a), a);
    o.AddMember("status", json::str(toString(x.status), a), a);
    dl.PushBack(o, a);
  }
  d.AddMember("deliveries", dl, a);
  json::Value dg(rapidjson::kArrayType);
  for (const Diagnostic& x : diags_) {
    json::Value o(rapidjson::kObjectType);
    o.AddMember("level", json::str(toString(x.level), a), a);
    o.AddMember("rule", json::str(x.rule, a), a);
    o.AddMember("text", json::str(x.text, a), a);
    dg.PushBack(o, a);
  }
  d.AddMember("diagnostics", dg, a);
  d.AddMember("notifications", strings(notices_, a), a);
  d.AddMember("tools_report", json::str(toolsReport(), a), a);
  return d;
}

}  // namespace conform::nanopi
