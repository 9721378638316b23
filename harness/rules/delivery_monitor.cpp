// harness/rules/delivery_monitor — EVT-*, BUS-*, TOOL-*, HOOK-*: what the engine may deliver to
// this plugin, judged against the capabilities and declarations of its handshake, and what the
// plugin answers to tool calls and hooks.
//
//   EVT-01 plugin/event only with subscribe_events   EVT-05 per-session seq strictly increasing
//   EVT-08 no text_delta / reasoning_delta           EVT-18 not its own diagnostics [impl]
//   EVT-19 never the plugin's own publication (its plugin_event_added, its bus publication)
//   BUS-01 plugin/bus_event only with subscribe_bus  BUS-05 every bus delivery carries a context_id [impl]
//   TOOL-06 resource = arguments[primary_resource_param] (strings verbatim, integers/bools compact) [impl]
//   TOOL-07 arguments are a JSON object [impl]       TOOL-08 only declared tools are called
//   TOOL-10 no 0.0.4 `content` member in 0.0.6       TOOL-11/12 named/single output vs declaration
//   TOOL-17 no partial-output frames tied to an outstanding call (unknown methods carrying its
//           invocation_id, or any unknown plugin/tools/* method)
//   TOOL-19 cancellation_token = invocation_id [impl]
//   TOOL-31 the SDK answers a call of an undeclared tool with -32601 [impl]
//   HOOK-01 only hooks listed in intercept            HOOK-02 a hook call is a request
//   HOOK-03 no hook outside the 13 names              HOOK-14 the SDK answers an unlisted hook -32601 [impl]
//   HOOK-45/47 provider hooks always carry headers:{} HOOK-48 message_end params role "assistant"
//   INIT-14 [advisory] a hook listed in intercept answered -32601 (declared but not served)
//   Hook results that the engine must skip as invalid modifications (advisory, against the
//   plugin: §13.2 marks the member "required" but the protocol's answer is fail-open, not a
//   broken connection): HOOK-43 replace without messages, HOOK-46 replace without an object
//   payload, HOOK-48 replace without content, HOOK-38 transform without nonblank new_text,
//   HOOK-53 override without nonblank instructions_override, HOOK-32 injection with role tool
//   or blank content.
// Result SHAPES (HOOK-13/17/23/…/47, TOOL-09, EVT-02 seq ≥ 1, BUS-02) are rpc_monitor's, through
// Profile::validate. Chain order (HOOK-04) and what the engine does with a result (HOOK-07/09/…)
// need a second plugin or the engine's state: not judged here (docs/monitors.md).
// Deliveries before the handshake are INIT-07's (lifecycle_monitor). Per-session state is bounded:
// past kMaxSessions new sessions are not tracked for EVT-05; past kMaxCalls outstanding tool calls
// TOOL-17 stops tracking new ones.
#include <fmt/format.h>

#include "core/protocol/validate.h"
#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

namespace m = protocol::method;
constexpr std::size_t kMaxSessions = 65'536;
constexpr std::size_t kMaxCalls = 65'536;
constexpr std::string_view kInterceptPrefix = "plugin/intercept/";
constexpr std::string_view kToolsPrefix = "plugin/tools/";

bool emptyObject(const json::Value* v) { return v && v->IsObject() && v->MemberCount() == 0; }

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
    if (o.fromEngine() && msg.isNotification() && msg.method.substr(0, kInterceptPrefix.size()) == kInterceptPrefix)
      out.report("HOOK-02", reports::kBindsEngine, "a hook was sent as a notification",
                 "plugin/intercept/<hook> is a request (it has a result)", fmt::format("`{}` without id", msg.method),
                 {o.evidence()});
    if (o.fromPlugin() && (msg.isRequest() || msg.isNotification()) && !o.method) partialOutput(o, out);
    if (o.fromPlugin() && o.match == Match::Matched) {
      std::string_view answered = o.answeredMethod();
      if (answered == m::kToolsCall) {
        calls_.erase(o.request->id);
        if (msg.kind == wire::MessageKind::Success) toolResult(o, s, out);
        else undeclaredToolAnswer(o, s, out);
      } else if (answered.substr(0, kInterceptPrefix.size()) == kInterceptPrefix) {
        hookAnswer(o, s, out);
      }
    }
  }

 private:
  std::unordered_map<std::string, std::uint64_t> last_seq_;
  std::string key_;  // reused lookup key: no allocation per event once warmed up
  // Outstanding tools/call requests → invocation_id (TOOL-17).
  std::unordered_map<wire::RpcId, std::string, wire::RpcIdHash> calls_;

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
    bool own = !hs.plugin_name.empty() && str(member(ev, "plugin")) == hs.plugin_name;
    if (own && type == "plugin_event_added")
      out.report("EVT-19", reports::kBindsEngine, "the plugin received its own publication as a plugin/event",
                 "a plugin never receives its own publication through either subscription",
                 fmt::format("plugin_event_added of plugin \"{}\"", hs.plugin_name), {o.evidence()});
    else if (own && type == "plugin_diagnostic")
      out.report("EVT-18", reports::kBindsEngine, "a record about this plugin was delivered to itself",
                 "records appended on behalf of a plugin skip that plugin",
                 fmt::format("{} for plugin \"{}\"", type, hs.plugin_name), {o.evidence()});
    const json::Value* seq = member(p, "seq");
    std::string_view session = str(member(p, "session_id"));
    if (!seq || !seq->IsUint64() || session.empty()) return;  // shape: rpc_monitor (EVT-02)
    key_.assign(session.data(), session.size());
    auto it = last_seq_.find(key_);
    if (it == last_seq_.end()) {
      if (last_seq_.size() < kMaxSessions) last_seq_.emplace(key_, seq->GetUint64());
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
    // Own publication: EVT-19 (either subscription), which BUS-01 ("never to the publisher") repeats.
    if (!hs.plugin_name.empty() && publisher == hs.plugin_name)
      out.report("EVT-19", reports::kBindsEngine, "a plugin received its own bus publication",
                 "bus events never go to their publisher (EVT-19, BUS-01)", fmt::format("plugin \"{}\"", publisher),
                 {o.evidence()});
    if (o.msg.params && o.msg.params->IsObject() && !member(o.msg.params, "context_id"))
      out.report("BUS-05", reports::kBindsEngine, "a bus delivery carried no context_id",
                 "a fresh context_id on every bus delivery", "no context_id", {o.evidence()});
  }

  void call(const Observation& o, const ConnectionState& s, FindingSink& out) {
    const json::Value* p = o.msg.params;
    std::string_view tool = str(member(p, "tool"));
    std::string_view invocation = str(member(p, "invocation_id"));
    if (!invocation.empty() && calls_.size() < kMaxCalls) calls_[o.msg.id] = std::string(invocation);
    const json::Value* args = member(p, "arguments");
    if (args && !args->IsObject())
      out.report("TOOL-07", reports::kBindsEngine, "tool arguments that are not a JSON object were sent",
                 "only object arguments reach the plugin", std::string(json::typeName(*args)), {o.evidence()});
    if (const json::Value* ct = member(p, "cancellation_token"); ct && ct->IsString() && str(ct) != invocation)
      out.report("TOOL-19", reports::kBindsEngine, "cancellation_token differs from invocation_id",
                 fmt::format("\"{}\"", invocation), fmt::format("\"{}\"", str(ct)), {o.evidence()});
    if (s.toolsTruncated() || tool.empty()) return;
    const DeclaredTool* t = s.findTool(tool);
    if (!t) {
      out.report("TOOL-08", reports::kBindsEngine, "the engine called a tool the plugin did not declare",
                 "only declared tools are called", fmt::format("tool \"{}\"", tool),
                 {{s.handshake().result_line, "declarations"}, o.evidence()});
      return;
    }
    resource(o, *t, args, out);
  }

  // TOOL-06 [impl]: judged only where the derivation is unambiguous — no primary parameter or an
  // absent argument (null), a string (verbatim), an integer or a bool (compact JSON). JSON null,
  // floats, objects and arrays are left alone: serialisers legitimately differ on them.
  void resource(const Observation& o, const DeclaredTool& t, const json::Value* args, FindingSink& out) {
    const json::Value* res = member(o.msg.params, "resource");
    if (!res || !(res->IsNull() || res->IsString()) || (args && !args->IsObject())) return;  // shape: RPC-12
    // The expected resource; a string argument is compared in place (no copy per tool call).
    std::optional<std::string_view> want;
    std::string number_text;  // an integer's or a bool's compact JSON
    if (t.primary_resource_param) {
      const json::Value* a = member(args, *t.primary_resource_param);
      if (!a) {
        want.reset();
      } else if (a->IsString()) {
        want = str(a);
      } else if (a->IsInt64() || a->IsUint64() || a->IsBool()) {
        number_text = compactText(*a);
        want = number_text;
      } else {
        return;
      }
    }
    bool ok = want ? (res->IsString() && str(res) == *want) : res->IsNull();
    if (!ok)
      out.report("TOOL-06", reports::kBindsEngine, "resource is not derived from the primary resource argument",
                 want ? fmt::format("\"{}\" (arguments.{})", *want, *t.primary_resource_param) : std::string("null"),
                 res->IsNull() ? std::string("null") : fmt::format("\"{}\"", str(res)), {o.evidence()});
  }

  // TOOL-17: a tool answers with one terminal response; a frame of an unknown method tied to an
  // outstanding call (its invocation_id, or the plugin/tools/ namespace) is partial output.
  void partialOutput(const Observation& o, FindingSink& out) {
    std::string_view method = o.msg.method;
    std::string_view inv = str(member(o.msg.params, "invocation_id"));
    bool tied = method.substr(0, kToolsPrefix.size()) == kToolsPrefix;
    if (!tied && !inv.empty())
      for (const auto& [id, i] : calls_)
        if (i == inv) { tied = true; break; }
    if (tied && !calls_.empty())
      out.report("TOOL-17", reports::kBindsPlugin, "the plugin sent a partial-output frame for a tool call",
                 "one terminal response per call, no other frames tied to it", fmt::format("`{}`", method),
                 {o.evidence()});
  }

  void undeclaredToolAnswer(const Observation& o, const ConnectionState& s, FindingSink& out) {
    if (s.toolsTruncated() || o.request->tool.empty() || s.findTool(o.request->tool)) return;
    if (o.msg.error.code != wire::kMethodNotFound)
      out.report("TOOL-31", reports::kBindsSdk, "a call of an undeclared tool was not answered -32601",
                 "error -32601 (unknown tool)", fmt::format("error {}", o.msg.error.code),
                 {{o.request->line, "plugin/tools/call"}, o.evidence()});
  }

  void hookAnswer(const Observation& o, const ConnectionState& s, FindingSink& out) {
    std::string_view hook = o.answeredMethod().substr(kInterceptPrefix.size());
    int i = hookIndex(hook);
    const RequestEvidence ev(o.request->line, "hook call", o);
    if (i < 0 || !(s.handshake().intercept & (1u << i))) {
      // The engine broke HOOK-01/03 first; the SDK must still answer "not registered".
      if (!(o.msg.kind == wire::MessageKind::Error && o.msg.error.code == wire::kMethodNotFound))
        out.report("HOOK-14", reports::kBindsSdk, "a hook the plugin did not register was not answered -32601",
                   "error -32601", o.msg.kind == wire::MessageKind::Error ? fmt::format("error {}", o.msg.error.code)
                                                                         : std::string("a result"),
                   ev);
      return;
    }
    if (o.msg.kind == wire::MessageKind::Error && o.msg.error.code == wire::kMethodNotFound) {
      // INIT-14: the handshake listed this hook in `intercept`, and the answer says it is not served.
      // Advisory: the engine fails the hook open; nothing else on the connection breaks.
      out.report("INIT-14", reports::kBindsPlugin,
                 fmt::format("the plugin declared the hook `{}` but answered it \"method not found\"", hook),
                 "a plugin declares exactly the hooks it serves (intercept matches its handlers)", "error -32601",
                 ev, /*advisory=*/true);
      return;
    }
    if (o.msg.kind != wire::MessageKind::Success) return;
    const json::Value* r = o.msg.result;
    std::string_view action = str(member(r, "action"));
    auto invalid = [&](const char* rule, const char* what, const char* expected) {
      out.report(rule, reports::kBindsPlugin, fmt::format("{} (the engine must skip it as invalid_modification)", what),
                 expected, std::string(action.empty() ? "no action" : action), ev, /*advisory=*/true);
    };
    if (hook == "model_before_request" && action == "replace" && !member(r, "messages"))
      invalid("HOOK-43", "`replace` without `messages`", "a complete `messages` list with `replace`");
    else if (hook == "provider_before_request" && action == "replace") {
      const json::Value* pl = member(r, "payload");
      if (!pl || !pl->IsObject())
        invalid("HOOK-46", "`replace` without an object `payload`", "a normalized request object with `replace`");
    } else if (hook == "message_end" && action == "replace" && !member(r, "content"))
      invalid("HOOK-48", "`replace` without `content`", "the complete replacement `content` with `replace`");
    else if (hook == "user_before_input" && action == "transform" &&
             !protocol::isNonblank(str(member(r, "new_text"))))
      invalid("HOOK-38", "`transform` without nonblank `new_text`", "nonblank `new_text` with `transform`");
    else if (hook == "session_before_revert" && action == "override" &&
             !protocol::isNonblank(str(member(r, "instructions_override"))))
      invalid("HOOK-53", "`override` without nonblank `instructions_override`",
              "nonblank `instructions_override` with `override`");
    else if (hook == "agent_before_start") {
      const json::Value* inj = member(r, "inject_message");
      if (inj && (str(member(inj, "role")) == "tool" || !protocol::isNonblank(str(member(inj, "content")))))
        invalid("HOOK-32", "an injected message with role `tool` or blank content",
                "a non-tool role and nonblank content");
    }
  }

  void hook(const Observation& o, const ConnectionState& s, FindingSink& out) {
    std::string_view h = o.msg.method.substr(kInterceptPrefix.size());
    const json::Value* p = o.msg.params;
    // HOOK-45/47: headers are never forwarded in 0.0.6 (a string map is the shape; `{}` the rule).
    if ((h == "provider_before_headers" || h == "provider_after_response") && member(p, "headers") &&
        !emptyObject(member(p, "headers")))
      out.report(h == "provider_before_headers" ? "HOOK-45" : "HOOK-47", reports::kBindsEngine,
                 "a provider hook carried request/response headers", "headers:{}",
                 compactText(*member(p, "headers")), {o.evidence()});
    if (h == "message_end" && member(p, "role") && str(member(p, "role")) != "assistant")
      out.report("HOOK-48", reports::kBindsEngine, "message_end was called for a non-assistant message",
                 "role \"assistant\"", compactText(*member(p, "role")), {o.evidence()});
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
    const RequestEvidence ev(o.request->line, "plugin/tools/call", o);
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
