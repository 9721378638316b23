// core/protocol/producer.cpp — codecs of §14 (producer messaging) and §15 (recovery), 0.0.6 only.
#include "core/protocol/producer.h"
#include "core/protocol/recovery.h"

#include "core/protocol/detail/codec.h"
#include "core/protocol/limits.h"

namespace conform::protocol {
using detail::ObjectWriter;

std::optional<std::string> checkIdempotencyKey(std::string_view key) {
  // PROD-11, §14.4: 1–256 bytes, control-free.
  if (key.empty() || key.size() > limits::kIdempotencyKeyMaxBytes)
    return "idempotency_key must be 1–256 bytes, found " + std::to_string(key.size());
  if (!isControlFree(key)) return std::string("idempotency_key must not contain control characters");
  return std::nullopt;
}
std::optional<std::string> checkDescription(std::string_view d) {
  // PROD-12, §14.4: nonblank, control-free, ≤ 1024 bytes.
  if (!isNonblank(d)) return std::string("description must not be blank");
  if (d.size() > limits::kDescriptionMaxBytes)
    return "description must be at most 1024 bytes, found " + std::to_string(d.size());
  if (!isControlFree(d)) return std::string("description must not contain control characters");
  return std::nullopt;
}

bool fromJSON(const json::Value& v, ProducerRegisterParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && detail::mapUuid(o, "session_id", r.session_id) && o.closed();
}
json::Value toJSON(const ProducerRegisterParams& r, json::Allocator& a) {
  return ObjectWriter(a).set("session_id", r.session_id).take();
}
bool fromJSON(const json::Value& v, ProducerRegisterResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && detail::mapUuid(o, "producer_id", r.producer_id) && o.closed();
}
json::Value toJSON(const ProducerRegisterResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("producer_id", r.producer_id).take();
}

bool fromJSON(const json::Value& v, ProducerSendParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !detail::mapUuid(o, "session_id", r.session_id) || !detail::mapUuid(o, "producer_id", r.producer_id) ||
      !o.map("mode", r.mode) || !o.map("idempotency_key", r.idempotency_key))
    return false;
  if (auto bad = checkIdempotencyKey(r.idempotency_key)) return p.field("idempotency_key").report(*bad);
  if (!o.map("description", r.description)) return false;
  if (auto bad = checkDescription(r.description)) return p.field("description").report(*bad);
  return o.map("body", r.body) && o.closed();
}
json::Value toJSON(const ProducerSendParams& r, json::Allocator& a) {
  return ObjectWriter(a)
      .set("session_id", r.session_id)
      .set("producer_id", r.producer_id)
      .set("mode", r.mode)
      .set("idempotency_key", r.idempotency_key)
      .set("description", r.description)
      .set("body", r.body)
      .take();
}
bool fromJSON(const json::Value& v, ProducerSendResult& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && detail::mapUuid(o, "message_id", r.message_id) && o.closed();
}
json::Value toJSON(const ProducerSendResult& r, json::Allocator& a) {
  return ObjectWriter(a).set("message_id", r.message_id).take();
}
bool fromJSON(const json::Value& v, ProducerUnregisterParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && detail::mapUuid(o, "session_id", r.session_id) && detail::mapUuid(o, "producer_id", r.producer_id) &&
         o.closed();
}
json::Value toJSON(const ProducerUnregisterParams& r, json::Allocator& a) {
  return ObjectWriter(a).set("session_id", r.session_id).set("producer_id", r.producer_id).take();
}
bool fromJSON(const json::Value& v, ProducerDiscardParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && detail::mapUuid(o, "session_id", r.session_id) && detail::mapUuid(o, "message_id", r.message_id) &&
         o.closed();
}
json::Value toJSON(const ProducerDiscardParams& r, json::Allocator& a) {
  return ObjectWriter(a).set("session_id", r.session_id).set("message_id", r.message_id).take();
}

std::string_view toString(OutcomeStatus s) { return s == OutcomeStatus::Ready ? "ready" : "failed"; }
std::optional<OutcomeStatus> parseOutcomeStatus(std::string_view s) {
  if (s == "ready") return OutcomeStatus::Ready;
  if (s == "failed") return OutcomeStatus::Failed;
  return std::nullopt;
}
static bool fromJSON(const json::Value& v, OutcomeStatus& out, json::Path p) {
  if (!v.IsString()) return p.report(std::string("expected \"ready\" or \"failed\", found ") + json::typeName(v));
  auto s = parseOutcomeStatus(std::string_view(v.GetString(), v.GetStringLength()));
  if (!s) return p.report("expected \"ready\" or \"failed\"");
  out = *s;
  return true;
}

bool fromJSON(const json::Value& v, RecoveryOutcome& r, json::Path p) {
  json::ObjectMapper o(v, p);
  if (!o || !o.map("status", r.status)) return false;
  r.message.reset();
  if (r.status == OutcomeStatus::Failed) {
    std::string msg;
    if (!o.map("message", msg)) return false;
    r.message = std::move(msg);
  }
  return o.closed();  // `message` beside "ready" is an unknown member
}
json::Value toJSON(const RecoveryOutcome& r, json::Allocator& a) {
  ObjectWriter w(a);
  w.set("status", r.status);
  if (r.status == OutcomeStatus::Failed) w.set("message", r.message.value_or(std::string()));
  return w.take();
}
bool fromJSON(const json::Value& v, RecoveryCompleteParams& r, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.map("outcome", r.outcome) && o.closed();
}
json::Value toJSON(const RecoveryCompleteParams& r, json::Allocator& a) {
  return ObjectWriter(a).set("outcome", r.outcome).take();
}

}  // namespace conform::protocol
