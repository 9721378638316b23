// core/protocol/limits.h — every limit and timer of PROTOCOL.md §18 and every error code of §19, as
// named constants. Each constant cites its rule ID and section so a reviewer can check the number
// against the spec without searching. Nothing else in conform may spell these numbers: engine, SDK,
// monitors and scenarios use these names (or the kLimits table for listings).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace conform::protocol::limits {

// --- versions (§18 row 1; INIT-10, INIT-11) -------------------------------------------------------
inline constexpr std::string_view kVersion006 = "0.0.6";  // INIT-10, §6.1/§18 row 1: exact match
inline constexpr std::string_view kVersion004 = "0.0.4";  // DELTA §1: v004 profile version

// --- framing (§2, §18) ------------------------------------------------------------------------------
inline constexpr std::size_t kMaxFrameBytes = 4'194'304;  // FRAME-06/07, §2 F3, §18 row 2: bytes before LF, CR counted

// --- engine timers, defaults of plugins.<name>.* (§1.6, §18) ---------------------------------------
inline constexpr std::uint64_t kStartupTimeoutMsDefault = 10'000;      // INIT-18, §18 row 3
inline constexpr std::uint64_t kInterceptionTimeoutMsDefault = 2'000;  // HOOK-06, §18 row 4 (also the ping deadline, PING-03, row 5)
inline constexpr std::uint64_t kHookCallerSlackMs = 50;                // HOOK-06, §13.1 rule 3: caller waits timeout + 50 ms [impl]
inline constexpr std::uint64_t kToolTimeoutMsDefault = 30'000;         // TOOL-16, §18 row 6
inline constexpr std::uint64_t kShutdownGraceMsDefault = 3'000;        // SHUT-*, §18 row 7
inline constexpr std::uint64_t kReapAfterKillMs = 5'000;               // §7.2 step 4, §18 row 8 [impl]
inline constexpr std::uint64_t kRegistryShutdownExtraMs = 6'000;       // §7.2, §18 row 9: max grace + 6000 ms [impl]

// --- context grants (§11.3, §18) -------------------------------------------------------------------
inline constexpr std::uint64_t kNotificationGrantMs = 5'000;     // EMIT-10, §11.3, §18 row 10
inline constexpr std::uint64_t kRequestGrantSlackMs = 100;       // EMIT-08, §11.3, §18 row 11: cap = timeout + 100 ms [impl]
inline constexpr std::uint64_t kSdkNotificationGrantMs = 4'000;  // SDK grant, §17.3, §18 row 12
inline constexpr std::size_t kActiveGrantsPerPlugin = 1'024;     // §11.3, §18 row 13 [impl]
inline constexpr std::size_t kSpentTokenMemoryEntries = 256;     // §11.3, §18 row 14 [impl]
inline constexpr std::uint64_t kSpentTokenMemoryMs = 30'000;     // §11.3, §18 row 14 [impl]

// --- delivery (§9.1, §18) --------------------------------------------------------------------------
inline constexpr std::size_t kDeliveryQueueCapacity = 1'024;  // EVT-12, §9.1, §18 row 15
inline constexpr std::size_t kControlChannelCapacity = 1'024;  // HOOK-15, §13.1 rule 4, §18 row 16 [impl]

// --- publishing (§11.4, §12.1, §18) ------------------------------------------------------------------
inline constexpr std::size_t kEmitPayloadMaxBytes = 262'144;        // EMIT-23 row 4, §11.4 row 4, §18 row 17
inline constexpr std::size_t kEmitNameMaxChars = 128;               // EMIT-23 row 4, §11.1/§11.4 row 4, §18 row 18 (min 1)
inline constexpr std::size_t kEmitSerializedEventMaxBytes = 278'528;  // §11.4 row 4, §18 row 19 (never decisive on the wire, DELTA D7)
inline constexpr std::size_t kEmitRatePerSecond = 40;               // QUOTA-05, §12.1, §18 row 20
inline constexpr std::size_t kEmitBytesPerMinute = 4'194'304;       // QUOTA-06, §12.1, §18 row 21
inline constexpr std::uint64_t kQuotaSecondWindowMs = 1'000;        // QUOTA-07, §12.1 [impl]
inline constexpr std::uint64_t kQuotaMinuteWindowMs = 60'000;       // QUOTA-07, §12.1 [impl]

// --- diagnostics (§12.2, §18) -------------------------------------------------------------------------
inline constexpr std::size_t kDiagnosticMessageKeyChars = 200;    // QUOTA-11, §12.2, §18 row 22
inline constexpr std::size_t kDiagnosticDetailKeys = 256;         // QUOTA-12, §12.2, §18 row 23
inline constexpr std::uint64_t kDiagnosticFlushPeriodMs = 100;    // QUOTA-13, §12.2, §18 row 24
inline constexpr std::uint64_t kDiagnosticAppendTimeoutMs = 250;  // QUOTA-14, §12.2, §18 row 25
inline constexpr std::uint64_t kDiagnosticShutdownDrainMs = 5'000;  // QUOTA-15, §12.2, §18 row 26
inline constexpr std::string_view kDiagnosticOverflowMessage = "(overflow)";  // QUOTA-12, §12.2

// --- hook modification bounds (§13.2, §18) ---------------------------------------------------------------
inline constexpr std::size_t kSystemPromptMaxBytes = 131'072;      // HOOK-30, §13.2 agent_before_start, §18 row 27 [impl]
inline constexpr std::size_t kCompactionTextMaxBytes = 65'536;     // HOOK-35, §13.2 session_before_compact, §18 row 28 [impl]

// --- tools (§8.1, §18) -----------------------------------------------------------------------------------
inline constexpr std::size_t kNamedStreamsMin = 1;         // TOOL-03, §8.1, §18 row 30
inline constexpr std::size_t kNamedStreamsMax = 8;         // TOOL-03, §8.1, §18 row 30
inline constexpr std::size_t kStreamNameMaxChars = 64;     // TOOL-04, §8.1 [chosen C4], §18 row 30

// --- producer messaging (§14, §18) -----------------------------------------------------------------------
inline constexpr std::size_t kProducerHandlerTasks = 32;          // PROD-34, §14.1, §18 row 31
inline constexpr std::size_t kIdempotencyKeyMaxBytes = 256;       // PROD-11, §14.4, §18 row 32 (min 1)
inline constexpr std::size_t kDescriptionMaxBytes = 1'024;        // PROD-12, §14.4, §18 row 33

// --- SDK bounds (§17.4, §18) -------------------------------------------------------------------------------
inline constexpr std::size_t kSdkCallbackSlots = 64;         // SDK-17, §17.4, §18 row 35
inline constexpr std::size_t kSdkPendingProducerReplies = 128;  // SDK-19/20, §17.7, §18 row 36
inline constexpr std::size_t kSdkInboundQueueFrames = 32;    // SDK-19, §17.4, §18 row 37
inline constexpr std::size_t kSdkOutboundQueueFrames = 128;  // SDK-19, §17.4, §18 row 38
inline constexpr std::size_t kSdkRecoverySlots = 1;          // SDK-21, §17.4, §18 row 39

// --- engine request ids (§3.4, §18) -------------------------------------------------------------------------
inline constexpr std::int64_t kInitializeRequestId = 1;      // RPC-07, §3.4 [impl]
inline constexpr std::int64_t kFirstLaterEngineRequestId = 2;  // RPC-07, §3.4 [impl]

// --- configuration (§1.6, §18) ----------------------------------------------------------------------------
inline constexpr std::size_t kPluginNameMaxChars = 128;  // LIFE-07, §1.6, §18 row 41 (min 1, control-free)

}  // namespace conform::protocol::limits

namespace conform::protocol::errc {

// JSON-RPC error codes (§19). Parse/invalid-request codes are deliberately absent: malformed frames
// and envelopes are fatal, never answered (FRAME-13, §19 row 1).
inline constexpr std::int32_t kMethodNotFound = -32601;        // RPC-13, RPC-15, §19
inline constexpr std::int32_t kInvalidParams = -32602;         // HOOK-14, PROD-42, §19
inline constexpr std::int32_t kInternalError = -32603;         // HOOK-14, TOOL-31, §19
inline constexpr std::int32_t kServerError = -32000;           // TOOL-31, §19: SDK ToolFailure default
inline constexpr std::int32_t kProducerUnavailable = -32040;   // PROD-39, PROD-42, §19 [chosen C11]
inline constexpr std::int32_t kProducerOverloaded = -32041;    // PROD-34, §19 [chosen C11]
inline constexpr std::int32_t kStaleConnection = -32042;       // PROD-40, §19 [chosen C11]
inline constexpr std::int32_t kRegistrationInvalid = -32043;   // PROD-15/16/24, §19 [chosen C11]
inline constexpr std::int32_t kSessionUnavailable = -32044;    // PROD-15, §19 [chosen C11]
inline constexpr std::int32_t kIdempotencyConflict = -32045;   // PROD-19, §19 [chosen C11]
inline constexpr std::int32_t kMessageNotDiscardable = -32046;  // PROD-28, §19 [chosen C11]
inline constexpr std::int32_t kMessageClaimed = -32047;        // PROD-29, §19 [chosen C11]
inline constexpr std::int32_t kRecoveryConflict = -32048;      // RECOV-10, RECOV-17, §19 [chosen C16]
inline constexpr std::int32_t kDurableAcceptanceFailed = -32049;  // PROD-17, §19 [chosen C11]
inline constexpr std::int32_t kPluginBusy = -32050;            // SDK-17, §17.6, §19 [chosen C12]

}  // namespace conform::protocol::errc

namespace conform::protocol {

// One row of the limits listing (`conform profiles`). `value` is a plain number in `unit`.
struct LimitInfo {
  std::string_view name;
  std::uint64_t value;
  std::string_view unit;  // "bytes", "ms", "chars", "count", "per second", …
  std::string_view rule;  // rule ID(s) of RULES.md
  std::string_view section;  // PROTOCOL.md §
  bool v006_only = false;    // absent from the 0.0.4 profile
};

// Every limit and timer of §18 that has a number (the protocol version row is Profile::version()).
inline constexpr std::array kLimitTable = {
    LimitInfo{"frame_max_bytes", limits::kMaxFrameBytes, "bytes", "FRAME-06", "§2 F3, §18"},
    LimitInfo{"startup_timeout_ms_default", limits::kStartupTimeoutMsDefault, "ms", "INIT-18", "§18"},
    LimitInfo{"interception_timeout_ms_default", limits::kInterceptionTimeoutMsDefault, "ms", "HOOK-06", "§13.1, §18"},
    LimitInfo{"ping_deadline_ms_default", limits::kInterceptionTimeoutMsDefault, "ms", "PING-03", "§7.1, §18"},
    LimitInfo{"tool_timeout_ms_default", limits::kToolTimeoutMsDefault, "ms", "TOOL-16", "§18"},
    LimitInfo{"shutdown_grace_ms_default", limits::kShutdownGraceMsDefault, "ms", "SHUT-03", "§7.2, §18"},
    LimitInfo{"reap_after_kill_ms", limits::kReapAfterKillMs, "ms", "SHUT-07", "§7.2, §18"},
    LimitInfo{"registry_shutdown_extra_ms", limits::kRegistryShutdownExtraMs, "ms", "SHUT-07", "§7.2, §18"},
    LimitInfo{"notification_grant_ms", limits::kNotificationGrantMs, "ms", "EMIT-10", "§11.3, §18"},
    LimitInfo{"request_grant_slack_ms", limits::kRequestGrantSlackMs, "ms", "EMIT-08", "§11.3, §18"},
    LimitInfo{"sdk_notification_grant_ms", limits::kSdkNotificationGrantMs, "ms", "SDK-07", "§17.3, §18"},
    LimitInfo{"active_grants_per_plugin", limits::kActiveGrantsPerPlugin, "count", "EMIT-06", "§11.3, §18"},
    LimitInfo{"spent_token_memory_entries", limits::kSpentTokenMemoryEntries, "count", "EMIT-13", "§11.3, §18"},
    LimitInfo{"spent_token_memory_ms", limits::kSpentTokenMemoryMs, "ms", "EMIT-13", "§11.3, §18"},
    LimitInfo{"delivery_queue_capacity", limits::kDeliveryQueueCapacity, "count", "EVT-12", "§9.1, §18"},
    LimitInfo{"control_channel_capacity", limits::kControlChannelCapacity, "count", "HOOK-15", "§13.1, §18"},
    LimitInfo{"emit_payload_max_bytes", limits::kEmitPayloadMaxBytes, "bytes", "EMIT-23", "§11.4, §18"},
    LimitInfo{"emit_name_max_chars", limits::kEmitNameMaxChars, "chars", "EMIT-23", "§11.1, §18"},
    LimitInfo{"emit_serialized_event_max_bytes", limits::kEmitSerializedEventMaxBytes, "bytes", "EMIT-23", "§11.4, §18"},
    LimitInfo{"emit_rate_per_second", limits::kEmitRatePerSecond, "count/s", "QUOTA-05", "§12.1, §18"},
    LimitInfo{"emit_bytes_per_minute", limits::kEmitBytesPerMinute, "bytes/min", "QUOTA-06", "§12.1, §18"},
    LimitInfo{"diagnostic_message_key_chars", limits::kDiagnosticMessageKeyChars, "chars", "QUOTA-11", "§12.2, §18"},
    LimitInfo{"diagnostic_detail_keys", limits::kDiagnosticDetailKeys, "count", "QUOTA-12", "§12.2, §18"},
    LimitInfo{"diagnostic_flush_period_ms", limits::kDiagnosticFlushPeriodMs, "ms", "QUOTA-13", "§12.2, §18"},
    LimitInfo{"diagnostic_append_timeout_ms", limits::kDiagnosticAppendTimeoutMs, "ms", "QUOTA-14", "§12.2, §18"},
    LimitInfo{"diagnostic_shutdown_drain_ms", limits::kDiagnosticShutdownDrainMs, "ms", "QUOTA-15", "§12.2, §18"},
    LimitInfo{"system_prompt_max_bytes", limits::kSystemPromptMaxBytes, "bytes", "HOOK-30", "§13.2, §18"},
    LimitInfo{"compaction_text_max_bytes", limits::kCompactionTextMaxBytes, "bytes", "HOOK-35", "§13.2, §18"},
    LimitInfo{"named_streams_max", limits::kNamedStreamsMax, "count", "TOOL-03", "§8.1, §18", true},
    LimitInfo{"stream_name_max_chars", limits::kStreamNameMaxChars, "chars", "TOOL-04", "§8.1, §18", true},
    LimitInfo{"producer_handler_tasks", limits::kProducerHandlerTasks, "count", "PROD-34", "§14.1, §18", true},
    LimitInfo{"idempotency_key_max_bytes", limits::kIdempotencyKeyMaxBytes, "bytes", "PROD-11", "§14.4, §18", true},
    LimitInfo{"description_max_bytes", limits::kDescriptionMaxBytes, "bytes", "PROD-12", "§14.4, §18", true},
    LimitInfo{"sdk_callback_slots", limits::kSdkCallbackSlots, "count", "SDK-17", "§17.4, §18", true},
    LimitInfo{"sdk_pending_producer_replies", limits::kSdkPendingProducerReplies, "count", "SDK-19", "§17.7, §18", true},
    LimitInfo{"sdk_inbound_queue_frames", limits::kSdkInboundQueueFrames, "count", "SDK-19", "§17.4, §18"},
    LimitInfo{"sdk_outbound_queue_frames", limits::kSdkOutboundQueueFrames, "count", "SDK-19", "§17.4, §18"},
    LimitInfo{"sdk_recovery_slots", limits::kSdkRecoverySlots, "count", "SDK-21", "§17.4, §18", true},
    LimitInfo{"plugin_name_max_chars", limits::kPluginNameMaxChars, "chars", "LIFE-07", "§1.6, §18"},
};

}  // namespace conform::protocol
