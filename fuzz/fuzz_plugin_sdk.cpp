// fuzz/fuzz_plugin_sdk.cpp — the reference PLUGIN SDK (mock_plugin/sdk.h) as a state machine under
// libFuzzer.
//
// Why: the SDK's bugs are in sequences (a hook while 64 tool calls hold every slot, an emit_result
// nobody waits for, EOF while a delayed handler is pending, a grant used after its request ended),
// which a one-frame parser target never reaches. PluginServer is sans-IO: the input is decoded into
// operations on one in-process server on a VirtualClock:
//   * engine→plugin messages, schema-valid ones built by the live fuzzer's generator
//     (harness/runner/fuzz_gen.cpp: the profile's embedded schemas + the handshake's tools/hooks),
//     its mutated ones (envelope, JSON, UTF-8, CR LF, huge lines), and raw bytes — all framed by
//     wire::FrameDecoder exactly as the stdio shell does, and offered only while
//     canAcceptFrame() (SDK-19/20 back-pressure: the reader stops, nothing is dropped);
//   * stdin EOF; the clock, timer to timer (PluginServer::nextTimer);
//   * the engine's side of the plugin's own traffic, played like an engine: every plugin/emit gets
//     its plugin/emit_result (§11), every plugin request -32601 (no producer messaging offered).
// Two plugins: the built-in behaviour of conform-plugin (every hook and capability) and a
// behaviour file with delayed tools and hooks (slow handlers on the virtual clock).
// Invariants asserted after every operation (FUZZ_CHECK aborts, libFuzzer keeps the input):
//   P1 every frame the SDK writes decodes as JSON-RPC; its requests and notifications pass
//      Profile::validate; a result answering a valid request passes validate for that method;
//   P2 every response answers a request we sent (or has id null after an undecodable one, RPC-07),
//      at most once (RPC-08, ReplyOnce);
//   P3 every valid request is answered within 5 s of virtual time while the server runs (RPC-08;
//      the slow behaviour waits at most 1.5 s; SDK-18 answers -32050 at once when all 64 slots are
//      busy; PING-04 ping inline) — unless stdin EOF, plugin/shutdown or a possibly-fatal frame
//      (SDK-25) came first;
//   P4 a context_id the plugin emits with is one we handed out, is spent at most once (SDK-06/07,
//      EMIT-24), and a notification grant within 4 s of its delivery (SDK-07);
//   P5 bounded: activeCallbacks() <= 64 (SDK-17), pendingReplies() <= 128 (SDK-20);
//   P6 after stdin EOF the server stops running within 3 s (SHUT-08, FRAME-18).
//
// Input layout: byte 0 = configuration (bit 0: profile 0.0.4; bit 1: the slow behaviour), then
// operations: one opcode byte and its argument bytes.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/protocol/methods.h"
#include "core/protocol/profile.h"
#include "core/wire/framing.h"
#include "core/wire/rpc.h"
#include "fuzz/fuzz_common.h"
#include "harness/runner/fuzz_impl.h"
#include "mock_plugin/behaviour.h"
#include "mock_plugin/sdk.h"

using namespace conform;
using namespace std::chrono_literals;
namespace rf = conform::runner::fuzz;

namespace {

constexpr std::size_t kMaxOps = 300;
// P3: the slow behaviour's longest delay is 1.5 s; 5 s of virtual time leaves the SDK's own
// timers (4 s notification grant, SDK-07) room too.
constexpr clock::Duration kAnswerBound = 5s;
// P4 / SDK-07: a notification grant is usable for 4 s from its delivery.
constexpr clock::Duration kNotificationGrant = plugin::kNotificationGrant;
// P6 / SHUT-08: the shutdown grace default (3,000 ms) bounds the exit after stdin EOF.
constexpr clock::Duration kExitBound = 3s;
// The generator's deadline only labels steps here (answers are judged on the virtual clock).
constexpr std::uint32_t kGenDeadlineMs = 2000;

// A behaviour with slow handlers: a delayed tool, an error tool, a delayed hook and an emit per
// event (docs/reference-plugin.md). Delays stay under P3's bound.
constexpr std::string_view kSlowBehaviour = R"({
  "name": "conform-plugin", "version": "0.1.0", "profile": "PROFILE",
  "tools": [
    {"name": "slow", "description": "waits", "permission_name": "slow",
     "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
     "response": {"echo": "text", "delay_ms": 1500}},
    {"name": "broken", "description": "fails", "permission_name": "broken",
     "parameters": {"type": "object"}, "response": {"error": {"code": -32000, "message": "no"}}}
  ],
  "subscribe_events": true, "subscribe_bus": true, "publish_bus": true,
  "hooks": {"tool_before_call": {"answer": {"action": "allow"}, "delay_ms": 700},
            "message_end": {"answer": {"action": "keep"}, "delay_ms": 1200}},
  "emits": [{"name": "seen", "payload": {"n": 1}, "count": 3}]
})";

struct Sent {
  std::string method;
  clock::TimePoint at;
  bool valid = false;  // generated valid, not mutated: an answer is owed and its result is checked
  int answers = 0;
};
struct Grant {
  clock::TimePoint at;
  bool notification = false;
  int spent = 0;
};

class Harness {
 public:
  explicit Harness(std::uint8_t cfg) {
    v004_ = cfg & 1;
    profile_ = v004_ ? &protocol::profileV004() : &protocol::profileV006();
    plugin::Profile p = v004_ ? plugin::Profile::V004 : plugin::Profile::V006;
    plugin::PluginBuilder builder("x", "0");
    if (cfg & 2) {
      std::string text(kSlowBehaviour);
      text.replace(text.find("PROFILE"), 7, v004_ ? "0.0.4" : "0.0.6");
      auto spec = plugin::parseBehaviour(text);
      FUZZ_CHECK(spec, "the slow behaviour does not parse: " + (spec ? std::string() : spec.error()));
      builder = plugin::behaviourBuilder(*spec);
    } else {
      plugin::BehaviourOptions o;
      o.profile = p;
      builder = plugin::builtinBehaviour(o);
    }
    auto server = builder.build(clk_);
    FUZZ_CHECK(server, "the behaviour does not build: " + (server ? std::string() : server.error()));
    server_ = std::move(*server);
    server_->setLogSink([](std::string_view) {});
    gen_ = std::make_unique<rf::Generator>(*profile_, kGenDeadlineMs);
    rf::TargetInfo ti = targetInfo(server_->initializeResult());
    gen_->setTarget(ti);
    for (const auto& m : profile_->methods())
      if (m.direction == protocol::Direction::EngineToPlugin) methods_.emplace_back(m.name);
    sendStep(gen_->handshake(), true);
    pump();
  }

  void step(fuzz::ByteReader& in) {
    const std::uint8_t op = in.byte();
    switch (op % 10) {
      case 0: case 1: case 2: case 3: {  // a valid message of some engine→plugin method
        const std::uint8_t m = in.byte();
        rf::Rng rng(static_cast<std::uint64_t>(in.byte()) << 8 | in.byte());
        if (auto s = gen_->valid(methods_[m % methods_.size()], rng)) sendStep(*s, true);
        break;
      }
      case 4: {  // generated traffic with mutations (valid first, some steps mutated)
        rf::Rng rng(static_cast<std::uint64_t>(in.byte()) << 8 | in.byte());
        for (auto& s : gen_->batch(rng, 1 + in.byte() % 4)) sendStep(s, false);
        break;
      }
      case 5: {  // raw bytes, framed as the stdio shell frames them
        std::size_t n = in.byte();
        std::string bytes;
        for (std::size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>(in.byte()));
        possibly_fatal_ = true;
        feed(bytes);
        break;
      }
      case 6: case 7: {
        static constexpr std::int64_t kSteps[] = {1, 10, 100, 500, 999, 1000, 1500, 2000, 4000, 4001, 6000, 30000};
        advanceBy(std::chrono::milliseconds(kSteps[in.byte() % 12]));
        break;
      }
      case 8:
        if (in.byte() % 4 == 0) eof();
        break;
      default: {  // the engine's stray traffic: a response to no request, an unsolicited emit_result
        const std::uint8_t k = in.byte();
        feed(k & 1 ? R"({"jsonrpc":"2.0","id":"nobody","result":{}})"
                        "\n"
                   : R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"seen","bus":"published","durable":"dropped","reason":null}})"
                     "\n");
        break;
      }
    }
    pump();
  }

  void finish() {
    for (int i = 0; i < 12; ++i) advanceBy(1s);
    if (!eof_) eof();
    for (int i = 0; i < 6; ++i) advanceBy(1s);
  }

 private:
  static rf::TargetInfo targetInfo(const json::Value& r) {
    rf::TargetInfo ti;
    if (auto n = json::stringMember(r, "name")) ti.name = std::string(*n);
    if (const json::Value* caps = json::member(r, "capabilities")) {
      auto flag = [&](const char* k) { const json::Value* v = json::member(*caps, k); return v && v->IsBool() && v->GetBool(); };
      ti.subscribe_events = flag("subscribe_events");
      ti.subscribe_bus = flag("subscribe_bus");
      ti.publish_bus = flag("publish_bus");
      if (const json::Value* hooks = json::member(*caps, "intercept"); hooks && hooks->IsArray())
        for (auto& h : hooks->GetArray())
          if (h.IsString()) ti.hooks.emplace_back(h.GetString());
    }
    if (const json::Value* tools = json::member(r, "tools"); tools && tools->IsArray())
      for (auto& tv : tools->GetArray()) {
        rf::DeclaredTool dt;
        dt.name = std::string(json::stringMember(tv, "name").value_or(""));
        dt.permission_name = std::string(json::stringMember(tv, "permission_name").value_or(""));
        if (auto pr = json::stringMember(tv, "primary_resource_param")) dt.primary_resource_param = std::string(*pr);
        if (const json::Value* ps = json::member(tv, "parameters")) dt.parameters = std::make_shared<json::Document>(json::copy(*ps));
        if (!dt.name.empty()) ti.tools.push_back(std::move(dt));
      }
    return ti;
  }

  void sendStep(const rf::FuzzStep& s, bool valid) {
    if (eof_) return;
    if (s.kind == rf::FuzzStep::Kind::CloseStdin) return eof();
    const bool is_valid = valid && !s.may_end;
    if (s.may_end) possibly_fatal_ = true;
    if (s.shutdown || s.method == protocol::method::kShutdown) shutdown_ = true;
    // Grants handed out with this frame (P4).
    if (auto m = wire::decodeMessage(s.bytes); m && m->params && m->params->IsObject())
      if (auto tok = json::stringMember(*m->params, "context_id"))
        grants_[std::string(*tok)] = Grant{clk_.now(), m->isNotification(), 0};
    if (!s.expect_id.empty()) {
      auto [it, fresh] = sent_.emplace(s.expect_id, Sent{s.method, clk_.now(), is_valid, 0});
      if (!fresh) tainted_.insert(s.expect_id);  // the generator never reuses ids; be safe
    }
    feed(s.bytes + (s.unterminated ? "" : s.cr ? "\r\n" : "\n"));
  }

  // Frames bytes like the stdio shell (FrameDecoder → receive), honouring back-pressure.
  void feed(std::string_view bytes) {
    decoder_.feed(bytes);
    while (auto ev = decoder_.next()) {
      for (int i = 0; i < 64 && !server_->canAcceptFrame(); ++i) pump();
      if (!server_->canAcceptFrame()) return;  // the reader stays stopped; nothing is dropped
      server_->receive(std::move(*ev));
      pump();
    }
  }

  void eof() {
    if (eof_) return;
    eof_ = true;
    eof_at_ = clk_.now();
    server_->receiveEof();
    pump();
  }

  void advanceBy(clock::Duration d) {
    const clock::TimePoint target = clk_.now() + d;
    for (int guard = 0; guard < 10000 && clk_.now() < target; ++guard) {
      clock::TimePoint next = std::min(target, server_->nextTimer());
      if (next <= clk_.now()) next = clk_.now() + 1ms;
      clk_.set(next);
      pump();
    }
  }

  // Runs the server, takes its output, answers what an engine answers, checks the invariants.
  void pump() {
    for (int round = 0; round < 16; ++round) {
      server_->process();
      bool any = false;
      while (auto f = server_->popOutbound()) {
        any = true;
        check(*f);
      }
      if (!any) break;
    }
    FUZZ_CHECK(server_->activeCallbacks() <= plugin::kMaxCallbacks, "P5: " + std::to_string(server_->activeCallbacks()) + " active callbacks");
    FUZZ_CHECK(server_->pendingReplies() <= plugin::kMaxPendingReplies, "P5: " + std::to_string(server_->pendingReplies()) + " pending replies");
    const auto now = clk_.now();
    if (server_->state() == plugin::ServerState::Running) {
      if (eof_) FUZZ_CHECK(now - eof_at_ <= kExitBound, "P6: still running " + ms(now - eof_at_) + " ms after stdin EOF");
      if (!eof_ && !shutdown_ && !possibly_fatal_)
        for (auto& [id, s] : sent_)
          if (s.valid && s.answers == 0 && !tainted_.count(id))
            FUZZ_CHECK(now - s.at <= kAnswerBound, "P3: " + s.method + " (id " + id + ") unanswered after " + ms(now - s.at) + " ms");
    }
  }

  static std::string ms(clock::Duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  }

  void check(const std::string& frame) {
    FUZZ_CHECK(frame.find('\n') == std::string::npos, "P1: a frame with a raw LF: " + frame);
    auto m = wire::decodeMessage(frame);
    FUZZ_CHECK(m, "P1: the SDK wrote an undecodable frame: " + frame);
    if (m->isRequest() || m->isNotification()) {
      static const json::Value kNoParams(rapidjson::kObjectType);
      auto v = profile_->validate(m->method, protocol::Part::Params, m->params ? *m->params : kNoParams);
      FUZZ_CHECK(!v, "P1: the SDK sent " + std::string(m->method) + " that its profile refuses: " + v->str() + "\n  " + frame);
      if (m->method == protocol::method::kEmit && m->params) {
        const std::string tok(json::stringMember(*m->params, "context_id").value_or(""));
        auto g = grants_.find(tok);
        FUZZ_CHECK(g != grants_.end(), "P4: an emit with a context_id never handed out: " + frame);
        FUZZ_CHECK(++g->second.spent == 1, "P4: a grant spent twice: " + frame);
        if (g->second.notification)
          FUZZ_CHECK(clk_.now() - g->second.at <= kNotificationGrant,
                     "P4: a notification grant used " + ms(clk_.now() - g->second.at) + " ms after its delivery: " + frame);
        // The engine answers every emit (§11).
        const std::string name(json::stringMember(*m->params, "name").value_or(""));
        if (!eof_)
          feed(R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":)" + plugin::quote(name) +
               R"(,"bus":"published","durable":"dropped","reason":null}})" + "\n");
      }
      if (m->isRequest() && !eof_)  // no producer messaging offered: nothing is served (RPC-13)
        feed(wire::encodeError(m->id, -32601, "method not found") + "\n");
      return;
    }
    if (m->id.isNull()) return;  // the answer to an undecodable frame (RPC-07)
    const std::string id = m->id.render();
    auto it = sent_.find(id);
    FUZZ_CHECK(it != sent_.end(), "P2: a response to no request: " + frame);
    if (tainted_.count(id)) return;
    FUZZ_CHECK(++it->second.answers == 1, "P2: request " + id + " answered twice: " + frame);
    if (m->kind == wire::MessageKind::Success && it->second.valid) {
      auto v = profile_->validate(it->second.method, protocol::Part::Result, *m->result);
      FUZZ_CHECK(!v, "P1: the SDK answered " + it->second.method + " with a result its profile refuses: " + v->str() + "\n  " + frame);
    }
  }

  bool v004_ = false;
  const protocol::Profile* profile_ = nullptr;
  clock::VirtualClock clk_;
  std::unique_ptr<plugin::PluginServer> server_;
  std::unique_ptr<rf::Generator> gen_;
  std::vector<std::string> methods_;
  wire::FrameDecoder decoder_;
  std::map<std::string, Sent> sent_;
  std::set<std::string> tainted_;
  std::map<std::string, Grant> grants_;
  bool eof_ = false, shutdown_ = false, possibly_fatal_ = false;
  clock::TimePoint eof_at_{};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::ByteReader in(data, size);
  Harness h(in.byte());
  for (std::size_t i = 0; i < kMaxOps && !in.rest().empty(); ++i) h.step(in);
  h.finish();
  return 0;
}
