// core/protocol/recovery.h — plugin/recovery/start and plugin/recovery/complete (PROTOCOL.md §15;
// 0.0.6 only, DELTA §3.6).
#pragma once

#include <optional>
#include <string>

#include "core/protocol/common.h"

namespace conform::protocol {

using RecoveryStartParams = Empty;  // exactly {} (RECOV-01)

// ExtensionRecoveryOutcome (§15.2, closed, tagged by `status`; RECOV-05):
// {"status":"ready"} or {"status":"failed","message":string}. `message` is present iff failed.
enum class OutcomeStatus : std::uint8_t { Ready, Failed };
std::string_view toString(OutcomeStatus);
std::optional<OutcomeStatus> parseOutcomeStatus(std::string_view);

struct RecoveryOutcome {
  OutcomeStatus status = OutcomeStatus::Ready;
  std::optional<std::string> message;  // required for failed, absent for ready [chosen C25: any string]
  static RecoveryOutcome ready() { return {}; }
  static RecoveryOutcome failed(std::string msg) { return {OutcomeStatus::Failed, std::move(msg)}; }
  friend bool operator==(const RecoveryOutcome&, const RecoveryOutcome&) = default;
};
bool fromJSON(const json::Value&, RecoveryOutcome&, json::Path);
json::Value toJSON(const RecoveryOutcome&, json::Allocator&);

struct RecoveryCompleteParams {  // §15.2, RECOV-05
  RecoveryOutcome outcome;
  friend bool operator==(const RecoveryCompleteParams&, const RecoveryCompleteParams&) = default;
};
bool fromJSON(const json::Value&, RecoveryCompleteParams&, json::Path);
json::Value toJSON(const RecoveryCompleteParams&, json::Allocator&);

using RecoveryCompleteResult = Empty;

}  // namespace conform::protocol
