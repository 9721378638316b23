// harness/runner/nanopi_check — runNanopiCase (profiles.h): one `profile nanopi-0.12` case with the
// reference nanopi host in front of the component under test (nanopi_peer.h). Setup, wire tracing,
// the verdict. The drive actions are nanopi_drive.cpp.
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "harness/rules/nanopi_monitor.h"
#include "harness/runner/nanopi_peer.h"
#include "harness/runner/profiles.h"
#include "mock_engine/nanopi/events.h"
#include "reports/rule_catalog.h"

namespace conform::runner {

namespace fs = std::filesystem;

namespace detail {

namespace {

bool isDriveLoad(const dsl::Step& s) { return s.kind == dsl::Step::Kind::Drive && s.text == "load"; }

}  // namespace

NanopiPeer::NanopiPeer(const dsl::Case& c, const Target& t) : case_(c), target_(t), rule_(caseRule(c)) {}

NanopiPeer::~NanopiPeer() {
  if (session_) session_->shutdown();
}

void NanopiPeer::send(std::string_view bytes) {
  if (session_) session_->client().sendRaw(bytes);
}

bool NanopiPeer::pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) {
  if (!session_) return pred();
  bool ok = session_->client().pumpUntil(deadline, pred);
  flushHostLog();
  return ok;
}

std::optional<Peer::State> NanopiPeer::state() {
  nanopi::Host* h = host();
  if (!h) return State{"disconnected", "nothing loaded"};
  switch (h->loadState()) {
    case nanopi::Host::LoadState::Loaded: return State{"connected", ""};
    case nanopi::Host::LoadState::Failed: return State{"failed", h->loadError()};
    case nanopi::Host::LoadState::Loading: return State{"connecting", ""};
    case nanopi::Host::LoadState::NotLoaded: break;
  }
  return State{"disconnected", ""};
}

std::vector<std::string> NanopiPeer::items(bool tools) {
  nanopi::Host* h = host();
  if (!h) return {};
  return tools ? h->tools() : h->subscriptions();  // `for each hook`: the effective subscription
}

Peer::Outcome NanopiPeer::advance(dsl::Millis) {
  return Outcome::error("advance: the nanopi host has no offset clock (budgets are the runner's real time)");
}

Peer::Outcome NanopiPeer::fault(dsl::FaultKind k, dsl::Millis) {
  return Outcome::error(fmt::format("fault {} is not available in profile nanopi-0.12", toString(k)));
}

void NanopiPeer::flushHostLog() {
  nanopi::Host* h = host();
  if (!h || !tw_) return;
  const auto& log = h->log();
  for (; log_seen_ < log.size(); ++log_seen_) tw_->note("host: " + log[log_seen_]);
}

Expected<Ok, std::string> NanopiPeer::doLoad(const json::Value& given) {
  if (loaded_once_) return unexpected(std::string("drive load: the component is loaded once per case"));
  loaded_once_ = true;
  nanopi::HostOptions opts;
  json::Document entry(rapidjson::kObjectType);
  auto& a = entry.GetAllocator();
  if (given.IsObject()) {
    // Members `hooks`, `http_fixtures`, `fs_cwd` are conform's, not nanopi's: they configure the
    // reference host (docs/nanopi.md) and are removed before the [[extensions]] entry is decoded.
    for (auto& m : given.GetObject()) {
      std::string_view k(m.name.GetString(), m.name.GetStringLength());
      if (k == "hooks") {
        if (!m.value.IsBool()) return unexpected(std::string("drive load: `hooks` must be true or false"));
        opts.hooks_active = m.value.GetBool();
      } else if (k == "http_fixtures") {
        if (!m.value.IsObject()) return unexpected(std::string("drive load: `http_fixtures` must be an object url -> body"));
        for (auto& f : m.value.GetObject())
          if (f.value.IsString()) opts.http_fixtures[f.name.GetString()] = std::string(f.value.GetString(), f.value.GetStringLength());
      } else if (k == "fs_cwd") {
        if (!m.value.IsString()) return unexpected(std::string("drive load: `fs_cwd` must be a string"));
        opts.cwd = m.value.GetString();
      } else {
        json::Value v;
        json::deepCopy(v, m.value, a);
        entry.AddMember(json::str(k, a), v, a);
      }
    }
  } else if (!given.IsNull()) {
    return unexpected(std::string("drive load: expected an [[extensions]] object"));
  }
  std::error_code ec;
  std::string path = fs::absolute(target_.argv.at(0), ec).string();
  if (ec) path = target_.argv.at(0);
  if (json::member(entry, "path")) entry.RemoveMember("path");
  entry.AddMember("path", json::str(path, a), a);
  if (!json::member(entry, "events")) {
    // The case does not decide the grant: --grant, else every deliverable name (docs/nanopi.md).
    json::Value ev(rapidjson::kArrayType);
    if (!target_.grants.empty())
      for (const auto& g : target_.grants) ev.PushBack(json::str(g, a), a);
    else
      for (auto n : nanopi::kEventNames) ev.PushBack(json::str(n, a), a);
    entry.AddMember("events", ev, a);
  }
  if (!json::member(entry, "allow_network") && target_.allow_network) entry.AddMember("allow_network", true, a);
  auto cfg = nanopi::parseExtensionConfig(entry);
  if (!cfg) return unexpected("drive load: " + cfg.error());
  if (tw_) tw_->note("host: load " + json::compact(entry));
  auto r = session_->load(std::move(*cfg), std::move(opts));
  flushHostLog();
  if (!r) return unexpected(r.error());
  nanopi::Host* h = host();
  subs_at_load_ = h->subscriptions();
  first_list_events_ = h->listEventsValue();
  if (tw_) {
    tw_->note(fmt::format("host: load {} in {:.1f} ms (runner load {:.1f} ms){}", h->loadState() == nanopi::Host::LoadState::Loaded ? "ok" : "FAILED",
                          session_->loadMs(), session_->runnerLoadMs(),
                          h->loadError().empty() ? "" : ": [" + h->loadErrorRule() + "] " + h->loadError()));
    for (const auto& d : h->diagnostics()) tw_->note(fmt::format("host: {} [{}] {}", toString(d.level), d.rule, d.text));
  }
  return Ok{};
}

std::optional<std::string> NanopiPeer::notApplicable() const {
  const nanopi::Host* h = session_ ? session_->host() : nullptr;
  if (!h) return std::nullopt;
  for (const dsl::Need& n : case_.needs) {
    // `needs tool`: the component lists a tool; `needs hook E`: E is in its effective subscription;
    // `needs subscribe_events`: that subscription is not empty. `needs no …` inverts.
    bool have = false;
    std::string what;
    const auto& subs = h->subscriptions();
    switch (n.kind) {
      case dsl::Need::Kind::Tool:
        have = !h->tools().empty();
        what = "lists a tool";
        break;
      case dsl::Need::Kind::Hook:
        have = std::find(subs.begin(), subs.end(), n.name) != subs.end();
        what = "is subscribed to " + n.name;
        break;
      case dsl::Need::Kind::Capability:
        if (n.name != "subscribe_events") return std::nullopt;
        have = !subs.empty();
        what = "has a non-empty effective subscription";
        break;
    }
    if (have == n.negated) return fmt::format("the case needs a component that {}{}", n.negated ? "NOT " : "", what);
  }
  return std::nullopt;
}

void NanopiPeer::addFindings(reports::CaseResult& out) {
  // One finding per rule: the first observation, with how many more of the same rule followed (a
  // handler that traps on every event says so once, not eleven times).
  nanopi::Host* h = host();
  auto covered = [&](const std::string& r) { return std::find(case_.rules.begin(), case_.rules.end(), r) != case_.rules.end(); };
  std::map<std::string, std::pair<const nanopi::GuestFault*, std::size_t>> by_rule;
  std::vector<std::string> order;
  if (h)
    for (const nanopi::GuestFault& f : h->faults()) {
      if (!covered(f.rule)) continue;
      auto [it, fresh] = by_rule.emplace(f.rule, std::make_pair(&f, std::size_t{0}));
      if (fresh) order.push_back(f.rule);
      else ++it->second.second;
    }
  for (const auto& rule : order) {
    const auto& [f, more] = by_rule[rule];
    const reports::RuleInfo* ri = reports::findRule(rule);
    std::string msg = more ? fmt::format("{} (and {} more observation(s) of {} in this case)", f->message, more, rule) : f->message;
    out.findings.push_back(reports::makeFinding(rule, ri ? ri->binds : reports::kBindsPlugin, msg, f->expected, f->actual,
                                                {{conv_.traceLine(), "host observation"}}));
  }
  for (auto& f : extra_)
    if (covered(f.rule_id)) out.findings.push_back(f);
}

CaseRun NanopiPeer::run() {
  CaseRun out;
  out.result = reports::newCase(case_.id, case_.title, case_.rules);
  auto t0 = std::chrono::steady_clock::now();
  trace::TraceHeader hdr;
  hdr.profile = kNanopiProfile;
  hdr.role = "engine";
  hdr.peer = target_.argv;
  tw_ = std::make_unique<trace::TraceWriter>(trace_text_, clock::RealClock::instance(), std::move(hdr),
                                             trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  tw_->caseBegin(case_.id);
  conv_.tw = tw_.get();
  std::optional<StepFailure> failure;
  std::string error;
  const std::string dir = nanopi::runnerDir(target_.guest_dir);
  std::error_code ec;
  if (target_.argv.empty()) error = "no component to test (conform check --profile nanopi-0.12 ./plugin.wasm)";
  else if (!fs::is_regular_file(target_.argv[0], ec)) error = fmt::format("{}: no such component file", target_.argv[0]);
  else if (!fs::is_regular_file(dir + "/runner.mjs", ec))
    error = fmt::format("the nanopi guest runner is missing: {}/runner.mjs (give --guest-runner DIR or set CONFORM_GUEST_DIR)", dir);
  else if (!fs::is_directory(dir + "/node_modules/@bytecodealliance/jco-transpile", ec))
    error = fmt::format("the nanopi guest runner's npm packages are missing in {}/node_modules (run `make deps`)", dir);
  if (error.empty()) {
    nanopi::GuestClient::Tap tap;
    tap.out = [this](std::string_view bytes) {
      conv_.traceBytes(trace::Dir::EngineToPlugin, bytes);
      // Remember each handle-event payload exactly as it went on the wire (NP-16/17/18 checks).
      auto p = json::parse(bytes);
      if (p && json::stringMember(p->doc, "method").value_or("") == "call")
        if (const json::Value* params = json::member(p->doc, "params");
            params && json::stringMember(*params, "export").value_or("") == "handle-event")
          if (const json::Value* args = json::member(*params, "args"); args && args->IsArray() && args->Size() == 2 &&
                                                                        (*args)[0].IsString() && (*args)[1].IsString())
            sent_.push_back({(*args)[0].GetString(), std::string((*args)[1].GetString(), (*args)[1].GetStringLength())});
    };
    tap.in = [this](const wire::ChannelEvent& ev) {
      using K = wire::ChannelEvent::Kind;
      switch (ev.kind) {
        case K::Frame:
        case K::FrameError:
          tw_->frameEvent(trace::Dir::PluginToEngine, ev.frame);
          conv_.pushFrame(ev.frame.bytes, ev.frame.kind == wire::FrameEvent::Kind::Frame);
          break;
        case K::Stderr: tw_->stderrLine(ev.text); break;
        case K::Eof:
          tw_->eof(trace::Dir::PluginToEngine);
          conv_.pushEof();
          break;
        case K::Exited:
          if (ev.status.signaled) tw_->exitSignal(ev.status.signal);
          else tw_->exitCode(ev.status.code);
          conv_.pushExit(ev.status);
          break;
        case K::WriteFailed: tw_->note("write failed: " + ev.text); break;
      }
    };
    session_ = std::make_unique<nanopi::HostSession>(reactor_, clock::RealClock::instance(), std::move(tap));
    if (auto s = session_->start(dir); !s) error = s.error();
  }
  bool untested = false;
  if (error.empty()) {
    // Like the cookie handshake: the component is loaded before the steps unless a step loads it
    // with the case's own configuration.
    if (std::none_of(case_.steps.begin(), case_.steps.end(), isDriveLoad)) {
      json::Document none;
      if (auto r = doLoad(none); !r) error = r.error();
    }
    if (error.empty()) {
      if (auto na = notApplicable()) {
        out.result.verdict = reports::Verdict::NotApplicable;
        out.result.skip_reason = *na;
      } else {
        Interpreter interp(*this, conv_);
        interp.execAll(case_.steps);
        failure = interp.failure();
        error = interp.error();
      }
      // A component that did not load for a reason outside this case's rules: nothing here was
      // tested (its own case reports the load error).
      nanopi::Host* h = host();
      if (h && h->loadState() == nanopi::Host::LoadState::Failed &&
          std::find(case_.rules.begin(), case_.rules.end(), h->loadErrorRule()) == case_.rules.end()) {
        untested = true;
        failure.reset();
        out.result.verdict = reports::Verdict::Untested;
        out.result.skip_reason = fmt::format("the component did not load: [{}] {}", h->loadErrorRule(), h->loadError());
      }
    }
  }
  if (session_) {
    flushHostLog();
    addFindings(out.result);
    session_->shutdown();
  }
  (void)untested;
  tw_->caseEnd(case_.id);
  tw_->flush();
  conv_.tw = nullptr;
  tw_.reset();
  out.trace = trace_text_.str();
  // The wire itself (host -> runner), judged like a cookie trace is by the monitors.
  for (auto& f : rules::judgeNanopiWire(out.trace))
    if (std::find(case_.rules.begin(), case_.rules.end(), f.rule_id) != case_.rules.end()) out.result.findings.push_back(std::move(f));
  // A failed step on the same rule as a host observation says the same thing twice (a hard load
  // error makes `drive assert loaded` fail too): the observation, which names the cause, is kept.
  if (failure && std::any_of(out.result.findings.begin(), out.result.findings.end(),
                             [&](const reports::Finding& f) { return f.rule_id == rule_; }))
    failure.reset();
  if (failure) {
    const reports::RuleInfo* ri = reports::findRule(rule_);
    out.result.findings.push_back(reports::makeFinding(rule_, ri ? ri->binds : reports::kBindsPlugin, failure->message,
                                                       failure->expected, failure->actual, failure->evidence));
  }
  if (!error.empty()) {
    out.result.verdict = reports::Verdict::Error;
    out.result.error = error;
  }
  reports::finalize(out.result);
  out.result.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace detail

CaseRun runNanopiCase(const dsl::Case& c, const Target& target) {
  detail::NanopiPeer p(c, target);
  return p.run();
}

}  // namespace conform::runner
