// harness/rules/delivery_monitor — EVT-*, BUS-*, TOOL-*, HOOK-*: what the engine may deliver to
// this plugin, judged against the capabilities and declarations of its handshake.
//
//   EVT-01 plugin/event only with subscribe_events   EVT-05 per-session seq strictly increasing
//   EVT-08 no text_delta / reasoning_delta           EVT-18 not its own diagnostics/publications [impl]
//   BUS-01 plugin/bus_event only with subscribe_bus, never the plugin's own publication (EVT-19)
//   TOOL-08 only declared tools are called           TOOL-11/12 named/single output vs declaration
//   TOOL-10 no 0.0.4 `content` member in 0.0.6       HOOK-01 only hooks listed in intercept
//   HOOK-03 no hook outside the 13 names
// Deliveries before the handshake are INIT-07's (lifecycle_monitor). Per-session state is bounded:
// past kMaxSessions new sessions are not tracked for EVT-05.
#include <fmt/format.h>

#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

namespace m = protocol::method;
constexpr std::size_t kMaxSessions = 65'536;
constexpr std::string_view kInterceptPrefix = "plugin/intercept/";

class DeliveryMonitor : public Monitor {
 public:
  std::string_view name() const override { return "EVT"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    const Handshake& hs = s.handshake();
    if (!o.decoded || !hs.ok) return;
    const wire::Message& msg = o.msg;
    if (o.fromEngine() && msg.isNotification() && msg.method == m::kEvent) event(o, s, out);
    if (o.fromEngine() && msg.isNotification() && msg.method == m::kBusEvent) bus(o, s, out);
    if (o.fromEngine() && msg.isRequest() && msg.method == m::kToolsCall) call(o, s, out);
    if (o.fromEngine() && msg.isRequest() && msg.method.substr(0, kInterceptPrefix.size()) == kInterceptPrefix)
      hook(o, s, out);
    if (o.fromPlugin() && o.match == Match::Matched && o.answeredMethod() == m::kToolsCall &&
        msg.kind == wire::MessageKind::Success)
      toolResult(o, s, out);
  }

 private:
  std::unordered_map<std::string, std::uint64_t> last_seq_;

  void event(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const Handshake& hs = s.handshake();
    if (!hs.subscribe_events) {
      out.report("EVT-01", reports::kBindsEngine, "plugin/event sent to a plugin that did not subscribe",
                 "no plugin/event without subscribe_events:true", "a plugin/event",
                 {{hs.result_line, "handshake result"}, o.evidence()});
      return;
    }
    const json::Value* p = o.msg.params;
    const json::Value* ev = member(p, "event");
    std::string_view type = str(member(ev, "type"));
    if (type == "text_delta" || type == "reasoning_delta")
      out.report("EVT-08", reports::kBindsEngine, "a model delta event was delivered",
                 "no text_delta / reasoning_delta deliveries", fmt::format("event type \"{}\"", type), {o.evidence()});
    if ((type == "plugin_diagnostic" || type == "plugin_event_added") && !hs.plugin_name.empty() &&
        str(member(ev, "plugin")) == hs.plugin_name)
      out.report("EVT-18", reports::kBindsEngine, "a record about this plugin was delivered to itself",
                 "records appended on behalf of a plugin skip that plugin",
                 fmt::format("{} for plugin \"{}\"", type, hs.plugin_name), {o.evidence()});
    const json::Value* seq = member(p, "seq");
    std::string_view session = str(member(p, "session_id"));
    if (!seq || !seq->IsUint64() || session.empty()) return;  // shape: rpc_monitor (EVT-02)
    std::string key(session);
    auto it = last_seq_.find(key);
    if (it == last_seq_.end()) {
      if (last_seq_.size() < kMaxSessions) last_seq_.emplace(std::move(key), seq->GetUint64());
      return;
    }
    if (seq->GetUint64() <= it->second)
      out.report("EVT-05", reports::kBindsEngine, "event seq did not increase within a session",
                 fmt::format("seq > {} for session {}", it->second, session),
                 fmt::format("seq {}", seq->GetUint64()), {o.evidence()});
    else
      it->second = seq->GetUint64();
  }

  void bus(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const Handshake& hs = s.handshake();
    if (!hs.subscribe_bus) {
      out.report("BUS-01", reports::kBindsEngine, "plugin/bus_event sent to a plugin that did not subscribe",
                 "no plugin/bus_event without subscribe_bus:true", "a plugin/bus_event",
                 {{hs.result_line, "handshake result"}, o.evidence()});
      return;
    }
    std::string_view publisher = str(member(o.msg.params, "plugin"));
    if (!hs.plugin_name.empty() && publisher == hs.plugin_name)
      out.report("BUS-01", reports::kBindsEngine, "a plugin received its own bus publication",
                 "bus events never go to their publisher", fmt::format("plugin \"{}\"", publisher), {o.evidence()});
  }

  void call(const Observation& o, const ConnectionState& s, FindingSink& out) {
    std::string_view tool = str(member(o.msg.params, "tool"));
    if (s.toolsTruncated() || tool.empty()) return;
    if (!s.findTool(tool))
      out.report("TOOL-08", reports::kBindsEngine, "the engine called a tool the plugin did not declare",
                 "only declared tools are called", fmt::format("tool \"{}\"", tool),
                 {{s.handshake().result_line, "declarations"}, o.evidence()});
  }

  void hook(const Observation& o, const ConnectionState& s, FindingSink& out) {
    std::string_view h = o.msg.method.substr(kInterceptPrefix.size());
    int i = hookIndex(h);
    if (i < 0) {
      out.report("HOOK-03", reports::kBindsEngine, "a hook outside the 13 protocol hooks was called",
                 "one of the 13 hooks of PROTOCOL §5.2", fmt::format("`{}`", o.msg.method), {o.evidence()});
      return;
    }
    if (!(s.handshake().intercept & (1u << i)))
      out.report("HOOK-01", reports::kBindsEngine, "a hook was sent that the plugin did not list in intercept",
                 "only hooks listed in capabilities.intercept", fmt::format("`{}`", o.msg.method),
                 {{s.handshake().result_line, "handshake result"}, o.evidence()});
  }

  void toolResult(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const DeclaredTool* t = s.findTool(o.request->tool);
    const json::Value* r = o.msg.result;
    std::vector<Evidence> ev{{o.request->line, "plugin/tools/call"}, o.evidence()};
    if (s.effectiveProfile().id() == protocol::Profile::Id::V006 && member(r, "content") && !member(r, "output")) {
      out.report("TOOL-10", reports::kBindsPlugin, "the tool result uses the 0.0.4 member `content`",
                 "`output`, `display`, `is_error`", "`content`", ev);
      return;
    }
    if (!t) return;
    const json::Value* output = member(r, "output");
    std::string_view kind = str(member(output, "kind"));
    if (kind.empty()) return;  // shape: rpc_monitor
    if ((kind == "named") != t->named) {
      out.report("TOOL-12", reports::kBindsPlugin, "the output kind does not match the tool's declaration",
                 fmt::format("kind \"{}\"", t->named ? "named" : "single"), fmt::format("kind \"{}\"", kind), ev);
      return;
    }
    if (!t->named) return;
    const json::Value* streams = member(output, "streams");
    if (!streams || !streams->IsArray()) return;
    std::vector<int> seen(t->streams.size(), 0);
    for (const json::Value& st : streams->GetArray()) {
      std::string_view name = str(member(&st, "stream"));
      bool known = false;
      for (std::size_t i = 0; i < t->streams.size(); ++i)
        if (t->streams[i] == name) { ++seen[i]; known = true; }
      if (!known) {
        out.report("TOOL-12", reports::kBindsPlugin, "the result names a stream that was not declared",
                   "only declared streams", fmt::format("stream \"{}\"", name), ev);
        return;
      }
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] == 0)
        out.report("TOOL-11", reports::kBindsPlugin, "a declared stream is missing from the result",
                   fmt::format("stream \"{}\" present (also when empty)", t->streams[i]), "absent", ev);
      else if (seen[i] > 1)
        out.report("TOOL-12", reports::kBindsPlugin, "a declared stream appears more than once",
                   fmt::format("stream \"{}\" exactly once", t->streams[i]), fmt::format("{} times", seen[i]), ev);
    }
  }
};

}  // namespace

std::unique_ptr<Monitor> makeDeliveryMonitor() { return std::make_unique<DeliveryMonitor>(); }

}  // namespace conform::rules
