// harness/runner/nanopi_peer — the Peer of `profile nanopi-0.12` cases (profiles.h, issue 9).
//
// The SAME Interpreter as the cookie profiles runs the case (check_case_impl.h); this peer puts the
// reference nanopi host (mock_engine/nanopi, in-process C++) in front of the component under test,
// which runs inside the Node guest runner (guest/nanopi/runner.mjs, docs/guest-protocol.md):
//   * `send` / `expect` talk to the runner wire; every frame both ways is traced (the reports show
//     the wire log) and every frame from the runner lands in the inbox;
//   * `drive …` makes the host act (docs/nanopi.md lists the actions): load, events, tools, turns,
//     busy deliveries, reports, and `drive assert …` checks of what the host observed;
//   * at the end, every GuestFault the host recorded whose rule is one of the case's `rules` becomes
//     a finding on that rule. A component that fails to load for another rule's reason leaves the
//     case UNTESTED (like a cookie handshake that does not complete).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/runner/check_case_impl.h"
#include "mock_engine/nanopi/session.h"

namespace conform::runner::detail {

class NanopiPeer final : public Peer {
 public:
  NanopiPeer(const dsl::Case& c, const Target& t);
  ~NanopiPeer() override;
  CaseRun run();

  // ---- Peer -------------------------------------------------------------------------------------
  std::string_view subject() const override { return "plugin"; }
  void send(std::string_view bytes) override;
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) override;
  std::optional<State> state() override;
  std::vector<std::string> items(bool tools) override;
  Outcome drive(const std::string& action, const std::vector<std::string>& args, const json::Document& json) override;
  Outcome advance(dsl::Millis d) override;
  Outcome fault(dsl::FaultKind k, dsl::Millis d) override;

 private:
  // nanopi_check.cpp
  Expected<Ok, std::string> doLoad(const json::Value& cfg);
  std::optional<std::string> notApplicable() const;
  void flushHostLog();
  void addFindings(reports::CaseResult& out);
  // nanopi_drive.cpp
  Outcome driveEvent(const std::vector<std::string>& args, const json::Value& fields, bool wait);
  Outcome driveSession(const json::Value& common);
  Outcome driveBusy();
  Outcome driveAgentTool(const std::vector<std::string>& args, const json::Value& targs);
  Outcome driveProbeListEvents();
  Outcome driveAssert(const std::vector<std::string>& args, const json::Value& json);
  nanopi::Host* host() { return session_ ? session_->host() : nullptr; }

  const dsl::Case& case_;
  Target target_;
  wire::Reactor reactor_;
  std::ostringstream trace_text_;
  std::unique_ptr<trace::TraceWriter> tw_;
  Conversation conv_;
  std::unique_ptr<nanopi::HostSession> session_;
  std::string rule_;
  std::size_t log_seen_ = 0;
  bool loaded_once_ = false;
  std::vector<std::string> subs_at_load_;
  std::optional<std::string> first_list_events_;  // the value list-events returned at load
  std::vector<reports::Finding> extra_;           // findings of probes (NP-08)
  // Payloads the host handed to handle-event, in order (NP-16/17/18 checks).
  struct Sent {
    std::string event, payload;
  };
  std::vector<Sent> sent_;
  std::optional<bool> agent_tool_executed_;
};

}  // namespace conform::runner::detail
