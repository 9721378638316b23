// mock_plugin/fixture_callbacks.cpp — callback, emit and saturation fixture tools (fixture.h,
// docs/sdk-fixture.md). The SDK rules they serve (PING-04, RPC-10, EVT-23, SDK-06/07/08/17/18/21/
// 22/26, TOOL-33, EMIT-25/26) are about what the SDK does around an author's handler; an engine
// sees them only when a handler is slow, panics or emits on demand, and only when the handler's
// answer reports what the SDK API returned. So every tool answers with one exact single-output
// text (a case matches it with `expect response $r {"output": {"text": "…"}}`):
//
//   fixture_sleep  {ms}                      answers "slept MS" after MS ms (a slow handler)
//   fixture_output {text, error?, display?}  ToolResult::success / ::error, display only if given
//   fixture_panic  {where}                   "tool": the handler throws; "event" / "bus": the next
//                                            delivery's handler throws (answers "armed WHERE");
//                                            "fired": "fired" once every armed panic fired (at
//                                            least one), else error -32000; "status":
//                                            "event_panics=N bus_panics=M"
//   fixture_emit   {name, on?, payload?, pad_bytes?, delay_ms?, tag?, group?, group_size?, after_answer?}
//                  on "call" (default): emits with the call's own grant, answers the SDK's outcome
//                  "[tag=T ]bus=B durable=D" (the EmitResult) or "[tag=T ]error=KIND" (local failure);
//                  on "event" / "hook": answers "armed event|hook"; the next plugin/event (or
//                  user_before_input hook) emits with ITS grant and the outcome is kept for
//                  fixture_status; `group`: the emit waits until `group_size` members arrived, then
//                  all emit at once in arrival order (several emits pending together); `delay_ms`
//                  delays the emit; `after_answer` (on call): answers "answered" first, then emits
//   fixture_status {what, count?}            "late_emit=OUTCOME" of the last after_answer emit, or
//                                            "armed=O1|O2|…" (armed outcomes in completion order,
//                                            "none" if empty), waiting up to 2 s for `count` of them
//
// Fixture faults (callbackFixtureFaults): most set one SdkDeviations knob (the SDK misbehaves);
// fixture_fifo_answers and fixture_error_sets_display make a fixture tool misbehave instead.
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>

#include "mock_plugin/fixture.h"

namespace conform::plugin {

namespace {

// Upper bounds of the fixture's own arguments: a case never needs more, and a typo must not keep a
// handler (and its slot) for minutes. 60 s is the DSL's longest `within` (docs/dsl.md).
constexpr std::int64_t kMaxSleepMs = 60000;
// pad_bytes up to 300,000: just past the engine's 262,144-byte payload limit (QUOTA-01), so an SDK
// author can see a `dropped` status by hand (the catalogue's cases do not: the monitors report an
// oversized emit against the plugin); the frame stays far below FRAME-16's 4 MiB.
constexpr std::int64_t kMaxPadBytes = 300000;
// group_size up to 8: EMIT-25 pairs three emits; SDK-06 two.
constexpr std::int64_t kMaxGroup = 8;

const std::vector<FixtureFault> kFaults = {
    {"ping_takes_slot", "PING-04", "plugin/ping needs a callback slot: refused with -32050 while 64 callbacks run"},
    {"fixture_fifo_answers", "RPC-10", "fixture_sleep answers in request order (a fast call waits for an earlier slow one)"},
    {"event_panic_fatal", "EVT-23", "a panicking event handler ends the plugin"},
    {"callback_limit_65", "SDK-17", "65 ordinary callbacks run concurrently before saturation"},
    {"busy_code_32603", "SDK-18", "the saturation error code is -32603 instead of -32050"},
    {"recovery_takes_slot", "SDK-21", "the recovery callback holds one of the 64 ordinary slots"},
    {"emit_result_needs_slot", "SDK-22", "plugin/emit_result and responses are dropped while every slot is busy"},
    {"tool_panic_code_32000", "SDK-26", "a panicking tool handler is answered -32000 instead of -32603"},
    {"fixture_error_sets_display", "TOOL-33", "ToolOutput::error also sets display to the error text"},
    {"emit_pairing_lifo", "EMIT-25", "plugin/emit_result pairs with the newest pending emit of that name"},
    {"emit_status_collapsed", "EMIT-26", "every bus status but published reaches the author as dropped (0.0.4's mapping)"},
    {"session_shared_grant", "SDK-06", "handler contexts share the newest grant of their session"},
    {"grant_outlives_answer", "SDK-07", "a request grant stays usable after the handler answered"},
    {"emit_optimistic", "SDK-08", "an emit that reached the wire is reported published, whatever the engine said"},
};

std::string outcome(const Result<EmitResult>& r) {
  if (!r) return std::string("error=") + toString(r.error().kind);
  return "bus=" + std::string(protocol::toString(r->bus)) + " durable=" + std::string(protocol::toString(r->durable));
}

std::int64_t intArg(const json::Value& args, const char* name, std::int64_t dflt) {
  const json::Value* v = json::member(args, name);
  return v && v->IsInt64() ? v->GetInt64() : dflt;
}
std::string strArg(const json::Value& args, const char* name, std::string dflt = {}) {
  return std::string(json::stringMember(args, name).value_or(dflt));
}

// One emit request of fixture_emit, run with the grant of whichever callback carries it out.
struct EmitPlan {
  std::string name, tag, group;
  std::int64_t group_size = 1, delay_ms = 0;
  std::shared_ptr<json::Document> payload;
};

struct State {
  std::string fault;
  bool is(std::string_view f) const { return fault == f; }
  // fixture_panic
  bool panic_event = false, panic_bus = false;
  int event_panics = 0, bus_panics = 0;
  // fixture_emit
  std::string late_emit = "none";
  std::deque<EmitPlan> armed_events, armed_hooks;
  std::vector<std::string> armed_outcomes;  // "[tag=T ]OUTCOME" of armed emits, in completion order
  std::map<std::string, std::vector<std::function<void()>>> groups;
  std::map<std::string, std::int64_t> group_sizes;
  // fixture_sleep under fixture_fifo_answers: answers leave in arrival order
  struct Held {
    std::shared_ptr<ToolReply> reply;
    std::string text;
    bool ready = false;
  };
  std::deque<std::shared_ptr<Held>> fifo;
  void flushFifo() {
    while (!fifo.empty() && fifo.front()->ready) {
      fifo.front()->reply->ok(ToolResult::success(fifo.front()->text));
      fifo.pop_front();
    }
  }
};

SdkDeviations deviationsFor(std::string_view fault) {
  SdkDeviations d;
  if (fault == "ping_takes_slot") d.ping_takes_slot = true;
  else if (fault == "event_panic_fatal") d.event_panic_fatal = true;
  else if (fault == "callback_limit_65") d.max_callbacks = kMaxCallbacks + 1;
  else if (fault == "busy_code_32603") d.busy_code = kInternalError;
  else if (fault == "recovery_takes_slot") d.recovery_takes_slot = true;
  else if (fault == "emit_result_needs_slot") d.replies_need_slot = true;
  else if (fault == "tool_panic_code_32000") d.panic_code = kToolFailureCode;
  else if (fault == "emit_pairing_lifo") d.emit_pairing_lifo = true;
  else if (fault == "emit_status_collapsed") d.emit_status_collapsed = true;
  else if (fault == "session_shared_grant") d.session_shared_grant = true;
  else if (fault == "grant_outlives_answer") d.grant_outlives_answer = true;
  else if (fault == "emit_optimistic") d.emit_optimistic = true;
  return d;
}

void addSleep(PluginBuilder& b, const std::shared_ptr<State>& st) {
  b.tool(makeTool("fixture_sleep", "SDK fixture: answer after the given number of milliseconds",
                  R"({"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":60000}},)"
                  R"("required":["ms"],"additionalProperties":false})",
                  "fixture_sleep"),
         [st](Context ctx, ToolCall call, ToolReply reply) {
           const std::int64_t ms = std::min(intArg(call.arguments, "ms", 0), kMaxSleepMs);
           auto shared = std::make_shared<ToolReply>(reply);
           std::string text = "slept " + std::to_string(ms);
           if (st->is("fixture_fifo_answers")) {
             auto held = std::make_shared<State::Held>(State::Held{shared, text});
             st->fifo.push_back(held);
             ctx.after(std::chrono::milliseconds(ms), [st, held] {
               held->ready = true;
               st->flushFifo();
             });
             return;
           }
           ctx.after(std::chrono::milliseconds(ms), [shared, text] { shared->ok(ToolResult::success(text)); });
         });
}

void addOutput(PluginBuilder& b, const std::shared_ptr<State>& st) {
  b.tool(makeTool("fixture_output", "SDK fixture: build a single output with ToolOutput::success or ::error",
                  R"({"type":"object","properties":{"text":{"type":"string"},"error":{"type":"boolean"},)"
                  R"("display":{"type":"string"}},"required":["text"],"additionalProperties":false})",
                  "fixture_output"),
         [st](Context, ToolCall call, ToolReply reply) {
           const std::string text = strArg(call.arguments, "text");
           const json::Value* e = json::member(call.arguments, "error");
           const bool error = e && e->IsBool() && e->GetBool();
           ToolResult r = error ? ToolResult::error(text) : ToolResult::success(text);  // TOOL-33
           if (auto d = json::stringMember(call.arguments, "display")) r.withDisplay(std::string(*d));
           else if (error && st->is("fixture_error_sets_display")) r.withDisplay(text);
           reply.ok(std::move(r));
         });
}

void addPanic(PluginBuilder& b, const std::shared_ptr<State>& st) {
  b.tool(makeTool("fixture_panic", "SDK fixture: make a handler panic (tool now; event or bus on its next delivery)",
                  R"({"type":"object","properties":{"where":{"enum":["tool","event","bus","status","fired"]}},)"
                  R"("required":["where"],"additionalProperties":false})",
                  "fixture_panic"),
         [st](Context, ToolCall call, ToolReply reply) {
           const std::string where = strArg(call.arguments, "where");
           if (where == "tool") throw std::runtime_error("fixture_panic: tool handler panics on purpose");
           if (where == "event") st->panic_event = true;
           if (where == "bus") st->panic_bus = true;
           if (where == "fired") {  // profile-neutral check that the armed panics happened
             if (st->panic_event || st->panic_bus || st->event_panics + st->bus_panics == 0)
               return (void)reply.fail(ToolFailure{kToolFailureCode, "an armed panic did not fire"});
             return (void)reply.ok(ToolResult::success("fired"));
           }
           if (where == "status")
             return (void)reply.ok(ToolResult::success("event_panics=" + std::to_string(st->event_panics) +
                                                       " bus_panics=" + std::to_string(st->bus_panics)));
           reply.ok(ToolResult::success("armed " + where));
         });
}

EmitPlan planFrom(const json::Value& args) {
  EmitPlan e;
  e.name = strArg(args, "name");
  e.tag = json::stringMember(args, "tag") ? "tag=" + strArg(args, "tag") + " " : "";
  e.group = strArg(args, "group");
  e.group_size = std::min(intArg(args, "group_size", 1), kMaxGroup);
  e.delay_ms = std::min(intArg(args, "delay_ms", 0), kMaxSleepMs);
  e.payload = std::make_shared<json::Document>(rapidjson::kObjectType);  // default {}
  if (const json::Value* p = json::member(args, "payload")) *e.payload = json::copy(*p);
  const std::int64_t pad = std::min(intArg(args, "pad_bytes", 0), kMaxPadBytes);
  if (pad > 0) {
    e.payload->SetObject();
    e.payload->AddMember("pad", json::str(std::string(static_cast<std::size_t>(pad), 'x'), e.payload->GetAllocator()),
                         e.payload->GetAllocator());
  }
  return e;
}

// Emits with ctx's own grant after the plan's delay and its group (every member of a group emits
// at once, in arrival order, when the last one arrived), then reports "[tag=T ]OUTCOME".
void runEmit(const std::shared_ptr<State>& st, const EmitPlan& plan, Context ctx, std::string session,
             std::function<void(std::string)> report) {
  auto emit = [ctx, session, plan, report]() mutable {
    ctx.emitBus(session, plan.name, *plan.payload,
                [report, tag = plan.tag](Result<EmitResult> r) { report(tag + outcome(r)); });
  };
  auto start = [st, plan, emit]() mutable {
    if (plan.group.empty()) return emit();
    auto& waiting = st->groups[plan.group];
    waiting.push_back(std::move(emit));
    if (static_cast<std::int64_t>(waiting.size()) < plan.group_size) return;
    auto all = std::move(waiting);
    st->groups.erase(plan.group);
    for (auto& fn : all) fn();
  };
  if (plan.delay_ms == 0) return start();
  ctx.after(std::chrono::milliseconds(plan.delay_ms), std::move(start));
}

std::string joined(const std::vector<std::string>& v) {
  if (v.empty()) return "none";
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "|") + x;
  return s;
}

// fixture_status waits until `count` armed outcomes exist, polling the server clock; 2 s bound
// (a case's `expect` default) so a lost outcome still gets an answer the case can judge.
constexpr int kStatusPolls = 200;
constexpr auto kStatusPollEvery = std::chrono::milliseconds(10);
void answerStatus(const std::shared_ptr<State>& st, Context ctx, std::shared_ptr<ToolReply> reply,
                  std::string what, std::size_t count, int polls_left) {
  if (what == "late_emit") return (void)reply->ok(ToolResult::success("late_emit=" + st->late_emit));
  if (st->armed_outcomes.size() >= count || polls_left <= 0)
    return (void)reply->ok(ToolResult::success("armed=" + joined(st->armed_outcomes)));
  ctx.after(kStatusPollEvery, [st, ctx, reply, what, count, polls_left] {
    answerStatus(st, ctx, reply, what, count, polls_left - 1);
  });
}

void addEmit(PluginBuilder& b, const std::shared_ptr<State>& st) {
  b.tool(makeTool("fixture_emit", "SDK fixture: emit on the bus with a grant and report the SDK's outcome",
                  R"({"type":"object","properties":{"name":{"type":"string"},"payload":{},)"
                  R"("on":{"enum":["call","event","hook"]},)"
                  R"("pad_bytes":{"type":"integer","minimum":0,"maximum":300000},)"
                  R"("delay_ms":{"type":"integer","minimum":0,"maximum":60000},"tag":{"type":"string"},)"
                  R"("group":{"type":"string"},"group_size":{"type":"integer","minimum":1,"maximum":8},)"
                  R"("after_answer":{"type":"boolean"}},"required":["name"],"additionalProperties":false})",
                  "fixture_emit"),
         [st](Context ctx, ToolCall call, ToolReply reply) {
           const EmitPlan plan = planFrom(call.arguments);
           const std::string on = strArg(call.arguments, "on", "call");
           if (on == "event" || on == "hook") {  // armed: the next delivery's grant emits
             (on == "event" ? st->armed_events : st->armed_hooks).push_back(plan);
             return (void)reply.ok(ToolResult::success("armed " + on));
           }
           const json::Value* aa = json::member(call.arguments, "after_answer");
           auto shared = std::make_shared<ToolReply>(reply);
           if (aa && aa->IsBool() && aa->GetBool()) {
             shared->ok(ToolResult::success("answered"));  // SDK-07: the request grant ends here
             ctx.emitBus(call.session_id, plan.name, *plan.payload,
                         [st](Result<EmitResult> r) { st->late_emit = outcome(r); });
             return;
           }
           runEmit(st, plan, ctx, call.session_id, [shared](std::string text) { shared->ok(ToolResult::success(text)); });
         });
  b.tool(makeTool("fixture_status", "SDK fixture: report the outcomes of emits made after an answer or by armed callbacks",
                  R"({"type":"object","properties":{"what":{"enum":["late_emit","armed"]},)"
                  R"("count":{"type":"integer","minimum":0,"maximum":8}},"required":["what"],"additionalProperties":false})",
                  "fixture_status"),
         [st](Context ctx, ToolCall call, ToolReply reply) {
           answerStatus(st, ctx, std::make_shared<ToolReply>(reply), strArg(call.arguments, "what"),
                        static_cast<std::size_t>(intArg(call.arguments, "count", 0)), kStatusPolls);
         });
  // Armed hook emits run in user_before_input, the first hook of a run (drive run): the handler
  // emits with the hook's grant after the plan's delay and answers `allow` once it has the outcome.
  b.userBeforeInput([st](Context ctx, const json::Value& params, HookReply reply) {
    if (st->armed_hooks.empty()) return (void)reply.answer(hooks::inputAllow());
    EmitPlan plan = st->armed_hooks.front();
    st->armed_hooks.pop_front();
    auto shared = std::make_shared<HookReply>(reply);
    runEmit(st, plan, ctx, std::string(json::stringMember(params, "session_id").value_or("")),
            [st, shared](std::string text) {
              st->armed_outcomes.push_back(std::move(text));
              shared->answer(hooks::inputAllow());
            });
  });
}

// The built-in behaviour's observers do nothing; these do nothing either unless armed (a panic by
// fixture_panic, an emit by fixture_emit {on: "event"}).
void addObservers(PluginBuilder& b, const std::shared_ptr<State>& st) {
  b.onEvent([st](Context ctx, const EventDelivery& ev, Completion) {
    if (st->panic_event) {
      st->panic_event = false;
      ++st->event_panics;
      throw std::runtime_error("fixture_panic: event handler panics on purpose");
    }
    if (st->armed_events.empty()) return;
    EmitPlan plan = st->armed_events.front();
    st->armed_events.pop_front();
    runEmit(st, plan, ctx, ev.session_id, [st](std::string text) { st->armed_outcomes.push_back(std::move(text)); });
  });
  b.onBusEvent([st](Context, const BusDelivery&, Completion) {
    if (!st->panic_bus) return;
    st->panic_bus = false;
    ++st->bus_panics;
    throw std::runtime_error("fixture_panic: bus handler panics on purpose");
  });
}

}  // namespace

const std::vector<FixtureFault>& callbackFixtureFaults() { return kFaults; }

void addCallbackFixtures(PluginBuilder& b, const BehaviourOptions& /*o*/, std::string_view fault) {
  auto st = std::make_shared<State>();
  st->fault = std::string(fault);
  addSleep(b, st);
  addOutput(b, st);
  addPanic(b, st);
  addEmit(b, st);
  addObservers(b, st);
  if (!fault.empty()) b.deviations(deviationsFor(fault));
}

}  // namespace conform::plugin
