// harness/runner/fuzz_impl — the parts of `conform fuzz` (fuzz.h), internal to harness/runner:
//
//   fuzz_gen.cpp    — stimuli: schema-valid engine→plugin messages built from the profile's
//                     embedded schemas and the target's handshake, then mutated at the JSON,
//                     envelope and pipe level (FuzzStep);
//   fuzz_target.cpp — one live plugin process: writes steps the way each step says (split,
//                     coalesced, stalled…), plays the minimal engine the plugin needs (emit_result
//                     for every plugin/emit, an error for plugin requests), traces both directions,
//                     feeds the monitors incrementally, and judges each batch against deadlines;
//   fuzz.cpp        — the loop, delta debugging, reproducers, summary and reports.
//
// Tests (tests/livefuzz) use these types directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/json/json.h"
#include "core/json/schema.h"
#include "core/protocol/profile.h"
#include "reports/results.h"

namespace conform::runner::fuzz {

using Rng = std::mt19937_64;

// One stimulus: what the fuzzer writes to the plugin's stdin, and how.
struct FuzzStep {
  enum class Kind : std::uint8_t {
    Frame,      // `bytes` + LF (CR LF when `cr`; nothing when `unterminated`)
    CloseStdin, // EOF on the plugin's stdin (FRAME-18); the session ends after it
  };
  enum class Delivery : std::uint8_t {
    Whole,     // one write
    Split,     // written in 2–4 pieces, each flushed before the next (the reader sees partial lines)
    Coalesce,  // queued together with the next step's bytes (several frames in one read)
    Stall,     // stop reading the plugin's stdout for `stall_ms` after writing (its pipe may fill)
  };
  Kind kind = Kind::Frame;
  Delivery delivery = Delivery::Whole;
  std::string bytes;
  bool cr = false;
  bool unterminated = false;
  std::uint32_t stall_ms = 0;
  // Not a valid message for this connection: an SDK plugin may legitimately end the connection
  // after it (FRAME-04/13, RPC-01/05, SDK-25 decode failures), so an exit that follows is expected,
  // never a finding, and answers stop being owed until the plugin proves it is still serving.
  bool may_end = false;
  // Rendered id of the request when an answer is owed (RPC-08); empty for notifications and for
  // frames whose envelope is broken (no answer can be owed to them).
  std::string expect_id;
  std::string method;       // for deadlines and messages
  std::string label;        // what the generator/mutator did ("tools/call echo: drop arguments")
  bool shutdown = false;    // plugin/shutdown: the plugin must exit promptly afterwards (SHUT-08)
};

// What the target declared in its handshake (the generator aims at it).
struct DeclaredTool {
  std::string name, permission_name;
  std::optional<std::string> primary_resource_param;
  std::shared_ptr<json::Document> parameters;  // as declared (JSON Schema)
};
struct TargetInfo {
  std::string name;
  std::vector<DeclaredTool> tools;
  std::vector<std::string> hooks;              // declared intercept hook names
  bool subscribe_events = false, subscribe_bus = false, publish_bus = false;
};

// Schema-driven generator plus mutator. Deterministic for a given Rng state.
class Generator {
 public:
  Generator(const protocol::Profile& profile, std::uint32_t deadline_ms);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  void setTarget(const TargetInfo& t);
  // Percentage of generated steps that are mutated (default 22; 0: valid traffic only, bench).
  void setMutatePercent(int percent);
  // The plugin/initialize request (always valid, id 1): the handshake that opens every session.
  FuzzStep handshake();
  // A batch of 1..max_len steps, valid first and mutated with some probability. Ids continue.
  std::vector<FuzzStep> batch(Rng& rng, std::size_t max_len);
  // Always-valid steps: a ping (the probe closing each batch) and the shutdown + EOF pair.
  FuzzStep ping();
  std::vector<FuzzStep> shutdown(Rng& rng);
  // Valid message of a method with schema-valid params (tests; "" params when impossible).
  std::optional<FuzzStep> valid(std::string_view method, Rng& rng);
  // Engine frames of a corpus trace turned into steps (the handshake is skipped).
  static std::vector<FuzzStep> fromTrace(const std::string& path, std::string* error);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// One judged problem.
struct Problem {
  enum class Kind : std::uint8_t { Crash, Exit, Hang, Rule };
  Kind kind = Kind::Rule;
  std::string rule;      // catalogue id (RPC-08, HOOK-06, SHUT-08, FRAME-18, or the monitor's)
  std::string message;
  std::vector<reports::Finding> findings;  // Rule: the monitor findings (plugin-bound)
  std::uint64_t trace_line = 0;             // evidence line in the session trace
  std::string signature() const;            // "crash", "hang:HOOK-06", "rule:RPC-08" (dedup, ddmin)
};
const char* toString(Problem::Kind);

// One finding of a campaign (either role): what was found, where its files are, and how the
// reproducer behaved. Both roles write it into summary.json the same way (writeSummary).
struct Found {
  Problem problem;
  double found_after_s = 0;
  std::string dir;                // out/finding-N
  std::string reproducer;         // path
  std::size_t steps_before = 0, steps_after = 0, trials = 0;
  bool reproduced = false;        // a fresh process showed it again
  std::optional<bool> replay_ok;  // `conform replay` of the reproducer: no divergence (role engine)
};

// The campaign figures summary.json starts with.
struct CampaignFigures {
  std::vector<std::string> command;
  std::string role;  // "" (role engine: the key is left out, as it always was) or "plugin"
  std::string profile;
  std::uint64_t seed = 0, batches = 0, frames_sent = 0, frames_received = 0, sessions = 0;
  double seconds = 0;
};

// Writes `text` to `path` (truncating); false when it cannot.
bool writeFile(const std::string& path, std::string_view text);
// <out>/summary.json: the figures, then one object per finding (docs/fuzzing.md). On failure says
// so on `err` and returns false.
bool writeSummary(const std::string& out_dir, const CampaignFigures& fig, const std::vector<Found>& found,
                  std::ostream& err);

// Outcome of running steps on a live process.
struct RunStats {
  std::uint64_t frames_sent = 0, frames_received = 0, sessions = 0, bytes_sent = 0;
};

// One plugin process and its trace. Spawns on construction (start()), handshakes, then runs
// batches; judges each batch (crash, exit, hang, monitor findings bound to the plugin).
class Target {
 public:
  Target(std::vector<std::string> command, const protocol::Profile& profile, std::uint32_t deadline_ms);
  ~Target();
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  // Spawns and handshakes. Error text when CMD cannot start (harness error). A handshake that
  // fails (crash, no answer, refused by the monitors) is a Problem, returned as such.
  struct StartResult {
    std::string harness_error;
    std::optional<Problem> problem;
    std::optional<TargetInfo> info;
  };
  StartResult start(const FuzzStep& handshake);
  // Runs a batch; nullopt when nothing is wrong. After a problem or the end of the session
  // (exit, shutdown, EOF) alive() is false and the caller restarts.
  std::optional<Problem> run(const std::vector<FuzzStep>& steps);
  bool alive() const;
  // Ends the process (kill, reap) and the trace. The trace text is kept until the next start().
  void stop();
  // The trace of the current/last session: header + every event so far.
  std::string traceText() const;
  // Steps sent in the current/last session (the handshake first), for minimisation.
  const std::vector<FuzzStep>& sent() const;
  const RunStats& stats() const;
  // When set, monitors are not run (bench: raw transport throughput). Default: on.
  void setMonitors(bool on);
  // Handles the plugin's output for `d` without sending (timers the last step armed may fire).
  void settle(std::chrono::milliseconds d);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Runs `steps` (handshake first) on a fresh process and returns the problem it shows, if any,
// with the trace of that run. Used by minimisation and the tests.
struct Trial {
  std::optional<Problem> problem;
  std::string trace;
  std::string harness_error;
};
Trial runTrial(const std::vector<std::string>& command, const protocol::Profile& profile,
               std::uint32_t deadline_ms, const std::vector<FuzzStep>& steps);

// ddmin (Zeller) over steps[1..] (the handshake stays) until no single chunk can be removed, or
// the deadline. `reproduces` runs a candidate; every call is one fresh process.
// A template: `conform fuzz --role plugin` minimises its own step type (fuzz_engine.cpp).
template <class Step>
std::vector<Step> ddmin(const std::vector<Step>& steps,
                        const std::function<bool(const std::vector<std::type_identity_t<Step>>&)>& reproduces,
                        std::chrono::steady_clock::time_point deadline, std::size_t* trials) {
  if (steps.size() <= 1) return steps;
  const Step hs = steps.front();
  std::vector<Step> cur(steps.begin() + 1, steps.end());
  auto test = [&](const std::vector<Step>& cand) {
    std::vector<Step> full;
    full.reserve(cand.size() + 1);
    full.push_back(hs);
    full.insert(full.end(), cand.begin(), cand.end());
    if (trials) ++*trials;
    return reproduces(full);
  };
  std::size_t n = 2;
  while (!cur.empty() && std::chrono::steady_clock::now() < deadline) {
    if (cur.size() == 1) {
      if (test({})) cur.clear();
      break;
    }
    n = std::min(n, cur.size());
    const std::size_t chunk = (cur.size() + n - 1) / n;
    bool reduced = false;
    // Subsets first (big jumps), then complements (Zeller's ddmin).
    for (std::size_t i = 0; i < n && !reduced && std::chrono::steady_clock::now() < deadline; ++i) {
      const std::size_t b = i * chunk, e = std::min(cur.size(), b + chunk);
      if (b >= e) continue;
      std::vector<Step> sub(cur.begin() + static_cast<std::ptrdiff_t>(b), cur.begin() + static_cast<std::ptrdiff_t>(e));
      if (n > 2 && test(sub)) { cur = std::move(sub); n = 2; reduced = true; }
    }
    for (std::size_t i = 0; i < n && !reduced && std::chrono::steady_clock::now() < deadline; ++i) {
      const std::size_t b = i * chunk, e = std::min(cur.size(), b + chunk);
      if (b >= e) continue;
      std::vector<Step> comp(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(b));
      comp.insert(comp.end(), cur.begin() + static_cast<std::ptrdiff_t>(e), cur.end());
      if (test(comp)) { cur = std::move(comp); n = std::max<std::size_t>(n - 1, 2); reduced = true; }
    }
    if (!reduced) {
      if (n >= cur.size()) break;
      n = std::min(cur.size(), n * 2);
    }
  }
  std::vector<Step> out{hs};
  out.insert(out.end(), cur.begin(), cur.end());
  return out;
}


}  // namespace conform::runner::fuzz

namespace conform::runner {
struct FuzzOptions;
// `conform fuzz --role plugin`: conform plays the plugin against a live engine (fuzz_engine.cpp).
int runFuzzEngine(const FuzzOptions& opt, const protocol::Profile& profile, std::ostream& out, std::ostream& err);
}  // namespace conform::runner
