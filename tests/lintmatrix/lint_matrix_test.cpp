// Issue 6 done-criterion: "A trace recorded between conform-engine and conform-plugin lints clean;
// the same session with conform-plugin run under each fault that shows on the wire lints dirty on
// that fault's rule (a test runs the matrix and prints the catch rate)".
//
// For the conforming plugin and for every fault of `conform-plugin --list-faults`, the engine is
// configured to start the plugin through the transparent tap `conform record --out T -- conform-plugin
// --name lm [--fault F]` (docs/trace-format.md). The test drives one rich session over the driver
// protocol (docs/driver-protocol.md) of `conform-engine --virtual-clock --driver stdio`: status until
// connected, a session, events of each class, a call per declared tool, a run with a tool call (all
// hooks of a turn), compact/fork/revert (the session hooks), a ping, and an orderly shutdown. Then
// `conform lint T` is run and its `TRACE:LINE: RULE-ID (LEVEL) message` lines are parsed.
//
// Waits: every driver request has a real-time deadline; while an answer is outstanding the virtual
// clock is advanced in small steps (a hook, ping or shutdown grace that runs on the engine's virtual
// clock then ends). Fault timers that run on the plugin's real clock (`settle_ms` of the fault table)
// are waited for by draining the driver channel until a deadline, never by a sleep. Engines are
// spawned with core/wire spawnProcess: Channel::close() kills and reaps the engine's process group.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/json/json.h"
#include "core/wire/channel.h"
#include "mock_plugin/faults.h"

using namespace conform;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kStep{15000};        // bound of one driver answer
constexpr milliseconds kAdvanceAfter{400};  // real time without an answer before the clock moves
constexpr int kAdvanceMs = 250;             // virtual ms per advance
constexpr const char* kPluginName = "lm";

std::string bin(const char* name) { return std::string(CONFORM_BIN_DIR) + "/" + name; }

// Faults that cannot show in a trace of this session (process-level faults, or faults whose rule
// is the engine's reaction and whose plugin side is legal on the wire). They are not run, and count
// neither in the catch rate nor in the must-catch set.
const std::map<std::string, std::string>& excluded() {
  static const std::map<std::string, std::string> k = {
      {"crash_after_initialize",
       "process-level: the trace shows only an exit by SIGABRT; LIFE-03 is the engine's containment "
       "(judged by tests/engine_e2e and check-engine)"},
      {"crash_during_tool",
       "process-level: the trace shows only an exit by SIGABRT during a call; TOOL-15 judges how the "
       "engine ends the call (scenario)"},
      {"ignores_shutdown",
       "process-level: the engine SIGKILLs the tap's process group at the end of the grace, so the trace "
       "ends without an exit event; proved by spawning (tests/plugin/e2e_test.cpp)"},
      {"slow_hook",
       "HOOK-06 bounds the engine's wait (interception_timeout_ms on the engine's virtual clock); a late "
       "answer is legal on the wire"},
      {"handshake_error",
       "a plugin may decline the handshake with an error response (an answer, RPC-08); INIT-19 binds the "
       "engine's reaction, which lint judges (after the refusal only plugin/shutdown may follow) and which "
       "a conforming engine gives nothing to report about"},
      {"never_reads_stdin",
       "a plugin that stops reading writes nothing wrong; EVT-17 judges the engine's queue (scenario "
       "EVT-14 e2e), and the stall holds the session 30 s"},
  };
  return k;
}

// The rule lint names on the PLUGIN's side where the fault table's rule binds only the engine (the
// table names "the RULES.md ID it breaks (or whose enforcement it exercises)", mock_plugin/faults.h;
// check-engine uses the latter) and RULES.md has a distinct rule for the plugin's frame. A fault is
// caught when lint names either rule. Decided per RULES.md:
const std::map<std::string, std::pair<std::string, std::string>>& pluginSideRule() {
  static const std::map<std::string, std::pair<std::string, std::string>> k = {
      {"version_not_string",
       {"INIT-10", "INIT-12 (I, Binds E) is the engine's type check; the plugin breaks INIT-10 (M, P): "
                   "it reports exactly \"0.0.6\""}},
      {"non_utf8_stdout",
       {"FRAME-01", "FRAME-04 (Binds E) is the engine's fatal reaction; the plugin breaks FRAME-01 (M, E,P): "
                    "every line is one JSON object"}},
      {"emit_missing_context",
       {"EMIT-01", "EMIT-22 (I, Binds E) is the engine's fatal decode; the plugin breaks EMIT-01 (M, P): "
                   "closed params {session_id, context_id, name, payload}"}},
      {"emit_unknown_token",
       {"EMIT-04", "EMIT-13 (Binds E) routes the diagnostic, which is not on the wire; the token itself "
                   "breaks EMIT-04 (valid only for the plugin it was delivered to)"}},
      {"bad_hook_result",
       {"HOOK-17", "HOOK-17 states the tool_before_call result {action: allow|block, …}; lint names the "
                   "per-hook shape rule (HOOK-13 is the generic closed-shape rule, named for hooks whose "
                   "result has no rule of its own, e.g. hook_extra_member)"}},
      {"send_before_register",
       {"PROD-06", "PROD-14 (Binds E) is the engine's rejection; on the wire this fault is the same frame as "
                   "stale_producer_id — a producer_id no register answer of this connection returned — "
                   "which breaks PROD-06 (M, P)"}},
  };
  return k;
}

// Faults that show on the wire but that `conform lint` does not flag on their rule: counted as
// misses in the catch rate, listed, and not asserted (a newly caught one is reported so the list
// can shrink). Each is justified in docs/monitors.md.
const std::map<std::string, std::string>& knownMisses() {
  static const std::map<std::string, std::string> k = {
      {"name_mismatch",
       "INIT-13 (the configured name lives in the engine's configuration, not on the wire; a tap "
       "cannot know it)"},
  };
  return k;
}

struct FaultRow {
  std::string name, rule, description;
};

struct Finding {
  std::string rule, level, message;
  int line = 0;
};

struct RunResult {
  std::string fault;  // "" = conforming
  std::string rule;
  std::string trace;
  std::string plugin_state;
  int lint_exit = -1;
  std::vector<Finding> findings;
  std::vector<std::string> problems;  // harness-side troubles (no answer, spawn failure, …)
  std::string lint_output;
  double seconds = 0;
};

// Runs a shell command with popen under coreutils `timeout` (the deadline), returning its stdout
// and exit code.
std::pair<std::string, int> runCommand(const std::string& cmd, int timeout_s) {
  std::string full = "timeout -k 5 " + std::to_string(timeout_s) + " " + cmd + " 2>&1";
  std::string out;
  FILE* p = ::popen(full.c_str(), "r");
  if (!p) return {"popen failed", -1};
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return {out, code};
}

// The reference plugin's faults and engine stimuli (both change what is on the wire). Fixture
// faults (`[--fixture sdk]`) need the SDK fixture and break SDK API rules: not this matrix.
std::vector<FaultRow> listFaults() {
  std::vector<FaultRow> rows;
  for (const char* flag : {" --list-faults", " --list-stimuli"}) {
    auto [out, code] = runCommand(bin("conform-plugin") + flag, 30);
    if (code != 0) return {};
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("[--fixture sdk]") != std::string::npos) continue;
      std::istringstream ls(line);
      FaultRow r;
      if (!(ls >> r.name >> r.rule)) continue;
      std::getline(ls, r.description);
      r.description.erase(0, r.description.find_first_not_of(' '));
      rows.push_back(r);
    }
  }
  return rows;
}

std::string jsonString(const std::string& s) {
  json::Document d;
  d.SetString(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), d.GetAllocator());
  return json::compact(d);
}

std::string writeConfig(const std::string& dir, const std::string& trace, const std::string& fault) {
  std::string path = dir + "/engine.json";
  std::string args = "[\"record\",\"--out\"," + jsonString(trace) + ",\"--\"," +
                     jsonString(bin("conform-plugin")) + ",\"--name\",\"" + kPluginName + "\"";
  if (!fault.empty()) args += ",\"--fault\"," + jsonString(fault);
  args += "]";
  std::ofstream f(path);
  f << R"({"protocol_version":"0.0.6","plugins":{")" << kPluginName << R"(":{"command":)"
    << jsonString(bin("conform")) << R"(,"args":)" << args
    << R"(,"producer_messaging":true}},"producer_handler":true,)"
    << R"("permissions":{"plugin":{"*":"allow"}},"approve_asks":true})";
  return path;
}

// One engine under the driver protocol. Never uses Catch assertions (it runs on worker threads):
// troubles are collected in `problems`.
class Session {
 public:
  Session(const std::string& config, std::vector<std::string>& problems) : problems_(problems) {
    wire::SpawnOptions o;
    o.program = bin("conform-engine");
    o.args = {"--config", config, "--virtual-clock", "--driver", "stdio"};
    wire::SpawnError err;
    ch_ = wire::spawnProcess(reactor_, o, &err);
    if (!ch_) problems_.push_back("spawn conform-engine failed: " + err.message);
  }
  ~Session() { finish(); }
  bool ok() const { return ch_ != nullptr && !dead_; }

  // One driver request. While no answer has come for kAdvanceAfter, the virtual clock is advanced
  // (when `advance`), so engine timers (hook, ping, shutdown grace) end. Returns the result, or a
  // null document on an error answer or no answer by the deadline.
  json::Document call(const std::string& method, const std::string& params = "{}", bool advance = false,
                      milliseconds bound = kStep) {
    json::Document out;
    if (!ok()) return out;
    int id = next_id_++;
    ch_->writeFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
                    R"(","params":)" + params + "}");
    const auto deadline = Clock::now() + bound;
    auto next_advance = Clock::now() + kAdvanceAfter;
    while (Clock::now() < deadline) {
      auto wait_until = advance ? std::min(deadline, next_advance) : deadline;
      auto ev = ch_->next(wait_until);
      if (!ev) {
        if (advance && Clock::now() >= next_advance) {
          ch_->writeFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(next_id_++) +
                          R"(,"method":"clock.advance","params":{"ms":)" + std::to_string(kAdvanceMs) + "}}");
          next_advance = Clock::now() + kAdvanceAfter;
        }
        continue;
      }
      using K = wire::ChannelEvent::Kind;
      if (ev->kind == K::Exited || ev->kind == K::Eof) {
        problems_.push_back("engine ended while waiting for " + method);
        dead_ = true;
        return out;
      }
      if (ev->kind != K::Frame) continue;
      auto p = json::parse(ev->frame.bytes);
      if (!p) continue;
      const json::Value* fid = json::member(p->doc, "id");
      if (!fid || !fid->IsInt() || fid->GetInt() != id) continue;
      if (const json::Value* r = json::member(p->doc, "result")) out.CopyFrom(*r, out.GetAllocator());
      else problems_.push_back(method + " answered " + json::compact(p->doc));
      return out;
    }
    problems_.push_back("no answer to " + method + " within " + std::to_string(bound.count()) + " ms");
    return out;
  }

  // Waits (a deadline, not a sleep) while letting the engine and its plugin run.
  void settle(milliseconds d) {
    if (!ok()) return;
    const auto deadline = Clock::now() + d;
    while (Clock::now() < deadline) {
      auto ev = ch_->next(deadline);
      if (ev && (ev->kind == wire::ChannelEvent::Kind::Exited || ev->kind == wire::ChannelEvent::Kind::Eof)) {
        dead_ = true;
        return;
      }
    }
  }

  // Orderly end: engine.shutdown (advancing the clock through the plugin's grace), stdin EOF, a
  // bounded wait for the engine's exit, then the kill + reap of Channel::close().
  void finish() {
    if (!ch_) return;
    if (!dead_) {
      call("engine.shutdown", R"({"wait":true})", true, milliseconds(20000));
      ch_->closeWrite();
      const auto deadline = Clock::now() + kStep;
      while (ch_->running() && Clock::now() < deadline)
        if (!ch_->next(deadline)) break;
      if (ch_->running()) problems_.push_back("engine still running after shutdown: killed");
    }
    ch_->close();
    ch_.reset();
  }

 private:
  wire::Reactor reactor_;
  std::unique_ptr<wire::Channel> ch_;
  std::vector<std::string>& problems_;
  int next_id_ = 1;
  bool dead_ = false;
};

std::string str(const json::Value& v, const char* k) {
  if (!v.IsObject()) return "";
  auto s = json::stringMember(v, k);
  return s ? std::string(*s) : std::string();
}

std::string toolArgs(const std::string& tool) {
  if (tool == "echo") return R"({"text":"matrix"})";
  if (tool == "report") return R"({"path":"docs/a.txt"})";
  if (tool == "publish") return R"({"name":"matrix.published","payload":{"n":1}})";
  return "{}";
}

// Drives the rich session, then lints the trace.
RunResult runOne(const std::string& fault, const std::string& rule, const std::string& root) {
  RunResult r;
  r.fault = fault;
  r.rule = rule;
  const auto started = Clock::now();
  std::string dir = root + "/" + (fault.empty() ? std::string("conforming") : fault);
  std::filesystem::create_directories(dir);
  r.trace = dir + "/trace.ndjson";
  std::string config = writeConfig(dir, r.trace, fault);
  int settle_ms = 0;
  if (!fault.empty())
    if (const plugin::Fault* f = plugin::findFault(fault)) settle_ms = f->settle_ms;
  {
    Session s(config, r.problems);
    const std::string plugin = std::string(R"({"plugin":")") + kPluginName + "\"}";
    // 1. status until the handshake is decided
    json::Document st;
    const auto deadline = Clock::now() + kStep;
    while (s.ok() && Clock::now() < deadline) {
      st = s.call("plugin.status", plugin);
      std::string state = str(st, "state");
      if (!state.empty() && state != "connecting") break;
    }
    r.plugin_state = str(st, "state");
    if (r.plugin_state == "connected") {
      std::vector<std::string> tools;
      if (const json::Value* t = json::member(st, "tools"); t && t->IsArray())
        for (auto& x : t->GetArray())
          if (x.IsString()) tools.emplace_back(x.GetString());
      // 2. a session and events of each class (> 40 ordinary ones for the emit quota)
      std::string sid = str(s.call("session.create"), "session_id");
      std::string sp = R"({"session_id":")" + sid + "\"";
      s.call("event.produce", sp + R"(,"class":"ordinary","count":45})");
      s.call("event.produce", sp + R"(,"class":"chunk","count":3})");
      s.call("event.append", sp + R"(,"event":{"type":"note","text":"matrix"}})");
      s.call("event.produce", sp + R"(,"class":"terminal","count":1})");
      // 3. one call per declared tool, each waited for
      for (auto& tool : tools)
        s.call("tool.call", sp + R"(,"tool":")" + tool + R"(","arguments":)" + toolArgs(tool) + R"(,"wait":true})",
               true);
      // 4. a run with a tool call: the turn's hooks; then the session hooks
      std::string run_tool = tools.empty() ? std::string() : tools.front();
      std::string turns = R"([{"deltas":["calling ","a tool"],"reasoning":"think")";
      if (!run_tool.empty())
        turns += R"(,"tool_calls":[{"tool":")" + run_tool + R"(","arguments":)" + toolArgs(run_tool) + "}]";
      turns += "}]";
      s.call("run.start", sp + R"(,"input":"hello","wait":true,"turns":)" + turns + "}", true);
      s.call("compact", sp + R"(,"instructions":"focus"})", true);
      s.call("fork", sp + R"(,"through_seq":1})", true);
      s.call("revert", sp + R"(,"through_seq":1})", true);
      // 5. a ping (advancing the clock if the plugin never answers)
      s.call("plugin.ping", std::string(R"({"plugin":")") + kPluginName + R"(","wait":true})", true);
      // 6. the fault's own timers run on the plugin's real clock
      if (settle_ms > 0) s.settle(milliseconds(settle_ms));
      s.call("diagnostics.flush");
      s.call("plugin.ping", std::string(R"({"plugin":")") + kPluginName + R"(","wait":true})", true);
    }
    s.finish();
  }
  // 7. lint the trace
  auto [out, code] = runCommand(bin("conform") + " lint " + r.trace, 60);
  r.lint_output = out;
  r.lint_exit = code;
  static const std::regex kLine(R"(^(.*):(\d+): ([A-Z]+-\d+) \((MUST|SHOULD|MAY)\) (.*)$)");
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kLine) && m[1].str() == r.trace)
      r.findings.push_back({m[3].str(), m[4].str(), m[5].str(), std::stoi(m[2].str())});
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return r;
}

bool names(const RunResult& r, const std::string& rule) {
  return std::any_of(r.findings.begin(), r.findings.end(), [&](const Finding& f) { return f.rule == rule; });
}

std::string findingRules(const RunResult& r) {
  std::set<std::string> rules;
  for (auto& f : r.findings) rules.insert(f.rule);
  std::string s;
  for (auto& x : rules) s += (s.empty() ? "" : ",") + x;
  return s.empty() ? "-" : s;
}

}  // namespace

TEST_CASE("lint matrix: the engine/plugin trace lints clean, and each plugin fault that shows on the wire lints dirty on its rule",
          "[lintmatrix][slow]") {
  const std::vector<FaultRow> faults = listFaults();
  REQUIRE(faults.size() >= 60);
  // Every name in the two tables is a fault the plugin still lists.
  auto listed = [&](const std::string& name) {
    return std::any_of(faults.begin(), faults.end(), [&](const FaultRow& f) { return f.name == name; });
  };
  for (auto& kv : excluded()) CHECK(listed(kv.first));
  for (auto& kv : knownMisses()) CHECK(listed(kv.first));
  for (auto& kv : pluginSideRule()) CHECK(listed(kv.first));

  namespace fs = std::filesystem;
  const std::string root = (fs::temp_directory_path() / ("conform-lintmatrix-" + std::to_string(::getpid()))).string();
  fs::remove_all(root);
  fs::create_directories(root);

  // Jobs: the conforming run, then every fault; the slow ones (settle/linger) first.
  std::vector<FaultRow> jobs;
  jobs.push_back({"", "", "conforming"});
  for (auto& f : faults)
    if (!excluded().count(f.name)) jobs.push_back(f);
  std::stable_sort(jobs.begin() + 1, jobs.end(), [](const FaultRow& a, const FaultRow& b) {
    auto weight = [](const FaultRow& f) {
      const plugin::Fault* x = plugin::findFault(f.name);
      return x ? x->settle_ms + x->linger_ms : 0;
    };
    return weight(a) > weight(b);
  });

  std::vector<RunResult> results(jobs.size());
  std::atomic<std::size_t> next{0};
  const unsigned workers = std::min<unsigned>(8, std::max(2u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();)
        results[i] = runOne(jobs[i].name, jobs[i].rule, root);
    });
  for (auto& t : pool) t.join();

  // The conforming trace lints clean.
  const RunResult& clean = results[0];
  INFO("conforming trace " << clean.trace << "\n" << clean.lint_output);
  for (auto& p : clean.problems) WARN("conforming run: " << p);
  CHECK(clean.plugin_state == "connected");
  CHECK(clean.lint_exit == 0);
  CHECK(clean.findings.empty());

  // The matrix.
  int total = 0, caught = 0;
  std::vector<std::string> misses, unexpected_misses, newly_caught;
  std::ostringstream table;
  for (std::size_t i = 1; i < results.size(); ++i) {
    const RunResult& r = results[i];
    auto alt = pluginSideRule().find(r.fault);
    bool hit = names(r, r.rule) || (alt != pluginSideRule().end() && names(r, alt->second.first));
    char row[512];
    std::string rule = r.rule + (alt != pluginSideRule().end() ? "/" + alt->second.first : "");
    std::snprintf(row, sizeof row, "  %-26s %-17s %-7s lint=%d %5.1fs  state=%-10s findings=%s\n", r.fault.c_str(),
                  rule.c_str(), hit ? "CAUGHT" : "missed", r.lint_exit, r.seconds, r.plugin_state.c_str(),
                  findingRules(r).c_str());
    table << row;
    for (auto& p : r.problems) table << "      (harness: " << p << ")\n";
    ++total;
    if (hit) {
      ++caught;
      if (knownMisses().count(r.fault)) newly_caught.push_back(r.fault + " " + r.rule);
    } else {
      misses.push_back(r.fault + " " + r.rule + " (lint named: " + findingRules(r) + ")");
      if (!knownMisses().count(r.fault)) unexpected_misses.push_back(r.fault + " " + r.rule);
    }
  }
  std::printf("lint matrix (fault, rule, verdict, lint exit, seconds, plugin state, rules lint named):\n%s",
              table.str().c_str());
  std::printf("lint catch rate: %d/%d (faults that show on the wire)\n", caught, total);
  for (auto& m : misses) std::printf("  missed: %s\n", m.c_str());
  for (auto& [name, why] : excluded()) std::printf("  excluded: %s — %s\n", name.c_str(), why.c_str());
  for (auto& [name, alt] : pluginSideRule())
    std::printf("  plugin-side rule: %s %s — %s\n", name.c_str(), alt.first.c_str(), alt.second.c_str());
  for (auto& n : newly_caught) std::printf("  now caught (remove from knownMisses): %s\n", n.c_str());
  std::fflush(stdout);

  INFO("misses outside the known list: " << unexpected_misses.size());
  for (auto& m : unexpected_misses) UNSCOPED_INFO("must catch, missed: " << m);
  CHECK(unexpected_misses.empty());
  // Issue 6 target: at least 95 % of the wire-visible faults caught on their rule.
  CHECK(caught * 100 >= 95 * total);

  if (clean.findings.empty() && unexpected_misses.empty()) fs::remove_all(root);
}
