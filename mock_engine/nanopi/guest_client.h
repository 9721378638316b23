// mock_engine/nanopi/guest_client — the nanopi guest runner process (`node <dir>/runner.mjs`,
// docs/guest-protocol.md "nanopi runner") over core/wire: newline-delimited JSON-RPC on the child's
// stdio. Mechanism only: it frames, correlates ids, answers `h*` import requests AT ONCE through
// the handler (they unblock the guest and must never queue behind the call they answer,
// NANOPI-HOST.md §5.5) and puts a deadline on every wait. Every decision stays in Host.
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
#include "mock_engine/guest_process.h"

namespace conform::nanopi {

// Beyond a call's guest budget the runner has this long to answer `timeout` itself (terminate the
// worker, rebuild: 60–300 ms measured, NANOPI-HOST.md §4) before the client gives up on it. Import
// round trips are added on top, since the budget counts guest time only (NP-27).
inline constexpr std::chrono::milliseconds kRunnerSlack{3000};
// `load` transpiles and compiles the component: 0.76–0.88 s measured cold (§4); a loaded CI
// machine gets generous room.
inline constexpr std::chrono::milliseconds kLoadDeadline{20000};
// `shutdown` -> {} then exit 0; EOF -> exit within 1 s (guest protocol). Our wait for both.
inline constexpr std::chrono::milliseconds kShutdownDeadline{2000};

// The runner folder: explicit, else $CONFORM_GUEST_DIR, else the compile definition; + "/nanopi".
std::string runnerDir(const std::string& explicit_guest_dir);

class GuestClient {
 public:
  // Answers one import (name, args): the in-band string, or nullopt for void (host-log).
  using ImportHandler = std::function<std::optional<std::string>(const std::string&, const std::vector<std::string>&)>;
  using Tap = guest::Tap;
  GuestClient(wire::Reactor& r, ImportHandler h, Tap tap = {});
  GuestClient(const GuestClient&) = delete;
  GuestClient& operator=(const GuestClient&) = delete;

  // Spawns `node <dir>/runner.mjs`. `node` is looked up on PATH.
  Expected<Ok, std::string> start(const std::string& runner_dir) { return proc_.start(runner_dir); }
  // Kills the runner (bounded reap) and spawns a fresh one; replies of the old process are dropped.
  Expected<Ok, std::string> restart(const std::string& runner_dir) { return proc_.restart(runner_dir); }
  // Sends a request; returns its id.
  std::int64_t request(std::string_view method, const json::Value& params) { return proc_.request(method, params); }
  // The reply frame of `id` once it arrived (taken out), else nullopt.
  std::optional<json::Document> takeReply(std::int64_t id) { return proc_.takeReply(id); }
  // Waits for the reply of `id` until the deadline; its `result`, or a readable error
  // ("-32012 load failed [compile]: …", "the runner did not answer …", "… the runner exited: …").
  Expected<json::Document, std::string> await(std::int64_t id, std::chrono::milliseconds d);
  // `shutdown`, then wait for the exit; kills on the deadline. Idempotent.
  void shutdown() { proc_.shutdown(kShutdownDeadline); }
  // Writes bytes as they are (DSL `send`), traced through the tap.
  void sendRaw(std::string_view bytes) { proc_.sendRaw(bytes); }
  // Runs I/O until pred() holds or the deadline; returns pred().
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) { return proc_.pumpUntil(deadline, pred); }
  bool ended() const { return proc_.ended(); }
  const std::string& endReason() const { return proc_.endReason(); }
  const std::vector<std::string>& console() const { return console_; }

  // Error of a reply frame as text (nullopt when it has a result).
  static std::optional<std::string> replyError(const json::Value& frame);

 private:
  void onFrame(json::Document& d);

  ImportHandler handler_;
  std::vector<std::string> console_;
  guest::GuestProcess proc_;  // last: its callback uses the members above
};

}  // namespace conform::nanopi
