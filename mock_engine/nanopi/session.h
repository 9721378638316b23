// mock_engine/nanopi/session — a Host wired to the real guest runner (GuestClient): the I/O shell
// around the sans-IO host. One guest call at a time; a call can be left in flight (startTool) so a
// delivery meanwhile meets a busy plugin and is dropped (NP-20), exactly as nanopi's try_lock.
#pragma once

#include <memory>
#include <optional>

#include "core/clock/clock.h"
#include "mock_engine/nanopi/guest_client.h"
#include "mock_engine/nanopi/host.h"

namespace conform::nanopi {

class HostSession {
 public:
  HostSession(wire::Reactor& r, const clock::Clock& clk, GuestClient::Tap tap = {});
  ~HostSession();

  // Spawns the runner (runnerDir()).
  Expected<Ok, std::string> start(const std::string& runner_dir);
  // `load {path}`, then the host's load calls to completion. An error is a harness problem (the
  // runner is gone); a component that fails to load leaves host().loadState() == Failed.
  Expected<Ok, std::string> load(ExtensionConfig cfg, HostOptions opts);
  Host* host() { return host_.get(); }
  GuestClient& client() { return client_; }

  // Emits an event: the host decides; a queued handle-event call is run to completion.
  Delivery::Status deliver(const std::string& event, const std::string& payload);
  // Emits an event and leaves its handle-event call in flight (the plugin stays busy until
  // finishPending()): how the harness shows busy-drop without a slow tool (NP-20).
  Delivery::Status startDeliver(const std::string& event, const std::string& payload);
  // execute-tool, run to completion; false when the host refused (busy / not loaded).
  bool callTool(const std::string& name, const std::string& args_json);
  // execute-tool left in flight: the plugin stays busy until finishPending().
  bool startTool(const std::string& name, const std::string& args_json);
  bool pending() const { return pending_.has_value(); }
  // Waits for the call in flight (its budget + kRunnerSlack) and hands the result to the host.
  void finishPending();
  // Runs every queued guest call to completion.
  void runCalls();
  // Wall time of the last load (runner load + list-* calls), and of the runner's own load.
  double loadMs() const { return load_ms_; }
  double runnerLoadMs() const { return runner_load_ms_; }
  void shutdown() { client_.shutdown(); }

 private:
  void issue();
  // The runner did not answer a call within its budget + kRunnerSlack: it is stuck. Kill it, start
  // a fresh one and `load` the component again — a new instance, grants and store kept in the
  // host, no list-* call repeated (the same contract as a trap rebuild, NP-22).
  void restartRunner(const std::string& why);
  struct Pending {
    std::int64_t id;
    std::uint64_t seq;
    std::uint32_t budget_ms;
  };
  const clock::Clock& clk_;
  std::unique_ptr<Host> host_;
  GuestClient client_;
  std::string component_, runner_dir_;
  std::optional<Pending> pending_;
  double load_ms_ = 0, runner_load_ms_ = 0;
};

}  // namespace conform::nanopi
