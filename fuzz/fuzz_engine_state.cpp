// fuzz/fuzz_engine_state.cpp — the reference ENGINE (mock_engine) as a state machine under libFuzzer.
//
// Why: the engine's bugs are in sequences (a result after a timeout, an emit with a spent token
// after a restart, EOF while a hook is pending), which the per-parser targets never reach. The
// engine is sans-IO (mock_engine/engine.h), so the input is decoded into a sequence of operations
// on one in-process engine on a VirtualClock, played through its public surfaces only:
//   * plugin side: frames and raw bytes on a connection (onBytes), stdout EOF, process exit,
//     stderr, back-pressure (Host::writable / onWritable);
//   * driver side: the driver protocol (mock_engine/driver.h — what tests, scenarios and
//     `conform check-engine` use): sessions, events, tool calls, pings, runs (hook chains),
//     compact/fork/revert, restart, shutdown;
//   * time: the clock moves from timer to timer (Engine::nextDeadline), never past one in a single
//     jump, as a real clock would.
// Invariants asserted after every operation (FUZZ_CHECK aborts, libFuzzer keeps the input):
//   I1 every frame the engine writes decodes as a JSON-RPC message (FRAME/RPC) and, for requests
//      and notifications, passes Profile::validate for its method (the engine never sends
//      non-conforming traffic); nothing is written to a connection after its stdin was closed;
//   I2 engine→plugin request ids are never reused on a connection while pending (RPC-04);
//   I3 every context_id the engine hands a plugin is fresh for that plugin (EVT-21, BUS-05,
//      HOOK-10; one hook chain shares its token among the chain's plugins, PROTOCOL §13.1);
//   I4 each plugin→engine request is answered at most once, and, while the connection stays
//      connected, within 5 s of virtual time (RPC-08; producer acceptance is deferred, PROD-17);
//      every response the engine writes answers a request the plugin sent (RPC-09);
//   I5 each driver request is answered at most once; tool.call / plugin.ping with wait are
//      answered within their rule's bound (tool_timeout + two interception timeouts + grace,
//      TOOL-29/HOOK-06; PING-03); engine.shutdown with wait within SHUT-07 (grace + 6 s);
//   I6 bounded tables: no plugin's delivery queue exceeds 1,024 records (EVT-12/QUOTA);
//   I7 one message_id per idempotency key (PROD-13): an accepted send with a key seen before gets
//      the same message_id.
//
// Input layout: byte 0 = configuration (bit 0: profile 0.0.4; bit 1: producer handler;
// bit 2: two plugins; bits 3–4: permission allow/ask/deny/allow), then operations: one opcode
// byte and its argument bytes (fuzz::ByteReader yields 0 once the input is used up).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/protocol/common.h"
#include "core/protocol/methods.h"
#include "core/protocol/profile.h"
#include "core/wire/rpc.h"
#include "fuzz/fuzz_common.h"
#include "mock_engine/driver.h"
#include "mock_engine/engine.h"
// Only for canned, valid hook answers (hooks::passThrough): the plugin side of this fuzzer plays a
// conforming plugin's answers; the engine itself never sees mock_plugin code.
#include "mock_plugin/sdk.h"

using namespace conform;
using namespace std::chrono_literals;

namespace {

// Bounds of one input (libFuzzer inputs are small; these keep one run well under a millisecond
// per operation and the -timeout far away).
constexpr std::size_t kMaxOps = 400;
// I4: the engine answers a plugin request at once, or after durable acceptance (PROD-17); 5 s of
// virtual time is far beyond any acceptance delay of the in-memory producer service.
constexpr clock::Duration kPluginRequestBound = 5s;
// Shorter than the defaults (LIFE-07 allows any value > 0) so the timeouts are reached by short inputs.
constexpr std::uint64_t kToolTimeoutMs = 4000;
constexpr std::uint64_t kInterceptionMs = 1000;
constexpr std::uint64_t kGraceMs = 1000;
constexpr std::uint64_t kStartupMs = 3000;
// I5 bounds: TOOL-29 tool timeout, plus a tool_before_call and a tool_after_result hook each at
// its interception timeout (HOOK-06), plus the grace + reap of a plugin killed meanwhile, + 1 s.
constexpr clock::Duration kToolBound = std::chrono::milliseconds(kToolTimeoutMs + 2 * kInterceptionMs + kGraceMs) + 6s;
// PING-03: the ping deadline is interception_timeout_ms; + 1 s.
constexpr clock::Duration kPingBound = std::chrono::milliseconds(kInterceptionMs) + 1s;
// SHUT-07: the largest grace + 6 s.
constexpr clock::Duration kShutdownBound = std::chrono::milliseconds(kGraceMs) + 6s + 1s;
// EVT-12 / PROTOCOL §6: the per-plugin delivery queue holds at most 1,024 records.
constexpr std::size_t kQueueRecords = 1024;

struct Proc {
  std::string plugin;
  std::string partial;
  bool stdin_closed = false, killed = false, exited = false, eof = false;
  std::set<std::string> engine_pending;         // ids of engine→plugin requests not yet answered
  std::map<std::string, std::string> methods;   // id → method of engine→plugin requests
  std::vector<std::string> unanswered_initialize;
  struct PluginReq {
    std::string method;
    clock::TimePoint sent;
    int answers = 0;
    bool tainted = false;  // the id was reused by us: no exactness claim
  };
  std::map<std::string, PluginReq> plugin_reqs;
};

struct FuzzHost final : engine::Host {
  std::map<engine::ConnId, Proc> procs;
  std::vector<std::pair<engine::ConnId, std::string>> fresh;  // frames written since the last check
  bool can_write = true;
  bool spawn(engine::ConnId c, const engine::PluginConfig& cfg, std::string&) override {
    procs[c].plugin = cfg.name;
    return true;
  }
  void write(engine::ConnId c, std::string_view bytes) override {
    Proc& p = procs[c];
    FUZZ_CHECK(!p.stdin_closed, "I1: the engine wrote to a connection after closing its stdin");
    p.partial.append(bytes);
    std::size_t pos;
    while ((pos = p.partial.find('\n')) != std::string::npos) {
      fresh.emplace_back(c, p.partial.substr(0, pos));
      p.partial.erase(0, pos + 1);
    }
  }
  bool writable(engine::ConnId) override { return can_write; }
  void closeStdin(engine::ConnId c) override { procs[c].stdin_closed = true; }
  void kill(engine::ConnId c) override { procs[c].killed = true; }
};

struct DriverReq {
  std::string method;
  clock::TimePoint sent;
  std::optional<clock::Duration> bound;
  int answers = 0;
};

class Harness {
 public:
  explicit Harness(std::uint8_t cfg_byte) {
    v004_ = cfg_byte & 1;
    profile_ = v004_ ? &protocol::profileV004() : &protocol::profileV006();
    engine::EngineConfig cfg;
    cfg.protocol_version = v004_ ? "0.0.4" : "0.0.6";
    cfg.producer_handler = !v004_ && (cfg_byte & 2);
    cfg.builtin_tools = engine::defaultBuiltinTools();
    const engine::Decision decisions[] = {engine::Decision::Allow, engine::Decision::Ask, engine::Decision::Deny,
                                          engine::Decision::Allow};
    cfg.permissions.push_back({"plugin", "*", decisions[(cfg_byte >> 3) & 3]});
    for (const char* n : {"alpha", "beta"}) {
      engine::PluginConfig p;
      p.name = n;
      p.command = std::string("/bin/") + n;
      p.tool_timeout_ms = kToolTimeoutMs;
      p.interception_timeout_ms = kInterceptionMs;
      p.shutdown_grace_ms = kGraceMs;
      p.startup_timeout_ms = kStartupMs;
      p.producer_messaging = cfg.producer_handler;
      cfg.plugins.push_back(p);
      if (!(cfg_byte & 4)) break;
    }
    engine_ = std::make_unique<engine::Engine>(cfg, host_, clk_);
    driver_ = std::make_unique<engine::Driver>(*engine_, &clk_, [this](std::string f) { onDriverReply(std::move(f)); });
    engine_->start();
    settle();
  }

  // FUZZ_VERBOSE=1: every operation and frame on stderr (reproducing a crash input by hand).
  static bool verbose() {
    static const bool v = std::getenv("FUZZ_VERBOSE") != nullptr;
    return v;
  }
  long long nowMs() const { return std::chrono::duration_cast<std::chrono::milliseconds>(clk_.now().time_since_epoch()).count(); }

  void step(fuzz::ByteReader& in) {
    const std::uint8_t op = in.byte();
    if (verbose()) std::fprintf(stderr, "[%lld ms] op %d\n", nowMs(), op % 13);
    switch (op % 13) {
      case 0: answerInitialize(in); break;
      case 1: answerRequest(in); break;
      case 2: emit(in); break;
      case 3: pluginRequest(in); break;
      case 4: raw(in); break;
      case 5: case 6: driverAction(in); break;
      case 7: case 8: advance(in); break;
      case 9: stdoutEof(in); break;
      case 10: exitProcess(in); break;
      case 11: toggleWritable(); break;
      case 12: {
        engine::ConnId c = conn(in.byte());
        if (c) engine_->onStderr(c, "plugin log line");
        break;
      }
    }
    settle();
  }

  // End of input: let time run to the end of every bound, then the last checks.
  void finish() {
    for (int i = 0; i < 40 && !driver_->quitRequested(); ++i) advanceBy(1s);
  }

 private:
  // ---- plugin side ---------------------------------------------------------------------------
  std::string pluginName(std::uint8_t b) const {
    return engine_->config().plugins[b % engine_->config().plugins.size()].name;
  }
  engine::ConnId conn(std::uint8_t b) const { return engine_->connection(pluginName(b)); }
  bool live(engine::ConnId c) const {
    auto it = host_.procs.find(c);
    return c && it != host_.procs.end() && !it->second.exited && !it->second.eof;
  }
  void send(engine::ConnId c, const std::string& frame) {
    if (verbose()) std::fprintf(stderr, "[%lld ms]   <- #%llu %.300s%s\n", nowMs(), static_cast<unsigned long long>(c), frame.c_str(), live(c) ? "" : " (not live)");
    if (live(c)) engine_->onBytes(c, frame + "\n");
  }

  void answerInitialize(fuzz::ByteReader& in) {
    engine::ConnId c = conn(in.byte());
    if (!live(c)) return;
    Proc& p = host_.procs[c];
    if (p.unanswered_initialize.empty()) return;
    const std::string id = p.unanswered_initialize.front();
    p.unanswered_initialize.erase(p.unanswered_initialize.begin());
    p.engine_pending.erase(id);
    const std::uint8_t caps = in.byte(), hooks_lo = in.byte(), hooks_hi = in.byte(), variant = in.byte();
    auto b = [](bool v) { return v ? "true" : "false"; };
    std::string intercept;
    const auto all = protocol::allHooks();
    for (std::size_t i = 0; i < all.size(); ++i) {
      const unsigned mask = static_cast<unsigned>(hooks_lo) | (static_cast<unsigned>(hooks_hi) << 8);
      if (mask & (1u << i)) intercept += (intercept.empty() ? "\"" : ",\"") + std::string(protocol::toString(all[i])) + "\"";
    }
    std::string tools;
    if (caps & 1) tools += R"({"name":"echo","description":"d","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"permission_name":"echo","primary_resource_param":"path"})";
    if (caps & 2)
      tools += std::string(tools.empty() ? "" : ",") +
               R"({"name":"multi","description":"d","parameters":{"type":"object"},"permission_name":"multi","output":{"kind":"named","streams":["out","err"]}})";
    std::string c6 = v004_ ? "" : std::string(R"(,"producer_messaging":)") + b(caps & 64);
    std::string version = (variant % 17 == 16) ? "0.0.5" : (v004_ ? "0.0.4" : "0.0.6");  // rarely wrong (INIT-10)
    std::string name = (variant % 13 == 12) ? "someone-else" : p.plugin;                 // rarely wrong (INIT-13)
    send(c, R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"protocol_version":")" + version + R"(","name":")" + name +
                R"(","version":"1.0","capabilities":{"tools":)" + b(!tools.empty()) + R"(,"resources":false,"subscribe_events":)" +
                b(caps & 4) + R"(,"subscribe_bus":)" + b(caps & 8) + R"(,"publish_bus":)" + b(caps & 16) +
                R"(,"publish_session_events":)" + b(caps & 32) + c6 + R"(,"intercept":[)" + intercept + R"(]},"tools":[)" +
                tools + "]}}");
  }

  std::string validResult(const std::string& method, std::uint8_t v) {
    if (method == protocol::method::kToolsCall) {
      switch (v % 4) {
        case 0: return R"({"output":{"kind":"single","text":"ok"},"is_error":false})";
        case 1: return R"({"output":{"kind":"single","text":"bad"},"is_error":true,"display":"UI"})";
        case 2: return R"({"output":{"kind":"named","streams":[{"stream":"out","text":"o"}]},"is_error":false})";
        default: return R"({"output":{"kind":"named","streams":[{"stream":"out","text":""},{"stream":"err","text":"e"}]},"is_error":false})";
      }
    }
    if (method.rfind(protocol::method::kInterceptPrefix, 0) == 0) {
      auto hook = protocol::parseHook(std::string_view(method).substr(protocol::method::kInterceptPrefix.size()));
      if (hook) return json::compact(plugin::hooks::passThrough(*hook));
    }
    if (method == protocol::method::kRecoveryStart) return R"({"status":"ready"})";
    return "{}";  // ping (PING-01), shutdown
  }

  void answerRequest(fuzz::ByteReader& in) {
    engine::ConnId c = conn(in.byte());
    if (!live(c)) return;
    Proc& p = host_.procs[c];
    const std::uint8_t pick = in.byte(), how = in.byte();
    std::string id, method;
    if (!p.engine_pending.empty()) {
      auto it = p.engine_pending.begin();
      std::advance(it, pick % p.engine_pending.size());
      id = *it;
      method = p.methods[id];
    } else if (!p.methods.empty()) {  // an id answered already: a duplicate response (RPC-09)
      auto it = p.methods.begin();
      std::advance(it, pick % p.methods.size());
      id = it->first;
      method = it->second;
    } else {
      return;
    }
    std::string frame;
    switch (how % 8) {
      case 0: case 1: case 2: case 3:
        frame = R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)" + validResult(method, how >> 3) + "}";
        break;
      case 4: frame = R"({"jsonrpc":"2.0","id":)" + id + R"(,"error":{"code":-32000,"message":"no"}})"; break;
      case 5: frame = R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"bogus":[1,2]}})"; break;
      case 6: frame = R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":)" + validResult(method, how >> 3) + R"(,"error":null})"; break;
      default: frame = R"({"jsonrpc":"2.0","id":"x)" + id + R"(","result":{}})"; break;  // unknown id
    }
    // Answered (well or badly) unless the id was wrong: the engine may now reuse it (RPC-04).
    if (how % 8 != 7) p.engine_pending.erase(id);
    send(c, frame);
  }

  // A token the engine handed out (or a made-up / reused one).
  std::string token(std::uint8_t b) const {
    if (tokens_.empty() || b % 8 == 7) return "00000000-0000-4000-8000-000000000000";
    return tokens_[b % tokens_.size()].first;
  }
  std::string sessionFor(std::uint8_t b) const {
    if (!tokens_.empty() && b % 4 != 3) return tokens_[b % tokens_.size()].second;
    if (!sessions_.empty()) return sessions_[b % sessions_.size()];
    return "no-such-session";
  }

  void emit(fuzz::ByteReader& in) {
    engine::ConnId c = conn(in.byte());
    const std::uint8_t t = in.byte(), n = in.byte(), size = in.byte();
    const char* names[] = {"n", "status", "a.b", "", "x y"};
    std::string payload = size % 4 == 3 ? R"({"blob":")" + std::string(static_cast<std::size_t>(size) * 300, 'x') + "\"}" : "{}";
    std::string session = sessionFor(t);
    for (const auto& [tok, s] : tokens_)
      if (tok == token(t)) session = s;
    if (n & 0x80) session = sessionFor(n);
    send(c, R"({"jsonrpc":"2.0","method":"plugin/emit","params":{"session_id":)" + engine::quoteJson(session) +
                R"(,"context_id":)" + engine::quoteJson(token(t)) + R"(,"name":)" + engine::quoteJson(names[n % 5]) +
                R"(,"payload":)" + payload + "}}");
  }

  void pluginRequest(fuzz::ByteReader& in) {
    engine::ConnId c = conn(in.byte());
    if (!live(c)) return;
    Proc& p = host_.procs[c];
    const std::uint8_t m = in.byte(), a = in.byte(), k = in.byte();
    std::string method, params;
    const std::string session = sessionFor(a);
    const std::string producer = producers_.empty() || a % 5 == 4 ? "00000000-0000-4000-8000-00000000000f" : producers_[a % producers_.size()];
    const std::string key = "key-" + std::to_string(k % 4);
    switch (m % 8) {
      case 0: method = "plugin/producer/register"; params = R"({"session_id":)" + engine::quoteJson(session) + "}"; break;
      case 1: case 2:
        method = "plugin/producer/send";
        params = R"({"session_id":)" + engine::quoteJson(session) + R"(,"producer_id":)" + engine::quoteJson(producer) +
                 R"(,"mode":")" + (k & 4 ? "queue" : "steer") + R"(","idempotency_key":)" + engine::quoteJson(key) +
                 R"(,"description":"note","body":)" + engine::quoteJson(k & 8 ? "other body" : "hello") + "}";
        break;
      case 3: method = "plugin/producer/unregister"; params = R"({"session_id":)" + engine::quoteJson(session) + R"(,"producer_id":)" + engine::quoteJson(producer) + "}"; break;
      case 4:
        method = "plugin/producer/discard";
        params = R"({"session_id":)" + engine::quoteJson(session) + R"(,"message_id":)" +
                 engine::quoteJson(messages_.empty() ? "m" : messages_.begin()->second) + "}";
        break;
      case 5: method = "plugin/recovery/complete"; params = R"({"status":"ready"})"; break;
      case 6: method = "plugin/ping"; params = "{}"; break;  // not a plugin→engine method: -32601
      default: method = "plugin/no_such_method"; params = "{}"; break;
    }
    std::string id = std::to_string(100 + (k % 64 == 63 ? 0 : next_plugin_id_++));  // rarely a reused id
    auto& r = p.plugin_reqs[id];
    if (r.answers == 0 && !r.method.empty()) r.tainted = true;  // reused while pending
    if (r.answers > 0) r = Proc::PluginReq{};                     // reused after its answer: a new request
    // Before the handshake is accepted a request is a protocol violation the engine need not
    // answer (INIT-07): only requests sent on a connected connection are owed an answer.
    auto st = engine_->status(p.plugin);
    if (!st || st->state != engine::PluginState::Connected || engine_->connection(p.plugin) != c) r.tainted = true;
    r.method = method;
    r.sent = clk_.now();
    sent_keys_[id] = {c, producer + "/" + key + "/" + (k & 8 ? "o" : "h") + (k & 4 ? "q" : "s")};
    send(c, R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method + R"(","params":)" + params + "}");
  }

  void raw(fuzz::ByteReader& in) {
    engine::ConnId c = conn(in.byte());
    std::size_t n = in.byte();
    std::string bytes;
    for (std::size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>(in.byte()));
    if (live(c)) engine_->onBytes(c, bytes);
  }

  void stdoutEof(fuzz::ByteReader& in) {
    engine::ConnId c = conn(in.byte());
    if (!live(c)) return;
    host_.procs[c].eof = true;
    engine_->onStdoutEof(c);
  }

  void exitProcess(fuzz::ByteReader& in) {
    engine::ConnId c = conn(in.byte());
    const std::uint8_t how = in.byte();
    auto it = host_.procs.find(c);
    if (!c || it == host_.procs.end() || it->second.exited) return;
    if (!it->second.eof) {
      it->second.eof = true;
      engine_->onStdoutEof(c);
    }
    it->second.exited = true;
    engine_->onExited(c, how % 3 == 0 ? "exit 0" : how % 3 == 1 ? "exit 1" : "killed by signal 11 (SIGSEGV)");
  }

  void toggleWritable() {
    host_.can_write = !host_.can_write;
    if (host_.can_write)
      for (auto& [c, p] : host_.procs)
        if (!p.exited) engine_->onWritable(c);
  }

  // ---- driver side ---------------------------------------------------------------------------
  void driverAction(fuzz::ByteReader& in) {
    const std::uint8_t a = in.byte(), x = in.byte(), y = in.byte();
    const std::string session = sessions_.empty() ? "no-such-session" : sessions_[x % sessions_.size()];
    const std::string s = engine::quoteJson(session);
    std::optional<clock::Duration> bound;
    std::string method, params = "{}";
    switch (a % 16) {
      case 0: case 1: method = "session.create"; break;
      case 2: case 3: {
        const char* cls[] = {"chunk", "ordinary", "terminal"};
        method = "event.produce";
        params = R"({"session_id":)" + s + R"(,"class":")" + cls[y % 3] + R"(","count":)" + std::to_string(1 + (y >> 2) % 4) + "}";
        break;
      }
      case 4: case 5: {
        const char* tools[] = {"echo", "multi", "read", "nope"};
        const char* args[] = {R"({"path":"src/a.rs"})", "{}", R"({"path":7})", "[1]"};
        method = "tool.call";
        params = R"({"session_id":)" + s + R"(,"tool":")" + tools[y % 4] + R"(","arguments":)" + args[(y >> 2) % 4] +
                 R"(,"wait":true})";
        bound = kToolBound;
        break;
      }
      case 6:
        method = "tool.cancel";
        params = R"({"invocation_id":)" + engine::quoteJson(invocations_.empty() ? "none" : invocations_[y % invocations_.size()]) + "}";
        break;
      case 7: method = "plugin.ping"; params = R"({"plugin":")" + pluginName(y) + R"(","wait":true})"; bound = kPingBound; break;
      case 8: method = "diagnostics.flush"; break;
      case 9: method = y & 1 ? "session.persist" : "session.stall"; params = R"({"session_id":)" + s + R"(,"stalled":)" + (y & 2 ? "true" : "false") + "}"; break;
      case 10: {
        std::string turns = y % 3 == 0 ? "" : y % 3 == 1 ? R"(,"turns":[{"tool_calls":[{"tool":"echo","arguments":{"path":"p"}}]},{"text":"done"}])"
                                                         : R"(,"turns":[{"status":500},{"text":"fallback"}])";
        method = "run.start";
        params = R"({"session_id":)" + s + R"(,"input":"hello")" + turns + R"(,"wait":)" + (y & 8 ? "true" : "false") + "}";
        break;
      }
      case 11: method = "run.steer"; params = R"({"session_id":)" + s + R"(,"text":"steer"})"; break;
      case 12: {
        const char* ops[] = {"compact", "fork", "revert", "model.select"};
        method = ops[y % 4];
        params = R"({"session_id":)" + s + R"(,"through_seq":)" + std::to_string(y >> 2) + R"(,"model":"scripted/model-b"})";
        break;
      }
      case 13: method = "engine.restart"; break;
      // A finding of this target, fixed in mock_engine/driver.cpp: a second engine.shutdown with
      // wait used to leave the first unanswered (tests/fuzzregress/engine_driver_test.cpp).
      case 14: if (x % 4 == 0) {
          method = "engine.shutdown";
          params = R"({"wait":true})";
          bound = kShutdownBound;
        } else { method = "plugin.status"; params = R"({"plugin":")" + pluginName(y) + "\"}"; } break;
      default: method = "tools.visible"; params = R"({"session_id":)" + s + "}"; break;
    }
    const std::int64_t id = next_driver_id_++;
    driver_reqs_[id] = DriverReq{method, clk_.now(), bound, 0};
    if (verbose()) std::fprintf(stderr, "[%lld ms] driver %lld %s %s\n", static_cast<long long>(nowMs()), static_cast<long long>(id), method.c_str(), params.c_str());
    driver_->onFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method + R"(","params":)" + params + "}");
  }

  void onDriverReply(std::string frame) {
    auto p = json::parse(frame);
    FUZZ_CHECK(p, "driver reply is not JSON: " + frame);
    const json::Value* idv = json::member(p->doc, "id");
    FUZZ_CHECK(idv && idv->IsInt64(), "I5: driver reply without the request's id: " + frame);
    auto it = driver_reqs_.find(idv->GetInt64());
    FUZZ_CHECK(it != driver_reqs_.end(), "I5: driver reply to no request: " + frame);
    FUZZ_CHECK(++it->second.answers == 1, "I5: driver request answered twice: " + frame);
    if (verbose()) std::fprintf(stderr, "[%lld ms] driver reply %.300s\n", nowMs(), frame.c_str());
    const json::Value* r = json::member(p->doc, "result");
    if (!r) return;
    if (it->second.method == "session.create")
      if (auto s = json::stringMember(*r, "session_id")) sessions_.emplace_back(*s);
    if (it->second.method == "tool.call")
      if (auto s = json::stringMember(*r, "invocation_id")) invocations_.emplace_back(*s);
    if (it->second.method == "engine.restart") messages_.clear();  // no journal: no promise survives
  }

  // ---- time ----------------------------------------------------------------------------------
  void advance(fuzz::ByteReader& in) {
    static constexpr std::int64_t kSteps[] = {1, 10, 100, 250, 999, 1000, 1001, 2000, 3000, 5000, 10000, 30000};
    advanceBy(std::chrono::milliseconds(kSteps[in.byte() % 12]));
  }
  // Timer to timer: a chain of timers (hook timeout → dispatch → tool timeout) runs as it would on
  // a real clock, each link at its own time.
  void advanceBy(clock::Duration d) {
    const clock::TimePoint target = clk_.now() + d;
    for (int guard = 0; guard < 10000 && clk_.now() < target; ++guard) {
      clock::TimePoint next = std::min(target, engine_->nextDeadline());
      if (next <= clk_.now()) next = clk_.now() + 1ms;
      clk_.set(std::min(next, target));
      engine_->tick();
      settle();
    }
  }

  // ---- after every operation -----------------------------------------------------------------
  void settle() {
    for (int round = 0; round < 8; ++round) {
      driver_->poll();
      // The host reaps what the engine killed (the engine waits for onExited, LIFE/SHUT).
      bool again = false;
      for (auto& [c, p] : host_.procs) {
        if (p.killed && !p.exited) {
          p.exited = true;
          if (!p.eof) {
            p.eof = true;
            engine_->onStdoutEof(c);
          }
          engine_->onExited(c, "killed by signal 9 (SIGKILL)");
          again = true;
        }
      }
      checkFrames();
      if (!again) break;
    }
    checkBounds();
  }

  void checkFrames() {
    auto fresh = std::move(host_.fresh);
    host_.fresh.clear();
    for (auto& [c, text] : fresh) {
      Proc& p = host_.procs[c];
      if (verbose()) std::fprintf(stderr, "[%lld ms]   -> %s#%llu %.300s\n", nowMs(), p.plugin.c_str(), static_cast<unsigned long long>(c), text.c_str());
      auto m = wire::decodeMessage(text);
      FUZZ_CHECK(m, "I1: the engine wrote an undecodable frame: " + text);
      if (m->isRequest() || m->isNotification()) {
        static const json::Value kNoParams(rapidjson::kObjectType);
        if (!(m->method == protocol::method::kPing && !m->params)) {
          auto v = profile_->validate(m->method, protocol::Part::Params, m->params ? *m->params : kNoParams);
          FUZZ_CHECK(!v, "I1: the engine sent " + std::string(m->method) + " that its profile refuses: " + v->str() + "\n  " + text);
        }
        if (m->params && m->params->IsObject()) {
          if (auto tok = json::stringMember(*m->params, "context_id")) {
            // Per plugin: one hook chain shares its token among the chain's plugins (PROTOCOL §13.1
            // [impl]); tokens are valid only for the plugin they were delivered to (EMIT-04).
            FUZZ_CHECK(seen_tokens_.insert(p.plugin + "\n" + std::string(*tok)).second,
                       "I3: a context_id handed out twice to " + p.plugin + ": " + text);
            tokens_.emplace_back(std::string(*tok), std::string(json::stringMember(*m->params, "session_id").value_or("")));
            if (tokens_.size() > 64) tokens_.erase(tokens_.begin());
          }
        }
        if (m->isRequest()) {
          const std::string id = m->id.render();
          FUZZ_CHECK(p.engine_pending.insert(id).second, "I2: request id " + id + " reused while pending: " + text);
          p.methods[id] = std::string(m->method);
          if (m->method == protocol::method::kInitialize) p.unanswered_initialize.push_back(id);
        }
      } else {
        const std::string id = m->id.render();
        auto it = p.plugin_reqs.find(id);
        FUZZ_CHECK(it != p.plugin_reqs.end(), "I4: a response to no request of the plugin: " + text);
        Proc::PluginReq& r = it->second;
        ++r.answers;
        FUZZ_CHECK(r.tainted || r.answers == 1, "I4: request " + id + " answered twice: " + text);
        if (m->kind == wire::MessageKind::Success && !r.tainted) {
          auto v = profile_->validate(r.method, protocol::Part::Result, *m->result);
          FUZZ_CHECK(!v, "I1: the engine answered " + r.method + " with a result its profile refuses: " + v->str() + "\n  " + text);
          if (r.method == "plugin/producer/register")
            if (auto pid = json::stringMember(*m->result, "producer_id")) producers_.emplace_back(*pid);
          if (r.method == "plugin/producer/send")
            if (auto mid = json::stringMember(*m->result, "message_id")) {
              const std::string& key = sent_keys_[id].second;
              auto [kit, inserted] = messages_.emplace(key, std::string(*mid));
              FUZZ_CHECK(inserted || kit->second == *mid, "I7: key " + key + " got message_id " + std::string(*mid) + " after " + kit->second);
            }
        }
      }
    }
  }

  void checkBounds() {
    const auto now = clk_.now();
    for (auto& [id, r] : driver_reqs_)
      if (r.bound && r.answers == 0 && now - r.sent > *r.bound)
        FUZZ_CHECK(false, "I5: driver " + r.method + " (id " + std::to_string(id) + ") unanswered " +
                              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - r.sent).count()) + " ms after it was sent");
    for (auto& [c, p] : host_.procs) {
      if (p.exited || p.eof || p.killed || p.stdin_closed || engine_->connection(p.plugin) != c) continue;
      auto st = engine_->status(p.plugin);
      if (!st || st->state != engine::PluginState::Connected) continue;
      for (auto& [id, r] : p.plugin_reqs)
        if (!r.tainted && r.answers == 0 && now - r.sent > kPluginRequestBound)
          FUZZ_CHECK(false, "I4: plugin request " + r.method + " (id " + id + ") unanswered while connected");
    }
    for (const auto& s : engine_->statuses())
      FUZZ_CHECK(s.queued <= kQueueRecords, "I6: " + s.plugin + " has " + std::to_string(s.queued) + " queued records");
  }

 private:
  bool v004_ = false;
  const protocol::Profile* profile_ = nullptr;
  clock::VirtualClock clk_;
  FuzzHost host_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<engine::Driver> driver_;
  std::int64_t next_driver_id_ = 1;
  std::int64_t next_plugin_id_ = 1;
  std::map<std::int64_t, DriverReq> driver_reqs_;
  std::vector<std::string> sessions_, invocations_, producers_;
  std::vector<std::pair<std::string, std::string>> tokens_;  // (context_id, session_id), recent
  std::set<std::string> seen_tokens_;
  std::map<std::string, std::pair<engine::ConnId, std::string>> sent_keys_;
  std::map<std::string, std::string> messages_;  // producer/key/body/mode → message_id
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::ByteReader in(data, size);
  Harness h(in.byte());
  for (std::size_t i = 0; i < kMaxOps && !in.rest().empty(); ++i) h.step(in);
  h.finish();
  return 0;
}
