// See behaviour.h.
#include "mock_plugin/behaviour.h"

#include "mock_plugin/sdk_json.h"

namespace conform::plugin {

PluginBuilder builtinBehaviour(const BehaviourOptions& o) {
  PluginBuilder b(o.name, o.version);
  b.profile(o.profile);
  b.tool(makeTool("echo", "Echo text back to the model",
                  R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})", "echo"),
         [](Context, ToolCall call, ToolReply reply) {
           const json::Value* t = sj::member(call.arguments, "text");
           reply.ok(ToolResult::success(t && t->IsString() ? t->GetString() : "").withDisplay("echoed"));
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
           const json::Value* n = sj::member(call.arguments, "name");
           const json::Value* p = sj::member(call.arguments, "payload");
           static const json::Value kNull;
           auto shared = std::make_shared<ToolReply>(reply);
           ctx.emitBus(call.session_id, n && n->IsString() ? n->GetString() : "conform.publish", p ? *p : kNull,
                       [shared](Result<EmitResult> r) {
                         shared->ok(ToolResult::success(r ? std::string("bus: ") + toString(r->bus)
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

}  // namespace conform::plugin
