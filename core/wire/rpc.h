// core/wire/rpc — the JSON-RPC 2.0 envelope layer (PROTOCOL.md §3, §19; RULES.md RPC-*, FRAME-11/13/19).
//
//  * decodeMessage(): parse one frame and classify it exactly as PROTOCOL §3.2 (method+id → request,
//    method → notification, otherwise response), then check the closed envelope of §3.1. Every
//    failure is an EnvelopeError value naming the rule it breaks and the member at fault; nothing
//    throws. Duplicate member names are reported but never fatal (FRAME-19); as in R4 the LAST
//    occurrence of a duplicated envelope member wins.
//  * Encoders: compact frame text without the LF (Channel::writeFrame adds it).
//  * RpcId keeps the exact JSON type (integer / string / null) so answers echo it verbatim (RPC-08).
//  * IdAllocator, PendingRequests, ReplyOnce: the bookkeeping of one side of a connection.
//
// Id spaces (RPC-18, PROTOCOL §3.4): engine→plugin requests and plugin→engine requests number
// independently, and a response is matched only against requests that travelled the OTHER way.
// So a PendingRequests table is bound to one Direction at construction (the way its requests
// travel), and resolve() takes the direction the response travelled and refuses a mismatch. A
// side that both sends and serves requests has one PendingRequests (its own calls) and answers
// the peer's calls through ReplyOnce; the two never share a table.
#pragma once

#include <algorithm>
#include <compare>
#include <concepts>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::wire {

// ---------------------------------------------------------------------------------------------
// Error codes (PROTOCOL §19). -32700 / -32600 do not exist here: malformed frames and envelopes
// are fatal, never answered (FRAME-13, PROTOCOL §3.1).
// ---------------------------------------------------------------------------------------------
inline constexpr std::int32_t kMethodNotFound = -32601;  // RPC-13, RPC-15: unknown method / tool / hook
inline constexpr std::int32_t kInvalidParams = -32602;   // RPC-12: params fail strict decoding
inline constexpr std::int32_t kInternalError = -32603;   // §19: handler panicked / dropped the request
inline constexpr std::int32_t kServerError = -32000;     // §19: default code of SDK ToolFailure::new
// §19 [chosen] C11: producer / recovery errors sent by the engine, -32040 … -32049.
inline constexpr std::int32_t kProducerUnavailable = -32040;
inline constexpr std::int32_t kProducerOverloaded = -32041;       // 32 producer handlers running
inline constexpr std::int32_t kStaleConnection = -32042;
inline constexpr std::int32_t kRegistrationInvalid = -32043;
inline constexpr std::int32_t kSessionUnavailable = -32044;
inline constexpr std::int32_t kIdempotencyConflict = -32045;
inline constexpr std::int32_t kMessageNotDiscardable = -32046;
inline constexpr std::int32_t kMessageClaimed = -32047;
inline constexpr std::int32_t kRecoveryConflict = -32048;
inline constexpr std::int32_t kDurableAcceptanceFailed = -32049;
inline constexpr std::int32_t kProducerCodeFirst = -32049;  // range bounds (inclusive)
inline constexpr std::int32_t kProducerCodeLast = -32040;
inline constexpr std::int32_t kPluginBusy = -32050;  // §19 [chosen] C12: SDK, all 64 callback slots used

// "method not found", "producer overloaded", … ; "unknown" for codes outside §19.
const char* errorCodeName(std::int32_t code);

// ---------------------------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------------------------

// RPC-05: an id is a JSON integer in the int64 range, a string, or null. The JSON type is kept so
// an answer echoes it exactly (RPC-08, RPC-17): 1 and "1" are different ids.
// Ordering (for maps): null < integers < strings.
class RpcId {
 public:
  enum class Type : std::uint8_t { Null, Integer, String };

  RpcId() = default;  // null
  // Any signed integer (a template so that RpcId(0) is not taken for a null const char*).
  template <std::signed_integral I>
  explicit RpcId(I v) : v_(static_cast<std::int64_t>(v)) {}
  explicit RpcId(std::string v) : v_(std::move(v)) {}
  explicit RpcId(const char* v) : v_(std::string(v)) {}

  // nullopt when `v` is not an allowed id (1.5, 1.0, 2^63, true, {}, []).
  static std::optional<RpcId> fromJSON(const json::Value& v);

  Type type() const { return static_cast<Type>(v_.index()); }
  bool isNull() const { return v_.index() == 0; }
  bool isInteger() const { return v_.index() == 1; }
  bool isString() const { return v_.index() == 2; }
  std::int64_t integer() const { return isInteger() ? std::get<1>(v_) : 0; }
  const std::string& string() const;  // empty unless isString()

  json::Value toJSON(json::Allocator& a) const;
  // Compact JSON text: 5, "r-1", null. Used in frames and messages alike.
  std::string render() const;
  void appendTo(std::string& out) const;

  friend bool operator==(const RpcId& a, const RpcId& b) { return a.v_ == b.v_; }
  friend bool operator<(const RpcId& a, const RpcId& b) { return a.v_ < b.v_; }

 private:
  std::variant<std::monostate, std::int64_t, std::string> v_;
};

struct RpcIdHash {
  std::size_t operator()(const RpcId& id) const;
};

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

// The way a frame travels; selects FRAME-04 (plugin frames, judged by the engine) or FRAME-05
// (engine frames, judged by the SDK) and is the key of the id spaces (RPC-18).
enum class Direction : std::uint8_t { EngineToPlugin, PluginToEngine };
const char* toString(Direction);  // "e2p", "p2e"
inline Direction opposite(Direction d) {
  return d == Direction::EngineToPlugin ? Direction::PluginToEngine : Direction::EngineToPlugin;
}

enum class MessageKind : std::uint8_t { Request, Notification, Success, Error };
const char* toString(MessageKind);  // "request", "notification", "success", "error"

struct ErrorObject {
  std::int32_t code = 0;
  std::string_view message;           // points into the message's document
  const json::Value* data = nullptr;  // absent → nullptr
};

// One decoded message. Views (method, params, result, error.message, error.data, id_value) point
// into the document the message owns, or — for decodeMessage(const json::Value&) — into the
// caller's value, which must then outlive the Message. Movable (pointers stay valid: they never
// point at the document root, whose storage moves).
struct Message {
  MessageKind kind = MessageKind::Notification;
  RpcId id;                              // Request / Success / Error (null for a Notification)
  const json::Value* id_value = nullptr; // the id exactly as received
  std::string_view method;               // Request / Notification
  const json::Value* params = nullptr;   // any JSON (RPC-11 object-ness is the method layer's job)
  const json::Value* result = nullptr;   // Success
  ErrorObject error;                     // Error
  std::vector<std::string> duplicates;   // FRAME-19: JSON paths of repeated member names
  std::string raw;                       // the frame text (empty when not kept)

  bool isRequest() const { return kind == MessageKind::Request; }
  bool isNotification() const { return kind == MessageKind::Notification; }
  bool isResponse() const { return kind == MessageKind::Success || kind == MessageKind::Error; }
  bool hasParams() const { return params != nullptr; }
  const json::Value& root() const { return *root_; }

  std::shared_ptr<const json::Document> document() const { return doc_; }

  // Internal: set by the decoders.
  std::shared_ptr<json::Document> doc_;  // null when the value is borrowed
  const json::Value* root_ = nullptr;
};

enum class EnvelopeErrorKind : std::uint8_t {
  InvalidUtf8,            // FRAME-04 / FRAME-05
  MalformedJson,          // FRAME-13 (FRAME-10 for an empty frame, FRAME-14 for a BOM)
  TooDeep,                // FRAME-13: nesting beyond the parse limit — we cannot decode it
  NonFinite,              // FRAME-13: a number outside double range (R4's decoder refuses it)
  NotObject,              // FRAME-11: array (batch) or scalar
  BadJsonrpc,             // RPC-01: jsonrpc missing or not exactly "2.0"
  BadId,                  // RPC-05: id missing from a response, or not int64 / string / null
  UnknownMember,          // RPC-03: a member the envelope kind does not have
  ResultAndError,         // RPC-04
  NeitherResultNorError,  // RPC-04
  BadMethod,              // RPC-03: method is not a string
  BadErrorObject,         // RPC-03: error is not {code:int32, message:string, data?}
};
const char* toString(EnvelopeErrorKind);

struct EnvelopeError {
  EnvelopeErrorKind kind = EnvelopeErrorKind::MalformedJson;
  const char* rule = "FRAME-13";       // the rule ID the frame breaks
  std::string message;                 // names the member / path, e.g. `id: expected …, found number`
  std::size_t offset = 0;              // byte offset for parse-level errors (0 otherwise)
  std::vector<std::string> duplicates; // FRAME-19, when the frame parsed
  // What the frame was classified as (§3.2) when it got that far, and its id when decodable —
  // lets a monitor say "the response to request 7 was malformed".
  std::optional<MessageKind> classified_as;
  std::optional<RpcId> id;
  std::string str() const;             // "RPC-03: member \"x\" is not allowed in a request"
};

struct DecodeOptions {
  json::ParseOptions parse{};          // depth limit (duplicates are reported, never rejected)
  std::optional<Direction> direction;  // selects FRAME-04 vs FRAME-05 for invalid UTF-8
  bool keep_raw = true;                // copy the frame text into Message::raw
};

// Parses and classifies one frame (without LF; the framing layer has stripped LF and CR).
Expected<Message, EnvelopeError> decodeMessage(std::string_view frame, const DecodeOptions& = {});
// Takes an already-parsed document over (no re-parse); duplicates are carried over.
Expected<Message, EnvelopeError> decodeMessage(json::Parsed&& parsed, const DecodeOptions& = {});
// Classifies a value owned by the caller (e.g. the "frame" member of a trace line). The Message
// borrows it: keep the value alive and unmoved while the Message is used.
Expected<Message, EnvelopeError> decodeMessage(const json::Value& frame, const DecodeOptions& = {});
// The same into a Message the caller reuses (lint decodes every frame of a trace: no Message is
// built, moved and destroyed per frame). `out` is first reset to a fresh Message's state, buffers
// kept; on an error it is left reset. A field added to Message must be reset there too (a test
// compares with decodeMessage).
std::optional<EnvelopeError> decodeMessageInto(const json::Value& frame, Message& out);

// ---------------------------------------------------------------------------------------------
// Encoding: compact frame text, no LF. Senders always include params (RPC-11); to send a frame
// without params on purpose (fault injection) write the text by hand.
// ---------------------------------------------------------------------------------------------
std::string encodeRequest(const RpcId& id, std::string_view method, const json::Value& params);
std::string encodeNotification(std::string_view method, const json::Value& params);
std::string encodeResult(const RpcId& id, const json::Value& result);
std::string encodeError(const RpcId& id, std::int32_t code, std::string_view message,
                        const json::Value* data = nullptr);
// Same, with params / result given as JSON text the caller has already serialised (trusted: it
// is inserted verbatim).
std::string encodeRequestRaw(const RpcId& id, std::string_view method, std::string_view params_json);
std::string encodeNotificationRaw(std::string_view method, std::string_view params_json);
std::string encodeResultRaw(const RpcId& id, std::string_view result_json);

// ---------------------------------------------------------------------------------------------
// Id allocation
// ---------------------------------------------------------------------------------------------

// One per connection and direction. Engine style (RPC-07): plugin/initialize takes 1, every later
// request the next integer from the same counter. Plugin style (RPC-21, C24): integers from 1.
// The counter never wraps: after INT64_MAX it reports overflow (fatal for the engine, RPC-07).
class IdAllocator {
 public:
  explicit IdAllocator(std::int64_t first = 1) : next_(first) {}
  static IdAllocator engine() { return IdAllocator(1); }
  static IdAllocator plugin() { return IdAllocator(1); }

  // The next id, or an error naming RPC-07 once the int64 range is used up.
  Expected<RpcId, std::string> next();
  std::optional<std::int64_t> peek() const;  // nullopt once exhausted
  std::uint64_t issued() const { return issued_; }

 private:
  std::int64_t next_;
  bool exhausted_ = false;
  std::uint64_t issued_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Outstanding requests
// ---------------------------------------------------------------------------------------------

// Why a response could not be matched (RPC-08 answer once, RPC-09 ignore unknown/late ids).
enum class ResolveError : std::uint8_t {
  UnknownId,        // never sent (or forgotten long ago)
  AlreadyAnswered,  // a second response to the same request (RPC-08)
  TimedOut,         // answered after expire() gave the request up (RPC-09)
  WrongDirection,   // the response travelled the same way as the requests (RPC-18)
};
const char* toString(ResolveError);

enum class AddError : std::uint8_t { Full, DuplicateId };
const char* toString(AddError);

// The requests WE sent on one direction, with their deadlines. Bounded: add() fails when
// `capacity` requests are outstanding. Remembers the last kHistory closed ids so a late or
// repeated response is told apart from one with an id never sent.
template <class T = std::monostate>
class PendingRequests {
 public:
  // Closed ids remembered for diagnostics; older ones are reported as UnknownId. Bounds memory on
  // a connection that sends millions of requests.
  static constexpr std::size_t kHistory = 4096;

  struct Entry {
    RpcId id;
    std::string method;
    clock::TimePoint deadline;
    T data{};
  };

  // `requests` is the way our requests travel; responses are expected on opposite(requests).
  PendingRequests(Direction requests, std::size_t capacity) : dir_(requests), capacity_(capacity) {}

  Direction requestDirection() const { return dir_; }
  Direction responseDirection() const { return opposite(dir_); }

  Expected<Ok, AddError> add(RpcId id, std::string method, clock::TimePoint deadline, T data = {}) {
    if (live_.size() >= capacity_) return unexpected(AddError::Full);
    if (live_.count(id)) return unexpected(AddError::DuplicateId);
    Entry e{id, std::move(method), deadline, std::move(data)};
    live_.emplace(std::move(id), std::move(e));
    return Ok{};
  }

  // Matches a response that travelled `response_dir`. Each request resolves at most once.
  Expected<Entry, ResolveError> resolve(const RpcId& id, Direction response_dir) {
    if (response_dir != responseDirection()) return unexpected(ResolveError::WrongDirection);
    auto it = live_.find(id);
    if (it == live_.end()) {
      auto h = closed_.find(id);
      if (h == closed_.end()) return unexpected(ResolveError::UnknownId);
      return unexpected(h->second ? ResolveError::TimedOut : ResolveError::AlreadyAnswered);
    }
    Entry e = std::move(it->second);
    live_.erase(it);
    remember(e.id, /*timed_out=*/false);
    return e;
  }

  // Removes and returns every request whose deadline is <= now, earliest deadline first.
  std::vector<Entry> expire(clock::TimePoint now) {
    std::vector<Entry> out;
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.deadline <= now) {
        out.push_back(std::move(it->second));
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Entry& a, const Entry& b) { return a.deadline < b.deadline; });
    for (const auto& e : out) remember(e.id, /*timed_out=*/true);
    return out;
  }

  // Drops every outstanding request (connection closed); returns them.
  std::vector<Entry> clear() {
    std::vector<Entry> out;
    for (auto& [id, e] : live_) out.push_back(std::move(e));
    live_.clear();
    return out;
  }

  const Entry* find(const RpcId& id) const {
    auto it = live_.find(id);
    return it == live_.end() ? nullptr : &it->second;
  }
  // Earliest deadline, or TimePoint::max() when nothing is outstanding.
  clock::TimePoint nextDeadline() const {
    auto best = clock::TimePoint::max();
    for (const auto& [id, e] : live_) best = std::min(best, e.deadline);
    return best;
  }
  std::size_t size() const { return live_.size(); }
  bool empty() const { return live_.empty(); }
  std::size_t capacity() const { return capacity_; }

 private:
  void remember(const RpcId& id, bool timed_out) {
    if (closed_.insert_or_assign(id, timed_out).second) order_.push_back(id);
    while (order_.size() > kHistory) {
      closed_.erase(order_.front());
      order_.pop_front();
    }
  }
  Direction dir_;
  std::size_t capacity_;
  std::map<RpcId, Entry> live_;
  std::map<RpcId, bool> closed_;  // id → timed out (true) / answered (false)
  std::deque<RpcId> order_;
};

// ---------------------------------------------------------------------------------------------
// One reply per request (clangd's ReplyOnce)
// ---------------------------------------------------------------------------------------------

// Receives one compact frame (no LF).
using FrameSink = std::function<void(std::string frame)>;

// Held by whoever handles a request. reply()/error() send exactly once (RPC-08); a second call is
// refused (returns false, sends nothing). Destroying it unanswered sends -32603 "handler dropped
// the request", unless abandon() was called first (SHUT-09: on shutdown in-flight handlers end
// without a response). Movable, not copyable; a moved-from object owes nothing.
class ReplyOnce {
 public:
  ReplyOnce(RpcId id, std::string method, FrameSink sink)
      : id_(std::move(id)), method_(std::move(method)), sink_(std::move(sink)) {}
  // The reply obligation of a decoded message: nullopt unless it is a request, because
  // notifications never receive a response (RPC-16).
  static std::optional<ReplyOnce> forRequest(const Message& m, FrameSink sink);
  ReplyOnce(ReplyOnce&& o) noexcept;
  ReplyOnce& operator=(ReplyOnce&& o) noexcept;
  ReplyOnce(const ReplyOnce&) = delete;
  ReplyOnce& operator=(const ReplyOnce&) = delete;
  ~ReplyOnce();

  bool reply(const json::Value& result);
  bool replyRaw(std::string_view result_json);
  bool error(std::int32_t code, std::string_view message, const json::Value* data = nullptr);
  // Gives up without answering (shutdown). Returns false when already answered / abandoned.
  bool abandon();

  bool pending() const { return pending_; }
  const RpcId& id() const { return id_; }
  const std::string& method() const { return method_; }

  static constexpr std::string_view kDroppedMessage = "handler dropped the request";

 private:
  bool send(std::string frame);
  RpcId id_;
  std::string method_;
  FrameSink sink_;
  bool pending_ = true;
};

}  // namespace conform::wire
