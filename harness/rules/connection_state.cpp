// harness/rules/connection_state — the shared state every monitor reads (monitor.h), the finding
// sink, and MonitorSet, which feeds events through state and monitors in one pass.
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include <rapidjson/internal/dtoa.h>
#include <rapidjson/internal/itoa.h>
#include <rapidjson/writer.h>

#include "core/json/schema.h"
#include "core/protocol/validate.h"
#include "harness/rules/monitor.h"

namespace conform::rules {

// ---- helpers ---------------------------------------------------------------------------------
namespace {
// compactText() is used for evidence only (findings are rare); sizes use compactSize() below.
struct StringSink {
  using Ch = char;
  std::string* s;
  void Put(char c) { s->push_back(c); }
  void Flush() {}
};
}  // namespace

std::string compactText(const json::Value& v) {
  std::string out;
  StringSink sink{&out};
  rapidjson::Writer<StringSink> w(sink);
  v.Accept(w);
  return out;
}

// Why not a rapidjson::Writer into a counting stream (as before): every emit's payload is sized
// (QUOTA-01/06), and the Writer's per-byte Put() calls and escape checks were ~5 % of lint's time
// (issue 6). This walk mirrors the Writer's output exactly — the same escape table, the same
// integer and double spellings (RapidJSON's own i64toa/u64toa/dtoa) — so sizes did not change;
// tests/rules/lint_perf_test.cpp compares it with compactText() on values built to cover each case.
namespace {
// Output bytes of one string byte under rapidjson::Writer's escape table (kWriteDefaultFlags: no
// \u escaping of non-ASCII, no escaped '/'): \b \t \n \f \r, \" and \\ take 2, other control bytes
// \u00XX 6, every other byte itself.
constexpr std::array<std::uint8_t, 256> kEscapedWidth = [] {
  std::array<std::uint8_t, 256> w{};
  for (std::size_t c = 0; c < 256; ++c) w[c] = 1;
  for (std::size_t c = 0; c < 0x20; ++c) w[c] = 6;
  for (unsigned char c : {'\b', '\t', '\n', '\f', '\r', '"', '\\'}) w[c] = 2;
  return w;
}();

std::size_t quotedLength(const char* s, std::size_t n) {
  std::size_t len = 2 + n;
  for (std::size_t i = 0; i < n; ++i) len += kEscapedWidth[static_cast<unsigned char>(s[i])] - 1u;
  return len;
}

// Adds v's compact length to `out`; false where rapidjson::Writer would stop (a non-finite double,
// which it refuses to write), mirroring Accept()'s early return.
bool addCompactSize(const json::Value& v, CompactSize& out) {
  char buf[32];
  switch (v.GetType()) {
    case rapidjson::kNullType: out.bytes += 4; return true;
    case rapidjson::kFalseType: out.bytes += 5; return true;
    case rapidjson::kTrueType: out.bytes += 4; return true;
    case rapidjson::kStringType: out.bytes += quotedLength(v.GetString(), v.GetStringLength()); return true;
    case rapidjson::kNumberType: {
      ++out.numbers;
      const char* end;
      if (v.IsDouble()) {
        if (!std::isfinite(v.GetDouble())) return false;
        end = rapidjson::internal::dtoa(v.GetDouble(), buf);  // the Writer's default 324 decimal places
      } else if (v.IsInt64()) {
        end = rapidjson::internal::i64toa(v.GetInt64(), buf);
      } else {
        end = rapidjson::internal::u64toa(v.GetUint64(), buf);
      }
      out.bytes += static_cast<std::size_t>(end - buf);
      return true;
    }
    case rapidjson::kObjectType: {
      // As the Writer: '{', then per member [','] "name" ':' value, then '}'.
      out.bytes += 1;
      const auto members = v.MemberBegin();  // indexed: iterator comparisons are ambiguous in C++20
      for (rapidjson::SizeType i = 0; i < v.MemberCount(); ++i) {
        const json::Value& name = members[i].name;
        out.bytes += (i ? 1 : 0) + quotedLength(name.GetString(), name.GetStringLength()) + 1;
        if (!addCompactSize(members[i].value, out)) return false;
      }
      out.bytes += 1;
      return true;
    }
    case rapidjson::kArrayType: {
      out.bytes += 1;
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        out.bytes += i ? 1 : 0;
        if (!addCompactSize(v[i], out)) return false;
      }
      out.bytes += 1;
      return true;
    }
  }
  return true;
}
}  // namespace

CompactSize compactSize(const json::Value& v) {
  CompactSize out;
  addCompactSize(v, out);
  return out;
}

// The first member named `key`, as FindMember() finds it. Monitors look up a handful of members of
// every frame: comparing the length and the first byte before memcmp skips nearly every call to it
// (member lookups were ~6 % of lint's time, issue 6).
const json::Value* member(const json::Value* obj, std::string_view key) {
  if (!obj || !obj->IsObject()) return nullptr;
  const auto members = obj->MemberBegin();
  for (rapidjson::SizeType i = 0, n = obj->MemberCount(); i < n; ++i) {
    const json::Value& name = members[i].name;
    if (name.GetStringLength() != key.size()) continue;
    const char* s = name.GetString();
    if (key.empty() || (s[0] == key[0] && std::memcmp(s, key.data(), key.size()) == 0)) return &members[i].value;
  }
  return nullptr;
}

std::string_view str(const json::Value* v) {
  if (!v || !v->IsString()) return {};
  return {v->GetString(), v->GetStringLength()};
}

std::optional<protocol::DeclarationProblem> declarationProblem(const json::Value* init_result) {
  const json::Value* tools = member(init_result, "tools");
  if (!tools || !tools->IsArray() || tools->Size() > kMaxTools) return std::nullopt;
  std::vector<protocol::ToolDeclaration> decls;
  decls.reserve(tools->Size());
  for (const json::Value& t : tools->GetArray()) {
    auto d = protocol::Profile::decode<protocol::ToolDeclaration>(t);
    if (!d) return std::nullopt;
    decls.push_back(std::move(*d));
  }
  return protocol::checkToolDeclarations(decls);
}

std::optional<std::string> parametersSchemaProblem(const json::Value* init_result) {
  const json::Value* tools = member(init_result, "tools");
  if (!tools || !tools->IsArray() || tools->Size() > kMaxTools) return std::nullopt;
  for (rapidjson::SizeType i = 0; i < tools->Size(); ++i) {
    const json::Value* params = member(&(*tools)[i], "parameters");
    if (!params || !params->IsObject()) continue;  // shape (TOOL-01) or declarationProblem (INIT-21)
    if (auto v = json::checkSchemaDocument(*params))
      return "tools[" + std::to_string(i) + "].parameters" + (v->path.empty() || v->path == "<root>" ? "" : "." + v->path) + ": " + v->message;
  }
  return std::nullopt;
}

int hookIndex(std::string_view name) {
  for (std::size_t i = 0; i < kHookNames.size(); ++i)
    if (kHookNames[i] == name) return static_cast<int>(i);
  return -1;
}

Evidence Observation::evidence() const {
  return Evidence{ev->line, reports::shortenEvidence(ev->raw.empty() ? ev->line_text : ev->raw)};
}

// ---- sink ------------------------------------------------------------------------------------
void FindingSink::report(std::string_view rule, std::uint8_t binds, std::string message,
                         std::string expected, std::string actual, std::vector<Evidence> evidence,
                         bool advisory) {
  std::string key(rule);
  if (++per_rule_[key] > kMaxFindingsPerRule) {
    ++suppressed_[key];
    return;
  }
  findings_.push_back(reports::makeFinding(rule, binds, std::move(message), std::move(expected),
                                           std::move(actual), std::move(evidence),
                                           pinned && pinned(rule)));
  Finding& f = findings_.back();
  if (advisory && f.level == reports::Level::Must) {
    f.level = reports::Level::Should;
    f.verdict = reports::Verdict::NonStrict;
  }
}

// ---- state -----------------------------------------------------------------------------------
const protocol::Profile& ConnectionState::effectiveProfile() const {
  if (profile_) return *profile_;
  if (seen_profile_) return *seen_profile_;
  return protocol::profileV006();
}

const DeclaredTool* ConnectionState::findTool(std::string_view name) const {
  for (const DeclaredTool& t : tools_)
    if (t.name == name) return &t;
  return nullptr;
}

void ConnectionState::resolve(Observation& o) {
  o.match = Match::None;
  o.request = nullptr;
  if (!o.decoded || !o.msg.isResponse()) return;
  // A response travels opposite to its request (RPC-18): p2e responses answer engine requests.
  int table = o.fromPlugin() ? 0 : 1;
  auto& pending = pending_[table];
  auto it = pending.find(o.msg.id);
  if (it != pending.end()) {
    o.request = &it->second;  // stays valid until commit() erases it, after every monitor ran
    o.match = Match::Matched;
    return;
  }
  // Same value, other JSON type: 1 vs "1" (RPC-08/RPC-17 demand the same type).
  std::optional<wire::RpcId> alt;
  if (o.msg.id.isInteger()) {
    alt = wire::RpcId(std::to_string(o.msg.id.integer()));
  } else if (o.msg.id.isString()) {
    const std::string& s = o.msg.id.string();
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) alt = wire::RpcId(v);
  }
  if (alt) {
    auto a = pending.find(*alt);
    if (a != pending.end()) {
      o.request = &a->second;
      o.match = Match::WrongIdType;
      return;
    }
  }
  o.match = answered_[table].count(o.msg.id) ? Match::AlreadyAnswered : Match::Unknown;
}

void ConnectionState::commit(const Observation& o) {
  const trace::TraceEvent& ev = *o.ev;
  if (ev.kind == trace::Kind::Eof && ev.dir == Dir::EngineToPlugin && !stdin_eof_line_)
    stdin_eof_line_ = ev.line;
  if (!o.is_frame) return;
  if (o.fromEngine() && hs_.ok) ++e2p_after_hs_;

  // Fatal frames (PROTOCOL §2 F2/F3/F7/F8, §3.1): the receiver must stop processing. The R4 SDK
  // ignores parseable non-objects (FRAME-12), so an e2p array/scalar is not fatal for the plugin.
  bool fatal = ev.kind == trace::Kind::Text || ev.kind == trace::Kind::Binary ||
               ev.kind == trace::Kind::Oversized;
  if (o.envelope_error) {
    bool not_object = o.envelope_error->kind == wire::EnvelopeErrorKind::NotObject;
    fatal = fatal || !(not_object && o.fromEngine());
  }
  if (fatal) {
    std::uint64_t& f = o.fromPlugin() ? fatal_p2e_ : fatal_e2p_;
    if (!f) f = ev.line;
  }
  if (!o.decoded) return;
  const wire::Message& m = o.msg;

  if (m.isRequest()) {
    int table = o.fromEngine() ? 0 : 1;
    auto& pending = pending_[table];
    if (pending.size() >= kMaxPending) {
      overflow_[table] = true;
    } else if (!pending.count(m.id)) {
      RequestInfo r;
      r.method = o.method;
      if (!o.method) r.unknown_method.assign(m.method.data(), m.method.size());
      r.id = m.id;
      r.line = ev.line;
      r.t_us = ev.t_us;
      if (m.params && m.params->IsObject()) {
        r.context_id = std::string(str(member(m.params, "context_id")));
        r.tool = std::string(str(member(m.params, "tool")));
      }
      pending.emplace(m.id, std::move(r));
    }
    if (m.method == protocol::method::kInitialize && o.fromEngine() && !hs_.request_line) {
      hs_.request_line = ev.line;
      hs_.request_id = m.id;
      const json::Value* caps = member(m.params, "capabilities");
      const json::Value* pm = member(caps, "producer_messaging");
      hs_.engine_producer = pm && pm->IsBool() && pm->GetBool();
      std::string_view v = str(member(m.params, "protocol_version"));
      if (const protocol::Profile* p = protocol::findProfile(v)) seen_profile_ = p;
    }
  } else if (m.isNotification()) {
    if (m.method == protocol::method::kShutdown && o.fromEngine() && !shutdown_line_)
      shutdown_line_ = ev.line;
  } else if (o.match == Match::Matched) {
    int table = o.fromPlugin() ? 0 : 1;
    if (o.request->method && o.request->method->name == protocol::method::kInitialize &&
        hs_.request_line && !hs_.result_line && o.request->id == hs_.request_id)
      handshakeResult(o);
    pending_[table].erase(m.id);
    answered_[table].insert(m.id);
    answered_order_[table].push_back(m.id);
    if (answered_order_[table].size() > kMaxAnsweredMemory) {
      answered_[table].erase(answered_order_[table].front());
      answered_order_[table].pop_front();
    }
  }
}

void ConnectionState::handshakeResult(const Observation& o) {
  hs_.result_line = o.line();
  const wire::Message& m = o.msg;
  if (m.kind == wire::MessageKind::Error) {
    hs_.refused = true;
    hs_.refused_rule = "INIT-19";
    return;
  }
  const json::Value* r = m.result;
  const json::Value* v = member(r, "protocol_version");
  if (!v || !v->IsString()) {
    hs_.refused = true;
    hs_.refused_rule = "INIT-12";
    return;
  }
  if (str(v) != effectiveProfile().version()) {
    hs_.refused = true;
    hs_.refused_rule = "INIT-11";
    return;
  }
  if (auto viol = effectiveProfile().validate(protocol::method::kInitialize, protocol::Part::Result, *r)) {
    hs_.refused = true;
    hs_.refused_rule = viol->rule_id.empty() ? "INIT-09" : viol->rule_id;
    return;
  }
  const json::Value* caps = member(r, "capabilities");
  auto flag = [&](const char* k) {
    const json::Value* f = member(caps, k);
    return f && f->IsBool() && f->GetBool();
  };
  hs_.plugin_name = std::string(str(member(r, "name")));
  hs_.subscribe_events = flag("subscribe_events");
  hs_.subscribe_bus = flag("subscribe_bus");
  hs_.publish_bus = flag("publish_bus");
  hs_.publish_session_events = flag("publish_session_events");
  hs_.producer = flag("producer_messaging");
  if (const json::Value* in = member(caps, "intercept"); in && in->IsArray())
    for (const json::Value& h : in->GetArray()) {
      int i = hookIndex(str(&h));
      if (i >= 0) hs_.intercept |= static_cast<std::uint16_t>(1u << i);
    }
  // INIT-20: names must be snake_case and unique, else the handshake fails.
  if (const json::Value* tools = member(r, "tools"); tools && tools->IsArray()) {
    for (const json::Value& t : tools->GetArray()) {
      std::string_view name = str(member(&t, "name"));
      if (!protocol::isSnakeCase(name) || findTool(name)) {
        hs_.refused = true;
        hs_.refused_rule = "INIT-20";
        tools_.clear();
        return;
      }
      if (tools_.size() >= kMaxTools) {
        tools_truncated_ = true;
        continue;
      }
      DeclaredTool d;
      d.name = std::string(name);
      if (std::string_view prp = str(member(&t, "primary_resource_param")); !prp.empty())
        d.primary_resource_param = std::string(prp);
      const json::Value* out = member(&t, "output");
      if (str(member(out, "kind")) == "named") {
        d.named = true;
        if (const json::Value* s = member(out, "streams"); s && s->IsArray())
          for (const json::Value& n : s->GetArray()) d.streams.emplace_back(str(&n));
      }
      tools_.push_back(std::move(d));
    }
  }
  // INIT-21 [impl]: R4 refuses a plugin whose declarations fail §6.3 step 6.
  if (auto problem = declarationProblem(r)) {
    hs_.refused = true;
    hs_.refused_rule = problem->rule_id;
    tools_.clear();
    return;
  }
  if (parametersSchemaProblem(r)) {
    hs_.refused = true;
    hs_.refused_rule = "INIT-21";
    tools_.clear();
    return;
  }
  hs_.ok = true;
}

// ---- the set ---------------------------------------------------------------------------------
MonitorSet::MonitorSet(const protocol::Profile* profile) : state_(profile) {
  monitors_.push_back(makeFrameMonitor());
  monitors_.push_back(makeRpcMonitor());
  monitors_.push_back(makeLifecycleMonitor());
  monitors_.push_back(makeEmitMonitor());
  monitors_.push_back(makeDeliveryMonitor());
  monitors_.push_back(makeProducerMonitor());
}

void MonitorSet::feed(const trace::TraceEvent& ev) {
  Observation& o = obs_;
  o.ev = &ev;
  o.is_frame = (ev.dir == Dir::EngineToPlugin || ev.dir == Dir::PluginToEngine) &&
               (ev.kind == trace::Kind::Frame || ev.kind == trace::Kind::Text ||
                ev.kind == trace::Kind::Binary || ev.kind == trace::Kind::Oversized);
  o.decoded = false;
  o.envelope_error.reset();
  o.method = nullptr;
  o.match = Match::None;
  o.request = nullptr;
  if (ev.kind == trace::Kind::Frame && ev.frame && o.is_frame) {
    // Decoded into the reused Observation (no Message built and moved per frame). The frame is
    // already parsed, so DecodeOptions (parse limits, raw text, direction for UTF-8) do not apply.
    if (auto err = wire::decodeMessageInto(*ev.frame, o.msg)) {
      o.envelope_error = std::move(*err);
    } else {
      o.decoded = true;
      if (o.msg.isRequest() || o.msg.isNotification())
        o.method = state_.effectiveProfile().findMethod(o.msg.method);
    }
  }
  state_.resolve(o);
  for (auto& mon : monitors_) mon->observe(o, state_, sink_);
  state_.commit(o);
}

void MonitorSet::finish() {
  for (auto& mon : monitors_) mon->finish(state_, sink_);
}

}  // namespace conform::rules
