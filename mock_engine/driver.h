// mock_engine/driver — the driver protocol (docs/driver-protocol.md): JSON-RPC 2.0 requests through
// which tests, scenarios and `conform check-engine` make an engine act (create a session, produce
// events of a class, make the model call a tool, advance the virtual clock, shut down) and look
// inside it (plugin status: state, reason, tools, dropped counters, diagnostics). The reference
// engine implements it natively here; a third-party engine implements the same methods in an
// adapter.
//
// Sans-IO like the engine: feed request frames to onFrame(); replies leave through `send` (some
// replies, e.g. `tool.call` with "wait":true, are deferred until the engine finishes the action).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "core/clock/clock.h"
#include "mock_engine/engine.h"
#include "mock_engine/producer.h"
#include "mock_engine/runtime.h"

namespace conform::engine {

class Driver {
 public:
  // `vclock` is non-null when the engine runs on a virtual clock handed to the driver
  // (`conform-engine --virtual-clock`); clock.advance is refused otherwise.
  Driver(Engine& engine, clock::VirtualClock* vclock, std::function<void(std::string)> send);
  ~Driver();
  // One JSON-RPC frame from the driver side (without LF). Malformed input gets an error reply
  // (id null) and never throws.
  void onFrame(std::string_view frame);
  // Called by the IO loop after every step: completes deferred `engine.shutdown` waits.
  void poll();
  bool quitRequested() const { return quit_; }

 private:
  void reply(const std::string& id_json, const std::string& result_json);
  void error(const std::string& id_json, int code, const std::string& message);
  Engine& engine_;
  clock::VirtualClock* vclock_;
  std::function<void(std::string)> send_;
  std::map<std::string, std::string> waiting_calls_;          // invocation id -> request id
  std::map<std::uint64_t, std::string> waiting_pings_;        // ping handle -> request id
  std::vector<std::string> waiting_shutdown_;  // ids of engine.shutdown {wait} requests, all answered at completion
  std::string waiting_restart_;                                // request id ("" = none)
  void finishRestart();
  // (Re)creates the producer service; with journal_dir it (re)opens and replays the journal.
  void openProducers();
  bool quit_ = false;
  // trace.start / trace.read (docs/driver-protocol.md): every frame and lifecycle event on the
  // plugin connections, timed, kept for the driver until it reads them.
  class TraceTap;
  std::unique_ptr<TraceTap> trace_;
  // Issue 5: producer messaging and recovery (installed when config.producer_handler is true;
  // with config.journal_dir it replays the journal first).
  std::unique_ptr<ProducerService> producers_;
  std::unique_ptr<Runtime> runtime_;  // engine4

 public:
  ProducerService* producers() { return producers_.get(); }
  // Issue 5 (engine4): the simulated runtime and its hook chains (run.*, compact, fork, revert,
  // model.select, hooks.trace).
  Runtime& runtime() { return *runtime_; }
  // Set when the journal could not be opened (conform-engine reports it and exits 2).
  const std::string& startupError() const { return startup_error_; }

 private:
  std::string startup_error_;
};

// JSON of a plugin status record (also used by tests and reports).
std::string statusJson(const PluginStatus& s);
std::string toolCallJson(const ToolCallStatus& c);

}  // namespace conform::engine
