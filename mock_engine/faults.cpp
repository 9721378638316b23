// mock_engine/faults — see faults.h. One row per fault; the rule IDs are spec/RULES.md's.
#include "mock_engine/faults.h"

#include "core/json/json.h"

namespace conform::engine {

const std::vector<EngineFaultInfo>& engineFaultTable() {
  using F = EngineFault;
  static const std::vector<EngineFaultInfo> t = {
      {"initialize_id_zero", "RPC-07", "sends plugin/initialize with id 0 instead of 1", F::InitializeIdZero},
      {"write_before_handshake", "INIT-07", "answers plugin requests before the initialize result is accepted", F::WriteBeforeHandshake},
      {"second_initialize", "INIT-01", "sends plugin/initialize again right after the handshake", F::SecondInitialize},
      {"accept_wrong_version", "INIT-11", "accepts any protocol_version string in the initialize result", F::AcceptWrongVersion},
      {"skip_name_check", "INIT-13", "accepts a reported name that differs from the configured one", F::SkipNameCheck},
      {"unknown_request_success", "RPC-13", "answers plugin requests for unknown methods with result {}", F::UnknownRequestSuccess},
      {"no_shutdown_notification", "SHUT-01", "never sends plugin/shutdown (only closes stdin)", F::NoShutdownNotification},
      {"no_stdin_close", "SHUT-02", "sends plugin/shutdown but never closes the plugin's stdin", F::NoStdinClose},
      {"tool_call_no_resource", "TOOL-05", "omits the member resource from plugin/tools/call", F::ToolCallNoResource},
      {"wrong_cancellation_token", "TOOL-19", "sends the context_id as cancellation_token", F::WrongCancellationToken},
      {"ignore_tool_timeout", "TOOL-16", "never times out a plugin tool call", F::IgnoreToolTimeout},
      {"deliver_unsubscribed", "EVT-01", "sends plugin/event to plugins without subscribe_events", F::DeliverUnsubscribed},
      {"deliver_before_persist", "EVT-04", "delivers events of a buffered session before it is persisted", F::DeliverBeforePersist},
      {"deliver_out_of_order", "EVT-05", "writes queued deliveries pairwise swapped (seq order broken)", F::DeliverOutOfOrder},
      {"deliver_text_delta", "EVT-08", "delivers text_delta and reasoning_delta events", F::DeliverTextDelta},
      {"deliver_own_diagnostic", "EVT-18", "delivers a plugin its own plugin_diagnostic records", F::DeliverOwnDiagnostic},
      {"deliver_own_bus", "BUS-01", "delivers a plugin its own bus publication", F::DeliverOwnBus},
      {"evict_terminal_first", "EVT-14", "on a full queue a terminal record evicts the oldest terminal before any chunk", F::EvictTerminalFirst},
      {"no_drop_diagnostic", "EVT-16", "counts dropped deliveries but records no event_drop diagnostic", F::NoDropDiagnostic},
      {"accept_reused_token", "EMIT-06", "accepts a context token that was already consumed", F::AcceptReusedToken},
      {"never_expire_tokens", "EMIT-10", "notification tokens never expire", F::NeverExpireTokens},
      {"grant_at_queue_time", "EMIT-11", "activates a delivery's grant when it is queued, not when written", F::GrantAtQueueTime},
      {"quota_off_by_one", "QUOTA-05", "admits 41 emits per second per (plugin, session)", F::QuotaOffByOne},
      {"no_emit_result", "EMIT-02", "sends no plugin/emit_result for published emits", F::NoEmitResult},
      {"emit_result_out_of_order", "EMIT-02", "holds each odd emit_result back and sends it after the next one", F::EmitResultOutOfOrder},
      {"durable_published", "EMIT-16", "reports durable \"published\" for bus emits in 0.0.6", F::DurablePublished},
      {"hook_fail_closed", "HOOK-07", "an error answer to a hook stalls the chain instead of failing open", F::HookFailClosed},
      {"ignore_hook_timeout", "HOOK-06", "hook calls are never timed out (interception_timeout_ms ignored)", F::IgnoreHookTimeout},
      {"dedup_by_producer_id", "PROD-18", "deduplicates sends on (session, producer_id, key) instead of (session, owner, key)", F::DedupByProducerId},
      {"accept_changed_retry", "PROD-19", "a reused key with another body returns the original message_id instead of -32045", F::AcceptChangedRetry},
      {"recovery_start_twice", "RECOV-02", "writes plugin/recovery/start twice after the handshake", F::RecoveryStartTwice},
      {"no_recovery_start", "RECOV-02", "never writes plugin/recovery/start after a producer-enabled handshake", F::NoRecoveryStart},
      {"hooks_before_settled", "LIFE-12", "runs user_before_input while plugins are still in their handshake (they miss it)", F::HooksBeforeSettled},
      {"hooks_by_name", "HOOK-04", "calls a hook's plugins in name order instead of registration order", F::HooksByName},
      {"context_per_plugin", "HOOK-11", "gives each plugin of a hook chain its own context_id", F::ContextPerPlugin},
      {"invalid_state_forwarded", "HOOK-09", "a blank user_before_input transform is diagnosed but still shown to the next plugin", F::InvalidStateForwarded},
      {"recovery_repeat_rejected", "RECOV-10", "rejects an identical repeat of plugin/recovery/complete with -32048", F::RecoveryRepeatRejected},
  };
  return t;
}

const EngineFaultInfo* findEngineFault(std::string_view name) {
  for (auto& f : engineFaultTable())
    if (name == f.name) return &f;
  return nullptr;
}

std::string applyToolCallFault(EngineFault f, const std::string& params_json) {
  if (f != EngineFault::ToolCallNoResource && f != EngineFault::WrongCancellationToken)
    return params_json;
  auto p = json::parse(params_json);
  if (!p || !p->doc.IsObject()) return params_json;
  json::Document& d = p->doc;
  if (f == EngineFault::ToolCallNoResource) d.RemoveMember("resource");
  if (f == EngineFault::WrongCancellationToken) {
    auto ctx = json::stringMember(d, "context_id");
    std::string token(ctx.value_or(""));
    if (d.HasMember("cancellation_token") && ctx)
      d["cancellation_token"].SetString(token.data(), static_cast<rapidjson::SizeType>(token.size()),
                                        d.GetAllocator());
  }
  return json::compact(d);
}

}  // namespace conform::engine
