// See behaviour.h.
#include "mock_plugin/behaviour.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace conform::plugin {

PluginBuilder builtinBehaviour(const BehaviourOptions& o) {
  PluginBuilder b(o.name, o.version);
  b.profile(o.profile);
  b.tool(makeTool("echo", "Echo text back to the model",
                  R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})", "echo"),
         [](Context, ToolCall call, ToolReply reply) {
           reply.ok(ToolResult::success(std::string(json::stringMember(call.arguments, "text").value_or("")))
                        .withDisplay("echoed"));
         });
  if (o.profile == Profile::V006) {
    b.tool(makeTool("report", "Report on a path with two output streams",
                    R"({"type":"object","properties":{"path":{"type":"string"}}})", "report_read", "path",
                    OutputDecl::namedStreams({"results", "errors"})),
           [](Context, ToolCall call, ToolReply reply) {
             reply.ok(ToolResult::namedOutput({{"results", "resource=" + call.resource.value_or("")}, {"errors", ""}}));
           });
  }
  b.tool(makeTool("publish", "Publish a bus event with this call's grant",
                  R"({"type":"object","properties":{"name":{"type":"string"},"payload":{}},"required":["name"]})",
                  "publish"),
         [](Context ctx, ToolCall call, ToolReply reply) {
           const json::Value* p = json::member(call.arguments, "payload");
           static const json::Value kNull;
           auto shared = std::make_shared<ToolReply>(reply);
           ctx.emitBus(call.session_id, std::string(json::stringMember(call.arguments, "name").value_or("conform.publish")),
                       p ? *p : kNull, [shared](Result<EmitResult> r) {
                         shared->ok(ToolResult::success(r ? "bus: " + std::string(toString(r->bus))
                                                          : "emit failed: " + r.error().str()));
                       });
           // An emit that failed locally has already answered; otherwise the answer waits for
           // plugin/emit_result, which the engine sends while the request grant is still live.
         });
  b.onEvent([](Context, const EventDelivery&, Completion) {});
  b.onBusEvent([](Context, const BusDelivery&, Completion) {});
  b.enableBusPublishing();
  for (Hook h : allHooks())
    b.intercept(h, [h](Context, const json::Value&, HookReply r) { r.answer(hooks::passThrough(h)); });
  if (o.profile == Profile::V006) {
    b.enableProducers();
    b.onRecovery([](Context, RecoveryDone done) { done.ready(); });
  }
  return b;
}

// ---------------------------------------------------------------------------------------------
// Behaviour files: decoding (json::ObjectMapper, closed objects, paths in every error)
// ---------------------------------------------------------------------------------------------

bool fromJSON(const json::Value& v, BehaviourError& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.mapDefault("code", r.code) && o.map("message", r.message) && o.closed();
}
bool fromJSON(const json::Value& v, ToolResponse& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.mapOptional("text", r.text) || !o.mapOptional("echo", r.echo) || !o.mapOptional("streams", r.streams) ||
      !o.mapDefault("is_error", r.is_error) || !o.mapOptional("display", r.display) ||
      !o.mapDefault("delay_ms", r.delay_ms) || !o.mapOptional("error", r.error) || !o.closed())
    return false;
  int kinds = (r.text ? 1 : 0) + (r.echo ? 1 : 0) + (r.streams ? 1 : 0) + (r.error ? 1 : 0);
  if (kinds != 1) return p.report("exactly one of text, echo, streams and error is required");
  return true;
}
bool fromJSON(const json::Value& v, ToolOutputSpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("kind", r.kind) || !o.mapDefault("streams", r.streams) || !o.closed()) return false;
  if (r.kind != "single" && r.kind != "named") return p.field("kind").report("expected \"single\" or \"named\"");
  return true;
}
bool fromJSON(const json::Value& v, ToolSpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("name", r.name) || !o.map("description", r.description) || !o.map("parameters", r.parameters) ||
      !o.map("permission_name", r.permission_name) || !o.mapOptional("primary_resource_param", r.primary_resource_param) ||
      !o.mapDefault("output", r.output) || !o.map("response", r.response) || !o.closed())
    return false;
  const bool named = r.output.kind == "named";
  if (named != r.response.streams.has_value() && !r.response.error)
    return p.field("response").report(named ? "a named output answers with `streams`"
                                            : "`streams` needs \"output\":{\"kind\":\"named\"}");
  if (named && r.response.streams) {  // TOOL-11/12: every declared stream exactly once, no other
    for (const auto& [stream, text] : *r.response.streams)
      if (std::find(r.output.streams.begin(), r.output.streams.end(), stream) == r.output.streams.end())
        return p.field("response").field("streams").field(stream).report("stream is not declared in output.streams");
    for (const auto& stream : r.output.streams)
      if (!r.response.streams->count(stream))
        return p.field("response").field("streams").report("declared stream `" + stream + "` has no text");
  }
  return true;
}
bool fromJSON(const json::Value& v, HookSpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("answer", r.answer) || !o.mapDefault("delay_ms", r.delay_ms) || !o.closed()) return false;
  if (!r.answer.get().IsObject()) return p.field("answer").report("a hook result is a JSON object");
  return true;
}
bool fromJSON(const json::Value& v, EmitSpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("name", r.name) || !o.mapDefault("payload", r.payload) || !o.mapDefault("count", r.count) ||
      !o.mapOptional("event_type", r.event_type) || !o.closed())
    return false;
  return true;
}
bool fromJSON(const json::Value& v, ProducerSendSpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("key", r.key) || !o.mapDefault("mode", r.mode) || !o.map("description", r.description) ||
      !o.map("body", r.body) || !o.closed())
    return false;
  if (!protocol::parseDeliveryMode(r.mode)) return p.field("mode").report("expected \"steer\" or \"queue\"");
  // PROD-11/12: refuse what the SDK would refuse at run time, now, with the key path.
  if (auto e = IdempotencyKey::make(r.key); !e) return p.field("key").report(e.error().message);
  if (auto e = checkDescription(r.description)) return p.field("description").report(*e);
  return true;
}
bool fromJSON(const json::Value& v, ProducerSpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.mapDefault("on", r.on) || !o.mapOptional("session_id", r.session_id) || !o.map("sends", r.sends) ||
      !o.mapDefault("unregister", r.unregister) || !o.closed())
    return false;
  if (r.on != "first_event" && r.on != "recovery") return p.field("on").report("expected \"first_event\" or \"recovery\"");
  if (r.on == "recovery" && !r.session_id) return p.field("session_id").report("required when \"on\" is \"recovery\"");
  return true;
}
bool fromJSON(const json::Value& v, RecoverySpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.mapDefault("status", r.status) || !o.mapOptional("message", r.message) ||
      !o.mapDefault("delay_ms", r.delay_ms) || !o.closed())
    return false;
  if (r.status != "ready" && r.status != "failed") return p.field("status").report("expected \"ready\" or \"failed\"");
  if ((r.status == "failed") != r.message.has_value())  // RECOV-05: message iff failed
    return p.field("message").report("required for \"failed\" and not allowed for \"ready\"");
  return true;
}
bool fromJSON(const json::Value& v, BehaviourSpec& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.mapDefault("name", r.name) || !o.mapDefault("version", r.version) ||
      !o.mapDefault("profile", r.profile) || !o.mapDefault("tools", r.tools) ||
      !o.mapDefault("subscribe_events", r.subscribe_events) || !o.mapDefault("subscribe_bus", r.subscribe_bus) ||
      !o.mapDefault("publish_bus", r.publish_bus) || !o.mapDefault("hooks", r.hooks) || !o.mapDefault("emits", r.emits) ||
      !o.mapOptional("producer", r.producer) || !o.mapOptional("recovery", r.recovery) || !o.closed())
    return false;
  auto profile = parseProfile(r.profile);
  if (!profile) return p.field("profile").report("expected \"0.0.6\" or \"0.0.4\"");
  for (const auto& [name, h] : r.hooks)
    if (!parseHook(name)) return p.field("hooks").field(name).report("unknown hook (HOOK-03 lists 13)");
  if (!r.emits.empty() && !r.subscribe_events)
    return p.field("emits").report("emits are made when events arrive: needs \"subscribe_events\": true");
  if (!r.emits.empty() && !r.publish_bus)
    return p.field("emits").report("emitting needs \"publish_bus\": true (EMIT-24)");
  if (r.producer && r.producer->on == "first_event" && !r.subscribe_events)
    return p.field("producer").field("on").report("\"first_event\" needs \"subscribe_events\": true");
  if ((r.producer || r.recovery) && *profile == Profile::V004)
    return p.field(r.producer ? "producer" : "recovery").report("producer messaging does not exist in 0.0.4");
  for (std::size_t i = 0; i < r.tools.size(); ++i)
    if (r.tools[i].output.kind == "named" && *profile == Profile::V004)
      return p.field("tools").index(i).field("output").report("named output does not exist in 0.0.4 (TOOL-03)");
  return true;
}

Expected<BehaviourSpec, std::string> parseBehaviour(std::string_view text) {
  auto parsed = json::parse(text, json::ParseOptions{json::kDefaultMaxDepth, /*reject_duplicates=*/true});
  if (!parsed) return unexpected("behaviour: not valid JSON: " + parsed.error().message);
  return json::decode<BehaviourSpec>(parsed->doc, "behaviour");
}

// ---------------------------------------------------------------------------------------------
// Behaviour files: running
// ---------------------------------------------------------------------------------------------
namespace {

ToolResult toolResult(const ToolResponse& r, const std::vector<std::string>& declared, const ToolCall& call) {
  ToolResult out;
  if (r.streams) {
    std::vector<std::pair<std::string, std::string>> s;  // in declaration order
    for (const auto& stream : declared) s.emplace_back(stream, r.streams->at(stream));
    out = ToolResult::namedOutput(std::move(s), r.is_error);
  } else {
    std::string text;
    if (r.text) {
      text = *r.text;
    } else if (*r.echo == "*") {
      text = json::compact(call.arguments);
    } else if (const json::Value* a = json::member(call.arguments, *r.echo)) {
      text = a->IsString() ? std::string(a->GetString(), a->GetStringLength()) : json::compact(*a);
    }
    out = r.is_error ? ToolResult::error(std::move(text)) : ToolResult::success(std::move(text));
  }
  if (r.display) out.withDisplay(*r.display);
  return out;
}

// Runs the producer actions of a behaviour in one session: register, each send in order (one at
// a time, so receipts come back in order), optionally unregister, then `done` with the first error.
struct ProducerRun : std::enable_shared_from_this<ProducerRun> {
  ProducerSpec spec;
  std::string session;
  std::function<void(std::optional<std::string>)> done;
  std::optional<ProducerHandle> handle;
  std::size_t next = 0;

  void start(Context& ctx) {
    auto self = shared_from_this();
    ctx.registerProducer(session, [self](Result<ProducerHandle> h) {
      if (!h) return self->finish("register: " + h.error().str());
      self->handle = h.value();
      self->sendNext();
    });
  }
  void sendNext() {
    if (next >= spec.sends.size()) {
      if (!spec.unregister) return finish(std::nullopt);
      auto self = shared_from_this();
      return handle->unregister([self](Result<Ok> r) {
        self->finish(r ? std::nullopt : std::optional<std::string>("unregister: " + r.error().str()));
      });
    }
    const ProducerSendSpec& s = spec.sends[next++];
    auto self = shared_from_this();
    handle->send(s.body, s.description, *protocol::parseDeliveryMode(s.mode), IdempotencyKey::make(s.key).value(),
                 [self](Result<std::string> r) {
                   if (!r) return self->finish("send: " + r.error().str());
                   self->sendNext();
                 });
  }
  void finish(std::optional<std::string> err) {
    if (done) std::exchange(done, {})(std::move(err));
  }
};

}  // namespace

PluginBuilder behaviourBuilder(const BehaviourSpec& spec) {
  PluginBuilder b(spec.name, spec.version);
  const Profile profile = parseProfile(spec.profile).value_or(Profile::V006);
  b.profile(profile);
  for (const ToolSpec& t : spec.tools) {
    ToolDecl d;
    d.name = t.name;
    d.description = t.description;
    d.parameters = json::copy(t.parameters.get());
    d.permission_name = t.permission_name;
    d.primary_resource_param = t.primary_resource_param;
    d.output = t.output.kind == "named" ? OutputDecl::namedStreams(t.output.streams) : OutputDecl::single();
    ToolResponse resp = t.response;
    std::vector<std::string> declared = t.output.streams;
    b.tool(std::move(d), [resp, declared](Context ctx, ToolCall call, ToolReply reply) {
      auto answer = [resp, declared, call = std::make_shared<ToolCall>(std::move(call)), reply]() mutable {
        if (resp.error) return (void)reply.fail(ToolFailure{resp.error->code, resp.error->message});
        reply.ok(toolResult(resp, declared, *call));
      };
      if (resp.delay_ms == 0) return answer();
      ctx.after(std::chrono::milliseconds(resp.delay_ms), std::move(answer));
    });
  }
  if (spec.publish_bus) b.enableBusPublishing();
  if (spec.subscribe_bus) b.onBusEvent([](Context, const BusDelivery&, Completion) {});
  if (spec.subscribe_events) {
    // Per-run state shared by every event callback: how many emits each entry has left, and
    // which sessions already ran their producer actions.
    struct State {
      std::vector<std::uint64_t> left;
      std::set<std::string> producer_sessions;
    };
    auto st = std::make_shared<State>();
    for (const auto& e : spec.emits) st->left.push_back(e.count);
    auto emits = spec.emits;
    auto producer = spec.producer;
    b.onEvent([st, emits, producer](Context ctx, const EventDelivery& ev, Completion) {
      // One grant per event (SDK-06, EMIT-06): the first entry that still wants to emit uses it.
      for (std::size_t i = 0; i < emits.size(); ++i) {
        if (st->left[i] == 0 || (emits[i].event_type && *emits[i].event_type != ev.type())) continue;
        --st->left[i];
        ctx.emitBus(ev.session_id, emits[i].name, emits[i].payload.get(), [ctx](Result<EmitResult> r) {
          if (!r) ctx.log("conform-plugin: behaviour emit failed: " + r.error().str());
        });
        break;
      }
      if (producer && producer->on == "first_event" && st->producer_sessions.insert(ev.session_id).second) {
        auto run = std::make_shared<ProducerRun>();
        run->spec = *producer;
        run->session = ev.session_id;
        run->done = [ctx](std::optional<std::string> err) {
          if (err) ctx.log("conform-plugin: behaviour producer actions failed: " + *err);
        };
        run->start(ctx);
      }
    });
  }
  for (const auto& [name, h] : spec.hooks) {
    HookSpec hs = h;
    b.intercept(*parseHook(name), [hs](Context ctx, const json::Value&, HookReply r) {
      if (hs.delay_ms == 0) return (void)r.answer(json::copy(hs.answer.get()));
      ctx.after(std::chrono::milliseconds(hs.delay_ms), [hs, r]() mutable { r.answer(json::copy(hs.answer.get())); });
    });
  }
  if (spec.producer || spec.recovery) {
    b.enableProducers();
    RecoverySpec rec = spec.recovery.value_or(RecoverySpec{});
    std::optional<ProducerSpec> producer = spec.producer;
    b.onRecovery([rec, producer](Context ctx, RecoveryDone done) {
      auto outcome = [rec, ctx, done](std::optional<std::string> err) mutable {
        auto finish = [rec, err, done]() mutable {
          if (err) return (void)done.failed("producer actions failed: " + *err);
          if (rec.status == "failed") return (void)done.failed(rec.message.value_or(""));
          done.ready();
        };
        if (rec.delay_ms == 0) return finish();
        ctx.after(std::chrono::milliseconds(rec.delay_ms), std::move(finish));
      };
      if (producer && producer->on == "recovery") {
        auto run = std::make_shared<ProducerRun>();
        run->spec = *producer;
        run->session = *producer->session_id;
        run->done = std::move(outcome);
        return run->start(ctx);
      }
      outcome(std::nullopt);
    });
  }
  return b;
}

// ---------------------------------------------------------------------------------------------
// SDK-27: the producer example
// ---------------------------------------------------------------------------------------------

ProducerExampleEnv ProducerExampleEnv::fromProcess() {
  ProducerExampleEnv e;
  if (const char* s = std::getenv("COOKIE_SESSION_ID"); s && *s) e.session_id = s;
  if (const char* m = std::getenv("COOKIE_DISCARD_MESSAGE_ID"); m && *m) e.discard_message_id = m;
  return e;
}

std::string producerExampleKey(std::string_view session_id) {
  // Stable across restarts: a missing ACK is commit-uncertain, so a retry after reconnect must use
  // the same body, mode and key (SDK-23, PROD-15).
  return "conform-example:" + std::string(session_id) + ":greeting";
}

namespace {
constexpr const char* kExampleBody = "The conform producer example says hello.";
constexpr const char* kExampleDescription = "conform producer example greeting";

// Register, one stable-key steer, explicit unregister (the seed example's sequence).
void exampleProduce(Context ctx, std::string session, std::function<void(std::optional<std::string>)> done) {
  ctx.registerProducer(session, [session, done](Result<ProducerHandle> h) {
    if (!h) return done("register failed: " + h.error().str());
    ProducerHandle handle = h.value();
    handle.steer(kExampleBody, kExampleDescription, IdempotencyKey::make(producerExampleKey(session)).value(),
                 [handle, done](Result<std::string> receipt) mutable {
                   if (!receipt) return done("send failed: " + receipt.error().str());
                   handle.unregister([done](Result<Ok> r) {
                     done(r ? std::nullopt : std::optional<std::string>("unregister failed: " + r.error().str()));
                   });
                 });
  });
}
}  // namespace

PluginBuilder producerExample(const ProducerExampleEnv& env, const BehaviourOptions& o) {
  PluginBuilder b(o.name, o.version);
  b.profile(o.profile);  // 0.0.4 has no producer messaging: build() then refuses it (SDK-09)
  b.enableProducers();
  if (!env.session_id) {
    // Without a configured session the example produces into the session of the first event it sees.
    auto seen = std::make_shared<std::set<std::string>>();
    b.onEvent([seen](Context ctx, const EventDelivery& ev, Completion) {
      if (!seen->insert(ev.session_id).second) return;
      exampleProduce(ctx, ev.session_id, [ctx](std::optional<std::string> err) {
        if (err) ctx.log("conform-plugin: producer example: " + *err);
      });
    });
  }
  b.onRecovery([env](Context ctx, RecoveryDone done) {
    if (!env.session_id) return (void)done.ready();
    if (env.discard_message_id) {
      // Only the discard, no registration. A consumed or claimed receipt is refused by the engine,
      // and recovery then reports failed visibly instead of claiming a successful discard.
      ctx.discardProducerMessage(*env.session_id, *env.discard_message_id, [done](Result<Ok> r) mutable {
        if (r) return (void)done.ready();
        done.failed("discard of the saved receipt failed: " + r.error().str());
      });
      return;
    }
    exampleProduce(ctx, *env.session_id, [done](std::optional<std::string> err) mutable {
      if (err) return (void)done.failed(*err);
      done.ready();
    });
  });
  return b;
}

}  // namespace conform::plugin
