// See faults.h. Every fault is one installer: it rewrites outbound frames (the SDK's outbound
// filter), reacts to inbound messages (the inbound observer), or writes raw frames — never by
// editing the SDK, so the SDK itself stays conforming and each fault breaks exactly one rule.
#include "mock_plugin/faults.h"

#include <cstdlib>
#include <map>
#include <memory>

#include <rapidjson/pointer.h>


namespace conform::plugin {
namespace {

struct Env {
  PluginServer* srv = nullptr;
  Profile profile = Profile::V006;
  std::map<std::string, std::string> methods;  // inbound request id (compact JSON) → method
  std::optional<std::string> session;          // session of the first tool call
  bool once = false;
  int next_raw_id = 9000;  // ids of raw plugin requests; far from the SDK's counter (RPC-21)
  // (msg, method answered or ">method" for our own requests/notifications, frame) → frames
  std::function<std::vector<std::string>(json::Document&, const std::string&, std::string)> rewrite;
  std::function<bool(const json::Value&, const std::string&)> inbound;
};
using EnvPtr = std::shared_ptr<Env>;

std::string str(const json::Value* v) { return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : ""; }
std::string param(const json::Value& msg, const char* key) {
  const json::Value* p = json::member(msg, "params");
  return p ? str(json::member(*p, key)) : "";
}
void setPtr(json::Document& d, const char* ptr, std::string_view json_value) {
  json::Document v = parseTrusted(json_value);
  rapidjson::Pointer(ptr).Set(d, v, d.GetAllocator());
}
std::vector<std::string> one(const json::Document& d) { return {json::compact(d)}; }

std::string emitFrame(const std::string& session, const std::string& token, std::string_view name,
                      std::string_view payload_json) {
  return "{\"jsonrpc\":\"2.0\",\"method\":\"plugin/emit\",\"params\":{\"session_id\":" + quote(session) +
         ",\"context_id\":" + quote(token) + ",\"name\":" + quote(name) + ",\"payload\":" +
         std::string(payload_json) + "}}";
}
std::string requestFrame(Env& e, std::string_view method, const std::string& params) {
  return "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(e.next_raw_id++) + ",\"method\":" + quote(method) +
         ",\"params\":" + params + "}";
}

// --- installer shapes -------------------------------------------------------------------------
using Installer = std::function<void(const EnvPtr&)>;

// Rewrites the answer to one engine request method.
Installer onAnswer(std::string method, std::function<std::vector<std::string>(Env&, json::Document&)> fn) {
  return [method, fn](const EnvPtr& e) {
    e->rewrite = [method, fn, w = std::weak_ptr<Env>(e)](json::Document& d, const std::string& m, std::string frame) {
      auto env = w.lock();
      if (!env || m != method) return std::vector<std::string>{std::move(frame)};
      return fn(*env, d);
    };
  };
}
Installer initRewrite(std::function<void(Env&, json::Document&)> fn) {
  return onAnswer("plugin/initialize", [fn](Env& e, json::Document& d) { fn(e, d); return one(d); });
}
Installer initThen(std::function<std::vector<std::string>(Env&, std::string)> fn) {
  return onAnswer("plugin/initialize", [fn](Env& e, json::Document& d) { return fn(e, json::compact(d)); });
}
Installer pingRewrite(std::function<std::vector<std::string>(Env&, json::Document&)> fn) { return onAnswer("plugin/ping", fn); }
// Reacts to an inbound message with this method; `swallow` hides it from the SDK.
Installer onInbound(std::string method, std::function<void(Env&, const json::Value&)> fn, bool swallow = false) {
  return [method, fn, swallow](const EnvPtr& e) {
    e->inbound = [method, fn, swallow, w = std::weak_ptr<Env>(e)](const json::Value& msg, const std::string& m) {
      auto env = w.lock();
      if (!env || m != method) return false;
      fn(*env, msg);
      return swallow;
    };
  };
}
// Emit faults triggered by plugin/event deliveries.
Installer onEvent(std::function<void(Env&, const std::string& session, const std::string& token)> fn) {
  return onInbound("plugin/event", [fn](Env& e, const json::Value& msg) { fn(e, param(msg, "session_id"), param(msg, "context_id")); });
}
// Producer faults: on the first tool call (which names a session), register through a raw
// request and, when the engine answers it, run `then` with the producer id.
Installer afterRegister(std::function<void(Env&, const std::string& producer_id)> then) {
  return [then](const EnvPtr& e) {
    auto reg_id = std::make_shared<int>(-1);
    e->inbound = [then, reg_id, w = std::weak_ptr<Env>(e)](const json::Value& msg, const std::string& m) {
      auto env = w.lock();
      if (!env) return false;
      if (m == "plugin/tools/call" && !env->once) {
        env->once = true;
        env->session = param(msg, "session_id");
        *reg_id = env->next_raw_id;
        env->srv->writeRaw(requestFrame(*env, "plugin/producer/register", "{\"session_id\":" + quote(*env->session) + "}"));
        return false;
      }
      const json::Value* id = json::member(msg, "id");
      if (m.empty() && id && id->IsInt() && id->GetInt() == *reg_id) {
        const json::Value* r = json::member(msg, "result");
        then(*env, r ? str(json::member(*r, "producer_id")) : std::string("00000000-0000-7000-8000-000000000000"));
        return true;
      }
      return m.empty() && id && id->IsInt() && id->GetInt() >= 9000;  // our raw requests' answers
    };
  };
}
std::string sendParams(const Env& e, const std::string& pid, std::string_view key, std::string_view desc, std::string_view body) {
  return "{\"session_id\":" + quote(e.session.value_or("")) + ",\"producer_id\":" + quote(pid) +
         ",\"mode\":\"steer\",\"idempotency_key\":" + quote(key) + ",\"description\":" + quote(desc) +
         ",\"body\":" + quote(body) + "}";
}
Installer sendOnce(std::string key, std::string desc) {
  return afterRegister([key, desc](Env& e, const std::string& pid) {
    e.srv->writeRaw(requestFrame(e, "plugin/producer/send", sendParams(e, pid, key, desc, "hello")));
  });
}

struct Entry {
  Fault meta;
  Installer install;
  bool stimulus = false;  // faults.h: an engine stimulus, not a plugin fault
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t;
    auto add = [&](Fault f, Installer i) { t.push_back({f, std::move(i), false}); };
    // A stimulus: the behaviour breaks no rule that binds the plugin (see the reason beside each).
    auto stimulus = [&](Fault f, Installer i) { t.push_back({f, std::move(i), true}); };
    // ---- handshake ----------------------------------------------------------------------------
    add({"wrong_version", "INIT-10", "reports protocol_version \"0.0.5\""},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/protocol_version", "\"0.0.5\""); }));
    add({"version_not_string", "INIT-12", "reports protocol_version as the number 6"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/protocol_version", "6"); }));
    add({"name_mismatch", "INIT-13", "reports its configured name with the first letter's case flipped"},
        initRewrite([](Env&, json::Document& d) {
          std::string n = str(rapidjson::Pointer("/result/name").Get(d));
          if (!n.empty()) n[0] = (n[0] >= 'a' && n[0] <= 'z') ? char(n[0] - 32) : (n[0] >= 'A' && n[0] <= 'Z') ? char(n[0] + 32) : 'X';
          setPtr(d, "/result/name", quote(n));
        }));
    add({"missing_capability", "INIT-17", "omits capabilities.producer_messaging (0.0.4: subscribe_bus)"},
        initRewrite([](Env& e, json::Document& d) {
          rapidjson::Pointer(e.profile == Profile::V006 ? "/result/capabilities/producer_messaging"
                                                        : "/result/capabilities/subscribe_bus").Erase(d);
        }));
    add({"unknown_capability", "INIT-17", "adds an unknown capability member `streaming`"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/capabilities/streaming", "true"); }));
    add({"extra_result_member", "INIT-09", "adds an unknown member `homepage` to the initialize result"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/homepage", "\"https://example.invalid\""); }));
    add({"duplicate_tool", "INIT-20", "declares its first tool twice"},
        initRewrite([](Env&, json::Document& d) {
          json::Value* tools = rapidjson::Pointer("/result/tools").Get(d);
          if (tools && tools->IsArray() && !tools->Empty()) {
            json::Value c((*tools)[0], d.GetAllocator());
            tools->PushBack(c, d.GetAllocator());
          }
        }));
    add({"non_snake_tool", "INIT-20", "declares a tool named `EchoTool`"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/tools/0/name", "\"EchoTool\""); }));
    // Stimuli: INIT-21 [impl] binds the ENGINE (it refuses such declarations); no rule binding the
    // plugin asks for snake_case permission names, non-empty descriptions or a primary parameter
    // that is a property (TOOL-01 only requires the members; SDK-03 makes an SDK refuse to build,
    // which is not visible on the wire).
    stimulus({"bad_permission", "INIT-21", "declares permission_name `Echo-Perm` (not snake_case)"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/tools/0/permission_name", "\"Echo-Perm\""); }));
    stimulus({"empty_description", "INIT-21", "declares a tool with an empty description"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/tools/0/description", "\"\""); }));
    // TOOL-01 (M, P): `parameters` is a JSON Schema, and {"type":12} is none (the engine's refusal of
    // it is INIT-21, which binds the engine).
    add({"invalid_tool_schema", "TOOL-01", "declares parameters {\"type\":12}, which no meta-schema accepts"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/tools/0/parameters", R"({"type":12})"); }));
    stimulus({"primary_not_in_properties", "INIT-21", "names a primary_resource_param that is not in properties"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/tools/0/primary_resource_param", "\"missing_param\""); }));
    add({"missing_primary_member", "TOOL-01", "omits the required (nullable) member primary_resource_param"},
        initRewrite([](Env&, json::Document& d) { rapidjson::Pointer("/result/tools/0/primary_resource_param").Erase(d); }));
    add({"invalid_output_decl", "TOOL-03", "declares a named output with 9 streams"},
        initRewrite([](Env&, json::Document& d) {
          setPtr(d, "/result/tools/0/output", R"({"kind":"named","streams":["a","b","c","d","e","f","g","h","i"]})");
        }));
    add({"unknown_hook", "INIT-16", "lists the unknown hook `tool_before_run` in intercept"},
        initRewrite([](Env&, json::Document& d) {
          json::Value* i = rapidjson::Pointer("/result/capabilities/intercept").Get(d);
          if (i && i->IsArray()) i->PushBack(json::Value("tool_before_run", d.GetAllocator()), d.GetAllocator());
        }));
    add({"publish_session_events", "SDK-05", "declares the legacy publish_session_events:true"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/capabilities/publish_session_events", "true"); }));
    add({"resources_true", "INIT-25", "declares the deferred resources capability as true"},
        initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/capabilities/resources", "true"); }));
    // Stimulus: a plugin may decline the handshake with an error response; INIT-19 binds the
    // engine (it must then fail that plugin alone, "handshake rejected: …").
    stimulus({"handshake_error", "INIT-19", "answers plugin/initialize with an error response"},
        onAnswer("plugin/initialize", [](Env&, json::Document& d) {
          return std::vector<std::string>{"{\"jsonrpc\":\"2.0\",\"id\":" + json::compact(*json::member(d, "id")) +
                                          ",\"error\":{\"code\":-32000,\"message\":\"not today\"}}"};
        }));
    // ---- envelope and correlation (triggered by plugin/ping) ----------------------------------
    add({"double_answer", "RPC-08", "answers every plugin/ping twice"},
        pingRewrite([](Env&, json::Document& d) { return std::vector<std::string>{json::compact(d), json::compact(d)}; }));
    add({"wrong_response_id", "RPC-08", "answers plugin/ping with the request id plus 1000"},
        pingRewrite([](Env&, json::Document& d) {
          const json::Value* id = json::member(d, "id");
          setPtr(d, "/id", id && id->IsInt64() ? std::to_string(id->GetInt64() + 1000) : "1000");
          return one(d);
        }));
    add({"string_id", "RPC-08", "echoes a numeric plugin/ping id as a string"},
        pingRewrite([](Env&, json::Document& d) {
          setPtr(d, "/id", quote(json::compact(*json::member(d, "id"))));
          return one(d);
        }));
    add({"wrong_jsonrpc", "RPC-01", "answers plugin/ping with \"jsonrpc\":\"1.0\""},
        pingRewrite([](Env&, json::Document& d) { setPtr(d, "/jsonrpc", "\"1.0\""); return one(d); }));
    add({"extra_envelope_member", "RPC-03", "adds a member `x` to its plugin/ping response envelope"},
        pingRewrite([](Env&, json::Document& d) { setPtr(d, "/x", "1"); return one(d); }));
    add({"result_and_error", "RPC-04", "answers plugin/ping with both result and error"},
        pingRewrite([](Env&, json::Document& d) { setPtr(d, "/error", R"({"code":-32000,"message":"both"})"); return one(d); }));
    add({"ping_result_not_empty", "PING-01", "answers plugin/ping with {\"ok\":true}"},
        pingRewrite([](Env&, json::Document& d) { setPtr(d, "/result", R"({"ok":true})"); return one(d); }));
    add({"ignores_ping", "RPC-08", "never answers plugin/ping"},
        pingRewrite([](Env&, json::Document&) { return std::vector<std::string>{}; }));
    add({"duplicate_member", "FRAME-19", "repeats the member `jsonrpc` in its plugin/ping response"},
        pingRewrite([](Env&, json::Document& d) {
          std::string f = json::compact(d);
          return std::vector<std::string>{"{\"jsonrpc\":\"2.0\"," + f.substr(1)};
        }));
    add({"crlf_frames", "FRAME-08", "ends every frame with CR LF (writers should not send CR)"},
        [](const EnvPtr& e) {
          e->rewrite = [](json::Document&, const std::string&, std::string frame) { return std::vector<std::string>{frame + "\r"}; };
        });
    // ---- notifications, grants, emits (triggered by plugin/event) -----------------------------
    add({"answers_notification", "RPC-16", "writes a response (id null) to every plugin/event"},
        onEvent([](Env& e, const std::string&, const std::string&) {
          e.srv->writeRaw("{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
        }));
    // Stimuli: EMIT-05/06/08/10/13 and QUOTA-01/02/05 bind the ENGINE (RULES.md Binds E): its answer
    // to such an emit is a rejection or a drop. A plugin that is not built on the SDK breaks no rule
    // by trying (SDK-06/07 bind an SDK's local checks, which the wire cannot tell apart: these
    // frames are written raw). SDK-07 is judged by the SDK fixture's own faults (docs/sdk-fixture.md).
    stimulus({"reuse_token", "EMIT-06", "emits twice with the same plugin/event context token"},
        onEvent([](Env& e, const std::string& s, const std::string& t) {
          e.srv->writeRaw(emitFrame(s, t, "conform.reuse", "{}"));
          e.srv->writeRaw(emitFrame(s, t, "conform.reuse", "{}"));
        }));
    stimulus({"emit_after_expiry", "EMIT-10", "emits with the first event's token 5.5 s after receiving it", 6500},
        onEvent([](Env& e, const std::string& s, const std::string& t) {
          if (e.once) return;
          e.once = true;
          PluginServer* srv = e.srv;
          srv->after(std::chrono::milliseconds(5500), [srv, s, t] { srv->writeRaw(emitFrame(s, t, "conform.late", "{}")); });
        }));
    stimulus({"emit_wrong_session", "EMIT-05", "emits with an event's token but another session id"},
        onEvent([](Env& e, const std::string& s, const std::string& t) {
          std::string other = s == "00000000-0000-7000-8000-000000000000" ? "00000000-0000-7000-8000-000000000001"
                                                                           : "00000000-0000-7000-8000-000000000000";
          e.srv->writeRaw(emitFrame(other, t, "conform.session", "{}"));
        }));
    stimulus({"emit_unknown_token", "EMIT-13", "emits with a context token the engine never delivered"},
        onEvent([](Env& e, const std::string& s, const std::string&) {
          e.srv->writeRaw(emitFrame(s, "conform-made-up-token", "conform.unknown", "{}"));
        }));
    stimulus({"emit_flood", "QUOTA-05", "emits once per delivered event, exceeding 40 per second in a burst"},
        onEvent([](Env& e, const std::string& s, const std::string& t) { e.srv->writeRaw(emitFrame(s, t, "conform.flood", "{}")); }));
    stimulus({"oversized_payload", "QUOTA-01", "emits a 262,145-byte payload with the first event's token"},
        onEvent([](Env& e, const std::string& s, const std::string& t) {
          if (e.once) return;
          e.once = true;
          e.srv->writeRaw(emitFrame(s, t, "conform.big", quote(std::string(262'143, 'p'))));
        }));
    stimulus({"oversized_name", "QUOTA-02", "emits with a 129-character event name"},
        onEvent([](Env& e, const std::string& s, const std::string& t) {
          if (e.once) return;
          e.once = true;
          e.srv->writeRaw(emitFrame(s, t, std::string(129, 'n'), "{}"));
        }));
    add({"emit_missing_context", "EMIT-22", "sends plugin/emit params without context_id"},
        onEvent([](Env& e, const std::string& s, const std::string&) {
          e.srv->writeRaw("{\"jsonrpc\":\"2.0\",\"method\":\"plugin/emit\",\"params\":{\"session_id\":" + quote(s) +
                          ",\"name\":\"conform.noctx\",\"payload\":{}}}");
        }));
    add({"undeclared_publish", "INIT-14", "declares publish_bus:false yet emits on every event"},
        [](const EnvPtr& e) {
          onEvent([](Env& env, const std::string& s, const std::string& t) { env.srv->writeRaw(emitFrame(s, t, "conform.undeclared", "{}")); })(e);
          initRewrite([](Env&, json::Document& d) { setPtr(d, "/result/capabilities/publish_bus", "false"); })(e);
        });
    // ---- tools (triggered by plugin/tools/call) ------------------------------------------------
    // Stimulus: EMIT-08 binds the engine (the request token ends with the answer), as above.
    stimulus({"emit_after_answer", "EMIT-08", "emits with a tool call's token after answering the call"},
        [](const EnvPtr& e) {
          auto calls = std::make_shared<std::map<std::string, std::pair<std::string, std::string>>>();
          e->inbound = [calls](const json::Value& msg, const std::string& m) {
            if (m == "plugin/tools/call")
              (*calls)[json::compact(*json::member(msg, "id"))] = {param(msg, "session_id"), param(msg, "context_id")};
            return false;
          };
          e->rewrite = [calls](json::Document& d, const std::string& m, std::string frame) {
            std::vector<std::string> out{std::move(frame)};
            auto it = m == "plugin/tools/call" ? calls->find(json::compact(*json::member(d, "id"))) : calls->end();
            if (it != calls->end()) out.push_back(emitFrame(it->second.first, it->second.second, "conform.after", "{}"));
            return out;
          };
        });
    add({"named_missing_stream", "TOOL-11", "omits the last declared stream from named tool output"},
        onAnswer("plugin/tools/call", [](Env&, json::Document& d) {
          json::Value* s = rapidjson::Pointer("/result/output/streams").Get(d);
          if (s && s->IsArray() && !s->Empty()) s->PopBack();
          return one(d);
        }));
    add({"kind_mismatch", "TOOL-12", "answers a named-output tool with single output"},
        onAnswer("plugin/tools/call", [](Env&, json::Document& d) {
          json::Value* k = rapidjson::Pointer("/result/output/kind").Get(d);
          if (k && str(k) == "named") setPtr(d, "/result/output", R"({"kind":"single","text":"x"})");
          else if (k) setPtr(d, "/result/output", R"({"kind":"named","streams":[{"stream":"x","text":""}]})");
          return one(d);
        }));
    add({"legacy_content", "TOOL-10", "answers tool calls with the 0.0.4 member `content` (0.0.4: `output`)"},
        onAnswer("plugin/tools/call", [](Env& e, json::Document& d) {
          if (!json::member(d, "result")) return one(d);
          if (e.profile == Profile::V006) setPtr(d, "/result", R"({"content":"legacy","is_error":false})");
          else setPtr(d, "/result", R"({"output":{"kind":"single","text":"new"},"is_error":false})");
          return one(d);
        }));
    add({"partial_output", "TOOL-17", "sends a progress notification with partial output during each tool call"},
        onInbound("plugin/tools/call", [](Env& e, const json::Value& msg) {
          e.srv->writeRaw("{\"jsonrpc\":\"2.0\",\"method\":\"plugin/tools/progress\",\"params\":{\"invocation_id\":" +
                          quote(param(msg, "invocation_id")) + ",\"text\":\"partial\"}}");
        }));
    // RPC-08 (M, P): the call it dies on is never answered. TOOL-15 (how the engine ends such a
    // call) binds the engine; the RPC-08 case calls every tool and requires each answered.
    add({"crash_during_tool", "RPC-08", "aborts (SIGABRT) when a tool call arrives"},
        onInbound("plugin/tools/call", [](Env&, const json::Value&) { std::abort(); }));
    // ---- hooks (triggered by plugin/intercept/*) ----------------------------------------------
    add({"bad_hook_result", "HOOK-13", "answers tool_before_call with {\"action\":\"maybe\"}"},
        onAnswer("plugin/intercept/tool_before_call", [](Env&, json::Document& d) {
          setPtr(d, "/result", R"({"action":"maybe"})");
          return one(d);
        }));
    add({"hook_extra_member", "HOOK-13", "adds an unknown member `extra` to every hook result"},
        [](const EnvPtr& e) {
          e->rewrite = [](json::Document& d, const std::string& m, std::string frame) {
            if (m.rfind("plugin/intercept/", 0) != 0 || !json::member(d, "result")) return std::vector<std::string>{frame};
            setPtr(d, "/result/extra", "true");
            return one(d);
          };
        });
    // Stimulus: a late hook answer is legal on the wire; HOOK-06 binds the engine (it stops waiting
    // at interception_timeout_ms and fails open).
    stimulus({"slow_hook", "HOOK-06", "answers tool_before_call after 2,500 ms (over the 2,000 ms default)", 3000},
        onAnswer("plugin/intercept/tool_before_call", [](Env& e, json::Document& d) {
          PluginServer* srv = e.srv;
          srv->after(std::chrono::milliseconds(2500), [srv, f = json::compact(d)] { srv->writeRaw(f); });
          return std::vector<std::string>{};
        }));
    add({"after_response_not_empty", "HOOK-47", "answers provider_after_response with {\"action\":\"keep\"}"},
        onAnswer("plugin/intercept/provider_after_response", [](Env&, json::Document& d) {
          setPtr(d, "/result", R"({"action":"keep"})");
          return one(d);
        }));
    add({"declared_hook_unsupported", "INIT-14", "declares user_before_input but answers it with -32601"},
        onAnswer("plugin/intercept/user_before_input", [](Env&, json::Document& d) {
          return std::vector<std::string>{"{\"jsonrpc\":\"2.0\",\"id\":" + json::compact(*json::member(d, "id")) +
                                          ",\"error\":{\"code\":-32601,\"message\":\"plugin method is not supported\"}}"};
        }));
    // ---- producers and recovery (0.0.6; triggered by recovery/start or the first tool call) ----
    add({"send_before_register", "PROD-14", "on the first tool call sends a producer message without registering"},
        onInbound("plugin/tools/call", [](Env& e, const json::Value& msg) {
          if (e.once) return;
          e.once = true;
          e.session = param(msg, "session_id");
          e.srv->writeRaw(requestFrame(e, "plugin/producer/send",
                                       sendParams(e, "0191c0de-0000-7000-8000-0000000000ff", "k-1", "never registered", "hello")));
        }));
    add({"stale_producer_id", "PROD-06", "reuses a producer id persisted from an earlier connection"},
        onInbound("plugin/tools/call", [](Env& e, const json::Value& msg) {
          if (e.once) return;
          e.once = true;
          e.session = param(msg, "session_id");
          e.srv->writeRaw(requestFrame(e, "plugin/producer/send",
                                       sendParams(e, "0191c0de-0000-7000-8000-0000000000aa", "k-stale", "from last run", "hello")));
        }));
    // Stimulus: PROD-19 binds the engine (it rejects the reuse with -32045); no rule binding the plugin
    // forbids trying (PROD-21 concerns retries after a commit-uncertain send).
    stimulus({"key_reuse", "PROD-19", "registers, then sends two different bodies with one idempotency key"},
        afterRegister([](Env& e, const std::string& pid) {
          e.srv->writeRaw(requestFrame(e, "plugin/producer/send", sendParams(e, pid, "k-same", "first", "body A")));
          e.srv->writeRaw(requestFrame(e, "plugin/producer/send", sendParams(e, pid, "k-same", "first", "body B")));
        }));
    add({"description_too_long", "PROD-12", "sends a producer message with a 1,025-byte description"},
        sendOnce("k-desc", std::string(1025, 'd')));
    add({"blank_description", "PROD-12", "sends a producer message whose description is blank"}, sendOnce("k-blank", "   "));
    add({"key_too_long", "PROD-11", "sends a producer message with a 257-byte idempotency key"},
        sendOnce(std::string(257, 'k'), "long key"));
    add({"key_control_char", "PROD-11", "sends a producer message whose idempotency key contains a TAB"},
        sendOnce("k\tey", "tab key"));
    add({"never_completes_recovery", "RECOV-06", "ignores plugin/recovery/start and never completes recovery"},
        onInbound("plugin/recovery/start", [](Env&, const json::Value&) {}, /*swallow=*/true));
    // Stimulus: RECOV-10 binds the engine (a repeat with the identical outcome succeeds, a changed
    // outcome is rejected -32048); no rule forbids the plugin to try.
    stimulus({"recovery_twice", "RECOV-10", "completes recovery as ready, then again as failed"},
        [](const EnvPtr& e) {
          e->rewrite = [w = std::weak_ptr<Env>(e)](json::Document&, const std::string& m, std::string frame) {
            std::vector<std::string> out{std::move(frame)};
            auto env = w.lock();
            if (env && m == ">plugin/recovery/complete")
              out.push_back(requestFrame(*env, "plugin/recovery/complete", R"({"outcome":{"status":"failed","message":"changed my mind"}})"));
            return out;
          };
        });
    add({"answers_recovery_start", "RECOV-01", "answers the plugin/recovery/start notification with a response"},
        onInbound("plugin/recovery/start", [](Env& e, const json::Value&) {
          e.srv->writeRaw("{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
        }));
    // ---- process and frames -------------------------------------------------------------------
    add({"ignores_shutdown", "SHUT-08", "keeps running for 30 s after plugin/shutdown and stdin EOF", 0, 30000},
        onInbound("plugin/shutdown", [](Env&, const json::Value&) {}, /*swallow=*/true));
    // RPC-08 (M, P): the requests after its death go unanswered (the RPC-08 case pings again after
    // 300 ms). LIFE-03 (failures contained to that plugin) binds the engine.
    add({"crash_after_initialize", "RPC-08", "aborts (SIGABRT) 100 ms after answering plugin/initialize"},
        initThen([](Env& e, std::string f) {
          e.srv->after(std::chrono::milliseconds(100), [] { std::abort(); });
          return std::vector<std::string>{std::move(f)};
        }));
    add({"non_json_stdout", "FRAME-01", "prints a log line to stdout after the handshake"},
        initThen([](Env&, std::string f) { return std::vector<std::string>{std::move(f), "conform-plugin: ready"}; }));
    add({"non_utf8_stdout", "FRAME-04", "writes the bytes FF FE as a line after the handshake"},
        initThen([](Env&, std::string f) { return std::vector<std::string>{std::move(f), "\xff\xfe"}; }));
    add({"oversized_frame", "FRAME-06", "writes a 4,194,305-byte frame after the handshake"},
        initThen([](Env&, std::string f) {
          std::string head = R"({"jsonrpc":"2.0","method":"conform/pad","params":{"p":")", tail = "\"}}";
          return std::vector<std::string>{std::move(f), head + std::string(4'194'305 - head.size() - tail.size(), 'x') + tail};
        }));
    // FRAME-01 (M: one JSON object per line; PROTOCOL F6 "Writers MUST NOT emit empty lines"); the
    // frame monitor also names FRAME-10 (I), the engine's reaction.
    add({"empty_line", "FRAME-01", "writes an empty line after the handshake"},
        initThen([](Env&, std::string f) { return std::vector<std::string>{std::move(f), ""}; }));
    add({"batch_frame", "FRAME-11", "writes the JSON array [] as a frame after the handshake"},
        initThen([](Env&, std::string f) { return std::vector<std::string>{std::move(f), "[]"}; }));
    add({"never_reads_stdin", "EVT-17", "stops reading stdin after the handshake (for at most 30 s)", 0, 0},
        initThen([](Env& e, std::string f) {
          e.srv->stopReading();
          return std::vector<std::string>{std::move(f)};
        }));
    return t;
  }();
  return table;
}

}  // namespace

namespace {
std::vector<Fault> tableOf(bool stimuli) {
  std::vector<Fault> r;
  for (const auto& e : entries())
    if (e.stimulus == stimuli) r.push_back(e.meta);
  return r;
}
}  // namespace

const std::vector<Fault>& faultTable() {
  static const std::vector<Fault> v = tableOf(false);
  return v;
}

const std::vector<Fault>& stimulusTable() {
  static const std::vector<Fault> v = tableOf(true);
  return v;
}

const Fault* findFault(std::string_view name) {
  for (const auto* t : {&faultTable(), &stimulusTable()})
    for (const auto& f : *t)
      if (name == f.name) return &f;
  return nullptr;
}

bool isStimulus(std::string_view name) {
  for (const auto& f : stimulusTable())
    if (name == f.name) return true;
  return false;
}

void installFault(const Fault& f, PluginServer& server, Profile profile) {
  auto env = std::make_shared<Env>();
  env->srv = &server;
  env->profile = profile;
  for (const auto& e : entries())
    if (std::string_view(e.meta.name) == f.name) e.install(env);
  server.setInboundObserver([env](const json::Value& msg) {
    const json::Value* m = json::member(msg, "method");
    const json::Value* id = json::member(msg, "id");
    if (m && id) env->methods[json::compact(*id)] = str(m);
    return env->inbound ? env->inbound(msg, str(m)) : false;
  });
  server.setOutboundFilter([env](std::string frame) -> std::vector<std::string> {
    if (!env->rewrite) return {std::move(frame)};
    auto parsed = json::parse(frame);
    if (!parsed || !parsed->doc.IsObject()) return {std::move(frame)};
    json::Document* d = &parsed->doc;
    std::string method;
    const json::Value* m = json::member(*d, "method");
    if (m) {
      method = ">" + str(m);
    } else if (const json::Value* id = json::member(*d, "id")) {
      auto it = env->methods.find(json::compact(*id));
      if (it != env->methods.end()) method = it->second;
    }
    return env->rewrite(*d, method, std::move(frame));
  });
}

}  // namespace conform::plugin
