// harness/runner/cognipeer_check — the cognipeer-0.10 profile's case runner (profiles.h, docs/cognipeer.md).
//
// Per case: a fresh Reactor, the Node guest runner (`node <guest>/cognipeer/runner.mjs`) as a child, the
// plugin module loaded into it, and the reference host (mock_engine/cognipeer) registered from the
// module's shapes plus any companion plugins the case declares. The SAME Interpreter as the cookie
// profiles runs the steps: `send`/`expect` reach the runner wire directly (traced); `drive` makes the C++
// host act (load, run, hook, snapshot, resume, capabilities, contributions, log). What the host sees the
// plugin do against the plugin contract (an unknown decision, `ask` outside preToolUse, a throw, a
// timeout, a readonly-state write, a dropped attachment, a slot claimed twice, …) becomes a finding on
// the CG rule it touches, in every case where it happens.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/runner/check_case_impl.h"
#include "harness/runner/cognipeer_companions.h"
#include "harness/runner/profiles.h"
#include "mock_engine/cognipeer/guest_client.h"
#include "reports/rule_catalog.h"

namespace conform::runner {

namespace {

namespace fs = std::filesystem;
namespace cg = conform::cognipeer;
using detail::Peer;

// After the steps the runner gets `shutdown`; see guest_client.h for the bound.
// A case whose module cannot be loaded is UNTESTED only for harness reasons (node missing); a module
// that fails to import is the plugin's problem: a finding on CG-14 (no extension point is connected).

// The rule a finding is reported against when a construction error names no slot.
std::string constructionRule(const std::string& error) {
  return error.find("strategy slot") != std::string::npos ? "CG-05" : "CG-03";
}

// `--host real`: @cognipeer/agent-sdk >= 0.10 resolvable from the plugin's folder (node_modules upward).
std::optional<std::string> findRealSdk(const std::string& plugin_path, std::string& version) {
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(plugin_path), ec).parent_path();
  for (int i = 0; i < 32 && !dir.empty(); ++i) {
    fs::path pj = dir / "node_modules" / "@cognipeer" / "agent-sdk" / "package.json";
    std::ifstream in(pj);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      auto p = json::parse(ss.str());
      if (p) version = std::string(json::stringMember(p->doc, "version").value_or(""));
      return pj.string();
    }
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

class CognipeerCase final : public Peer {
 public:
  CognipeerCase(const dsl::Case& c, const Target& t) : case_(c), target_(t) {
    for (const std::string& r : c.rules)
      if (reports::findRule(r)) {
        rule_ = r;
        break;
      }
    if (rule_.empty()) rule_ = caseRule(c);
  }
  CaseRun run();

  // ---- Peer -------------------------------------------------------------------------------------
  std::string_view subject() const override { return "plugin"; }
  void send(std::string_view bytes) override {
    if (client_) client_->sendRaw(bytes);
  }
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) override {
    if (!client_) return pred();
    return client_->pumpUntil(deadline, pred);
  }
  std::optional<State> state() override { return std::nullopt; }
  std::vector<std::string> items(bool tools) override;
  Outcome drive(const std::string& action, const std::vector<std::string>& args, const json::Document& json) override;
  Outcome advance(dsl::Millis) override { return Outcome::error("advance: the cognipeer host has no clock to move"); }
  Outcome fault(dsl::FaultKind k, dsl::Millis) override;

 private:
  Expected<Ok, std::string> buildHost(const json::Value& companions, std::string& construction_error);
  Outcome check(const std::string& what, const json::Value& spec, const json::Value& actual);
  json::Document logJson() const;
  std::optional<std::string> notApplicable() const;

  const dsl::Case& case_;
  Target target_;
  std::string rule_;
  wire::Reactor reactor_;
  std::ostringstream trace_text_;
  std::unique_ptr<trace::TraceWriter> tw_;
  detail::Conversation conv_;
  std::unique_ptr<cg::GuestClient> client_;
  std::unique_ptr<CompanionGuest> guest_;
  std::optional<cg::Host> host_;
  std::vector<cg::PluginShape> shapes_;
  json::Document load_result_;
  json::Document last_snapshot_;
  std::vector<cg::HostFinding> dropped_;  // findings of hosts replaced by `drive load`
};

std::vector<std::string> CognipeerCase::items(bool tools) {
  std::vector<std::string> out;
  for (const auto& s : shapes_) {
    if (tools) {
      if (s.tools.IsArray())
        for (const auto& t : s.tools.GetArray())
          if (auto n = json::stringMember(t, "name")) out.emplace_back(*n);
    } else {
      for (const auto& h : s.hooks)
        if (cg::isHook(h) && std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
    }
  }
  return out;
}

Peer::Outcome CognipeerCase::fault(dsl::FaultKind k, dsl::Millis) {
  wire::Channel* ch = client_ ? client_->channel() : nullptr;
  if (!ch) return Outcome::error("no runner process");
  switch (k) {
    case dsl::FaultKind::CloseStdin: ch->closeWrite(false); return Outcome::ok();
    case dsl::FaultKind::Kill: ch->close(false); return Outcome::ok();
    default: return Outcome::error(fmt::format("fault {} is not available in profile cognipeer-0.10", toString(k)));
  }
}

Expected<Ok, std::string> CognipeerCase::buildHost(const json::Value& companions, std::string& construction_error) {
  if (host_) {
    for (const auto& f : host_->findings()) dropped_.push_back(f);
  }
  host_.reset();
  auto extra = parseCompanions(companions);
  if (!extra) return unexpected(extra.error());
  std::vector<cg::PluginShape> all;
  for (const auto& s : shapes_) all.push_back(s.clone());
  guest_->companions.clear();
  for (auto& c : *extra) {
    all.push_back(c.shapeCopy());
    guest_->companions.push_back(std::move(c));
  }
  cg::HostOptions ho;
  ho.agent_name = "conform-agent";
  auto h = cg::Host::create(std::move(all), *guest_, ho);
  if (!h) {
    construction_error = h.error();
    return Ok{};
  }
  host_.emplace(std::move(*h));
  return Ok{};
}

std::optional<std::string> CognipeerCase::notApplicable() const {
  for (const dsl::Need& n : case_.needs) {
    switch (n.kind) {
      case dsl::Need::Kind::Hook: {
        bool any = false;
        for (const auto& s : shapes_) any = any || s.hasHook(n.name);
        if (!any) return fmt::format("the plugin implements no {} hook", n.name);
        break;
      }
      case dsl::Need::Kind::Tool: {
        bool any = false;
        for (const auto& s : shapes_) any = any || (s.tools.IsArray() && !s.tools.Empty());
        if (!any) return std::string("the plugin contributes no tool");
        break;
      }
      case dsl::Need::Kind::Capability: {
        bool any = false;
        for (const auto& s : shapes_) {
          if (n.name == "slot") any = any || !s.provides.empty();
          else if (n.name == "setup") any = any || s.setup;
          else if (n.name == "closed") any = any || s.closed;
          else if (n.name == "open") any = any || !s.closed;
          else if (n.name == "systemPrompt") any = any || !s.system_prompt.IsNull();
          else if (n.name == "toolDescriptions") any = any || s.tool_descriptions.IsObject();
          else if (n.name == "wrapModel") any = any || s.wrap_model;
          else if (n.name == "guardrails") any = any || !s.guardrails.IsNull();
        }
        if (!any) return fmt::format("the plugin declares no {}", n.name);
        break;
      }
    }
  }
  return std::nullopt;
}

json::Document CognipeerCase::logJson() const {
  json::Document d(rapidjson::kArrayType);
  auto& a = d.GetAllocator();
  if (!host_) return d;
  for (const cg::HookCall& c : host_->log()) {
    json::Value e(rapidjson::kObjectType);
    e.AddMember("plugin", json::str(c.plugin, a), a);
    e.AddMember("hook", json::str(c.hook, a), a);
    auto in = json::parse(c.input);
    json::Value v;
    if (in) json::deepCopy(v, in->doc, a);
    e.AddMember("input", v, a);
    e.AddMember("outcome", json::str(c.outcome, a), a);
    auto out = json::parse(c.output);
    json::Value o;
    if (out) json::deepCopy(o, out->doc, a);
    else o = json::str(c.output, a);
    e.AddMember("output", o, a);
    e.AddMember("effect", json::str(c.effect, a), a);
    d.PushBack(e, a);
  }
  return d;
}

// Checks `actual` against the spec's "expect" (subset), "exact" (equality), "contains" (an ordered
// subsequence of array elements each matching its pattern) and "absent" (no element matches).
Peer::Outcome CognipeerCase::check(const std::string& what, const json::Value& spec, const json::Value& actual) {
  json::Captures caps;
  std::string shown = reports::shortenEvidence(json::compact(actual), 600);
  if (const json::Value* e = json::member(spec, "expect")) {
    if (auto mm = json::matchSubset(*e, actual, caps))
      return Outcome::failure(fmt::format("{}: {}", what, mm->str()), json::compact(*e), shown);
  }
  if (const json::Value* e = json::member(spec, "exact")) {
    if (!json::equal(*e, actual)) return Outcome::failure(what + ": not exactly as expected", json::compact(*e), shown);
  }
  if (const json::Value* e = json::member(spec, "contains"); e && e->IsArray()) {
    if (!actual.IsArray()) return Outcome::failure(what + ": not a list", "a list", shown);
    rapidjson::SizeType at = 0;
    for (const auto& pat : e->GetArray()) {
      bool found = false;
      for (; at < actual.Size() && !found; ++at) {
        json::Captures trial;
        found = !json::matchSubset(pat, actual[at], trial);
      }
      if (!found)
        return Outcome::failure(fmt::format("{}: no entry matching {} (in this order)", what, json::compact(pat)),
                                json::compact(*e), shown);
    }
  }
  if (const json::Value* e = json::member(spec, "absent"); e && e->IsArray() && actual.IsArray()) {
    for (const auto& pat : e->GetArray())
      for (const auto& x : actual.GetArray()) {
        json::Captures trial;
        if (!json::matchSubset(pat, x, trial))
          return Outcome::failure(fmt::format("{}: an entry matches {}", what, json::compact(pat)), "no such entry",
                                  reports::shortenEvidence(json::compact(x), 600));
      }
  }
  Outcome o = Outcome::ok();
  o.doc = std::make_shared<json::Document>(json::copy(actual));
  return o;
}

Peer::Outcome CognipeerCase::drive(const std::string& action, const std::vector<std::string>& args, const json::Document& spec) {
  static const json::Value kEmpty(rapidjson::kObjectType);
  auto mem = [&](std::string_view k) -> const json::Value& {
    const json::Value* m = json::member(spec, k);
    return m ? *m : kEmpty;
  };
  if (tw_) tw_->note(fmt::format("drive {} {}", action, reports::shortenEvidence(json::compact(spec), 300)));
  if (action == "load") {
    std::string cerr;
    static const json::Value kNone;
    const json::Value* comp = json::member(spec, "companions");
    auto b = buildHost(comp ? *comp : kNone, cerr);
    if (!b) return Outcome::error("drive load: " + b.error());
    if (const json::Value* want = json::member(spec, "expect_error")) {
      std::string w = want->IsString() ? want->GetString() : "";
      if (cerr.empty())
        return Outcome::failure("drive load: registration succeeded, a construction error was expected",
                                "a construction error containing \"" + w + "\"", "the host was built");
      if (cerr.find(w) == std::string::npos)
        return Outcome::failure("drive load: another construction error", w, cerr);
      return Outcome::ok();
    }
    if (!cerr.empty()) return Outcome::failure("drive load: construction error", "the plugins register", cerr);
    return check("load", spec, load_result_);
  }
  if (!host_) return Outcome::error(fmt::format("drive {}: no host (the last `drive load` failed)", action));
  if (action == "run") {
    auto r = host_->run(mem("script"));
    if (!r) return Outcome::error("drive run: " + r.error());
    return check("run", spec, *r);
  }
  if (action == "hook") {
    if (args.empty()) return Outcome::error("drive hook: expected a hook name");
    const std::string& name = args[0];
    if (!cg::isHook(name)) return Outcome::error(fmt::format("drive hook: `{}` is not one of the 13 hooks", name));
    json::Document res(rapidjson::kObjectType);
    if (cg::isObserver(name)) {
      host_->runObservers(name, mem("input"));
    } else {
      cg::GateResult g = host_->runGate(name, mem("input"));
      auto& a = res.GetAllocator();
      res.AddMember("decision", json::str(g.decision, a), a);
      res.AddMember("reason", json::str(g.reason, a), a);
      res.AddMember("deniedBy", json::str(g.denied_by, a), a);
      json::Value v, c;
      json::deepCopy(v, g.value, a);
      json::deepCopy(c, g.collected, a);
      res.AddMember("value", v, a);
      res.AddMember("collected", c, a);
    }
    return check("hook " + name, spec, res);
  }
  if (action == "snapshot") {
    auto s = host_->snapshot();
    if (!s) return Outcome::error("drive snapshot: " + s.error());
    last_snapshot_ = json::copy(*s);
    return check("snapshot", spec, *s);
  }
  if (action == "resume") {
    if (!last_snapshot_.IsObject()) return Outcome::error("drive resume: take a `drive snapshot` first");
    // A fresh host (a fresh runtime) resumes the snapshot: nothing of the old plugin session survives.
    std::string cerr;
    static const json::Value kNone;
    const json::Value* comp = json::member(spec, "companions");
    auto b = buildHost(comp ? *comp : kNone, cerr);
    if (!b || !cerr.empty()) return Outcome::error("drive resume: " + (b ? cerr : b.error()));
    auto r = host_->resume(last_snapshot_, mem("script"));
    if (!r) return Outcome::error("drive resume: " + r.error());
    return check("resume", spec, *r);
  }
  if (action == "capabilities") return check("pluginCapabilities()", spec, cg::Host::capabilities());
  if (action == "contributions") {
    if (auto s = host_->ensureSetup(); !s) return Outcome::failure("setup failed", "setup succeeds", s.error());
    const json::Value& t = mem("agentTools");
    static const json::Value kNoTools(rapidjson::kArrayType);
    return check("contributions", spec, host_->contributions(t.IsArray() ? t : kNoTools));
  }
  if (action == "log") return check("hook log", spec, logJson());
  if (action == "clear-log") {
    host_->clearLog();
    return Outcome::ok();
  }
  if (action == "shape") return check("load", spec, load_result_);
  return Outcome::error(fmt::format("unknown drive action `{}` (load, run, hook, snapshot, resume, capabilities, "
                                    "contributions, log, clear-log, shape)", action));
}

CaseRun CognipeerCase::run() {
  CaseRun out;
  out.result = reports::newCase(case_.id, case_.title, case_.rules);
  auto t0 = std::chrono::steady_clock::now();
  trace::TraceHeader hdr;
  hdr.profile = kCognipeerProfile;
  hdr.role = "engine";
  hdr.peer = target_.argv;
  tw_ = std::make_unique<trace::TraceWriter>(trace_text_, clock::RealClock::instance(), std::move(hdr),
                                             trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  tw_->caseBegin(case_.id);
  conv_.tw = tw_.get();
  std::string error;
  std::optional<detail::StepFailure> failure;
  std::vector<std::pair<std::string, std::string>> extra;  // (rule, message) host-level findings
  auto finish = [&] {
    if (client_) client_->shutdown();
    tw_->caseEnd(case_.id);
    tw_->flush();
    conv_.tw = nullptr;
    tw_.reset();
    out.trace = trace_text_.str();
    if (failure) {
      const reports::RuleInfo* ri = reports::findRule(rule_);
      out.result.findings.push_back(reports::makeFinding(rule_, ri ? ri->binds : reports::kBindsEngine, failure->message,
                                                         failure->expected, failure->actual, failure->evidence));
    }
    std::set<std::pair<std::string, std::string>> seen;
    for (auto& [rule, msg] : extra) {
      if (!seen.insert({rule, msg}).second) continue;
      const reports::RuleInfo* ri = reports::findRule(rule);
      out.result.findings.push_back(reports::makeFinding(rule, ri ? ri->binds : reports::kBindsEngine,
                                                         fmt::format("[host {}] {}", target_.host, msg),
                                                         "a plugin that keeps the Cognipeer 0.10 plugin contract", msg, {}));
    }
    if (!error.empty()) {
      out.result.verdict = reports::Verdict::Error;
      out.result.error = fmt::format("[host {}] {}", target_.host, error);
    }
    reports::finalize(out.result);
    out.result.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::move(out);
  };
  if (target_.argv.empty()) {
    error = "no plugin module to test (give its path after --)";
    return finish();
  }
  if (target_.host != "reference") {
    std::string ver;
    auto sdk = target_.host == "real" ? findRealSdk(target_.argv[0], ver) : std::nullopt;
    if (target_.host != "real") error = fmt::format("unknown --host `{}` (reference or real)", target_.host);
    else if (!sdk)
      error = fmt::format("--host real: @cognipeer/agent-sdk >= 0.10 cannot be resolved from {}'s folder (the npm registry "
                          "serves only 0.9.2, which has no plugin layer); use --host reference",
                          target_.argv[0]);
    else if (int maj = 0, min = 0; std::sscanf(ver.c_str(), "%d.%d", &maj, &min) < 2 || (maj == 0 && min < 10))
      error = fmt::format("--host real: @cognipeer/agent-sdk {} at {} is older than 0.10 (no plugin layer); use --host reference",
                          ver.empty() ? "(no version)" : ver, *sdk);
    else
      error = fmt::format("--host real: found @cognipeer/agent-sdk {} at {}, but driving the real SDK's loop is not "
                          "implemented in this build; use --host reference", ver.empty() ? "(no version)" : ver, *sdk);
    return finish();
  }
  // The runner, traced like any peer: what we write and everything it writes.
  cg::GuestClient::Tap tap;
  tap.out = [this](std::string_view b) { conv_.traceBytes(trace::Dir::EngineToPlugin, b); };
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
  client_ = std::make_unique<cg::GuestClient>(reactor_, std::move(tap));
  std::error_code ec;
  fs::path module = fs::absolute(fs::path(target_.argv[0]), ec);
  std::string dir = cg::runnerDir(target_.guest_dir);
  if (!fs::exists(fs::path(dir) / "runner.mjs", ec)) {
    error = fmt::format("the Cognipeer guest runner is missing: {}/runner.mjs (--guest-runner DIR or CONFORM_GUEST_DIR)", dir);
    return finish();
  }
  if (auto s = client_->start(dir, module.parent_path().string()); !s) {
    error = s.error();
    return finish();
  }
  tw_->note(fmt::format("cognipeer host: {} (runner {}/runner.mjs)", target_.host, dir));
  auto loaded = client_->load(module.string());
  if (!loaded) {
    // A module that cannot be imported (syntax error, throwing top level, no default export…) has no
    // extension point connected at all: CG-14's "missing instead of quietly doing nothing".
    if (loaded.error().find("-32012") != std::string::npos || loaded.error().find("load failed") != std::string::npos)
      extra.emplace_back("CG-14", "the plugin module cannot be loaded: " + loaded.error());
    else
      error = "the guest runner failed: " + loaded.error();
    return finish();
  }
  load_result_ = std::move(*loaded);
  auto shapes = cg::parseShapes(load_result_);
  if (!shapes) {
    extra.emplace_back("CG-03", "the plugin cannot be registered: " + shapes.error());
    return finish();
  }
  if (shapes->empty()) {
    extra.emplace_back("CG-14", "the module's default export declares no plugin (export_kind " +
                                    std::string(json::stringMember(load_result_, "export_kind").value_or("?")) + ")");
    return finish();
  }
  shapes_ = std::move(*shapes);
  guest_ = std::make_unique<CompanionGuest>(*client_);
  std::string cerr;
  if (auto b = buildHost(json::Value(rapidjson::kArrayType), cerr); !b) {
    error = b.error();
    return finish();
  }
  if (!cerr.empty()) {
    extra.emplace_back(constructionRule(cerr), "createPluginHost refuses the module's plugins: " + cerr);
    // A case about the construction itself still runs (`drive load {"expect_error": …}`).
    if (case_.steps.empty() || case_.steps.front().kind != dsl::Step::Kind::Drive || case_.steps.front().text != "load")
      return finish();
  }
  if (auto na = notApplicable()) {
    out.result.verdict = reports::Verdict::NotApplicable;
    out.result.skip_reason = *na;
  } else {
    for (detail::Inbound& in : conv_.inbox) in.consumed = true;  // the load belongs to the host
    detail::Interpreter interp(*this, conv_);
    interp.execAll(case_.steps);
    failure = interp.failure();
    error = interp.error();
  }
  // Host-level findings about the module's own plugins (companions are the harness's).
  auto take = [&](const cg::HostFinding& f) {
    for (const auto& s : shapes_)
      if (s.name == f.plugin) extra.emplace_back(f.rule, f.message);
  };
  for (const auto& f : dropped_) take(f);
  if (host_)
    for (const auto& f : host_->findings()) take(f);
  for (const auto& c : client_->console())
    if (c.stream == "stdout")
      extra.emplace_back(kStdoutRule, fmt::format("plugin {} wrote to stdout: {}", c.plugin.empty() ? "(module)" : c.plugin,
                                                  reports::shortenEvidence(c.text, 200)));
  return finish();
}

}  // namespace

CaseRun runCognipeerCase(const dsl::Case& c, const Target& target) {
  CognipeerCase r(c, target);
  return r.run();
}

}  // namespace conform::runner
