// harness/runner/check_case_impl — internals of the `check` / `check-engine` runners (not an API).
//
// The step interpreter is the same in both roles, with the peer reversed (docs/dsl.md): it talks
// to a small Peer interface (write bytes, pump I/O until a predicate holds, state query, drive
// action, advance, fault) and reads what the side under test did from a shared Conversation (the
// inbox and the case trace). Two peers implement it:
//   * CaseRunner (check_case.cpp, role engine): the in-process reference engine is the Host and
//     Observer of a real plugin process; conform plays the engine.
//   * PluginRoleRunner (engine_check.cpp, role plugin): an engine under test spawns `conform probe`
//     as its plugin and is driven over the driver protocol; conform plays the plugin.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/trace/trace.h"
#include "core/wire/channel.h"
#include "harness/dsl/plan.h"
#include "harness/runner/check_case.h"
#include "mock_engine/engine.h"
#include "mock_engine/producer.h"
#include "mock_engine/runtime.h"

namespace conform::runner::detail {

// Real time plus an offset that `advance` grows: engine timers jump forward, process I/O stays real.
class OffsetClock final : public clock::Clock {
 public:
  clock::TimePoint now() const override { return clock::RealClock::instance().now() + offset_; }
  clock::WallTime wallNow() const override {
    return clock::RealClock::instance().wallNow() + std::chrono::duration_cast<std::chrono::microseconds>(offset_);
  }
  bool isVirtual() const override { return false; }
  void advance(clock::Duration d) { offset_ += d; }
  clock::Duration offset() const { return offset_; }

 private:
  clock::Duration offset_{0};
};

// One thing the side under test did, as the interpreter sees it.
struct Inbound {
  enum class Kind { Frame, Eof, Exit } kind = Kind::Frame;
  std::string raw;                       // frame bytes (without LF/CR)
  std::shared_ptr<json::Document> doc;   // parsed frame (null when not JSON)
  dsl::MsgKind msg = dsl::MsgKind::Frame;
  std::string method;
  wire::ExitStatus status;               // Exit
  std::uint64_t line = 0;                // trace line (evidence)
  bool consumed = false;
};

// A failed expectation: stops the case, becomes a finding on the case's rule.
struct StepFailure {
  std::string message, expected, actual;
  std::vector<reports::Evidence> evidence;
};

// What both sides share: the case trace and the inbox of what the side under test did.
struct Conversation {
  trace::TraceWriter* tw = nullptr;
  std::deque<Inbound> inbox;
  std::uint64_t traceLine() const { return tw ? tw->linesWritten() : 0; }
  // Appends a frame (parsed and classified as request/notify/response/error) to the inbox.
  void pushFrame(std::string raw, bool decoded_ok);
  void pushEof();
  // Traces exact bytes written to the side under test line by line, as its framer will cut them
  // (a CR before the LF is flagged, FRAME-08) so the monitors see them; an unterminated tail is raw.
  void traceBytes(trace::Dir dir, std::string_view bytes);
  void pushExit(const wire::ExitStatus& st);
  // The last n inbound items, for "Actual:" texts.
  std::string recentInbound(std::size_t n, std::string_view who) const;
};

// The other side of the conversation as the interpreter drives it.
class Peer {
 public:
  struct Outcome {
    enum class Kind { Ok, Fail, Error } kind = Kind::Ok;
    std::string message, expected, actual;  // Fail: the finding; Error: message only
    std::optional<std::string> value;        // bound by `as $x` (drive) as a string
    std::shared_ptr<json::Document> doc;     // or bound as this JSON value (driver results)
    static Outcome ok(std::optional<std::string> v = std::nullopt) { Outcome o; o.value = std::move(v); return o; }
    static Outcome error(std::string m) { Outcome o; o.kind = Kind::Error; o.message = std::move(m); return o; }
    static Outcome failure(std::string m, std::string e, std::string a) {
      Outcome o;
      o.kind = Kind::Fail;
      o.message = std::move(m);
      o.expected = std::move(e);
      o.actual = std::move(a);
      return o;
    }
  };
  struct State {
    std::string state, reason;
  };
  virtual ~Peer() = default;
  // "plugin" or "engine": the side under test, named in failure texts.
  virtual std::string_view subject() const = 0;
  // Exact bytes to the side under test (traced by the peer).
  virtual void send(std::string_view bytes) = 0;
  // Runs I/O and timers until pred() holds or `deadline` (real) passes. Returns pred().
  virtual bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) = 0;
  // The engine-side status of the plugin connection (`expect state`); nullopt = no status.
  virtual std::optional<State> state() = 0;
  // `for each tool|hook`: the tools / intercepted hooks of the handshake.
  virtual std::vector<std::string> items(bool tools) = 0;
  // `drive ACTION args…`: args with captures already resolved; `json` the JSON literal or {}.
  virtual Outcome drive(const std::string& action, const std::vector<std::string>& args, const json::Document& json) = 0;
  virtual Outcome advance(dsl::Millis d) = 0;
  virtual Outcome fault(dsl::FaultKind k, dsl::Millis d) = 0;
};

// The DSL interpreter: exec() is one switch over Step::Kind with one onX() per kind
// (check_steps.cpp). Role-agnostic: everything role-specific goes through Peer.
class Interpreter {
 public:
  Interpreter(Peer& peer, Conversation& conv) : peer_(peer), conv_(conv) {}
  bool execAll(const std::vector<dsl::Step>& steps);
  const std::optional<StepFailure>& failure() const { return failure_; }
  const std::string& error() const { return error_; }

 private:
  bool exec(const dsl::Step& s);
  bool onSendRequest(const dsl::Step&);
  bool onSendNotify(const dsl::Step&);
  bool onSendResponse(const dsl::Step&);
  bool onSendRaw(const dsl::Step&);
  bool onSendFrame(const dsl::Step&);
  bool onExpect(const dsl::Step&);
  bool onExpectNo(const dsl::Step&);
  bool onExpectExit(const dsl::Step&);
  bool onExpectEof(const dsl::Step&);
  bool onExpectState(const dsl::Step&);
  bool onRepeat(const dsl::Step&);
  bool onForEach(const dsl::Step&);
  bool onAdvance(const dsl::Step&);
  bool onWait(const dsl::Step&);
  bool onFault(const dsl::Step&);
  bool onDrive(const dsl::Step&);
  bool outcome(const dsl::Step& s, Peer::Outcome o);
  // Matching helpers.
  bool matches(const dsl::Step& s, Inbound& in, json::Captures& caps, std::string* why);
  Expected<json::Document, std::string> resolve(const dsl::JsonPtr& p);
  bool fail(const dsl::Step& s, std::string message, std::string expected, std::string actual,
            std::vector<reports::Evidence> ev = {});
  bool harnessError(const dsl::Step& s, std::string message);
  void bind(const std::string& name, json::Document value, const json::Value* id = nullptr);
  std::string recent(std::size_t n) const { return conv_.recentInbound(n, peer_.subject()); }

  Peer& peer_;
  Conversation& conv_;
  json::Captures caps_;
  std::map<std::string, json::Document> ids_;  // capture name -> the JSON-RPC id of its message
  std::int64_t next_id_ = 1'000'000;  // ids of sent requests: far from the other side's 1, 2, 3, …
  std::optional<StepFailure> failure_;
  std::string error_;  // harness error
};

// Role engine: the reference engine (in-process) with the plugin under test as a real child.
class CaseRunner final : public engine::Host, public engine::Observer, public Peer {
 public:
  CaseRunner(const dsl::Case& c, const Target& t);
  ~CaseRunner() override;
  CaseRun run();

  // ---- engine::Host --------------------------------------------------------------------------
  bool spawn(engine::ConnId conn, const engine::PluginConfig& cfg, std::string& error) override;
  void write(engine::ConnId conn, std::string_view bytes) override;
  bool writable(engine::ConnId conn) override;
  void closeStdin(engine::ConnId conn) override;
  void kill(engine::ConnId conn) override;
  // ---- engine::Observer ----------------------------------------------------------------------
  void onFrame(const std::string& plugin, engine::ConnId, engine::Direction, std::string_view frame,
               clock::TimePoint) override;
  void onLifecycle(const std::string& plugin, engine::ConnId, std::string_view kind,
                   std::string_view detail, clock::TimePoint) override;
  // ---- Peer ----------------------------------------------------------------------------------
  std::string_view subject() const override { return "plugin"; }
  void send(std::string_view bytes) override;
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) override;
  std::optional<State> state() override;
  std::vector<std::string> items(bool tools) override;
  Outcome drive(const std::string& action, const std::vector<std::string>& args, const json::Document& json) override;
  Outcome advance(dsl::Millis d) override;
  Outcome fault(dsl::FaultKind k, dsl::Millis d) override;

 private:
  // setup / plumbing (check_case.cpp)
  bool configure(std::string& error);
  void dispatch();
  void killDue();
  void pumpFor(std::chrono::milliseconds d);
  void finish();
  std::optional<std::string> notApplicable() const;
  Outcome restart();  // fault restart (role engine)
  Outcome driveRuntime(const std::string& action, const std::vector<std::string>& args, const json::Document& json);
  wire::Channel* channel();

  const dsl::Case& case_;
  Target target_;
  wire::Reactor reactor_;
  OffsetClock clk_;
  std::ostringstream trace_text_;
  std::unique_ptr<trace::TraceWriter> tw_;
  Conversation conv_;
  engine::EngineConfig cfg_;
  std::unique_ptr<engine::Engine> eng_;
  // The simulated agent runtime (scripted model, hook trigger points): `drive run` / `drive compact`
  // fire the hooks the plugin intercepts as a real engine would. Declared after eng_ so it is
  // destroyed first (it holds a reference to the engine).
  std::unique_ptr<engine::Runtime> runtime_;
  // Producer messaging and recovery (PROTOCOL §14/§15) when the case configures
  // `producer_messaging true`: the engine's real handler, in memory (no journal), so producer
  // requests get real answers (a registration, a receipt, deduplication by key) instead of -32040.
  // Kept across `fault restart`: it models an engine whose acceptances are durable (PROD-17/18), so
  // a retry after a reconnect meets its idempotency record. Declared after eng_ (it unhooks itself
  // from the engine when destroyed).
  std::unique_ptr<engine::ProducerService> producers_;
  std::map<engine::ConnId, std::unique_ptr<wire::Channel>> chans_;
  std::map<engine::ConnId, bool> exit_reported_;
  // Kills the engine asked for, deferred until this instant (see kill()).
  std::map<engine::ConnId, wire::SteadyTime> pending_kill_;
  engine::ConnId conn_ = 0;  // the current connection
  bool injecting_ = false;
  bool drop_next_reply_ = false;
  bool dropped_write_ = false;  // write() just dropped a frame (drop-reply): onFrame() skips it
  bool stdin_closed_ = false;
  std::string rule_;   // the case's rule
  // `{tmp}` in a `config env` value: a private directory made for this case and removed after it
  // (plugin-side state that must outlive a process, e.g. the fixture's outbox across `fault restart`).
  std::string tmp_dir_;
};

// Shared helpers of both runners (check_case.cpp).
// The verdict of a finished case: its own expectation (failure) or harness error, then every
// monitor finding of the trace that binds one of `binds` (the side under test).
void finishVerdict(CaseRun& out, const std::string& rule, const std::optional<StepFailure>& failure,
                   std::string error, const std::string& profile, std::uint8_t binds);

}  // namespace conform::runner::detail
