// mock_engine/guest_process — the plumbing both Node guest runners share (docs/guest-protocol.md):
// spawn `node <dir>/runner.mjs`, write our requests with integer ids from 1, keep the replies to
// those ids, hand every other frame (runner requests `h*`, console notifications) to the owner, and
// put a deadline on every wait. The nanopi and Cognipeer GuestClients add only what differs: the
// methods they call and how they answer the runner's requests. Mechanism only: no policy here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/json/json.h"
#include "core/util/expected.h"
#include "core/wire/channel.h"

namespace conform::guest {

// The DSL's own `send request` ids start here (harness/runner), so a reply to one of them is never
// taken for ours: it stays in the harness inbox through the tap.
inline constexpr std::int64_t kFirstForeignId = 1'000'000;

// The runner folder of plugin model `model` ("nanopi", "cognipeer"): `explicit_guest_dir`, else
// $CONFORM_GUEST_DIR, else the CONFORM_GUEST_DIR compile definition; then "/<model>".
std::string runnerDir(const std::string& explicit_guest_dir, std::string_view model);

// Observers of the raw traffic (the harness traces it and feeds the DSL inbox).
struct Tap {
  std::function<void(std::string_view bytes)> out;    // bytes written to the runner
  std::function<void(const wire::ChannelEvent&)> in;  // every channel event
};

class GuestProcess {
 public:
  // Every parsed frame that is not a reply to one of our requests.
  using OnFrame = std::function<void(json::Document& frame)>;
  // `what` names the runner in errors ("nanopi guest runner").
  GuestProcess(wire::Reactor& r, std::string what, Tap tap, OnFrame on_frame)
      : reactor_(r), what_(std::move(what)), tap_(std::move(tap)), on_frame_(std::move(on_frame)) {}
  ~GuestProcess();
  GuestProcess(const GuestProcess&) = delete;
  GuestProcess& operator=(const GuestProcess&) = delete;

  // Spawns `node <runner_dir>/runner.mjs` (in `cwd` when given); `node` is looked up on PATH.
  Expected<Ok, std::string> start(const std::string& runner_dir, const std::string& cwd = {});
  // Kills the running process (bounded reap) and spawns a fresh one; the old one's replies are dropped.
  Expected<Ok, std::string> restart(const std::string& runner_dir, const std::string& cwd = {});
  // Writes a request; returns its id.
  std::int64_t request(std::string_view method, const json::Value& params);
  // The reply frame of `id` once it arrived (taken out), else nullopt.
  std::optional<json::Document> takeReply(std::int64_t id);
  // Waits for the reply frame of `id` (result or error kept whole) until the deadline, or says why
  // none came ("the runner did not answer request 3 within 2000 ms", "… the runner exited: …").
  Expected<json::Document, std::string> awaitFrame(std::int64_t id, std::chrono::milliseconds d);
  // `shutdown {}`, close stdin, wait for the exit (each wait bounded by `d`), then kill and reap.
  // Idempotent.
  void shutdown(std::chrono::milliseconds d);
  // Writes bytes as they are (DSL `send`), traced through the tap.
  void sendRaw(std::string_view bytes);
  // Runs I/O until pred() holds or the deadline; returns pred().
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred);
  // Drains the channel: frames to the replies or on_frame, end-of-stream noted.
  void dispatch();

  bool ended() const { return !ended_.empty(); }
  const std::string& endReason() const { return ended_; }
  wire::Channel* channel() { return ch_.get(); }

 private:
  wire::Reactor& reactor_;
  std::string what_;
  Tap tap_;
  OnFrame on_frame_;
  std::unique_ptr<wire::Channel> ch_;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, json::Document> replies_;
  std::string ended_;  // non-empty once the runner's stdout ended or it exited
};

}  // namespace conform::guest
