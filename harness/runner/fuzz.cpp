// harness/runner/fuzz — `conform fuzz`: the loop, minimisation and outputs (fuzz.h; the parts are
// described in fuzz_impl.h; docs/fuzzing-live.md for users).
//
// Loop: one persistent plugin process; batches of generated steps, each closed by a probe ping,
// are judged as they complete. A problem is deduplicated by signature (kind + rule), minimised by
// delta debugging over the message sequence — each trial a fresh process — and saved as a trace
// that `conform replay` plays back (and, unless --no-verify, is checked to do so). The process is
// restarted only when it died, a problem was found, or the session reached kMaxSessionSteps (the
// step log ddmin works on must stay bounded; a graceful shutdown + EOF ends it, which exercises
// SHUT-08 as well).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "core/clock/clock.h"
#include "core/wire/channel.h"
#include "harness/runner/fuzz.h"
#include "harness/runner/fuzz_impl.h"
#include "harness/runner/trace_commands.h"
#include "reports/reporter.h"

namespace conform::runner {
namespace {

using Clock = std::chrono::steady_clock;
using fuzz::FuzzStep;
using fuzz::Problem;

// Steps per batch (before the probe): long enough for interleavings, short enough that a finding's
// batch is a small first candidate for minimisation.
constexpr std::size_t kMaxBatch = 12;
// A session is ended gracefully after this many steps (bounded step log; see the file comment).
constexpr std::size_t kMaxSessionSteps = 50'000;
// One batch in this many ends with plugin/shutdown + EOF (SHUT-08, FRAME-18 judged live too).
constexpr int kShutdownOneIn = 400;
// Minimisation candidates: the last batch, then the last few, then the whole session.
constexpr std::size_t kTailBatches = 8;

using fuzz::Found;
using fuzz::writeFile;

bool sameProblem(const Problem& want, const Problem& got) {
  if (want.kind != got.kind) return false;
  if (want.kind != Problem::Kind::Rule) return want.rule == got.rule;
  for (const auto& f : got.findings)
    if (f.rule_id == want.rule) return true;
  return false;
}

std::string stepsText(const std::vector<FuzzStep>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size(); ++i)
    out += fmt::format("{:>4}  {}{}\n", i, steps[i].label, steps[i].may_end ? "  [may end the connection]" : "");
  return out;
}

class Fuzzer {
 public:
  Fuzzer(const FuzzOptions& o, const protocol::Profile& p, std::ostream& out, std::ostream& err)
      : opt_(o), profile_(p), out_(out), err_(err), gen_(p, o.deadline_ms), target_(o.command, p, o.deadline_ms) {}

  int run() {
    seed_ = opt_.seed ? *opt_.seed : std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32);
    rng_.seed(seed_);
    out_ << fmt::format("conform fuzz: seed {} (rerun with --seed {})\n", seed_, seed_);
    out_.flush();
    std::error_code ec;
    std::filesystem::create_directories(opt_.out, ec);
    if (ec) {
      err_ << fmt::format("conform fuzz: cannot create {}: {}\n", opt_.out, ec.message());
      return kExitHarness;
    }
    if (!opt_.corpus.empty() && !loadCorpus()) return kExitHarness;

    started_ = Clock::now();
    const auto end = started_ + std::chrono::seconds(opt_.seconds);
    hs_ = gen_.handshake();
    bool have_target = false;
    while (Clock::now() < end && (opt_.runs == 0 || batches_ < opt_.runs) &&
           (opt_.max_findings == 0 || found_.size() < opt_.max_findings)) {
      if (!target_.alive()) {
        auto sr = target_.start(hs_);
        if (!sr.harness_error.empty() && !sr.problem) {
          err_ << fmt::format("conform fuzz: {}\n", sr.harness_error);
          return kExitHarness;
        }
        if (sr.info && !have_target) {
          gen_.setTarget(*sr.info);
          have_target = true;
          out_ << fmt::format("conform fuzz: target {}: {} tool(s), {} hook(s){}{}\n", sr.info->name, sr.info->tools.size(),
                              sr.info->hooks.size(), sr.info->subscribe_events ? ", events" : "", sr.info->subscribe_bus ? ", bus" : "");
        }
        if (sr.problem) {
          onProblem(*sr.problem, {hs_}, 0);
          target_.stop();
          if (!have_target) break;  // the handshake itself fails: nothing else can be fuzzed
          continue;
        }
      }
      std::vector<FuzzStep> batch;
      if (corpus_next_ < corpus_.size()) batch = corpus_[corpus_next_++];
      else batch = gen_.batch(rng_, kMaxBatch);
      const bool ends = !batch.empty() && batch.back().kind == FuzzStep::Kind::CloseStdin;
      if (!ends) batch.push_back(gen_.ping());
      if (!ends && (target_.sent().size() > kMaxSessionSteps || rng_() % kShutdownOneIn == 0))
        for (auto& s : gen_.shutdown(rng_)) batch.push_back(std::move(s));
      const std::size_t before = target_.sent().size();
      ++batches_;
      auto p = target_.run(batch);
      if (p) {
        onProblem(*p, target_.sent(), before);
        target_.stop();
      }
      progress();
    }
    target_.stop();
    const double secs = std::chrono::duration<double>(Clock::now() - started_).count();
    const auto& st = target_.stats();
    out_ << fmt::format("conform fuzz: {} batch(es), {} frame(s) sent, {} received, {} session(s) in {:.1f} s ({:.0f} msgs/s); {} finding(s)\n",
                        batches_, st.frames_sent, st.frames_received, st.sessions, secs, secs > 0 ? st.frames_sent / secs : 0.0,
                        found_.size());
    if (!writeOutputs(secs)) return kExitHarness;
    return found_.empty() ? kExitPass : kExitFindings;
  }

 private:
  bool loadCorpus() {
    std::error_code ec;
    std::vector<std::string> files;
    for (auto& e : std::filesystem::directory_iterator(opt_.corpus, ec))
      if (e.is_regular_file()) files.push_back(e.path().string());
    if (ec) {
      err_ << fmt::format("conform fuzz: cannot read corpus {}: {}\n", opt_.corpus, ec.message());
      return false;
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string e;
      auto steps = fuzz::Generator::fromTrace(f, &e);
      if (!e.empty()) {
        err_ << "conform fuzz: corpus " << e << "\n";
        return false;
      }
      if (!steps.empty()) corpus_.push_back(std::move(steps));
    }
    out_ << fmt::format("conform fuzz: {} corpus sequence(s) from {}\n", corpus_.size(), opt_.corpus);
    return true;
  }

  void progress() {
    if (opt_.quiet) return;
    const auto now = Clock::now();
    if (now - last_progress_ < std::chrono::seconds(10)) return;
    last_progress_ = now;
    const double secs = std::chrono::duration<double>(now - started_).count();
    out_ << fmt::format("conform fuzz: {:.0f} s: {} batches, {} frames sent, {} sessions, {} finding(s)\n", secs, batches_,
                        target_.stats().frames_sent, target_.stats().sessions, found_.size());
    out_.flush();
  }

  void onProblem(const Problem& p, const std::vector<FuzzStep>& session, std::size_t batch_start) {
    const std::string sig = p.signature();
    for (const auto& f : found_)
      if (f.problem.signature() == sig) return;  // known: one reproducer per signature
    Found f;
    f.problem = p;
    f.found_after_s = std::chrono::duration<double>(Clock::now() - started_).count();
    f.dir = (std::filesystem::path(opt_.out) / fmt::format("finding-{}", found_.size() + 1)).string();
    f.steps_before = session.size();
    out_ << fmt::format("conform fuzz: FINDING after {:.1f} s: {} {}: {}\n", f.found_after_s, fuzz::toString(p.kind), p.rule, p.message);
    out_.flush();
    std::error_code ec;
    std::filesystem::create_directories(f.dir, ec);
    writeFile(f.dir + "/session.ndjson", target_.traceText());

    // Minimise: first find a small candidate that reproduces on a fresh process.
    const auto deadline = Clock::now() + std::chrono::seconds(opt_.minimize_seconds);
    auto reproduces = [&](const std::vector<FuzzStep>& steps) {
      auto tr = fuzz::runTrial(opt_.command, profile_, opt_.deadline_ms, steps);
      return tr.problem && sameProblem(p, *tr.problem);
    };
    std::vector<std::vector<FuzzStep>> candidates;
    auto withHandshake = [&](std::size_t from) {
      std::vector<FuzzStep> c{session.front()};
      c.insert(c.end(), session.begin() + static_cast<std::ptrdiff_t>(std::max<std::size_t>(from, 1)), session.end());
      return c;
    };
    if (batch_start > 1) candidates.push_back(withHandshake(batch_start));
    // The last kTailBatches batches: each ends with a probe ping, so count pings from the end.
    std::size_t pings = 0, from = session.size();
    while (from > 1 && pings < kTailBatches) {
      --from;
      if (session[from].label == "probe ping") ++pings;
    }
    if (from > 1) candidates.push_back(withHandshake(from));
    candidates.push_back(session);
    std::vector<FuzzStep> best;
    for (auto& c : candidates) {
      if (Clock::now() >= deadline) break;
      ++f.trials;
      if (reproduces(c)) { best = c; break; }
    }
    if (!best.empty()) {
      f.reproduced = true;
      best = fuzz::ddmin(best, reproduces, deadline, &f.trials);
    } else {
      best = session;  // not reproduced on a fresh process (timing): keep the whole session
    }
    f.steps_after = best.size();
    auto tr = fuzz::runTrial(opt_.command, profile_, opt_.deadline_ms, best);
    f.reproducer = f.dir + "/repro.ndjson";
    writeFile(f.reproducer, tr.trace);
    writeFile(f.dir + "/steps.txt", stepsText(best));
    if (tr.problem && sameProblem(p, *tr.problem)) f.problem = *tr.problem;  // evidence lines point into repro.ndjson
    if (opt_.verify) {
      ReplayCommandOptions ro;
      ro.trace = f.reproducer;
      ro.command = opt_.command;
      ro.step_timeout_ms = opt_.deadline_ms;
      ro.lint = false;
      std::ostringstream rout, rerr;
      f.replay_ok = runReplay(ro, rout, rerr) == kExitPass;
      writeFile(f.dir + "/replay.txt", rout.str() + rerr.str());
    }
    out_ << fmt::format("conform fuzz:   minimised {} → {} step(s) in {} trial(s){}; reproducer {}{}\n", f.steps_before, f.steps_after,
                        f.trials, f.reproduced ? "" : " (NOT reproduced on a fresh process)", f.reproducer,
                        f.replay_ok ? (*f.replay_ok ? " (conform replay: reproduces)" : " (conform replay: diverges)") : "");
    out_.flush();
    found_.push_back(std::move(f));
  }

  reports::RunResult results(double secs) const {
    reports::RunResult run;
    run.command = "fuzz";
    run.target = fmt::format("{}", fmt::join(opt_.command, " "));
    run.profile = std::string(profile_.name());
    run.started_at = clock::formatRfc3339(clock::RealClock::instance().wallNow());
    run.duration_ms = secs * 1000.0;
    for (std::size_t i = 0; i < found_.size(); ++i) {
      const Found& f = found_[i];
      auto c = reports::newCase(fmt::format("fuzz-{}", i + 1), fmt::format("{} {}: {}", fuzz::toString(f.problem.kind), f.problem.rule, f.problem.message),
                                {f.problem.rule});
      c.trace_path = f.reproducer;
      if (f.problem.kind == Problem::Kind::Rule && !f.problem.findings.empty()) {
        c.findings = f.problem.findings;
      } else {
        c.findings.push_back(reports::makeFinding(f.problem.rule, reports::kBindsPlugin, f.problem.message,
                                                  f.problem.kind == Problem::Kind::Hang ? "an answer within the deadline" : "the plugin keeps serving",
                                                  fuzz::toString(f.problem.kind), {reports::Evidence{f.problem.trace_line, f.reproducer}}));
      }
      reports::finalize(c);
      run.cases.push_back(std::move(c));
    }
    if (found_.empty()) {
      auto c = reports::newCase("fuzz", "no finding", {});
      reports::finalize(c);
      run.cases.push_back(std::move(c));
    }
    return run;
  }

  bool writeOutputs(double secs) {
    const auto& st = target_.stats();
    fuzz::CampaignFigures fig;
    fig.command = opt_.command;
    fig.profile = std::string(profile_.version());
    fig.seed = seed_;
    fig.seconds = secs;
    fig.batches = batches_;
    fig.frames_sent = st.frames_sent;
    fig.frames_received = st.frames_received;
    fig.sessions = st.sessions;
    if (!fuzz::writeSummary(opt_.out, fig, found_, err_)) return false;
    const auto run = results(secs);
    struct { const char* name; const char* format; } files[] = {
        {"fuzz.json", "json"}, {"fuzz.junit.xml", "junit"}, {"fuzz.sarif", "sarif"}, {"fuzz.md", "markdown"}};
    for (const auto& rf : files) {
      const std::string path = opt_.out + "/" + rf.name;
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      auto rep = reports::makeReporter(rf.format, f);
      if (!f || !rep) {
        err_ << fmt::format("conform fuzz: cannot write {}\n", path);
        return false;
      }
      reports::replay(run, **rep);
    }
    return true;
  }

  const FuzzOptions& opt_;
  const protocol::Profile& profile_;
  std::ostream& out_;
  std::ostream& err_;
  fuzz::Generator gen_;
  fuzz::Target target_;
  fuzz::Rng rng_;
  std::uint64_t seed_ = 0;
  FuzzStep hs_;
  std::vector<std::vector<FuzzStep>> corpus_;
  std::size_t corpus_next_ = 0;
  std::uint64_t batches_ = 0;
  std::vector<Found> found_;
  Clock::time_point started_, last_progress_;
};

}  // namespace

int runFuzz(const FuzzOptions& opt, std::ostream& out, std::ostream& err) {
  if (opt.command.empty()) {
    err << "conform fuzz: no command given (usage: conform fuzz [options] -- CMD...)\n";
    return kExitHarness;
  }
  if (opt.role != "engine" && opt.role != "plugin") {
    err << "conform fuzz: unknown --role " << opt.role << " (engine: CMD is a plugin; plugin: CMD is an engine)\n";
    return kExitHarness;
  }
  const protocol::Profile* p = protocol::findProfile(opt.profile);
  if (!p) {
    err << "conform fuzz: unknown profile \"" << opt.profile << "\" (known: 0.0.6, 0.0.4)\n";
    return kExitHarness;
  }
  if (opt.deadline_ms == 0) {
    err << "conform fuzz: --deadline-ms must be positive\n";
    return kExitHarness;
  }
  wire::ignoreSigpipe();
  if (opt.role == "plugin") return runFuzzEngine(opt, *p, out, err);
  Fuzzer f(opt, *p, out, err);
  return f.run();
}

}  // namespace conform::runner

namespace conform::runner::fuzz {

bool writeFile(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  return static_cast<bool>(f);
}

bool writeSummary(const std::string& out_dir, const CampaignFigures& fig, const std::vector<Found>& found,
                  std::ostream& err) {
  rapidjson::StringBuffer sb;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(sb);
  w.SetIndent(' ', 2);
  auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("command"); w.StartArray(); for (const auto& c : fig.command) str(c); w.EndArray();
  if (!fig.role.empty()) { w.Key("role"); str(fig.role); }
  w.Key("profile"); str(fig.profile);
  w.Key("seed"); w.Uint64(fig.seed);
  w.Key("seconds"); w.Double(fig.seconds);
  w.Key("batches"); w.Uint64(fig.batches);
  w.Key("frames_sent"); w.Uint64(fig.frames_sent);
  w.Key("frames_received"); w.Uint64(fig.frames_received);
  w.Key("sessions"); w.Uint64(fig.sessions);
  w.Key("messages_per_second"); w.Double(fig.seconds > 0 ? static_cast<double>(fig.frames_sent) / fig.seconds : 0.0);
  w.Key("findings");
  w.StartArray();
  for (const Found& f : found) {
    w.StartObject();
    w.Key("kind"); str(toString(f.problem.kind));
    w.Key("rule"); str(f.problem.rule);
    w.Key("message"); str(f.problem.message);
    w.Key("found_after_s"); w.Double(f.found_after_s);
    w.Key("dir"); str(f.dir);
    w.Key("reproducer"); str(f.reproducer);
    w.Key("steps_before"); w.Uint64(f.steps_before);
    w.Key("steps_after"); w.Uint64(f.steps_after);
    w.Key("trials"); w.Uint64(f.trials);
    w.Key("reproduced"); w.Bool(f.reproduced);
    if (fig.role.empty() || f.replay_ok) {  // role plugin does not replay its reproducer
      w.Key("replay_reproduces");
      if (f.replay_ok) w.Bool(*f.replay_ok); else w.Null();
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  if (!writeFile(out_dir + "/summary.json", std::string(sb.GetString()) + "\n")) {
    err << fmt::format("conform fuzz: cannot write {}/summary.json\n", out_dir);
    return false;
  }
  return true;
}

}  // namespace conform::runner::fuzz
