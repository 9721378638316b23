// A tiny in-memory trace for monitor tests: each call appends one event (line numbers from 2, as
// after a trace header) and run() feeds a fresh MonitorSet. Frames are parsed with core/json.
#pragma once

#include <deque>
#include <string>

#include "core/json/json.h"
#include "harness/rules/monitor.h"

namespace conform::rules::test {

inline constexpr const char* kInit =
    R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{"protocol_version":"0.0.6","engine_version":"1","capabilities":{"ping":true,"shutdown":true,"tools":true,"event_streaming":true,"event_publishing":true,"interception":true,"producer_messaging":false}}})";
inline std::string initResult(const std::string& caps_extra = "", const std::string& tools = "[]",
                              const std::string& version = "0.0.6") {
  std::string caps = R"({"tools":true,"resources":false,"subscribe_events":true,"subscribe_bus":true,"publish_bus":true,"publish_session_events":false,"producer_messaging":false,"intercept":["tool_before_call"]})";
  if (!caps_extra.empty()) caps = caps_extra;
  return R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":")" + version +
         R"(","name":"fx","version":"1","capabilities":)" + caps + R"(,"tools":)" + tools + "}}";
}

class Script {
 public:
  Script& e2p(const std::string& frame, std::int64_t t_ms = -1) { return frame_(Dir::EngineToPlugin, frame, t_ms); }
  Script& p2e(const std::string& frame, std::int64_t t_ms = -1) { return frame_(Dir::PluginToEngine, frame, t_ms); }
  Script& text(Dir d, const std::string& bytes, trace::Kind k = trace::Kind::Text) {
    Item& it = add(d, k, -1);
    it.bytes = bytes;
    return *this;
  }
  Script& cr() { items_.back().cr = true; return *this; }
  Script& exitSignal(int sig, std::int64_t t_ms) {
    Item& it = add(Dir::None, trace::Kind::Exit, t_ms);
    it.signal = sig;
    return *this;
  }
  Script& eof(Dir d, std::int64_t t_ms = -1) {
    add(d, trace::Kind::Eof, t_ms);
    return *this;
  }
  Script& handshake(const std::string& result = initResult()) { return e2p(kInit).p2e(result); }

  std::vector<reports::Finding> run(const protocol::Profile* p = nullptr) {
    MonitorSet set(p);
    for (Item& it : items_) {
      trace::TraceEvent ev;
      ev.line = it.line;
      ev.t_us = it.t_ms * 1000;
      ev.dir = it.dir;
      ev.kind = it.kind;
      ev.raw = it.bytes;
      ev.line_text = it.bytes;
      ev.had_cr = it.cr;
      if (it.signal) ev.signal = it.signal;
      if (it.kind == trace::Kind::Frame) {
        ev.frame = &it.doc.doc;
        ev.duplicates = &it.doc.duplicates;
      }
      set.feed(ev);
    }
    set.finish();
    return set.findings();
  }

 private:
  struct Item {
    std::uint64_t line = 0;
    std::int64_t t_ms = 0;
    Dir dir = Dir::None;
    trace::Kind kind = trace::Kind::Frame;
    std::string bytes;
    json::Parsed doc;
    bool cr = false;
    int signal = 0;
  };
  std::deque<Item> items_;
  std::int64_t now_ms_ = 0;

  Item& add(Dir d, trace::Kind k, std::int64_t t_ms) {
    Item& it = items_.emplace_back();
    it.line = items_.size() + 1;
    it.dir = d;
    it.kind = k;
    now_ms_ = t_ms >= 0 ? t_ms : now_ms_ + 1;
    it.t_ms = now_ms_;
    return it;
  }
  Script& frame_(Dir d, const std::string& frame, std::int64_t t_ms) {
    Item& it = add(d, trace::Kind::Frame, t_ms);
    it.bytes = frame;
    auto p = json::parse(frame);
    if (p) it.doc = std::move(*p);
    else it.kind = trace::Kind::Text;
    return *this;
  }
};

// Rule IDs of the findings, in order.
inline std::vector<std::string> ids(const std::vector<reports::Finding>& fs) {
  std::vector<std::string> out;
  for (auto& f : fs) out.push_back(f.rule_id);
  return out;
}

// Rule IDs of the findings against the engine / against the plugin (or its SDK), in order. Many
// rules are judged on both sides (an invalid token: the plugin used it, the engine published it).
inline std::vector<std::string> engineIds(const std::vector<reports::Finding>& fs) {
  std::vector<std::string> out;
  for (auto& f : fs)
    if (f.binds == reports::kBindsEngine) out.push_back(f.rule_id);
  return out;
}
inline std::vector<std::string> pluginIds(const std::vector<reports::Finding>& fs) {
  std::vector<std::string> out;
  for (auto& f : fs)
    if (f.binds != reports::kBindsEngine) out.push_back(f.rule_id);
  return out;
}

}  // namespace conform::rules::test
