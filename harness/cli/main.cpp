// harness/cli/main.cpp — the `conform` executable: command-line parsing only (CLI11 lives in this
// one translation unit because it costs 10–16 s to compile; DEPENDENCIES.md). Each subcommand is
// registered by one small add<Name>Command() function listed in kCommands; the work itself lives in
// the library so tests can call it without a process.
//
// Exit codes (ARCHITECTURE.md "Verdicts"): 0 ok, 1 a conformance failure (later commands), 2 usage
// or harness error. CLI11 parse errors always map to 2, never to a failure count.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "core/protocol/profile.h"
#include "harness/runner/check.h"
#include "harness/runner/fuzz.h"
#include "harness/runner/probe.h"
#include "harness/runner/trace_commands.h"

namespace {

// Repeatable options (--only A --only B) take exactly one value per occurrence. Without
// allow_extra_args(false) CLI11 lets a vector option swallow following words, and a vector option
// written right before `--` then breaks the command after it (`--only X -- plugin --fault F`).

constexpr const char* kConformVersion = "0.1.0";  // keep equal to project(conform VERSION …) in CMakeLists.txt
constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

using conform::protocol::Profile;

// ---------------------------------------------------------------------------------------------
// conform profiles [--profile V] [--json]
// ---------------------------------------------------------------------------------------------
struct ProfilesOptions {
  std::string profile;
  bool as_json = false;
};

void printProfileText(const Profile& p) {
  fmt::print("profile {} ({}): {} methods\n", p.version(), p.name(), p.methods().size());
  fmt::print("  {:<45} {:<5} {:<12} {:<38} {:<38} {}\n", "method", "dir", "kind", "params", "result", "since");
  for (const auto& m : p.methods())
    fmt::print("  {:<45} {:<5} {:<12} {:<38} {:<38} {}\n", m.name, toString(m.direction), toString(m.kind),
               m.params_type, m.result_type.empty() ? "-" : m.result_type, m.since);
  auto limits = p.limits();
  fmt::print("  limits and timers ({}):\n", limits.size());
  for (const auto& l : limits)
    fmt::print("    {:<34} {:>10} {:<10} {:<9} {}\n", l.name, l.value, l.unit, l.rule, l.section);
}

void addProfileJson(rapidjson::PrettyWriter<rapidjson::StringBuffer>& w, const Profile& p) {
  auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("version"); str(p.version());
  w.Key("name"); str(p.name());
  w.Key("methods");
  w.StartArray();
  for (const auto& m : p.methods()) {
    w.StartObject();
    w.Key("name"); str(m.name);
    w.Key("direction"); str(toString(m.direction));
    w.Key("kind"); str(toString(m.kind));
    w.Key("params"); str(m.params_type);
    w.Key("result");
    if (m.result_type.empty()) w.Null(); else str(m.result_type);
    w.Key("since"); str(m.since);
    w.EndObject();
  }
  w.EndArray();
  w.Key("limits");
  w.StartArray();
  for (const auto& l : p.limits()) {
    w.StartObject();
    w.Key("name"); str(l.name);
    w.Key("value"); w.Uint64(l.value);
    w.Key("unit"); str(l.unit);
    w.Key("rule"); str(l.rule);
    w.Key("section"); str(l.section);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

int runProfiles(const ProfilesOptions& opt) {
  std::vector<const Profile*> selected;
  if (opt.profile.empty()) {
    for (const Profile* p : conform::protocol::allProfiles()) selected.push_back(p);
  } else if (const Profile* p = conform::protocol::findProfile(opt.profile)) {
    selected.push_back(p);
  } else {
    fmt::print(stderr, "conform profiles: unknown profile \"{}\" (known: 0.0.6, 0.0.4)\n", opt.profile);
    return kExitUsage;
  }
  if (opt.as_json) {
    rapidjson::StringBuffer sb;
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(sb);
    w.SetIndent(' ', 2);
    w.StartArray();
    for (const Profile* p : selected) addProfileJson(w, *p);
    w.EndArray();
    fmt::print("{}\n", sb.GetString());
  } else {
    for (std::size_t i = 0; i < selected.size(); ++i) {
      if (i) fmt::print("\n");
      printProfileText(*selected[i]);
    }
  }
  return kExitOk;
}

void addProfilesCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ProfilesOptions>();
  CLI::App* cmd = app.add_subcommand("profiles", "List protocol profiles: methods, limits and timers");
  cmd->add_option("--profile", opt->profile, "Only this profile (0.0.6, 0.0.4, v006, v004)");
  cmd->add_flag("--json", opt->as_json, "Machine-readable output");
  cmd->callback([opt, &exit_code] { exit_code = runProfiles(*opt); });
}

// ---------------------------------------------------------------------------------------------
// conform lint / record / replay (harness/runner/trace_commands.h does the work)
// ---------------------------------------------------------------------------------------------
void addLintCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<conform::runner::LintCommandOptions>();
  CLI::App* cmd = app.add_subcommand("lint", "Check a recorded trace offline against every rule monitor");
  cmd->add_option("trace", opt->trace, "Trace file (NDJSON, docs/trace-format.md); - for stdin")->required();
  cmd->add_option("--profile", opt->profile, "Judge by this profile (default: the trace header's)");
  cmd->add_option("--format", opt->format, "stdout format: console, json, junit, sarif, markdown");
  cmd->add_option("--report-dir", opt->report_dir, "Also write lint.json, lint.junit.xml, lint.sarif, lint.md here");
  cmd->add_flag("--stop-on-bad-line", opt->stop_on_bad_line, "Stop at the first unreadable line");
  cmd->callback([opt, &exit_code] { exit_code = conform::runner::runLint(*opt, std::cout, std::cerr); });
}

void addRecordCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<conform::runner::RecordCommandOptions>();
  CLI::App* cmd = app.add_subcommand("record", "Transparent tap: run CMD, copy stdin/stdout unchanged, write a trace");
  cmd->add_option("--out", opt->out, "Trace file to write")->required();
  cmd->add_option("--profile", opt->profile, "Profile written to the trace header (default 0.0.6)");
  cmd->add_option("command", opt->command, "-- CMD [ARGS...]: the plugin to run")->required();
  cmd->callback([opt, &exit_code] { exit_code = conform::runner::runRecord(*opt); });
}

void addReplayCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<conform::runner::ReplayCommandOptions>();
  CLI::App* cmd = app.add_subcommand("replay", "Play one side of a trace into CMD and compare what comes back");
  cmd->add_option("trace", opt->trace, "Recorded trace")->required();
  cmd->add_option("--role", opt->role, "Side we play: engine (default; CMD is a plugin) or plugin")
      ->check(CLI::IsMember({"engine", "plugin"}));
  cmd->add_option("--timing", opt->timing, "recorded: keep the recorded gaps; fast (default): next step when answered")
      ->check(CLI::IsMember({"recorded", "fast"}));
  cmd->add_option("--out", opt->out, "Write the replayed conversation as a trace");
  cmd->add_option("--profile", opt->profile, "Profile (default: the trace header's)");
  cmd->add_option("--step-timeout-ms", opt->step_timeout_ms, "fast timing: per-step wait for the recorded answers");
  cmd->add_flag("!--no-lint", opt->lint, "Do not run the monitors over the replayed conversation");
  cmd->add_option("command", opt->command, "-- CMD [ARGS...]: the process to replay into")->required();
  cmd->callback([opt, &exit_code] { exit_code = conform::runner::runReplay(*opt, std::cout, std::cerr); });
}

// ---------------------------------------------------------------------------------------------
// conform check / conform run (harness/runner/check.h does the work; docs/check.md, docs/dsl.md)
// ---------------------------------------------------------------------------------------------
// Options shared by `check` and `check-engine`: selection, listing, baselines, reports, parallelism.
void addCatalogueOptions(CLI::App& cmd, conform::runner::CheckOptions& opt) {
  cmd.add_option("--only", opt.only, "Run only cases whose id or area matches a glob (repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--skip", opt.skip, "Skip cases whose id or area matches a glob (repeatable)")
      ->allow_extra_args(false);
  cmd.add_flag("--list", opt.list, "List the selected cases (rule, level, title) and exit");
  cmd.add_flag("--coverage", opt.coverage, "Print per-area rule coverage and exit");
  cmd.add_option("--baseline", opt.baseline, "JSON file of known failures (docs/check.md)");
  cmd.add_option("--report-dir", opt.report_dir, "Folder for every report format and case traces");
  cmd.add_option("--seed", opt.seed, "Shuffle the run order with this seed (0: catalogue order)");
  cmd.add_option("--jobs,-j", opt.jobs, "Cases run in parallel (default: hardware threads)");
  cmd.add_option("--scenarios", opt.scenarios, "Use these .scn files/folders instead of the built-in catalogue")
      ->allow_extra_args(false);
  cmd.add_flag("--verbose,-v", opt.verbose, "Also list passing cases");
  cmd.add_flag("--strict", opt.strict,
               "Strict mode: Lvl I ([impl]) and C ([chosen]) rules binding on the target fail instead of NON-STRICT "
               "(docs/check.md)");
}

void addCheckCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<conform::runner::CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Run the plugin conformance catalogue against a plugin command");
  cmd->add_option("--profile", opt->profile,
                  "Profile: 0.0.6 (default), 0.0.4, nanopi-0.12 (a .wasm component) or cognipeer-0.10 (a JS module)");
  cmd->add_option("--grant", opt->grants, "nanopi-0.12: event names granted by the config's `events` (default: per case)");
  cmd->add_flag("--allow-network", opt->allow_network, "nanopi-0.12: the extension's allow_network flag");
  cmd->add_option("--host", opt->host, "cognipeer-0.10: reference (default) or real (@cognipeer/agent-sdk >= 0.10 beside the plugin)")
      ->check(CLI::IsMember({"reference", "real"}));
  cmd->add_option("--guest-runner", opt->guest_dir, "nanopi / cognipeer: the Node guest runner folder (default: built in)");
  cmd->add_option("--name", opt->name, "Configured plugin name it must report (default: basename of CMD)");
  addCatalogueOptions(*cmd, *opt);
  cmd->add_option("command", opt->command, "-- CMD [ARGS...]: the plugin under test");
  cmd->callback([opt, &exit_code] { exit_code = conform::runner::runCheck(*opt, std::cout, std::cerr); });
}

void addRunCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<conform::runner::RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run one scenario file (.scn) against a plugin command");
  cmd->add_option("file", opt->file, "Scenario file")->required();
  cmd->add_flag("--dump-plan", opt->dump_plan, "Print the compiled steps and exit");
  cmd->add_option("--profile", opt->profile, "Protocol profile: 0.0.6 (default) or 0.0.4");
  cmd->add_option("--name", opt->name, "Configured plugin name (default: basename of CMD)");
  cmd->add_option("--report-dir", opt->report_dir, "Also write reports and traces here");
  cmd->add_flag("--strict", opt->strict, "Strict mode, as in `conform check --strict`");
  cmd->add_option("command", opt->command, "-- CMD [ARGS...]: the plugin under test");
  cmd->callback([opt, &exit_code] { exit_code = conform::runner::runScenarioFile(*opt, std::cout, std::cerr); });
}

// ---------------------------------------------------------------------------------------------
// conform check-engine / conform probe (role plugin; docs/check-engine.md)
// ---------------------------------------------------------------------------------------------
void addCheckEngineCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<conform::runner::CheckOptions>();
  opt->role = "plugin";
  CLI::App* cmd = app.add_subcommand("check-engine", "Run the engine conformance catalogue against an engine command");
  cmd->add_option("--driver", opt->driver, "How the engine is driven: stdio (default; virtual clock) or stdio-real-clock");
  cmd->add_option("--profile", opt->profile, "Protocol profile: 0.0.6 (default) or 0.0.4");
  addCatalogueOptions(*cmd, *opt);
  cmd->add_option("command", opt->command, "-- CMD [ARGS...]: the engine under test (or its adapter)");
  cmd->callback([opt, &exit_code] { exit_code = conform::runner::runCheck(*opt, std::cout, std::cerr); });
}

// Hidden: what an engine under test spawns as its plugin in check-engine (harness/runner/probe.h).
void addProbeCommand(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("probe", "Relay for check-engine (internal)");
  cmd->group("");  // hidden from --help
  cmd->add_option("--connect", *path, "Unix socket of the check-engine runner")->required();
  cmd->callback([path, &exit_code] { exit_code = conform::runner::runProbe(*path); });
}

// ---------------------------------------------------------------------------------------------
// conform fuzz (harness/runner/fuzz.h does the work; docs/fuzzing-live.md)
// ---------------------------------------------------------------------------------------------
void addFuzzCommand(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<conform::runner::FuzzOptions>();
  auto seed = std::make_shared<std::uint64_t>(0);
  CLI::App* cmd = app.add_subcommand("fuzz", "Fuzz a live plugin (or, with --role plugin, an engine): generated and mutated conversations, judged by the monitors");
  cmd->add_option("--seconds", opt->seconds, "Fuzzing budget in seconds (default 60; minimisation extra)");
  cmd->add_option("--runs", opt->runs, "Stop after this many batches (default: no limit)");
  CLI::Option* seed_opt = cmd->add_option("--seed", *seed, "Random seed (default: random, printed at the start)");
  cmd->add_option("--corpus", opt->corpus, "Folder of traces whose engine frames are played first");
  cmd->add_option("--out", opt->out, "Folder for findings, reproducers, summary.json and reports (default fuzz-out)");
  cmd->add_option("--role", opt->role, "Side we play: engine (default; CMD is a plugin) or plugin (CMD is an engine, started as check-engine does)")
      ->check(CLI::IsMember({"engine", "plugin"}));
  cmd->add_option("--profile", opt->profile, "Protocol profile: 0.0.6 (default) or 0.0.4");
  cmd->add_option("--deadline-ms", opt->deadline_ms, "Answer deadline per request (default 2000: HOOK-06, PING-03)");
  cmd->add_option("--minimize-seconds", opt->minimize_seconds, "Delta-debugging budget per finding (default 60)");
  cmd->add_option("--max-findings", opt->max_findings, "Stop after this many distinct findings (default: budget)");
  cmd->add_flag("!--no-verify", opt->verify, "Do not check reproducers with conform replay");
  cmd->add_flag("--quiet,-q", opt->quiet, "No progress lines");
  cmd->add_option("command", opt->command, "-- CMD [ARGS...]: the plugin under test")->required();
  cmd->callback([opt, seed, seed_opt, &exit_code] {
    if (seed_opt->count() > 0) opt->seed = *seed;
    exit_code = conform::runner::runFuzz(*opt, std::cout, std::cerr);
  });
}

// Later subcommands (check, check-engine, fuzz, replay, lint …) add one line here.
using CommandRegistrar = void (*)(CLI::App&, int& exit_code);
constexpr CommandRegistrar kCommands[] = {addProfilesCommand, addLintCommand, addRecordCommand, addReplayCommand, addCheckCommand, addRunCommand, addCheckEngineCommand, addProbeCommand, addFuzzCommand};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"conform — conformance and fuzzing toolkit for the cookie-agent extension protocol"};
  app.set_version_flag("--version", std::string("conform ") + kConformVersion + " (protocol profiles 0.0.6, 0.0.4)");
  app.require_subcommand(0, 1);
  int exit_code = kExitOk;
  for (CommandRegistrar add : kCommands) add(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help/version/error text
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
    return kExitUsage;
  }
  return exit_code;
}
