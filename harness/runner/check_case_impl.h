// harness/runner/check_case_impl — internals of check_case.cpp / check_steps.cpp (not an API).
// CaseRunner is the engine's Host (process spawning, pipes, faults) and Observer (trace), and the
// DSL interpreter: exec() is one switch over Step::Kind with one onX() per kind.
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

// One thing the plugin did, as the interpreter sees it.
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

class CaseRunner final : public engine::Host, public engine::Observer {
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

 private:
  // setup / plumbing (check_case.cpp)
  bool configure(std::string& error);
  void dispatch();
  void killDue();
  // Runs I/O and engine timers until pred() holds or `deadline` (real) passes. Returns pred().
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred);
  void pumpFor(std::chrono::milliseconds d);
  void finish();
  std::optional<std::string> notApplicable() const;
  wire::Channel* channel();
  std::uint64_t traceLine() const { return tw_ ? tw_->linesWritten() : 0; }
  void inject(std::string_view bytes, bool is_frame);
  std::string recentInbound(std::size_t n) const;

  // interpreter (check_steps.cpp)
  bool execAll(const std::vector<dsl::Step>& steps);
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
  // Matching helpers.
  bool matches(const dsl::Step& s, Inbound& in, json::Captures& caps, std::string* why);
  Expected<json::Document, std::string> resolve(const dsl::JsonPtr& p);
  bool fail(const dsl::Step& s, std::string message, std::string expected, std::string actual,
            std::vector<reports::Evidence> ev = {});
  bool harnessError(const dsl::Step& s, std::string message);
  void bind(const std::string& name, json::Document value, const json::Value* id = nullptr);

  const dsl::Case& case_;
  Target target_;
  wire::Reactor reactor_;
  OffsetClock clk_;
  std::ostringstream trace_text_;
  std::unique_ptr<trace::TraceWriter> tw_;
  engine::EngineConfig cfg_;
  std::unique_ptr<engine::Engine> eng_;
  std::map<engine::ConnId, std::unique_ptr<wire::Channel>> chans_;
  std::map<engine::ConnId, bool> exit_reported_;
  // Kills the engine asked for, deferred until this instant (see kill()).
  std::map<engine::ConnId, wire::SteadyTime> pending_kill_;
  engine::ConnId conn_ = 0;  // the current connection
  std::deque<Inbound> inbox_;
  json::Captures caps_;
  std::map<std::string, json::Document> ids_;  // capture name -> the JSON-RPC id of its message
  std::int64_t next_id_ = 1'000'000;  // ids of injected requests: far from the engine's 1, 2, 3, …
  bool injecting_ = false;
  bool drop_next_reply_ = false;
  bool stdin_closed_ = false;
  std::optional<StepFailure> failure_;
  std::string error_;  // harness error
  std::string rule_;   // the case's rule
};

}  // namespace conform::runner::detail
