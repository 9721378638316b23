// core/protocol/producer.h — plugin/producer/* (PROTOCOL.md §14; 0.0.6 only, DELTA §3.6).
//
// The decoder of ProducerSendParams enforces the field validation of §14.4 as well (idempotency_key
// 1–256 bytes control-free, description nonblank control-free ≤ 1024 bytes; PROD-11, PROD-12): both
// are answered with -32602, so splitting them would gain nothing.
#pragma once

#include <string>

#include "core/protocol/common.h"

namespace conform::protocol {

struct ProducerRegisterParams {  // §14.3, PROD-05
  SessionId session_id;
  friend bool operator==(const ProducerRegisterParams&, const ProducerRegisterParams&) = default;
};
struct ProducerRegisterResult {  // §14.3, PROD-05
  ProducerId producer_id;
  friend bool operator==(const ProducerRegisterResult&, const ProducerRegisterResult&) = default;
};

struct ProducerSendParams {  // §14.4, PROD-09..13
  SessionId session_id;
  ProducerId producer_id;
  DeliveryMode mode = DeliveryMode::Steer;
  std::string idempotency_key;
  std::string description;
  std::string body;  // [chosen C9]
  friend bool operator==(const ProducerSendParams&, const ProducerSendParams&) = default;
};
struct ProducerSendResult {  // §14.4, PROD-09, PROD-44
  ProducerMessageId message_id;
  friend bool operator==(const ProducerSendResult&, const ProducerSendResult&) = default;
};

struct ProducerUnregisterParams {  // §14.5, PROD-23
  SessionId session_id;
  ProducerId producer_id;
  friend bool operator==(const ProducerUnregisterParams&, const ProducerUnregisterParams&) = default;
};
using ProducerUnregisterResult = Empty;

struct ProducerDiscardParams {  // §14.6, PROD-26
  SessionId session_id;
  ProducerMessageId message_id;
  friend bool operator==(const ProducerDiscardParams&, const ProducerDiscardParams&) = default;
};
using ProducerDiscardResult = Empty;

bool fromJSON(const json::Value&, ProducerRegisterParams&, json::Path);
json::Value toJSON(const ProducerRegisterParams&, json::Allocator&);
bool fromJSON(const json::Value&, ProducerRegisterResult&, json::Path);
json::Value toJSON(const ProducerRegisterResult&, json::Allocator&);
bool fromJSON(const json::Value&, ProducerSendParams&, json::Path);
json::Value toJSON(const ProducerSendParams&, json::Allocator&);
bool fromJSON(const json::Value&, ProducerSendResult&, json::Path);
json::Value toJSON(const ProducerSendResult&, json::Allocator&);
bool fromJSON(const json::Value&, ProducerUnregisterParams&, json::Path);
json::Value toJSON(const ProducerUnregisterParams&, json::Allocator&);
bool fromJSON(const json::Value&, ProducerDiscardParams&, json::Path);
json::Value toJSON(const ProducerDiscardParams&, json::Allocator&);

// Field checks of §14.4 on their own (the SDK validates keys client-side, SDK-10/PROD-11/12):
// nullopt when valid, else the reason.
std::optional<std::string> checkIdempotencyKey(std::string_view key);
std::optional<std::string> checkDescription(std::string_view description);

}  // namespace conform::protocol
