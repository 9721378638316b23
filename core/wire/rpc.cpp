// core/wire/rpc — envelope decoding and encoding (PROTOCOL.md §3, RULES.md RPC-01…05, FRAME-10/11/13/14/19).
//
// Decoding runs on every message `lint` reads (target: 500k frames of ~300 bytes per second per
// core), so classification is one pass over the top-level members with no allocation on success
// beyond the parse itself, and error text is only built on the failure path.
#include "core/wire/rpc.h"

#include <cmath>
#include <cstring>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/wire/framing.h"

namespace conform::wire {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

const char* errorCodeName(std::int32_t code) {
  switch (code) {
    case kMethodNotFound: return "method not found";
    case kInvalidParams: return "invalid params";
    case kInternalError: return "internal error";
    case kServerError: return "server error";
    case kProducerUnavailable: return "producer unavailable";
    case kProducerOverloaded: return "producer overloaded";
    case kStaleConnection: return "stale connection";
    case kRegistrationInvalid: return "registration invalid";
    case kSessionUnavailable: return "session unavailable";
    case kIdempotencyConflict: return "idempotency conflict";
    case kMessageNotDiscardable: return "message not discardable";
    case kMessageClaimed: return "message claimed";
    case kRecoveryConflict: return "recovery conflict";
    case kDurableAcceptanceFailed: return "durable acceptance failed";
    case kPluginBusy: return "plugin busy";
    default: return "unknown";
  }
}

const char* toString(Direction d) { return d == Direction::EngineToPlugin ? "e2p" : "p2e"; }

const char* toString(MessageKind k) {
  switch (k) {
    case MessageKind::Request: return "request";
    case MessageKind::Notification: return "notification";
    case MessageKind::Success: return "success";
    case MessageKind::Error: return "error";
  }
  return "?";
}

const char* toString(EnvelopeErrorKind k) {
  switch (k) {
    case EnvelopeErrorKind::InvalidUtf8: return "invalid-utf8";
    case EnvelopeErrorKind::MalformedJson: return "malformed-json";
    case EnvelopeErrorKind::TooDeep: return "too-deep";
    case EnvelopeErrorKind::NonFinite: return "non-finite";
    case EnvelopeErrorKind::NotObject: return "not-object";
    case EnvelopeErrorKind::BadJsonrpc: return "bad-jsonrpc";
    case EnvelopeErrorKind::BadId: return "bad-id";
    case EnvelopeErrorKind::UnknownMember: return "unknown-member";
    case EnvelopeErrorKind::ResultAndError: return "result-and-error";
    case EnvelopeErrorKind::NeitherResultNorError: return "neither-result-nor-error";
    case EnvelopeErrorKind::BadMethod: return "bad-method";
    case EnvelopeErrorKind::BadErrorObject: return "bad-error-object";
  }
  return "?";
}

const char* toString(ResolveError e) {
  switch (e) {
    case ResolveError::UnknownId: return "unknown id";
    case ResolveError::AlreadyAnswered: return "already answered";
    case ResolveError::TimedOut: return "already timed out";
    case ResolveError::WrongDirection: return "response travelled the same direction as the requests";
  }
  return "?";
}

const char* toString(AddError e) {
  return e == AddError::Full ? "too many outstanding requests" : "id already outstanding";
}

std::string EnvelopeError::str() const { return std::string(rule) + ": " + message; }

// ---------------------------------------------------------------------------------------------
// RpcId
// ---------------------------------------------------------------------------------------------

std::optional<RpcId> RpcId::fromJSON(const json::Value& v) {
  // RapidJSON types 1.0 and 1e2 as doubles and 2^63 as uint64: all refused (RPC-05: int64 only).
  if (v.IsInt64()) return RpcId(v.GetInt64());
  if (v.IsString()) return RpcId(std::string(v.GetString(), v.GetStringLength()));
  if (v.IsNull()) return RpcId();
  return std::nullopt;
}

const std::string& RpcId::string() const {
  static const std::string empty;
  return isString() ? std::get<2>(v_) : empty;
}

json::Value RpcId::toJSON(json::Allocator& a) const {
  switch (type()) {
    case Type::Null: return json::Value();
    case Type::Integer: return json::Value(static_cast<std::int64_t>(std::get<1>(v_)));
    case Type::String: return json::str(std::get<2>(v_), a);
  }
  return json::Value();
}

namespace {
void writeId(Writer& w, const RpcId& id) {
  switch (id.type()) {
    case RpcId::Type::Null: w.Null(); break;
    case RpcId::Type::Integer: w.Int64(id.integer()); break;
    case RpcId::Type::String:
      w.String(id.string().data(), static_cast<rapidjson::SizeType>(id.string().size()));
      break;
  }
}
}  // namespace

void RpcId::appendTo(std::string& out) const {
  if (isInteger()) {
    out += std::to_string(integer());
    return;
  }
  if (isNull()) {
    out += "null";
    return;
  }
  rapidjson::StringBuffer sb;
  Writer w(sb);
  writeId(w, *this);
  out.append(sb.GetString(), sb.GetSize());
}

std::string RpcId::render() const {
  std::string s;
  appendTo(s);
  return s;
}

std::size_t RpcIdHash::operator()(const RpcId& id) const {
  switch (id.type()) {
    case RpcId::Type::Null: return 0x9e3779b97f4a7c15ULL;
    case RpcId::Type::Integer: return std::hash<std::int64_t>{}(id.integer());
    case RpcId::Type::String: return std::hash<std::string>{}(id.string()) ^ 0x5bd1e995ULL;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

namespace {

// A short description of a value for error text: `number 1.5`, `string "2"`, `object`.
std::string describe(const json::Value& v) {
  std::string s = json::typeName(v);
  if (v.IsNumber() || v.IsBool() || (v.IsString() && v.GetStringLength() <= 40)) {
    s += ' ';
    s += json::compact(v);
  }
  return s;
}

std::string quoted(std::string_view name) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.String(name.data(), static_cast<rapidjson::SizeType>(name.size()));
  return std::string(sb.GetString(), sb.GetSize());
}

EnvelopeError fail(EnvelopeErrorKind kind, const char* rule, std::string message) {
  EnvelopeError e;
  e.kind = kind;
  e.rule = rule;
  e.message = std::move(message);
  return e;
}

// The six envelope member names; anything else is unknown in every kind (RPC-03).
enum Slot { kJsonrpc, kId, kMethod, kParams, kResult, kError, kSlots, kUnknown = kSlots };

Slot slotOf(const json::Value& name) {
  const char* s = name.GetString();
  switch (name.GetStringLength()) {
    case 2: return std::memcmp(s, "id", 2) == 0 ? kId : kUnknown;
    case 5: return std::memcmp(s, "error", 5) == 0 ? kError : kUnknown;
    case 6:
      if (std::memcmp(s, "method", 6) == 0) return kMethod;
      if (std::memcmp(s, "params", 6) == 0) return kParams;
      if (std::memcmp(s, "result", 6) == 0) return kResult;
      return kUnknown;
    case 7: return std::memcmp(s, "jsonrpc", 7) == 0 ? kJsonrpc : kUnknown;
    default: return kUnknown;
  }
}

constexpr const char* kSlotName[kSlots] = {"jsonrpc", "id", "method", "params", "result", "error"};

bool allowed(MessageKind k, Slot s) {
  switch (k) {
    case MessageKind::Request: return s == kJsonrpc || s == kId || s == kMethod || s == kParams;
    case MessageKind::Notification: return s == kJsonrpc || s == kMethod || s == kParams;
    case MessageKind::Success:
    case MessageKind::Error: return s == kJsonrpc || s == kId || s == kResult || s == kError;
  }
  return false;
}

const char* article(MessageKind k) {
  switch (k) {
    case MessageKind::Request: return "a request";
    case MessageKind::Notification: return "a notification";
    default: return "a response";
  }
}

// RPC-03: error = {code: int32, message: string, data?: any}, closed.
std::optional<std::string> decodeErrorObject(const json::Value& v, ErrorObject& out) {
  if (!v.IsObject()) return "error: expected object, found " + describe(v);
  const json::Value* code = nullptr;
  const json::Value* message = nullptr;
  const json::Value* data = nullptr;
  for (const auto& m : v.GetObject()) {
    std::string_view n(m.name.GetString(), m.name.GetStringLength());
    if (n == "code") code = &m.value;
    else if (n == "message") message = &m.value;
    else if (n == "data") data = &m.value;
    else return "error." + std::string(n) + ": member is not allowed in an error object (closed)";
  }
  if (!code) return std::string("error.code: required member is missing");
  if (!code->IsInt()) return "error.code: expected a 32-bit integer, found " + describe(*code);
  if (!message) return std::string("error.message: required member is missing");
  if (!message->IsString()) return "error.message: expected string, found " + describe(*message);
  out.code = code->GetInt();
  out.message = std::string_view(message->GetString(), message->GetStringLength());
  out.data = data;
  return std::nullopt;
}

// Classifies `v` (PROTOCOL §3.2) and checks its closed envelope (§3.1), filling `m`.
std::optional<EnvelopeError> classify(const json::Value& v, Message& m) {
  if (!v.IsObject()) {
    std::string what = v.IsArray() ? "an array (JSON-RPC batches are not supported)"
                                   : std::string("a ") + json::typeName(v);
    return fail(EnvelopeErrorKind::NotObject, "FRAME-11", "frame is " + what + ", not an object");
  }
  const json::Value* slot[kSlots] = {};
  const json::Value* first_unknown = nullptr;
  for (const auto& mem : v.GetObject()) {
    const Slot s = slotOf(mem.name);
    if (s == kUnknown) {
      if (!first_unknown) first_unknown = &mem.name;
    } else {
      slot[s] = &mem.value;  // later duplicates win, as in R4 (FRAME-19)
    }
  }

  // §3.2
  MessageKind kind;
  if (slot[kMethod]) kind = slot[kId] ? MessageKind::Request : MessageKind::Notification;
  else kind = (slot[kError] && !slot[kResult]) ? MessageKind::Error : MessageKind::Success;

  auto failAs = [&](EnvelopeErrorKind k, const char* rule, std::string msg) {
    EnvelopeError e = fail(k, rule, std::move(msg));
    e.classified_as = kind;
    if (slot[kId] && kind != MessageKind::Notification) e.id = RpcId::fromJSON(*slot[kId]);
    return e;
  };

  // RPC-01
  const json::Value* jr = slot[kJsonrpc];
  if (!jr) return failAs(EnvelopeErrorKind::BadJsonrpc, "RPC-01", "jsonrpc: required member is missing");
  if (!jr->IsString() || jr->GetStringLength() != 3 || std::memcmp(jr->GetString(), "2.0", 3) != 0)
    return failAs(EnvelopeErrorKind::BadJsonrpc, "RPC-01",
                  "jsonrpc: expected \"2.0\", found " + describe(*jr));

  // RPC-03: closed envelopes
  if (first_unknown)
    return failAs(EnvelopeErrorKind::UnknownMember, "RPC-03",
                  "member " + quoted({first_unknown->GetString(), first_unknown->GetStringLength()}) +
                      " is not allowed in " + article(kind) + " (closed envelope)");
  // Known names in the wrong kind: result/error in a request or notification, params in a
  // response. (Both result and error in a response is RPC-04's business, reported below.)
  for (int s = 0; s < kSlots; ++s)
    if (slot[s] && !allowed(kind, static_cast<Slot>(s)))
      return failAs(EnvelopeErrorKind::UnknownMember, "RPC-03",
                    std::string("member \"") + kSlotName[s] + "\" is not allowed in " + article(kind) +
                        " (closed envelope)");

  // RPC-05
  if (kind != MessageKind::Notification) {
    if (!slot[kId])
      return failAs(EnvelopeErrorKind::BadId, "RPC-05", "id: required member is missing");
    auto id = RpcId::fromJSON(*slot[kId]);
    if (!id)
      return failAs(EnvelopeErrorKind::BadId, "RPC-05",
                    "id: expected an integer (int64), a string or null, found " + describe(*slot[kId]));
    m.id = std::move(*id);
    m.id_value = slot[kId];
  }

  m.kind = kind;
  switch (kind) {
    case MessageKind::Request:
    case MessageKind::Notification:
      if (!slot[kMethod]->IsString())
        return failAs(EnvelopeErrorKind::BadMethod, "RPC-03",
                      "method: expected string, found " + describe(*slot[kMethod]));
      m.method = std::string_view(slot[kMethod]->GetString(), slot[kMethod]->GetStringLength());
      m.params = slot[kParams];
      break;
    case MessageKind::Success:
    case MessageKind::Error:
      if (slot[kResult] && slot[kError])
        return failAs(EnvelopeErrorKind::ResultAndError, "RPC-04",
                      "a response carries both \"result\" and \"error\"");
      if (!slot[kResult] && !slot[kError])
        return failAs(EnvelopeErrorKind::NeitherResultNorError, "RPC-04",
                      "a response carries neither \"result\" nor \"error\"");
      if (kind == MessageKind::Success) {
        m.result = slot[kResult];
      } else if (auto err = decodeErrorObject(*slot[kError], m.error)) {
        return failAs(EnvelopeErrorKind::BadErrorObject, "RPC-03", std::move(*err));
      }
      break;
  }
  m.root_ = &v;
  return std::nullopt;
}

bool startsWithBom(std::string_view s) { return s.size() >= 3 && s.substr(0, 3) == "\xEF\xBB\xBF"; }

EnvelopeError parseFailure(std::string_view frame, const json::ParseError& pe, const DecodeOptions& opts) {
  const char* utf8_rule =
      opts.direction == Direction::EngineToPlugin ? "FRAME-05" : "FRAME-04";
  EnvelopeError e;
  e.offset = pe.offset;
  switch (pe.kind) {
    case json::ParseErrorKind::InvalidUtf8:
      e.kind = EnvelopeErrorKind::InvalidUtf8;
      e.rule = utf8_rule;
      e.message = pe.message;
      return e;
    case json::ParseErrorKind::TooDeep:
      e.kind = EnvelopeErrorKind::TooDeep;
      e.message = pe.message;
      return e;
    case json::ParseErrorKind::NonFinite:
      e.kind = EnvelopeErrorKind::NonFinite;
      e.message = pe.message;
      return e;
    default: break;
  }
  // RapidJSON validates UTF-8 only inside strings; a bad byte elsewhere is a syntax error to it.
  // Say what it really is (only on this failure path, so valid frames are not scanned twice).
  if (std::size_t bad = firstInvalidUtf8(frame); bad != npos) {
    e.kind = EnvelopeErrorKind::InvalidUtf8;
    e.rule = utf8_rule;
    e.offset = bad;
    e.message = "invalid UTF-8 at byte " + std::to_string(bad);
    return e;
  }
  e.kind = EnvelopeErrorKind::MalformedJson;
  if (frame.empty()) {
    e.rule = "FRAME-10";
    e.message = "empty frame (an empty line is malformed JSON)";
  } else if (startsWithBom(frame)) {
    e.rule = "FRAME-14";
    e.message = "frame starts with a UTF-8 byte-order mark: " + pe.message;
  } else {
    e.rule = "FRAME-13";
    e.message = "malformed JSON: " + pe.message;
  }
  return e;
}

}  // namespace

Expected<Message, EnvelopeError> decodeMessage(const json::Value& frame, const DecodeOptions&) {
  Message m;
  if (auto err = classify(frame, m)) return unexpected(std::move(*err));
  return m;
}

std::optional<EnvelopeError> decodeMessageInto(const json::Value& frame, Message& m) {
  m.kind = MessageKind::Notification;
  m.id = RpcId{};
  m.id_value = nullptr;
  m.method = {};
  m.params = nullptr;
  m.result = nullptr;
  m.error = ErrorObject{};
  m.duplicates.clear();
  m.raw.clear();
  m.doc_.reset();
  m.root_ = nullptr;
  if (auto err = classify(frame, m)) return err;
  return std::nullopt;
}

Expected<Message, EnvelopeError> decodeMessage(json::Parsed&& parsed, const DecodeOptions&) {
  Message m;
  m.doc_ = std::make_shared<json::Document>(std::move(parsed.doc));
  m.duplicates = std::move(parsed.duplicates);
  if (auto err = classify(*m.doc_, m)) {
    err->duplicates = std::move(m.duplicates);
    return unexpected(std::move(*err));
  }
  return m;
}

Expected<Message, EnvelopeError> decodeMessage(std::string_view frame, const DecodeOptions& opts) {
  json::ParseOptions po = opts.parse;
  po.reject_duplicates = false;  // FRAME-19: reported, never fatal
  auto parsed = json::parse(frame, po);
  if (!parsed) return unexpected(parseFailure(frame, parsed.error(), opts));
  auto m = decodeMessage(std::move(*parsed), opts);
  if (m && opts.keep_raw) m->raw.assign(frame.data(), frame.size());
  return m;
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

namespace {

// Writes `v`; false when it holds a number JSON cannot express (NaN/inf in a value the program
// built — json::parse never yields one).
bool writeValue(Writer& w, const json::Value& v) { return v.Accept(w); }

// Replaces non-finite numbers by null, so a program bug yields valid JSON rather than a broken
// frame (the peer's reaction would otherwise be blamed on it).
void sanitize(json::Value& v) {
  if (v.IsDouble() && !std::isfinite(v.GetDouble())) {
    v.SetNull();
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) sanitize(e);
  } else if (v.IsObject()) {
    // Index loop: RapidJSON's non-const member iterators trip C++20's reversed-operator warning.
    auto it = v.MemberBegin();
    for (rapidjson::SizeType i = 0, n = v.MemberCount(); i < n; ++i) sanitize(it[i].value);
  }
}

template <class Fn>
std::string withPayload(const json::Value& payload, Fn&& build) {
  rapidjson::StringBuffer sb;
  {
    Writer w(sb);
    if (build(w, payload)) return std::string(sb.GetString(), sb.GetSize());
  }
  json::Document clean = json::copy(payload);
  sanitize(clean);
  rapidjson::StringBuffer sb2;
  Writer w2(sb2);
  build(w2, clean);
  return std::string(sb2.GetString(), sb2.GetSize());
}

void head(Writer& w) {
  w.StartObject();
  w.Key("jsonrpc", 7);
  w.String("2.0", 3);
}
void key(Writer& w, const char* k) { w.Key(k, static_cast<rapidjson::SizeType>(std::strlen(k))); }
void str(Writer& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
bool raw(Writer& w, std::string_view text) {
  return w.RawValue(text.data(), text.size(), rapidjson::kObjectType);
}

}  // namespace

std::string encodeRequest(const RpcId& id, std::string_view method, const json::Value& params) {
  return withPayload(params, [&](Writer& w, const json::Value& p) {
    head(w);
    key(w, "id");
    writeId(w, id);
    key(w, "method");
    str(w, method);
    key(w, "params");
    bool ok = writeValue(w, p);
    w.EndObject();
    return ok;
  });
}

std::string encodeNotification(std::string_view method, const json::Value& params) {
  return withPayload(params, [&](Writer& w, const json::Value& p) {
    head(w);
    key(w, "method");
    str(w, method);
    key(w, "params");
    bool ok = writeValue(w, p);
    w.EndObject();
    return ok;
  });
}

std::string encodeResult(const RpcId& id, const json::Value& result) {
  return withPayload(result, [&](Writer& w, const json::Value& r) {
    head(w);
    key(w, "id");
    writeId(w, id);
    key(w, "result");
    bool ok = writeValue(w, r);
    w.EndObject();
    return ok;
  });
}

std::string encodeError(const RpcId& id, std::int32_t code, std::string_view message,
                        const json::Value* data) {
  static const json::Value kNull;
  return withPayload(data ? *data : kNull, [&](Writer& w, const json::Value& d) {
    head(w);
    key(w, "id");
    writeId(w, id);
    key(w, "error");
    w.StartObject();
    key(w, "code");
    w.Int(code);
    key(w, "message");
    str(w, message);
    bool ok = true;
    if (data) {
      key(w, "data");
      ok = writeValue(w, d);
    }
    w.EndObject();
    w.EndObject();
    return ok;
  });
}

std::string encodeRequestRaw(const RpcId& id, std::string_view method, std::string_view params_json) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  head(w);
  key(w, "id");
  writeId(w, id);
  key(w, "method");
  str(w, method);
  key(w, "params");
  raw(w, params_json);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

std::string encodeNotificationRaw(std::string_view method, std::string_view params_json) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  head(w);
  key(w, "method");
  str(w, method);
  key(w, "params");
  raw(w, params_json);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

std::string encodeResultRaw(const RpcId& id, std::string_view result_json) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  head(w);
  key(w, "id");
  writeId(w, id);
  key(w, "result");
  raw(w, result_json);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

// ---------------------------------------------------------------------------------------------
// IdAllocator
// ---------------------------------------------------------------------------------------------

Expected<RpcId, std::string> IdAllocator::next() {
  if (exhausted_)
    return unexpected(std::string("RPC-07: request id counter overflow (int64 range used up)"));
  const std::int64_t v = next_;
  if (next_ == INT64_MAX) exhausted_ = true;  // never wraps to a negative or reused id
  else ++next_;
  ++issued_;
  return RpcId(v);
}

std::optional<std::int64_t> IdAllocator::peek() const {
  if (exhausted_) return std::nullopt;
  return next_;
}

// ---------------------------------------------------------------------------------------------
// ReplyOnce
// ---------------------------------------------------------------------------------------------

std::optional<ReplyOnce> ReplyOnce::forRequest(const Message& m, FrameSink sink) {
  if (!m.isRequest()) return std::nullopt;
  return ReplyOnce(m.id, std::string(m.method), std::move(sink));
}

ReplyOnce::ReplyOnce(ReplyOnce&& o) noexcept
    : id_(std::move(o.id_)), method_(std::move(o.method_)), sink_(std::move(o.sink_)), pending_(o.pending_) {
  o.pending_ = false;
}

ReplyOnce& ReplyOnce::operator=(ReplyOnce&& o) noexcept {
  if (this != &o) {
    if (pending_) {
      try {
        error(kInternalError, kDroppedMessage);
      } catch (...) {
      }
    }
    id_ = std::move(o.id_);
    method_ = std::move(o.method_);
    sink_ = std::move(o.sink_);
    pending_ = o.pending_;
    o.pending_ = false;
  }
  return *this;
}

ReplyOnce::~ReplyOnce() {
  if (!pending_) return;
  try {
    error(kInternalError, kDroppedMessage);  // clangd: a dropped request still gets an answer
  } catch (...) {
    // A throwing sink must not take the process down from a destructor.
  }
}

bool ReplyOnce::send(std::string frame) {
  if (!pending_) return false;
  pending_ = false;
  if (sink_) sink_(std::move(frame));
  return true;
}

bool ReplyOnce::reply(const json::Value& result) {
  if (!pending_) return false;
  return send(encodeResult(id_, result));
}

bool ReplyOnce::replyRaw(std::string_view result_json) {
  if (!pending_) return false;
  return send(encodeResultRaw(id_, result_json));
}

bool ReplyOnce::error(std::int32_t code, std::string_view message, const json::Value* data) {
  if (!pending_) return false;
  return send(encodeError(id_, code, message, data));
}

bool ReplyOnce::abandon() {
  if (!pending_) return false;
  pending_ = false;
  return true;
}

}  // namespace conform::wire
