// mock_engine/cognipeer/guest_client — the Guest over the real Node runner process
// (`node <dir>/runner.mjs`, docs/guest-protocol.md "Cognipeer runner"): newline-delimited JSON-RPC
// over the child's stdio through core/wire (Reactor, spawnProcess). Mechanism only: it frames,
// correlates ids and enforces deadlines; every decision stays in Host.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "core/util/expected.h"
#include "core/wire/channel.h"
#include "mock_engine/cognipeer/host.h"
#include "mock_engine/guest_process.h"

namespace conform::cognipeer {

// Beyond a plugin's own timeoutMs the runner has this long to report `timeout` itself (it must
// terminate and re-import the worker) before the client gives up on the reply (guest protocol:
// "every wait has a deadline").
inline constexpr std::chrono::milliseconds kRunnerSlack{3000};
// A plugin may declare any timeoutMs; one invoke never holds a conformance run longer than this (a
// harness bound beside the SDK's 10 s default, so a plugin declaring hours cannot hang the catalogue).
inline constexpr std::uint64_t kMaxInvokeMs = 30000;
// load imports the module (and may start a worker): a bound for a module's top-level code.
inline constexpr std::chrono::milliseconds kLoadDeadline{15000};
// shutdown {} -> {} then exit 0; EOF -> exit within 1 s (guest protocol). Our wait for both.
inline constexpr std::chrono::milliseconds kShutdownDeadline{2000};

// The runner folder: explicit, else $CONFORM_GUEST_DIR, else the compile definition, + "/cognipeer".
std::string runnerDir(const std::string& explicit_guest_dir);

struct ConsoleLine {
  std::string plugin, stream, text;
};

class GuestClient final : public Guest {
 public:
  using Tap = guest::Tap;
  GuestClient(wire::Reactor& r, Tap tap);
  ~GuestClient() override;

  // Spawns `node <dir>/runner.mjs` (cwd: the plugin's folder, so its own node_modules resolve).
  Expected<Ok, std::string> start(const std::string& runner_dir, const std::string& cwd) { return proc_.start(runner_dir, cwd); }
  // `load {path}` -> the runner's result ({plugins, export_kind, load_ms}) or a readable error.
  Expected<json::Document, std::string> load(const std::string& path);
  std::vector<InvokeResult> invokeAll(std::vector<InvokeRequest> batch) override;
  // `shutdown` then wait for the exit; kills on the deadline. Idempotent.
  void shutdown() { proc_.shutdown(kShutdownDeadline); }

  // Writes bytes as they are (DSL `send`), traced through the tap.
  void sendRaw(std::string_view bytes) { proc_.sendRaw(bytes); }
  // Runs I/O until pred() holds or the deadline; returns pred().
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) { return proc_.pumpUntil(deadline, pred); }
  wire::Channel* channel() { return proc_.channel(); }
  const std::vector<ConsoleLine>& console() const { return console_; }
  std::uint64_t invokes() const { return invokes_; }

 private:
  void onFrame(json::Document& d);

  std::vector<ConsoleLine> console_;
  std::uint64_t invokes_ = 0;
  guest::GuestProcess proc_;  // last: its callback uses the members above
};

}  // namespace conform::cognipeer
