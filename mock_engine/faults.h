// mock_engine/faults — the engine fault gallery (`conform-engine --fault NAME`, `--list-faults`)
// for issue 7: `conform check-engine` must catch each of these. Every fault breaks exactly one rule
// the way real engines get it wrong, on top of the conforming reference engine. Faults are data
// (name, rule ID, one-line description, id); the engine code tests `Impl::has(EngineFault::X)` at
// the one place the fault changes. engine3 appends rows for hooks, producers, recovery and the
// journal (ACKs before durable, dedup by producer id, recovery/start twice, hook chain out of order,
// no fail-open): add an enumerator before `Count_` and a row in faults.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace conform::engine {

enum class EngineFault {
  None = 0,
  // lifecycle, envelope, handshake
  InitializeIdZero, WriteBeforeHandshake, SecondInitialize, AcceptWrongVersion, SkipNameCheck,
  UnknownRequestSuccess, NoShutdownNotification, NoStdinClose,
  // tools
  ToolCallNoResource, WrongCancellationToken, IgnoreToolTimeout,
  // events and bus
  DeliverUnsubscribed, DeliverBeforePersist, DeliverOutOfOrder, DeliverTextDelta,
  DeliverOwnDiagnostic, DeliverOwnBus, EvictTerminalFirst, NoDropDiagnostic,
  // emits, grants, quotas
  AcceptReusedToken, NeverExpireTokens, GrantAtQueueTime, QuotaOffByOne, NoEmitResult,
  EmitResultOutOfOrder, DurablePublished,
  // hooks, producers, recovery
  HookFailClosed, IgnoreHookTimeout, DedupByProducerId, AcceptChangedRetry, RecoveryStartTwice,
  NoRecoveryStart, RecoveryRepeatRejected, HooksBeforeSettled, HooksByName, ContextPerPlugin,
  InvalidStateForwarded,
  Count_
};

struct EngineFaultInfo {
  const char* name;
  const char* rule;         // the RULES.md ID it breaks
  const char* description;  // one line
  EngineFault id;
};

const std::vector<EngineFaultInfo>& engineFaultTable();
const EngineFaultInfo* findEngineFault(std::string_view name);

// The plugin/tools/call params as the faulty engine writes them (TOOL-05: no `resource`; TOOL-19:
// cancellation_token = context_id). Unchanged for every other fault.
std::string applyToolCallFault(EngineFault f, const std::string& params_json);

}  // namespace conform::engine
