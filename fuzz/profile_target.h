// fuzz/profile_target.h — the body of fuzz_profile_0_0_6 and fuzz_profile_0_0_4: one profile's
// params/result checks, typed decoder against JSON Schema.
//
// Input layout: byte 0 picks the method (index into the profile's method table, modulo its size),
// byte 1 bit 0 picks the part (params / result), the rest is the JSON value.
//
// Invariants:
//  * neither Profile::validate nor the typed decoder crashes, on any value, for any method/part;
//  * a value the typed decoder accepts writes back (toJSON) to a value that the decoder reads to an
//    equal struct and that Profile::validate accepts — what conform's reference engine and plugin
//    send is built this way, so a failure here is conform emitting non-conforming traffic;
//  * agreement: tests/protocol/messages_test.cpp keeps decoder and schema in agreement on its good
//    and bad examples only; no profile promises agreement on every value. So a disagreement is a
//    crash only when CONFORM_FUZZ_STRICT=1 is set in the environment
//    (to hunt for the two descriptions drifting apart; see Fuzzing.md).
#pragma once

#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "core/json/json.h"
#include "core/protocol/emit.h"
#include "core/protocol/events.h"
#include "core/protocol/hooks.h"
#include "core/protocol/lifecycle.h"
#include "core/protocol/producer.h"
#include "core/protocol/profile.h"
#include "core/protocol/recovery.h"
#include "core/protocol/tools.h"
#include "fuzz/fuzz_common.h"

namespace conform::fuzz {

struct TypedOutcome {
  bool accepted = false;
  std::string error_path;   // when refused
  bool rereads_equal = false;
  json::Document written;   // toJSON of the decoded struct, when accepted
};

using TypedCodec = std::function<TypedOutcome(const json::Value&)>;

template <class T>
TypedOutcome typedRoundTrip(const json::Value& v) {
  TypedOutcome r;
  json::Path::Root root;
  T out{};
  if (!fromJSON(v, out, json::Path(root))) {
    r.error_path = root.errorPath();
    return r;
  }
  r.accepted = true;
  json::Value back = toJSON(out, r.written.GetAllocator());
  static_cast<json::Value&>(r.written) = back;  // move into the document that owns the allocator
  json::Path::Root root2;
  T again{};
  r.rereads_equal = fromJSON(r.written, again, json::Path(root2)) && again == out;
  return r;
}

// method name + part -> the typed codec of that shape in this profile (0.0.4 differs only in
// initialize and the tools/call result, DELTA-0.0.4).
inline std::map<std::pair<std::string_view, protocol::Part>, TypedCodec> typedCodecs(protocol::Profile::Id id) {
  namespace p = protocol;
  namespace m = protocol::method;
  using P = protocol::Part;
  const bool v006 = id == protocol::Profile::Id::V006;
  std::map<std::pair<std::string_view, P>, TypedCodec> t;
  t[{m::kInitialize, P::Params}] = v006 ? typedRoundTrip<p::InitializeParams> : typedRoundTrip<p::v004::InitializeParams>;
  t[{m::kInitialize, P::Result}] = v006 ? typedRoundTrip<p::InitializeResult> : typedRoundTrip<p::v004::InitializeResult>;
  t[{m::kPing, P::Params}] = typedRoundTrip<p::PingParams>;
  t[{m::kPing, P::Result}] = typedRoundTrip<p::PingResult>;
  t[{m::kShutdown, P::Params}] = typedRoundTrip<p::ShutdownParams>;
  t[{m::kToolsCall, P::Params}] = typedRoundTrip<p::ToolCallParams>;
  t[{m::kToolsCall, P::Result}] = v006 ? typedRoundTrip<p::ToolCallResult> : typedRoundTrip<p::v004::ToolCallResult>;
  t[{m::kEvent, P::Params}] = typedRoundTrip<p::EventParams>;
  t[{m::kBusEvent, P::Params}] = typedRoundTrip<p::BusEventParams>;
  t[{m::kEmit, P::Params}] = typedRoundTrip<p::EmitParams>;
  t[{m::kEmitResult, P::Params}] = typedRoundTrip<p::EmitResultParams>;
  t[{m::kToolBeforeCall, P::Params}] = typedRoundTrip<p::ToolBeforeCallParams>;
  t[{m::kToolBeforeCall, P::Result}] = typedRoundTrip<p::ToolBeforeCallResult>;
  t[{m::kToolAfterResult, P::Params}] = typedRoundTrip<p::ToolAfterResultParams>;
  t[{m::kToolAfterResult, P::Result}] = typedRoundTrip<p::ToolAfterResultResult>;
  t[{m::kAgentBeforeStart, P::Params}] = typedRoundTrip<p::AgentBeforeStartParams>;
  t[{m::kAgentBeforeStart, P::Result}] = typedRoundTrip<p::AgentBeforeStartResult>;
  t[{m::kSessionBeforeCompact, P::Params}] = typedRoundTrip<p::SessionBeforeCompactParams>;
  t[{m::kSessionBeforeCompact, P::Result}] = typedRoundTrip<p::SessionBeforeCompactResult>;
  t[{m::kUserBeforeInput, P::Params}] = typedRoundTrip<p::UserBeforeInputParams>;
  t[{m::kUserBeforeInput, P::Result}] = typedRoundTrip<p::UserBeforeInputResult>;
  t[{m::kModelBeforeRequest, P::Params}] = typedRoundTrip<p::ModelBeforeRequestParams>;
  t[{m::kModelBeforeRequest, P::Result}] = typedRoundTrip<p::ModelBeforeRequestResult>;
  t[{m::kProviderBeforeHeaders, P::Params}] = typedRoundTrip<p::ProviderBeforeHeadersParams>;
  t[{m::kProviderBeforeHeaders, P::Result}] = typedRoundTrip<p::ProviderBeforeHeadersResult>;
  t[{m::kProviderBeforeRequest, P::Params}] = typedRoundTrip<p::ProviderBeforeRequestParams>;
  t[{m::kProviderBeforeRequest, P::Result}] = typedRoundTrip<p::ProviderBeforeRequestResult>;
  t[{m::kProviderAfterResponse, P::Params}] = typedRoundTrip<p::ProviderAfterResponseParams>;
  t[{m::kProviderAfterResponse, P::Result}] = typedRoundTrip<p::ProviderAfterResponseResult>;
  t[{m::kMessageEnd, P::Params}] = typedRoundTrip<p::MessageEndParams>;
  t[{m::kMessageEnd, P::Result}] = typedRoundTrip<p::MessageEndResult>;
  t[{m::kModelBeforeSelect, P::Params}] = typedRoundTrip<p::ModelBeforeSelectParams>;
  t[{m::kModelBeforeSelect, P::Result}] = typedRoundTrip<p::AllowBlockResult>;
  t[{m::kSessionBeforeFork, P::Params}] = typedRoundTrip<p::SessionBeforeForkParams>;
  t[{m::kSessionBeforeFork, P::Result}] = typedRoundTrip<p::AllowBlockResult>;
  t[{m::kSessionBeforeRevert, P::Params}] = typedRoundTrip<p::SessionBeforeRevertParams>;
  t[{m::kSessionBeforeRevert, P::Result}] = typedRoundTrip<p::SessionBeforeRevertResult>;
  if (v006) {
    t[{m::kProducerRegister, P::Params}] = typedRoundTrip<p::ProducerRegisterParams>;
    t[{m::kProducerRegister, P::Result}] = typedRoundTrip<p::ProducerRegisterResult>;
    t[{m::kProducerSend, P::Params}] = typedRoundTrip<p::ProducerSendParams>;
    t[{m::kProducerSend, P::Result}] = typedRoundTrip<p::ProducerSendResult>;
    t[{m::kProducerUnregister, P::Params}] = typedRoundTrip<p::ProducerUnregisterParams>;
    t[{m::kProducerUnregister, P::Result}] = typedRoundTrip<p::ProducerUnregisterResult>;
    t[{m::kProducerDiscard, P::Params}] = typedRoundTrip<p::ProducerDiscardParams>;
    t[{m::kProducerDiscard, P::Result}] = typedRoundTrip<p::ProducerDiscardResult>;
    t[{m::kRecoveryStart, P::Params}] = typedRoundTrip<p::RecoveryStartParams>;
    t[{m::kRecoveryComplete, P::Params}] = typedRoundTrip<p::RecoveryCompleteParams>;
    t[{m::kRecoveryComplete, P::Result}] = typedRoundTrip<p::RecoveryCompleteResult>;
  }
  return t;
}

inline int runProfileTarget(const protocol::Profile& prof, const std::uint8_t* data, std::size_t size) {
  static const auto codecs = typedCodecs(prof.id());
  const bool strict = strictMode();

  ByteReader in(data, size);
  const auto methods = prof.methods();
  const protocol::MethodInfo& mi = methods[in.byte() % methods.size()];
  const protocol::Part part = (in.byte() & 1) ? protocol::Part::Result : protocol::Part::Params;
  auto parsed = json::parse(in.rest());
  if (!parsed) return 0;
  const json::Value& value = parsed->doc;

  const auto violation = prof.validate(mi.name, part, value);
  if (violation) (void)violation->str();
  auto it = codecs.find({mi.name, part});
  if (it == codecs.end()) {
    // Only the result of a notification has no shape; validate() must call that RPC-16.
    FUZZ_CHECK(part == protocol::Part::Result && !mi.isRequest(),
               std::string("no typed codec for ") + std::string(mi.name));
    FUZZ_CHECK(violation.has_value(), "a notification result validated");
    return 0;
  }
  const TypedOutcome typed = it->second(value);
  if (typed.accepted) {
    const std::string written = json::compact(typed.written);
    FUZZ_CHECK(typed.rereads_equal, std::string(mi.name) + ": toJSON does not read back equal: " + written);
    const auto v2 = prof.validate(mi.name, part, typed.written);
    FUZZ_CHECK(!v2.has_value(), std::string(mi.name) + ": toJSON(fromJSON(x)) fails validate: " +
                                    (v2 ? v2->str() : "") + " in " + written);
  }
  if (typed.accepted == violation.has_value()) {
    const std::string what = std::string(prof.version()) + " " + std::string(mi.name) + " " +
                             std::string(protocol::toString(part)) + ": typed decoder " +
                             (typed.accepted ? "accepts" : "refuses at " + typed.error_path) +
                             ", validate " + (violation ? "refuses: " + violation->str() : "accepts") +
                             " — " + json::compact(value);
    FUZZ_CHECK(!strict, what);
  }
  return 0;
}

}  // namespace conform::fuzz
