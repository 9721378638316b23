// harness/runner/fuzz_gen — the stimulus side of `conform fuzz` (fuzz_impl.h).
//
// Valid first: every message starts as an instance generated from the profile's embedded JSON
// Schemas (core/protocol/schemas, the same ones Profile::validate checks) with the semantic values
// a schema cannot express overlaid: a declared tool with arguments generated from ITS declared
// `parameters` schema, a declared hook, a fresh context token per frame (PROTOCOL §11.3), a fresh
// invocation id, a per-session increasing `seq` (EVT-02). The instance is then checked with
// Profile::validate (and the tool's compiled schema) and regenerated when a `pattern` or bound was
// missed — so the "valid" half of the stream really is valid, and a plugin failing on it is a
// finding, not a generator bug.
//
// Then mutated, with a probability per step, at three levels; every mutation that leaves the
// message invalid is flagged `may_end` (FRAME-13, RPC-01/05, SDK-25: an SDK plugin may end the
// connection after it), so an exit that follows is expected, never a finding. Mutations that
// stay valid (unknown request methods → -32601 owed, unknown notifications, string ids, CR LF line
// ends FRAME-08, split/coalesced writes, stalls, large-but-legal lines, unknown event types
// EVT-10) keep every obligation of the plugin.
#include <algorithm>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "core/protocol/lifecycle.h"
#include "core/protocol/methods.h"
#include "core/trace/trace.h"
#include "core/wire/rpc.h"
#include "harness/runner/fuzz_impl.h"

namespace conform::runner::fuzz {
namespace {

// Generated instances stay small: the point is shape coverage, not volume (huge values are a
// mutation of their own). Depth 6 covers every protocol shape (message_end content parts).
constexpr int kMaxGenDepth = 6;
// Attempts to hit a schema's patterns and bounds before a method is given up for this batch.
constexpr int kValidAttempts = 8;
// Probability (in %) that a generated step is mutated. Kept low on purpose: most invalid frames end
// an SDK plugin (FRAME-13), and a fuzzer that restarts after every batch is no longer a live fuzzer.
constexpr int kMutatePercent = 6;
// A large but legal line: well under the 4,194,304-byte frame limit (FRAME-06) yet far beyond any
// buffer a naive reader would assume.
constexpr std::size_t kLargeLineBytes = 1u << 20;
constexpr std::size_t kOversizedBytes = 4'194'305;  // FRAME-06: one byte past the limit

const char* kSessions[] = {"0191c0de-0000-7000-8000-00000000f001", "0191c0de-0000-7000-8000-00000000f002",
                           "0191c0de-0000-7000-8000-00000000f003"};
const char* kEventTypes[] = {"message_start", "message_end", "tool_call_started", "tool_call_terminated",
                             "session_idle", "future_event"};  // the last: EVT-10 (unknown type)
// Candidate strings tried against a schema `pattern` (checked, never assumed).
const char* kPatternCandidates[] = {"openai/gpt-4o", "fast", "a", "anthropic", "out",
                                    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                    "x-1", "hello world"};

int pick(Rng& rng, int n) { return n <= 0 ? 0 : static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
bool chance(Rng& rng, int percent) { return pick(rng, 100) < percent; }

std::string uuidFrom(Rng& rng) {
  std::uint64_t a = rng(), b = rng();
  return fmt::format("{:08x}-{:04x}-7{:03x}-{:04x}-{:012x}", static_cast<std::uint32_t>(a >> 32),
                     static_cast<std::uint32_t>(a >> 16) & 0xffff, static_cast<std::uint32_t>(a) & 0xfff,
                     0x8000 | (static_cast<std::uint32_t>(b >> 48) & 0x3fff), b & 0xffffffffffffULL);
}


}  // namespace

struct Generator::Impl {
  const protocol::Profile& profile;
  std::uint32_t deadline_ms;
  json::Document defs;  // merged $defs (common, then the profile's own)
  std::map<std::string, json::Document, std::less<>> schemas;  // params type → schema
  std::map<std::string, json::Schema, std::less<>> pattern_cache;
  TargetInfo target;
  std::vector<json::Schema> tool_schemas;
  std::int64_t next_id = 2;  // 1 is the handshake
  std::uint64_t next_token = 1;
  std::map<std::string, std::int64_t> seq;  // per session (EVT-02: increasing)
  int mutate_percent = kMutatePercent;

  Impl(const protocol::Profile& p, std::uint32_t d) : profile(p), deadline_ms(d) {
    defs.SetObject();
    const std::string ver(p.version());
    for (const std::string& want : {std::string("common/defs"), ver + "/defs"}) {
      for (const auto& [name, text] : protocol::detail::embeddedSchemas())
        if (name == want)
          if (auto parsed = json::parse(text))
            if (auto* d2 = json::member(parsed->doc, "$defs"); d2 && d2->IsObject())
              for (auto& m : d2->GetObject()) {
                json::Value k(m.name, defs.GetAllocator());
                json::Value v(m.value, defs.GetAllocator());
                defs.RemoveMember(k);
                defs.AddMember(k, v, defs.GetAllocator());
              }
    }
    for (const auto& [name, text] : protocol::detail::embeddedSchemas()) {
      auto slash = name.find('/');
      if (slash == std::string_view::npos) continue;
      std::string_view dir = name.substr(0, slash), type = name.substr(slash + 1);
      if (dir != "common" && dir != ver) continue;
      if (auto parsed = json::parse(text)) {
        // The profile's own file wins over the common one.
        if (dir == "common" && schemas.count(type)) continue;
        schemas[std::string(type)] = std::move(parsed->doc);
      }
    }
  }

  const json::Value* resolve(const json::Value& schema, const json::Value* root) const {
    const json::Value* ref = json::member(schema, "$ref");
    if (!ref || !ref->IsString()) return &schema;
    std::string_view r(ref->GetString(), ref->GetStringLength());
    constexpr std::string_view kPrefix = "#/$defs/";
    if (r.substr(0, kPrefix.size()) != kPrefix) return nullptr;
    std::string_view name = r.substr(kPrefix.size());
    if (root)
      if (const json::Value* local = json::member(*root, "$defs"))
        if (const json::Value* d = json::member(*local, name)) return d;
    return json::member(defs, name);
  }

  bool matchesPattern(std::string_view pattern, std::string_view s) {
    auto it = pattern_cache.find(pattern);
    if (it == pattern_cache.end()) {
      std::string text = fmt::format(R"({{"type":"string","pattern":{}}})", json::compact(json::str(pattern, defs.GetAllocator())));
      auto sch = json::Schema::compile(text);
      it = pattern_cache.emplace(std::string(pattern), sch ? std::move(*sch) : json::Schema()).first;
    }
    json::Document d;
    d.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), d.GetAllocator());
    return it->second.accepts(d);
  }

  json::Value genString(const json::Value& s, json::Allocator& a, Rng& rng) {
    if (const json::Value* f = json::member(s, "format"); f && f->IsString()) {
      std::string_view fmt_name(f->GetString(), f->GetStringLength());
      if (fmt_name == "uuid") return json::str(uuidFrom(rng), a);
      if (fmt_name == "date-time") return json::str("2026-11-30T07:00:00.000000Z", a);
    }
    std::size_t min_len = 0, max_len = 24;
    if (const json::Value* v = json::member(s, "minLength"); v && v->IsUint()) min_len = v->GetUint();
    if (const json::Value* v = json::member(s, "maxLength"); v && v->IsUint()) max_len = std::min<std::size_t>(v->GetUint(), 24);
    if (const json::Value* p = json::member(s, "pattern"); p && p->IsString()) {
      std::string_view pat(p->GetString(), p->GetStringLength());
      std::vector<std::string_view> ok;
      for (const char* c : kPatternCandidates)
        if (std::string_view(c).size() >= min_len && matchesPattern(pat, c)) ok.push_back(c);
      if (!ok.empty()) return json::str(ok[static_cast<std::size_t>(pick(rng, static_cast<int>(ok.size())))], a);
    }
    static const char* kWords[] = {"hello", "fuzz", "conform", "ünïcödé ✓", "a b c", "x", "path/to/file.txt", "42"};
    std::string w = kWords[pick(rng, 8)];
    while (w.size() < min_len) w += 'x';
    if (w.size() > std::max(max_len, min_len)) w.resize(std::max(max_len, min_len));
    return json::str(w, a);
  }

  json::Value gen(const json::Value& schema_in, const json::Value* root, json::Allocator& a, Rng& rng, int depth) {
    if (schema_in.IsBool() || depth > kMaxGenDepth) {
      // `true` (any value): a small arbitrary value.
      switch (pick(rng, 4)) {
        case 0: return json::str("any", a);
        case 1: return json::Value(pick(rng, 100));
        case 2: { json::Value o(rapidjson::kObjectType); o.AddMember("k", json::str("v", a), a); return o; }
        default: return json::Value(rapidjson::kObjectType);
      }
    }
    const json::Value* sp = resolve(schema_in, root);
    if (!sp || !sp->IsObject()) return json::Value();
    const json::Value& s = *sp;
    if (s.HasMember("$ref")) return gen(s, root, a, rng, depth + 1);
    if (const json::Value* c = json::member(s, "const")) return json::Value(*c, a);
    if (const json::Value* e = json::member(s, "enum"); e && e->IsArray() && !e->Empty())
      return json::Value((*e)[static_cast<rapidjson::SizeType>(pick(rng, static_cast<int>(e->Size())))], a);
    for (const char* k : {"oneOf", "anyOf"})
      if (const json::Value* alts = json::member(s, k); alts && alts->IsArray() && !alts->Empty())
        return gen((*alts)[static_cast<rapidjson::SizeType>(pick(rng, static_cast<int>(alts->Size())))], root, a, rng, depth + 1);
    if (const json::Value* all = json::member(s, "allOf"); all && all->IsArray() && !all->Empty())
      return gen((*all)[0], root, a, rng, depth + 1);
    std::string type;
    if (const json::Value* t = json::member(s, "type")) {
      if (t->IsString()) type = t->GetString();
      else if (t->IsArray() && !t->Empty()) {
        // Prefer a non-null member most of the time: null is the boring branch.
        const json::Value& pickd = (*t)[static_cast<rapidjson::SizeType>(pick(rng, static_cast<int>(t->Size())))];
        type = pickd.IsString() ? pickd.GetString() : "null";
        if (type == "null" && chance(rng, 60)) type = (*t)[0].IsString() ? (*t)[0].GetString() : "null";
      }
    } else if (s.HasMember("properties") || s.HasMember("required")) {
      type = "object";
    }
    if (type == "object" || type.empty()) {
      json::Value o(rapidjson::kObjectType);
      const json::Value* props = json::member(s, "properties");
      const json::Value* req = json::member(s, "required");
      auto required = [&](std::string_view k) {
        if (!req || !req->IsArray()) return false;
        for (auto& r : req->GetArray()) if (r.IsString() && k == r.GetString()) return true;
        return false;
      };
      if (props && props->IsObject())
        for (auto& m : props->GetObject()) {
          std::string_view k(m.name.GetString(), m.name.GetStringLength());
          if (!required(k) && !chance(rng, 50)) continue;
          o.AddMember(json::Value(m.name, a), gen(m.value, root, a, rng, depth + 1), a);
        }
      if (req && req->IsArray())  // required members without a property schema
        for (auto& r : req->GetArray())
          if (r.IsString() && !o.HasMember(r.GetString())) o.AddMember(json::Value(r, a), json::str("x", a), a);
      if (const json::Value* ap = json::member(s, "additionalProperties"); ap && ap->IsObject())
        for (int i = pick(rng, 3); i > 0; --i)
          o.AddMember(json::str(fmt::format("x-fuzz-{}", i), a), gen(*ap, root, a, rng, depth + 1), a);
      return o;
    }
    if (type == "array") {
      json::Value arr(rapidjson::kArrayType);
      int n = pick(rng, 3);
      if (const json::Value* mi = json::member(s, "minItems"); mi && mi->IsInt()) n = std::max(n, mi->GetInt());
      const json::Value* items = json::member(s, "items");
      for (int i = 0; i < n; ++i) arr.PushBack(items ? gen(*items, root, a, rng, depth + 1) : json::Value(i), a);
      return arr;
    }
    if (type == "string") return genString(s, a, rng);
    if (type == "integer" || type == "number") {
      std::int64_t lo = 0, hi = 1000;
      if (const json::Value* v = json::member(s, "minimum"); v && v->IsNumber()) lo = static_cast<std::int64_t>(v->GetDouble());
      if (const json::Value* v = json::member(s, "maximum"); v && v->IsNumber()) hi = static_cast<std::int64_t>(v->GetDouble());
      if (hi < lo) hi = lo;
      std::int64_t n = lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(std::min<std::int64_t>(hi - lo, 1000) + 1));
      if (type == "number" && chance(rng, 30)) return json::Value(static_cast<double>(n) + 0.5);
      return json::Value(n);
    }
    if (type == "boolean") return json::Value(chance(rng, 50));
    return json::Value();
  }

  std::string token() { return fmt::format("ctx-fuzz-{}", next_token++); }

  // Semantic overlay: values the schemas cannot know (see the file comment).
  void overlay(std::string_view method, json::Value& p, json::Allocator& a, Rng& rng) {
    if (!p.IsObject()) return;
    auto set = [&](const char* k, json::Value v) {
      if (p.HasMember(k)) p[k] = v; else p.AddMember(json::Value(k, a), v, a);
    };
    const std::string session = kSessions[pick(rng, 3)];
    if (p.HasMember("session_id")) set("session_id", json::str(session, a));
    if (p.HasMember("context_id") && !p["context_id"].IsNull()) set("context_id", json::str(token(), a));
    if (method == protocol::method::kEvent) {
      set("seq", json::Value(++seq[session]));
      json::Value ev(rapidjson::kObjectType);
      ev.AddMember("type", json::str(kEventTypes[pick(rng, 6)], a), a);
      if (chance(rng, 30)) ev.AddMember("future_member", json::Value(true), a);  // EVT-10
      set("event", std::move(ev));
    }
    if (method == protocol::method::kBusEvent) {
      set("plugin", json::str(chance(rng, 50) ? "other-plugin" : "conform-fuzz-peer", a));
    }
    const bool tool_call = method == protocol::method::kToolsCall;
    const bool tool_hook = method == protocol::method::kToolBeforeCall || method == protocol::method::kToolAfterResult;
    if ((tool_call || tool_hook) && !target.tools.empty()) {
      const std::size_t ti = static_cast<std::size_t>(pick(rng, static_cast<int>(target.tools.size())));
      const DeclaredTool& t = target.tools[ti];
      set("tool", json::str(t.name, a));
      json::Value args(rapidjson::kObjectType);
      for (int i = 0; i < kValidAttempts && t.parameters; ++i) {
        json::Value cand = gen(*t.parameters, t.parameters.get(), a, rng, 0);
        json::Document check;
        check.CopyFrom(cand, check.GetAllocator());
        if (ti < tool_schemas.size() && tool_schemas[ti].accepts(check)) { args = std::move(cand); break; }
      }
      // The resource the engine derives from the primary parameter (TOOL-06), when a string.
      json::Value resource;
      if (t.primary_resource_param && args.IsObject())
        if (const json::Value* pv = json::member(args, *t.primary_resource_param); pv && pv->IsString())
          resource = json::Value(*pv, a);
      set("arguments", std::move(args));
      if (p.HasMember("resource") || tool_call) set("resource", std::move(resource));
      if (method == protocol::method::kToolBeforeCall) set("permission_name", json::str(t.permission_name, a));
      if (tool_call) {
        set("invocation_id", json::str(uuidFrom(rng), a));
        if (p.HasMember("cancellation_token")) p.RemoveMember("cancellation_token");
      }
    }
  }

  // A valid frame of `method` (schema-generated, overlaid, validated), or nullopt.
  std::optional<FuzzStep> valid(std::string_view method, Rng& rng) {
    const protocol::MethodInfo* mi = profile.findMethod(method);
    if (!mi) return std::nullopt;
    auto it = schemas.find(mi->params_type);
    if (it == schemas.end()) return std::nullopt;
    for (int attempt = 0; attempt < kValidAttempts; ++attempt) {
      json::Document params;
      json::Value v = gen(it->second, nullptr, params.GetAllocator(), rng, 0);
      static_cast<json::Value&>(params).Swap(v);
      overlay(method, params, params.GetAllocator(), rng);
      if (profile.validate(method, protocol::Part::Params, params)) continue;
      FuzzStep s;
      s.method = std::string(method);
      s.label = std::string(method);
      if (mi->isRequest()) {
        wire::RpcId id(next_id++);
        s.bytes = wire::encodeRequest(id, method, params);
        s.expect_id = id.render();
      } else {
        s.bytes = wire::encodeNotification(method, params);
      }
      return s;
    }
    return std::nullopt;
  }

  // --- mutations ----------------------------------------------------------------------------
  // Each returns true when it changed the step. `may_end` is set for invalid results.
  void mutate(FuzzStep& s, Rng& rng) {
    auto parsed = json::parse(s.bytes);
    if (!parsed || !parsed->doc.IsObject()) return;
    json::Document& d = parsed->doc;
    auto& a = d.GetAllocator();
    json::Value* params = d.HasMember("params") ? &d["params"] : nullptr;
    // 60 %: a valid variation (16..19), 40 %: an invalid one (0..15).
    const int which = chance(rng, 60) ? 16 + pick(rng, 4) : pick(rng, 16);
    s.may_end = true;  // flipped back below for the mutations that stay valid
    auto finish = [&](std::string label) {
      s.bytes = json::compact(d);
      s.label += ": " + label;
    };
    switch (which) {
      case 0:  // params: drop a member (a required one is likely)
        if (params && params->IsObject() && params->MemberCount() > 0) {
          auto m = params->MemberBegin() + pick(rng, static_cast<int>(params->MemberCount()));
          std::string k = m->name.GetString();
          params->RemoveMember(m);
          return finish("drop params." + k);
        }
        break;
      case 1:  // params: unknown member (closed objects reject it)
        if (params && params->IsObject()) { params->AddMember("fuzz_extra", json::Value(1), a); return finish("unknown params member"); }
        break;
      case 2:  // params: a member of the wrong type
        if (params && params->IsObject() && params->MemberCount() > 0) {
          auto m = params->MemberBegin() + pick(rng, static_cast<int>(params->MemberCount()));
          std::string k = m->name.GetString();
          if (m->value.IsString()) m->value.SetInt(7); else m->value = json::str("seven", a);
          return finish("params." + k + " wrong type");
        }
        break;
      case 3:  // params: a 64 KiB string where a string was
        if (params && params->IsObject())
          for (rapidjson::SizeType i = 0, n = params->MemberCount(); i < n; ++i) {
            auto& m = params->MemberBegin()[i];
            if (m.value.IsString()) { m.value = json::str(std::string(65536, 'z'), a); return finish(std::string("params.") + m.name.GetString() + " 64 KiB"); }
          }
        break;
      case 4: d["jsonrpc"] = json::str("1.0", a); s.expect_id.clear(); return finish("jsonrpc 1.0 (RPC-01)");
      case 5: d.RemoveMember("jsonrpc"); s.expect_id.clear(); return finish("no jsonrpc (RPC-01)");
      case 6:
        if (d.HasMember("id")) { d["id"] = json::Value(1.5); s.expect_id.clear(); return finish("id 1.5 (RPC-05)"); }
        break;
      case 7: d.AddMember("fuzz_envelope", json::Value(true), a); s.expect_id.clear(); return finish("extra envelope member (RPC-03)");
      case 8: if (params) { *params = json::Value(rapidjson::kArrayType); return finish("params as array"); } break;
      case 9: s.bytes = s.bytes.substr(0, s.bytes.size() / 2); s.expect_id.clear(); s.label += ": truncated JSON (FRAME-13)"; return;
      case 10: s.bytes += "x"; s.expect_id.clear(); s.label += ": trailing garbage (FRAME-13)"; return;
      case 11: s.bytes = "\xEF\xBB\xBF" + s.bytes; s.expect_id.clear(); s.label += ": BOM (FRAME-14)"; return;
      case 12: {  // invalid UTF-8 inside a string (FRAME-04)
        auto q = s.bytes.find("\"method\":\"");
        if (q != std::string::npos) { s.bytes.insert(q + 10, "\xff\xfe"); s.expect_id.clear(); s.label += ": invalid UTF-8 (FRAME-04)"; return; }
        break;
      }
      case 13: {  // nesting past the 512 cap
        if (params && params->IsObject()) {
          std::string deep(600, '[');
          deep += std::string(600, ']');
          s.bytes.insert(s.bytes.size() - 1, std::string(",\"fuzz_deep\":") + deep);
          s.expect_id.clear();
          s.label += ": nesting 600 deep";
          return;
        }
        break;
      }
      case 14: {  // a number beyond double range
        auto pos = s.bytes.rfind('}');
        s.bytes.insert(pos, ",\"fuzz_num\":1e400");
        s.expect_id.clear();
        s.label += ": number 1e400";
        return;
      }
      case 15:  // duplicate member (FRAME-19)
        s.bytes = "{\"jsonrpc\":\"2.0\"," + s.bytes.substr(1);
        s.expect_id.clear();
        s.label += ": duplicate jsonrpc (FRAME-19)";
        return;
      // ---- valid variations: every obligation stays -------------------------------------------
      // Only requests: an id variation on a response (special "response to no request") would make
      // it look owed an answer.
      case 16:
        if (d.HasMember("id") && d.HasMember("method")) {
          wire::RpcId id(fmt::format("r-{}", next_id++));
          d["id"] = id.toJSON(a);
          s.expect_id = id.render();
          s.may_end = false;
          return finish("string id");
        }
        break;
      case 17:
        if (d.HasMember("id") && d.HasMember("method")) {
          wire::RpcId id(static_cast<std::int64_t>(9223372036854775807LL - next_id++));
          d["id"] = id.toJSON(a);
          s.expect_id = id.render();
          s.may_end = false;
          return finish("id near 2^63");
        }
        break;
      case 18: s.cr = true; s.may_end = false; s.label += ": CR LF (FRAME-08)"; return;
      case 19: s.delivery = FuzzStep::Delivery::Split; s.may_end = false; s.label += ": split write"; return;
      default: break;
    }
    s.may_end = false;  // nothing applied
  }

  FuzzStep special(Rng& rng) {
    FuzzStep s;
    // Weighted: the four possibly-fatal kinds (3–6) are 1 in 10.
    static constexpr int kWeights[] = {8, 8, 4, 1, 1, 1, 1, 8, 8};
    int r = pick(rng, 40), kind = 0;
    while (r >= kWeights[kind]) r -= kWeights[kind++];
    switch (kind) {
      case 0: {  // unknown request: -32601 is owed (RPC-13 style), connection stays
        wire::RpcId id(next_id++);
        s.bytes = wire::encodeRequestRaw(id, "plugin/fuzz_future_request", "{}");
        s.expect_id = id.render();
        s.method = "plugin/fuzz_future_request";
        s.label = "unknown request method";
        return s;
      }
      case 1:
        s.bytes = wire::encodeNotificationRaw("plugin/fuzz_future_notification", "{\"n\":1}");
        s.method = "plugin/fuzz_future_notification";
        s.label = "unknown notification";
        return s;
      case 2: {  // a large but legal line: an unknown notification padded to 1 MiB
        std::string head = R"({"jsonrpc":"2.0","method":"plugin/fuzz_pad","params":{"p":")";
        s.bytes = head + std::string(kLargeLineBytes - head.size() - 3, 'p') + "\"}}";
        s.method = "plugin/fuzz_pad";
        s.label = "1 MiB line";
        return s;
      }
      case 3: {  // one byte past the frame limit (FRAME-06/07): fatal for the receiver
        std::string head = R"({"jsonrpc":"2.0","method":"plugin/fuzz_pad","params":{"p":")";
        s.bytes = head + std::string(kOversizedBytes - head.size() - 3, 'p') + "\"}}";
        s.may_end = true;
        s.method = "plugin/fuzz_pad";
        s.label = "oversized line (FRAME-06)";
        return s;
      }
      case 4: s.bytes = ""; s.may_end = true; s.label = "empty line (FRAME-10)"; return s;
      case 5: s.bytes = "[]"; s.may_end = true; s.label = "batch [] (FRAME-11)"; return s;
      case 6: s.bytes = "{\"jsonrpc\":\"2.0\",\"id\":987654,\"result\":{}}"; s.may_end = true; s.label = "response to no request"; return s;
      case 7: {  // stall: the plugin's stdout is not read for a while
        auto p = valid(protocol::method::kPing, rng);
        if (p) { s = *p; s.delivery = FuzzStep::Delivery::Stall; s.stall_ms = 20 + static_cast<std::uint32_t>(pick(rng, 200)); s.label += ": stall reading"; }
        return s;
      }
      default: {  // coalesced: two pings in one write
        auto p = valid(protocol::method::kPing, rng);
        if (p) { s = *p; s.delivery = FuzzStep::Delivery::Coalesce; s.label += ": coalesced"; }
        return s;
      }
    }
  }
};

Generator::Generator(const protocol::Profile& profile, std::uint32_t deadline_ms)
    : impl_(std::make_unique<Impl>(profile, deadline_ms)) {}
Generator::~Generator() = default;

void Generator::setTarget(const TargetInfo& t) {
  impl_->target = t;
  impl_->tool_schemas.clear();
  for (const auto& tool : t.tools) {
    auto sch = tool.parameters ? json::Schema::compile(*tool.parameters) : Expected<json::Schema, std::string>(json::Schema());
    impl_->tool_schemas.push_back(sch ? std::move(*sch) : json::Schema());
  }
}

void Generator::setMutatePercent(int percent) { impl_->mutate_percent = percent; }

FuzzStep Generator::handshake() {
  json::Document d;
  json::Value params;
  if (impl_->profile.id() == protocol::Profile::Id::V004) {
    protocol::v004::InitializeParams p;
    p.engine_version = "conform-fuzz";
    params = toJSON(p, d.GetAllocator());
  } else {
    protocol::InitializeParams p;
    p.engine_version = "conform-fuzz";
    params = toJSON(p, d.GetAllocator());  // producer_messaging false: no plugin requests owed
  }
  FuzzStep s;
  s.bytes = wire::encodeRequest(wire::RpcId(1), protocol::method::kInitialize, params);
  s.expect_id = "1";
  s.method = std::string(protocol::method::kInitialize);
  s.label = "handshake";
  return s;
}

FuzzStep Generator::ping() {
  wire::RpcId id(impl_->next_id++);
  FuzzStep s;
  s.bytes = wire::encodeRequestRaw(id, protocol::method::kPing, "{}");
  s.expect_id = id.render();
  s.method = std::string(protocol::method::kPing);
  s.label = "probe ping";
  return s;
}

std::vector<FuzzStep> Generator::shutdown(Rng& rng) {
  (void)rng;
  FuzzStep s;
  s.bytes = wire::encodeNotificationRaw(protocol::method::kShutdown, "{}");
  s.method = std::string(protocol::method::kShutdown);
  s.label = "shutdown";
  s.shutdown = true;
  FuzzStep e;
  e.kind = FuzzStep::Kind::CloseStdin;
  e.label = "close stdin";
  return {s, e};
}

std::optional<FuzzStep> Generator::valid(std::string_view method, Rng& rng) { return impl_->valid(method, rng); }

std::vector<FuzzStep> Generator::batch(Rng& rng, std::size_t max_len) {
  Impl& g = *impl_;
  std::vector<FuzzStep> out;
  const std::size_t n = 1 + static_cast<std::size_t>(pick(rng, static_cast<int>(std::max<std::size_t>(max_len, 1))));
  for (std::size_t i = 0; i < n; ++i) {
    std::optional<FuzzStep> s;
    const int r = pick(rng, 100);
    if (r < 30 && !g.target.tools.empty()) s = g.valid(protocol::method::kToolsCall, rng);
    else if (r < 50 && !g.target.hooks.empty())
      s = g.valid(std::string(protocol::method::kInterceptPrefix) + g.target.hooks[static_cast<std::size_t>(pick(rng, static_cast<int>(g.target.hooks.size())))], rng);
    else if (r < 65 && g.target.subscribe_events) s = g.valid(protocol::method::kEvent, rng);
    else if (r < 75 && g.target.subscribe_bus) s = g.valid(protocol::method::kBusEvent, rng);
    else if (r < 85) s = g.valid(protocol::method::kPing, rng);
    else if (g.mutate_percent > 0) s = g.special(rng);
    else s = g.valid(protocol::method::kPing, rng);
    if (!s || (s->bytes.empty() && !s->may_end)) continue;
    if (chance(rng, g.mutate_percent) && !s->bytes.empty() && s->bytes.front() == '{') {
      // A step that was possibly fatal stays so whatever the mutation did: mutate() decides
      // may_end for the frames it breaks, and a "valid variation" (CR LF, split write) or a
      // mutation that did not apply must not turn a 4 MiB + 1 line into valid input (the live
      // fuzzer reported conform-plugin's FRAME-07 exit as "exit after valid input only").
      const bool fatal = s->may_end;
      g.mutate(*s, rng);
      s->may_end = s->may_end || fatal;
    }
    out.push_back(std::move(*s));
    if (out.back().may_end) break;  // the rest would most likely go unread: end the batch here
  }
  return out;
}

std::vector<FuzzStep> Generator::fromTrace(const std::string& path, std::string* error) {
  std::vector<FuzzStep> out;
  auto reader = trace::TraceReader::open(path);
  while (true) {
    auto ev = reader->next();
    if (!ev) {
      if (error) *error = fmt::format("{}: {}", path, ev.error().str());
      return {};
    }
    if (!*ev) break;
    const trace::TraceEvent& e = **ev;
    if (e.dir != trace::Dir::EngineToPlugin) continue;
    if (e.kind == trace::Kind::Eof) {
      FuzzStep s;
      s.kind = FuzzStep::Kind::CloseStdin;
      s.label = "corpus: close stdin";
      out.push_back(std::move(s));
      continue;
    }
    if (e.kind != trace::Kind::Frame && e.kind != trace::Kind::Text && e.kind != trace::Kind::Binary) continue;
    FuzzStep s;
    s.bytes = std::string(e.raw);
    s.cr = e.had_cr;
    s.unterminated = e.unterminated;
    s.label = "corpus: " + path;
    if (e.kind != trace::Kind::Frame) {
      s.may_end = true;
    } else if (auto m = wire::decodeMessage(s.bytes)) {
      if (m->isRequest() || m->isNotification()) s.method = std::string(m->method);
      if (s.method == protocol::method::kInitialize) continue;  // every session has its own handshake
      if (s.method == protocol::method::kShutdown) s.shutdown = true;
      if (m->isRequest()) s.expect_id = m->id.render();
      // Whether the corpus frame is valid is not known here: treated as possibly fatal.
      s.may_end = true;
    } else {
      s.may_end = true;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace conform::runner::fuzz
