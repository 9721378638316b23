// harness/runner/engine_check — one case in role plugin (see engine_check.h, docs/check-engine.md):
// per case a temp folder with one Unix socket per probe and the engine configuration, a fresh engine
// process driven on its stdin/stdout, the probes' connections, the default handshake answers, the
// steps (the shared interpreter, check_steps.cpp; one top-level step at a time on the probe it
// names), engine shutdown, and the verdict (expectations + monitor findings against the ENGINE
// side; the trace holds the main probe's conversation, further probes' frames are notes).
#include "harness/runner/engine_check.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/wire/framing.h"
#include "harness/runner/check_case_impl.h"
#include "reports/rule_catalog.h"

namespace conform::runner {

namespace fs = std::filesystem;

namespace detail {

namespace {

// How long the engine may take to start the probe and connect it (process start + eager spawn).
constexpr std::chrono::milliseconds kConnectWithin{10000};
// Backstop beyond the engine's startup timeout for the handshake outcome (the engine decides).
constexpr std::chrono::milliseconds kHandshakeSlack{1000};
// A driver request is answered at once by a conforming adapter (deferred replies are not used).
constexpr std::chrono::milliseconds kDriverWithin{5000};
// After the steps: engine.shutdown, then the engine must be gone within its bound (SHUT-07: the
// largest grace + 6 s). The default grace is 3 s; cases lower it when they need to.
constexpr std::chrono::milliseconds kEngineExitSlack{6000};
// `drive check` polls the driver until its pattern matches, for at most this long (the default
// `expect` deadline, docs/dsl.md).
constexpr std::chrono::milliseconds kCheckWithin{2000};
// expect-state and other polled predicates are re-checked at least this often.
constexpr std::chrono::milliseconds kPollSlice{20};

const std::set<std::string> kBoolCaps = {"resources", "subscribe_events", "subscribe_bus", "publish_bus",
                                         "publish_session_events", "producer_messaging"};

std::vector<std::string> splitList(const std::string& v) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= v.size()) {
    auto comma = v.find(',', start);
    std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string quote(std::string_view s) {
  json::Document d;
  d.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), d.GetAllocator());
  return json::compact(d);
}

// `drive check … "in_order": {"events": [p1, p2, …]}`: the array member `events` of the result has
// elements matching p1, p2, … in this order, others allowed between them (an event log holds many
// records; json::matchSubset's arrays are exact). `"none": {"events": [p]}`: no element matches p.
// Returns the first mismatch, nullopt when everything holds.
std::optional<std::string> listMismatch(const json::Value& spec, const json::Value& result, bool none) {
  if (!spec.IsObject()) return std::string(none ? "\"none\"" : "\"in_order\"") + " must be an object of arrays";
  for (auto m = spec.MemberBegin(); m != spec.MemberEnd(); ++m) {
    const std::string name(m->name.GetString(), m->name.GetStringLength());
    const json::Value* list = json::member(result, name);
    if (!list || !list->IsArray()) return fmt::format("the result has no array `{}`", name);
    if (!m->value.IsArray()) return fmt::format("`{}`: expected an array of patterns", name);
    const auto pats = m->value.GetArray();
    const auto items = list->GetArray();
    if (none) {
      for (const auto& pat : pats)
        for (rapidjson::SizeType k = 0; k < items.Size(); ++k) {
          json::Captures caps;
          if (!json::matchSubset(pat, items[k], caps))
            return fmt::format("{}[{}] matches the pattern that must not occur: {}", name, k, json::compact(pat));
        }
      continue;
    }
    rapidjson::SizeType j = 0;
    for (rapidjson::SizeType k = 0; k < items.Size() && j < pats.Size(); ++k) {
      json::Captures caps;
      if (!json::matchSubset(pats[j], items[k], caps)) ++j;
    }
    if (j < pats.Size())
      return fmt::format("`{}`: no element matches pattern #{} {}{}", name, j + 1, json::compact(pats[j]),
                         j ? fmt::format(" after the one matching pattern #{}", j) : std::string());
  }
  return std::nullopt;
}

std::string selfExe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

}  // namespace

// One probe the engine starts: the main one (slot 0, `conform-probe`) or a further one declared
// with `plugin NAME` (docs/check-engine.md "Several plugins"). Each has its own socket, its own
// handshake answer and its own inbox; the steps talk to one of them at a time (`on NAME`).
struct ProbeSlot {
  std::string name;  // the configured plugin name
  bool first = false, workspace = false;
  // The handshake answer (`handshake` / `on NAME handshake` keys).
  std::string hs_name, hs_version = "0.1.0", hs_protocol;
  std::map<std::string, bool> caps;
  std::vector<std::string> tools, intercept;
  std::string primary;  // every tool's primary_resource_param ("" = null)
  std::vector<std::string> streams;  // every tool's named output streams (TOOL-04; empty = no output declaration)
  bool answer = true;
  std::string plugin_cfg;  // extra JSON members of its plugin entry
  std::uint64_t startup_ms = 10000, grace_ms = 3000;
  std::string sock_path;
  int listen_fd = -1;
  // Our own descriptor of the probe's socket, for shutdown(2): the channel closes its read fd at
  // EOF, and a half-close must still reach the probe afterwards.
  int sock_fd = -1;
  std::unique_ptr<wire::Channel> chan;
  bool out_closed = false;
  // What the engine wrote to this probe while another one was the steps' current probe.
  std::deque<Inbound> inbox;
  // `fault stall-reading D`: when reading resumes (real time); unset = not stalled.
  std::optional<wire::SteadyTime> stall_until;
};

class PluginRoleRunner final : public Peer {
 public:
  PluginRoleRunner(const dsl::Case& c, const Target& t) : case_(c), target_(t) {}
  ~PluginRoleRunner() override { teardown(); }
  CaseRun run();

  // ---- Peer ----------------------------------------------------------------------------------
  std::string_view subject() const override { return "engine"; }
  void send(std::string_view bytes) override;
  bool pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) override;
  std::optional<State> state() override;
  std::vector<std::string> items(bool tools) override { return tools ? slots_[cur_].tools : slots_[cur_].intercept; }
  Outcome drive(const std::string& action, const std::vector<std::string>& args, const json::Document& json) override;
  Outcome advance(dsl::Millis d) override;
  Outcome fault(dsl::FaultKind k, dsl::Millis d) override;

 private:
  bool readOptions(std::string& err);
  bool readHandshake(ProbeSlot& slot, const std::vector<std::pair<std::string, std::string>>& keys, std::string& err);
  bool readConfig(ProbeSlot& slot, const std::vector<std::pair<std::string, std::string>>& keys, bool main, std::string& err);
  bool setup(std::string& err);
  std::string configText(const std::string& probe) const;
  bool connectAll(std::string& err);
  // The steps' current probe (`on NAME`): swaps the inboxes so the interpreter reads that probe's.
  void select(std::size_t i);
  std::size_t slotOf(const std::string& name) const;
  std::deque<Inbound>& inboxOf(std::size_t i) { return i == cur_ ? conv_.inbox : slots_[i].inbox; }
  void pushTo(std::size_t i, const std::function<void()>& push);
  // Waits for the engine's plugin/initialize to slot i and answers it from the handshake keys.
  bool answerHandshake(std::size_t i, std::string& why);
  void drain();
  // One driver request, answered synchronously (I/O keeps flowing meanwhile).
  Expected<json::Document, std::string> call(const std::string& method, const std::string& params);
  // The same in two halves (`drive send` / `drive reply`): a request whose reply waits for hook
  // chains the steps must answer first (compact, fork, revert, run.steer; driver-protocol.md).
  Expected<std::int64_t, std::string> begin(const std::string& method, const std::string& params);
  Expected<json::Document, std::string> await(std::int64_t id, const std::string& method);
  static std::string handshakeResult(const ProbeSlot& slot);
  bool stepsHandleInitialize() const;
  void closePluginOutput(std::size_t i);
  void finish();
  void teardown();

  const dsl::Case& case_;
  Target target_;
  wire::Reactor reactor_;
  std::ostringstream trace_text_;
  // Real time plus every `advance` (check_case_impl.h OffsetClock): the trace's time base, so
  // trace times follow the engine's virtual clock jumps (declared before tw_, which uses it).
  OffsetClock trace_clk_;
  std::unique_ptr<trace::TraceWriter> tw_;
  Conversation conv_;
  std::string dir_, config_path_;
  std::unique_ptr<wire::Channel> engine_;
  // slots_[0] is the main probe; further ones follow in declaration order.
  std::vector<ProbeSlot> slots_;
  std::size_t cur_ = 0;
  std::optional<wire::ExitStatus> engine_exit_;
  std::int64_t next_driver_id_ = 1;
  std::map<std::int64_t, json::Document> replies_;
  std::map<std::int64_t, std::string> started_;  // `drive send`: id → method, until `drive reply`
  std::string engine_cfg_;  // extra JSON members of the engine config
  std::optional<bool> producer_handler_;
  std::string permission_ = "allow";  // agent policy for action `plugin` (probe tools are callable)
  bool virtual_clock_ = true;
  void endStallIfDue();
};

bool PluginRoleRunner::readHandshake(ProbeSlot& slot, const std::vector<std::pair<std::string, std::string>>& keys,
                                     std::string& err) {
  slot.hs_name = slot.name;
  slot.hs_protocol = target_.profile;
  for (const auto& [k, v] : keys) {
    if (k == "name") slot.hs_name = v;
    else if (k == "version") slot.hs_version = v;
    else if (k == "protocol_version") slot.hs_protocol = v;
    else if (k == "tools") slot.tools = splitList(v);
    else if (k == "intercept") slot.intercept = splitList(v);
    else if (k == "primary_resource_param") slot.primary = v;
    else if (k == "output_streams") slot.streams = splitList(v);
    else if (k == "answer" && (v == "yes" || v == "no")) slot.answer = v == "yes";
    else if (kBoolCaps.count(k) && (v == "true" || v == "false")) slot.caps[k] = v == "true";
    else {
      err = fmt::format("{}: unknown handshake key or value `{}={}` (name, version, protocol_version, tools=a,b, "
                        "intercept=h1,h2, primary_resource_param=path, output_streams=a,b, answer=yes|no, resources|subscribe_events|subscribe_bus|publish_bus|"
                        "publish_session_events|producer_messaging=true|false)", case_.loc.str(), k, v);
      return false;
    }
  }
  return true;
}

// Plugin-entry keys apply to any probe; engine-wide keys only in the case's own `config`.
bool PluginRoleRunner::readConfig(ProbeSlot& slot, const std::vector<std::pair<std::string, std::string>>& keys,
                                  bool main, std::string& err) {
  for (const auto& kv : keys) {
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    auto ms = [&](std::uint64_t* keep) {
      std::uint64_t n = 0;
      auto r = std::from_chars(v.data(), v.data() + v.size(), n);
      if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n == 0) {
        err = fmt::format("{}: config {}: expected a positive number of milliseconds, found `{}`", case_.loc.str(), k, v);
        return false;
      }
      if (keep) *keep = n;
      slot.plugin_cfg += fmt::format(",\"{}\":{}", k, n);
      return true;
    };
    const bool engine_wide = k == "engine_version" || k == "producer_handler" || k == "permissions";
    if (engine_wide && !main) {
      err = fmt::format("{}: config {} is engine-wide: write it in the case's own `config`, not `on {} config`",
                        case_.loc.str(), k, slot.name);
      return false;
    }
    if (k == "engine_version") engine_cfg_ += ",\"engine_version\":" + quote(v);
    else if (k == "startup_timeout_ms") { if (!ms(&slot.startup_ms)) return false; }
    else if (k == "shutdown_grace_ms") { if (!ms(&slot.grace_ms)) return false; }
    else if (k == "interception_timeout_ms" || k == "tool_timeout_ms") { if (!ms(nullptr)) return false; }
    else if (k == "producer_messaging" && (v == "true" || v == "false")) {
      slot.plugin_cfg += ",\"producer_messaging\":" + v;
      // The main probe's setting decides the runtime handler; a further probe only turns it on.
      if (main) producer_handler_ = v == "true";
      else if (v == "true") producer_handler_ = true;
    } else if (k == "producer_handler" && (v == "true" || v == "false")) {
      // The runtime producer handler alone (the plugin entry does not opt in): the engine
      // advertises producer_messaging false (INIT-24's one-sided opt-in).
      producer_handler_ = v == "true";
    } else if (k == "permissions" && (v == "allow" || v == "ask" || v == "deny")) {
      permission_ = v;
    } else {
      err = fmt::format("{}: unknown config key or value `{} {}` in role plugin (engine_version, startup_timeout_ms, "
                        "shutdown_grace_ms, interception_timeout_ms, tool_timeout_ms, producer_messaging true|false, "
                        "producer_handler true|false, permissions allow|ask|deny)", case_.loc.str(), k, v);
      return false;
    }
  }
  return true;
}

bool PluginRoleRunner::readOptions(std::string& err) {
  slots_.clear();
  slots_.emplace_back();
  slots_[0].name = kProbeName;
  for (const dsl::ExtraPlugin& x : case_.plugins) {
    ProbeSlot& slot = slots_.emplace_back();
    slot.name = x.name;
    slot.first = x.first;
    slot.workspace = x.workspace;
  }
  if (!readHandshake(slots_[0], case_.handshake, err) || !readConfig(slots_[0], case_.config, true, err)) return false;
  for (std::size_t i = 0; i < case_.plugins.size(); ++i)
    if (!readHandshake(slots_[i + 1], case_.plugins[i].handshake, err) ||
        !readConfig(slots_[i + 1], case_.plugins[i].config, false, err))
      return false;
  if (producer_handler_) engine_cfg_ += fmt::format(",\"producer_handler\":{}", *producer_handler_ ? "true" : "false");
  engine_cfg_ += fmt::format(",\"permissions\":{{\"plugin\":{{\"*\":\"{}\"}}}}", permission_);
  if (target_.driver == "stdio") virtual_clock_ = true;
  else if (target_.driver == "stdio-real-clock") virtual_clock_ = false;
  else {
    err = fmt::format("unknown --driver `{}` (stdio, stdio-real-clock; docs/check-engine.md)", target_.driver);
    return false;
  }
  return true;
}

// The default initialize result (docs/dsl.md, role plugin): a valid 0.0.6 result built from the
// case's `handshake` keys; every capability false and no tools unless the case says otherwise.
std::string PluginRoleRunner::handshakeResult(const ProbeSlot& slot) {
  auto cap = [&](const char* k) {
    auto it = slot.caps.find(k);
    return it != slot.caps.end() && it->second ? "true" : "false";
  };
  const auto& decl_tools = slot.tools;
  const auto& hooks = slot.intercept;
  std::string caps = fmt::format(
      "{{\"tools\":{},\"resources\":{},\"subscribe_events\":{},\"subscribe_bus\":{},\"publish_bus\":{},"
      "\"publish_session_events\":{}",
      decl_tools.empty() ? "false" : "true", cap("resources"), cap("subscribe_events"), cap("subscribe_bus"),
      cap("publish_bus"), cap("publish_session_events"));
  // INIT-17: producer_messaging is required in 0.0.6 and absent from the 0.0.4 shape.
  if (slot.hs_protocol != "0.0.4") caps += fmt::format(",\"producer_messaging\":{}", cap("producer_messaging"));
  caps += ",\"intercept\":[";
  for (std::size_t i = 0; i < hooks.size(); ++i) caps += (i ? "," : "") + quote(hooks[i]);
  caps += "]}";
  std::string output;
  if (!slot.streams.empty()) {
    output = ",\"output\":{\"kind\":\"named\",\"streams\":[";
    for (std::size_t i = 0; i < slot.streams.size(); ++i) output += (i ? "," : "") + quote(slot.streams[i]);
    output += "]}";
  }
  std::string tools = "[";
  for (std::size_t i = 0; i < decl_tools.size(); ++i)
    tools += (i ? "," : "") + fmt::format(
        "{{\"name\":{},\"description\":\"conform probe tool\",\"parameters\":{{\"type\":\"object\","
        "\"properties\":{{\"path\":{{\"type\":\"string\"}}}}}},\"permission_name\":{},\"primary_resource_param\":{}{}}}",
        quote(decl_tools[i]), quote(decl_tools[i]), slot.primary.empty() ? std::string("null") : quote(slot.primary), output);
  tools += "]";
  return fmt::format("{{\"protocol_version\":{},\"name\":{},\"version\":{},\"capabilities\":{},\"tools\":{}}}",
                     quote(slot.hs_protocol), quote(slot.hs_name), quote(slot.hs_version), caps, tools);
}

// A case that starts with `expect request plugin/initialize …` (or `expect frame …`) answers the
// handshake itself; so does `handshake answer=no`.
bool PluginRoleRunner::stepsHandleInitialize() const {
  if (!slots_[0].answer) return true;
  if (case_.steps.empty()) return false;
  const dsl::Step& s = case_.steps.front();
  return s.plugin.empty() && s.kind == dsl::Step::Kind::Expect &&
         (s.msg == dsl::MsgKind::Frame || (s.msg == dsl::MsgKind::Request && (s.method.empty() || s.method == "plugin/initialize")));
}

// The engine configuration: the main probe and every further one, in the order the case declared
// (`first` ones before the main probe, the rest after it, `workspace` ones in workspace_plugins:
// registration order, PROTOCOL §1.6, HOOK-04/05). The engine clears the probe's environment
// (PROTOCOL §1.2): everything goes in the arguments.
std::string PluginRoleRunner::configText(const std::string& probe) const {
  auto entry = [&](const ProbeSlot& slot) {
    return fmt::format("{}:{{\"command\":{},\"args\":[\"probe\",\"--connect\",{}]{}}}", quote(slot.name), quote(probe),
                       quote(slot.sock_path), slot.plugin_cfg);
  };
  std::string user, workspace;
  auto add = [](std::string& list, const std::string& e) { list += (list.empty() ? "" : ",") + e; };
  for (const ProbeSlot& slot : slots_) {
    if (!slot.first) continue;
    if (!slot.workspace) {
      add(user, entry(slot));
      continue;
    }
    // `plugin NAME first workspace`: the user entry the workspace entry must replace in place
    // (§1.6). Its socket has no listener: an engine that starts it instead gets a plugin that
    // cannot connect, and the case cannot reach its handshake.
    add(user, fmt::format("{}:{{\"command\":{},\"args\":[\"probe\",\"--connect\",{}]}}", quote(slot.name), quote(probe),
                          quote(dir_ + "/replaced-user-entry.sock")));
  }
  add(user, entry(slots_[0]));
  for (std::size_t i = 1; i < slots_.size(); ++i)
    if (!slots_[i].first && !slots_[i].workspace) add(user, entry(slots_[i]));
  for (const ProbeSlot& slot : slots_)
    if (slot.workspace) add(workspace, entry(slot));
  return fmt::format("{{\"protocol_version\":{},\"plugins\":{{{}}}{}{}}}\n", quote(target_.profile), user,
                     workspace.empty() ? std::string() : ",\"workspace_plugins\":{" + workspace + "}", engine_cfg_);
}

bool PluginRoleRunner::setup(std::string& err) {
  std::string probe = target_.probe.empty() ? selfExe() : target_.probe;
  if (probe.empty()) {
    err = "cannot find the conform executable for the probe (/proc/self/exe)";
    return false;
  }
  char tmpl[] = "/tmp/conform-ce-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    err = fmt::format("cannot create a temp folder: {}", std::strerror(errno));
    return false;
  }
  dir_ = tmpl;
  config_path_ = dir_ + "/engine.json";
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    ProbeSlot& slot = slots_[i];
    // By index, not name: a plugin name may hold characters a path should not.
    slot.sock_path = i == 0 ? dir_ + "/probe.sock" : fmt::format("{}/probe-{}.sock", dir_, i);
    slot.listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, slot.sock_path.data(), std::min(slot.sock_path.size(), sizeof(addr.sun_path) - 1));
    if (slot.listen_fd < 0 || ::bind(slot.listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(slot.listen_fd, 4) != 0) {
      err = fmt::format("cannot listen on {}: {}", slot.sock_path, std::strerror(errno));
      return false;
    }
  }
  std::string cfg = configText(probe);
  {
    std::ofstream f(config_path_, std::ios::binary);
    f << cfg;
    if (!f) {
      err = fmt::format("cannot write {}", config_path_);
      return false;
    }
  }
  if (tw_) tw_->note("engine config: " + cfg.substr(0, cfg.size() - 1));
  wire::SpawnOptions o;
  o.program = target_.argv.at(0);
  o.args.assign(target_.argv.begin() + 1, target_.argv.end());
  for (const char* a : {"--config", config_path_.c_str(), "--driver", "stdio"}) o.args.emplace_back(a);
  if (virtual_clock_) o.args.emplace_back("--virtual-clock");
  wire::SpawnError se;
  engine_ = wire::spawnProcess(reactor_, o, &se);
  if (!engine_) {
    err = se.message;
    return false;
  }
  return connectAll(err);
}

// Waits for every probe to connect (the engine spawns its plugins eagerly, §16.3).
bool PluginRoleRunner::connectAll(std::string& err) {
  auto deadline = wire::deadlineIn(kConnectWithin);
  while (true) {
    bool all = true;
    for (ProbeSlot& slot : slots_) {
      if (slot.chan) continue;
      int fd = ::accept4(slot.listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        all = false;
        continue;
      }
      slot.sock_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      int wfd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      slot.chan = wire::fdChannel(reactor_, fd, wfd);
      if (tw_) tw_->note(fmt::format("the engine started the probe `{}`; connected", slot.name));
    }
    if (all) return true;
    drain();
    std::string missing;
    for (const ProbeSlot& slot : slots_)
      if (!slot.chan) missing += (missing.empty() ? "`" : ", `") + slot.name + "`";
    if (engine_exit_) {
      err = fmt::format("the engine under test ended ({}) before starting its plugin {}", engine_exit_->str(), missing);
      return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      err = fmt::format("the engine under test did not start its plugin {} within {} (see the adapter contract in "
                        "docs/check-engine.md)", missing, dsl::formatDuration(kConnectWithin));
      return false;
    }
    reactor_.waitAny(std::min(deadline, wire::deadlineIn(kPollSlice)));
  }
}

void PluginRoleRunner::select(std::size_t i) {
  if (i == cur_ || i >= slots_.size()) return;
  std::swap(conv_.inbox, slots_[cur_].inbox);
  std::swap(conv_.inbox, slots_[i].inbox);
  cur_ = i;
}

std::size_t PluginRoleRunner::slotOf(const std::string& name) const {
  for (std::size_t i = 1; i < slots_.size(); ++i)
    if (slots_[i].name == name) return i;
  return 0;
}

// Conversation appends to conv_.inbox: a frame for another probe goes through a swap.
void PluginRoleRunner::pushTo(std::size_t i, const std::function<void()>& push) {
  if (i == cur_) return push();
  std::swap(conv_.inbox, slots_[i].inbox);
  push();
  std::swap(conv_.inbox, slots_[i].inbox);
}

void PluginRoleRunner::drain() {
  if (engine_) {
    while (auto ev = engine_->poll()) {
      using K = wire::ChannelEvent::Kind;
      switch (ev->kind) {
        case K::Frame: {
          auto p = json::parse(ev->frame.bytes);
          const json::Value* id = p ? json::member(p->doc, "id") : nullptr;
          if (id && id->IsInt64()) replies_[id->GetInt64()] = std::move(p->doc);
          else if (tw_) tw_->note("driver: unexpected frame " + reports::shortenEvidence(ev->frame.bytes, 200));
          break;
        }
        case K::FrameError:
          if (tw_) tw_->note("driver: undecodable frame");
          break;
        case K::Stderr:
          if (tw_) tw_->note("engine stderr: " + ev->text);
          break;
        case K::Eof:
          if (tw_) tw_->note("driver: the engine closed its stdout");
          break;
        case K::Exited:
          engine_exit_ = ev->status;
          if (tw_) tw_->note("the engine under test ended: " + ev->status.str());
          break;
        case K::WriteFailed:
          if (tw_) tw_->note("driver: write failed: " + ev->text);
          break;
      }
    }
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    ProbeSlot& slot = slots_[i];
    if (!slot.chan) continue;
    while (auto ev = slot.chan->poll()) {
      using K = wire::ChannelEvent::Kind;
      switch (ev->kind) {
        case K::Frame:
        case K::FrameError:
          // The trace (and so the rule monitors) holds the main probe's conversation; a further
          // probe's frames are notes (docs/check-engine.md "Several plugins").
          if (i == 0) {
            if (tw_) tw_->frameEvent(trace::Dir::EngineToPlugin, ev->frame);
          } else if (tw_) {
            tw_->note(fmt::format("engine → {}: {}", slot.name, reports::shortenEvidence(ev->frame.bytes, 2000)));
          }
          pushTo(i, [&] { conv_.pushFrame(ev->frame.bytes, ev->frame.kind == wire::FrameEvent::Kind::Frame); });
          break;
        case K::Eof:
          // The engine closed the probe's stdin (SHUT-02, or after a fatal error). A conforming
          // plugin exits on stdin EOF (SHUT-08): close our output so the probe ends.
          if (i == 0) {
            if (tw_) tw_->eof(trace::Dir::EngineToPlugin);
          } else if (tw_) {
            tw_->note(fmt::format("engine → {}: EOF", slot.name));
          }
          pushTo(i, [&] { conv_.pushEof(); });
          closePluginOutput(i);
          break;
        case K::WriteFailed:
          if (tw_) tw_->note(fmt::format("probe {}: write failed: {}", slot.name, ev->text));
          break;
        default:
          break;
      }
    }
  }
}

void PluginRoleRunner::closePluginOutput(std::size_t i) {
  ProbeSlot& slot = slots_[i];
  if (slot.out_closed || slot.sock_fd < 0) return;
  slot.chan->flush(wire::deadlineIn(std::chrono::milliseconds(500)));
  ::shutdown(slot.sock_fd, SHUT_WR);  // the probe closes its stdout: the engine sees EOF
  slot.out_closed = true;
  if (i == 0) {
    if (tw_) tw_->eof(trace::Dir::PluginToEngine);
  } else if (tw_) {
    tw_->note(fmt::format("{} → engine: EOF", slot.name));
  }
}

void PluginRoleRunner::send(std::string_view bytes) {
  ProbeSlot& slot = slots_[cur_];
  if (cur_ == 0) conv_.traceBytes(trace::Dir::PluginToEngine, bytes);
  else if (tw_) tw_->note(fmt::format("{} → engine: {}", slot.name, reports::shortenEvidence(bytes, 2000)));
  if (!slot.chan || slot.out_closed) {
    if (tw_) tw_->note(fmt::format("write skipped: the stdout of probe `{}` is closed", slot.name));
    return;
  }
  (void)slot.chan->write(bytes);
}

bool PluginRoleRunner::pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) {
  while (true) {
    endStallIfDue();
    drain();
    if (pred()) return true;
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    // Polled predicates (engine status over the driver) are re-checked every slice.
    reactor_.waitAny(std::min(deadline, now + kPollSlice));
  }
}

void PluginRoleRunner::endStallIfDue() {
  for (ProbeSlot& slot : slots_) {
    if (!slot.stall_until || std::chrono::steady_clock::now() < *slot.stall_until) continue;
    slot.stall_until.reset();
    if (slot.chan) slot.chan->stallReading(false);
    if (tw_) tw_->note(fmt::format("fault stall-reading of `{}` over: reading again", slot.name));
  }
}

Expected<std::int64_t, std::string> PluginRoleRunner::begin(const std::string& method, const std::string& params) {
  if (!engine_ || engine_exit_) return unexpected(std::string("the engine under test is not running"));
  std::int64_t id = next_driver_id_++;
  std::string frame = fmt::format("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":{},\"params\":{}}}", id, quote(method), params);
  if (tw_) tw_->note("driver → " + frame);
  if (!engine_->writeFrame(frame)) return unexpected(std::string("cannot write to the engine's driver stdin"));
  return id;
}

Expected<json::Document, std::string> PluginRoleRunner::await(std::int64_t id, const std::string& method) {
  auto deadline = wire::deadlineIn(kDriverWithin);
  while (!replies_.count(id)) {
    drain();
    if (replies_.count(id)) break;
    if (engine_exit_) return unexpected(fmt::format("the engine under test ended ({})", engine_exit_->str()));
    if (std::chrono::steady_clock::now() >= deadline)
      return unexpected(fmt::format("driver `{}` not answered within {}", method, dsl::formatDuration(kDriverWithin)));
    reactor_.waitAny(deadline);
  }
  json::Document reply = std::move(replies_[id]);
  replies_.erase(id);
  if (tw_) tw_->note("driver ← " + reports::shortenEvidence(json::compact(reply), 300));
  if (const json::Value* e = json::member(reply, "error")) return unexpected(fmt::format("driver `{}`: {}", method, json::compact(*e)));
  const json::Value* r = json::member(reply, "result");
  if (!r) return unexpected(fmt::format("driver `{}`: a reply without result", method));
  return json::copy(*r);
}

Expected<json::Document, std::string> PluginRoleRunner::call(const std::string& method, const std::string& params) {
  auto id = begin(method, params);
  if (!id) return unexpected(id.error());
  return await(*id, method);
}

std::optional<Peer::State> PluginRoleRunner::state() {
  auto r = call("plugin.status", fmt::format("{{\"plugin\":{}}}", quote(slots_[cur_].name)));
  if (!r) return std::nullopt;
  State st;
  if (auto s = json::stringMember(*r, "state")) st.state = std::string(*s);
  if (auto s = json::stringMember(*r, "reason")) st.reason = std::string(*s);
  return st;
}

Peer::Outcome PluginRoleRunner::advance(dsl::Millis d) {
  if (!virtual_clock_) return Outcome::error("advance needs the engine's virtual clock (--driver stdio)");
  auto r = call("clock.advance", fmt::format("{{\"ms\":{}}}", d.count()));
  if (!r) return Outcome::error("advance: " + r.error());
  // The engine's timers (grant expiry, quota windows) jumped by d: so does the trace's time, so
  // monitors that time emits (EMIT-10, QUOTA-05/06/07) see the engine's windows, not real time.
  trace_clk_.advance(std::chrono::duration_cast<clock::Duration>(d));
  drain();
  return Outcome::ok();
}

Peer::Outcome PluginRoleRunner::fault(dsl::FaultKind k, dsl::Millis d) {
  ProbeSlot& slot = slots_[cur_];
  if (!slot.chan) return Outcome::error("no probe connection");
  if (tw_) tw_->note(fmt::format("fault {} ({})", toString(k), slot.name));
  switch (k) {
    case dsl::FaultKind::Disconnect:
      // The plugin closes its stdout but keeps running (FRAME-17).
      closePluginOutput(cur_);
      return Outcome::ok();
    case dsl::FaultKind::StallReading:
      // Role plugin: the stall runs in the background for D of real time while the next steps
      // drive the engine (a backlog needs events produced DURING the stall: EVT-05/14/16,
      // EMIT-11). The probe then blocks on the full socket, stops reading its stdin, and the
      // engine's pipe, channel buffer and finally its 1024-record queue fill. pumpUntil() resumes
      // reading when D is over; an `expect` waits for that.
      slot.chan->stallReading(true);
      slot.stall_until = wire::deadlineIn(d);
      return Outcome::ok();
    default:
      return Outcome::error(fmt::format("fault {} is not available in role plugin (disconnect, stall-reading)", toString(k)));
  }
}

// drive ACTION …: the engine under test acts through the driver protocol (docs/check-engine.md).
Peer::Outcome PluginRoleRunner::drive(const std::string& action, const std::vector<std::string>& args,
                                      const json::Document& json) {
  auto arg = [&](std::size_t i) -> std::optional<std::string> {
    if (i >= args.size()) return std::nullopt;
    return args[i];
  };
  auto result = [&](const char* method, const std::string& params, const char* member) -> Outcome {
    auto r = call(method, params);
    if (!r) return Outcome::failure(fmt::format("drive {}: {}", action, r.error()), fmt::format("the driver performs {}", method), r.error());
    drain();
    Outcome o = Outcome::ok();
    if (member) {
      auto v = json::stringMember(*r, member);
      if (v) o.value = std::string(*v);
    } else {
      o.doc = std::make_shared<json::Document>(std::move(*r));
    }
    return o;
  };
  if (action == "session.create") return result("session.create", "{}", "session_id");
  if (action == "event") {
    auto session = arg(0), cls = arg(1);
    if (!session || !cls || cls->rfind("class=", 0) != 0)
      return Outcome::error("drive event: expected `drive event $s class=chunk|ordinary|terminal`");
    std::string count;
    if (auto c = arg(2); c && c->rfind("count=", 0) == 0) count = ",\"count\":" + c->substr(6);
    return result("event.produce", fmt::format("{{\"session_id\":{},\"class\":{}{}}}", quote(*session), quote(cls->substr(6)), count), nullptr);
  }
  if (action == "tool.call") {
    auto session = arg(0), tool = arg(1);
    if (!session || !tool) return Outcome::error("drive tool.call: expected `drive tool.call $s TOOL {args}`");
    return result("tool.call", fmt::format("{{\"session_id\":{},\"tool\":{},\"arguments\":{}}}", quote(*session), quote(*tool), json::compact(json)), "invocation_id");
  }
  // The probe answers (or not) in the steps, so the engine's ping is started, not awaited.
  if (action == "ping") return result("plugin.ping", fmt::format("{{\"plugin\":{}}}", quote(slots_[cur_].name)), nullptr);
  if (action == "shutdown") return result("engine.shutdown", "{}", nullptr);
  if (action == "flush") return result("diagnostics.flush", "{}", nullptr);
  // drive check METHOD {"params": {…}, "expect": {pattern}}: a driver method whose result must
  // match the subset pattern (docs/check-engine.md) — how a case judges what only the engine's
  // inspection interface shows (drop counters, diagnostics about the plugin itself, EVT-16).
  if (action == "check") {
    auto method = arg(0);
    const json::Value* params = json.IsObject() ? json::member(json, "params") : nullptr;
    const json::Value* pattern = json.IsObject() ? json::member(json, "expect") : nullptr;
    const json::Value* in_order = json.IsObject() ? json::member(json, "in_order") : nullptr;
    const json::Value* none = json.IsObject() ? json::member(json, "none") : nullptr;
    if (!method || (!pattern && !in_order && !none))
      return Outcome::error("drive check: expected `drive check METHOD {\"params\": {…}, \"expect\": {pattern}}` "
                            "(or \"in_order\" / \"none\": {\"list\": [patterns]})");
    json::Document empty(rapidjson::kObjectType);
    if (!pattern) pattern = &empty;
    // Polled like `expect state`: frames the probe just sent (a hook answer) travel on another
    // channel than the driver request, so the engine may not have read them yet.
    const std::string p = params ? json::compact(*params) : std::string("{}");
    const auto deadline = wire::deadlineIn(kCheckWithin);
    while (true) {
      auto r = call(*method, p);
      if (!r) return Outcome::failure(fmt::format("drive check {}: {}", *method, r.error()), fmt::format("the driver performs {}", *method), r.error());
      drain();
      json::Captures caps;
      std::optional<std::string> why;
      if (auto mm = json::matchSubset(*pattern, *r, caps)) why = mm->str();
      if (!why && in_order) why = listMismatch(*in_order, *r, false);
      if (!why && none) why = listMismatch(*none, *r, true);
      if (!why) {
        Outcome o = Outcome::ok();
        o.doc = std::make_shared<json::Document>(std::move(*r));
        return o;
      }
      if (std::chrono::steady_clock::now() >= deadline)
        return Outcome::failure(fmt::format("driver {} result does not match within {}: {}", *method, dsl::formatDuration(kCheckWithin), *why),
                                json::compact(json), reports::shortenEvidence(json::compact(*r), 600));
      pumpUntil(wire::deadlineIn(kPollSlice * 5), [] { return false; });
    }
  }
  // drive send METHOD {params} as $p: the request is written and not awaited (its reply waits
  // for hook chains the next steps answer); `$p` names it for `drive reply`.
  if (action == "send") {
    auto method = arg(0);
    if (!method) return Outcome::error("drive send: expected `drive send METHOD {params} as $p`");
    auto id = begin(*method, json::compact(json));
    if (!id) return Outcome::failure(fmt::format("drive send {}: {}", *method, id.error()), fmt::format("the driver accepts {}", *method), id.error());
    started_[*id] = *method;
    drain();
    return Outcome::ok(std::to_string(*id));
  }
  // drive reply $p [{pattern}] [as $x]: waits for the reply of `drive send … as $p`; an error
  // reply, none within 5 s, or a result that does not match the subset pattern FAILs.
  if (action == "reply") {
    auto ref = arg(0);
    std::int64_t id = 0;
    auto fc = ref ? std::from_chars(ref->data(), ref->data() + ref->size(), id) : std::from_chars_result{};
    if (!ref || fc.ec != std::errc() || fc.ptr != ref->data() + ref->size() || !started_.count(id))
      return Outcome::error("drive reply: expected `drive reply $p` naming an earlier `drive send … as $p`");
    const std::string method = started_[id];
    started_.erase(id);
    auto r = await(id, method);
    if (!r) return Outcome::failure(fmt::format("drive reply {}: {}", method, r.error()), fmt::format("the driver answers {}", method), r.error());
    drain();
    if (json.IsObject() && json.MemberCount() > 0) {
      json::Captures caps;
      if (auto mm = json::matchSubset(json, *r, caps))
        return Outcome::failure(fmt::format("driver {} result does not match: {}", method, mm->str()), json::compact(json),
                                reports::shortenEvidence(json::compact(*r), 400));
    }
    Outcome o = Outcome::ok();
    o.doc = std::make_shared<json::Document>(std::move(*r));
    return o;
  }
  // drive call METHOD {params} [as $x]: any driver method; `as` binds its result.
  if (action == "call") {
    auto method = arg(0);
    if (!method) return Outcome::error("drive call: expected `drive call METHOD {params}`");
    return result(method->c_str(), json::compact(json), nullptr);
  }
  return Outcome::error(fmt::format("unknown drive action `{}` in role plugin (session.create, event, tool.call, ping, "
                                    "shutdown, flush, call METHOD {{params}}, check METHOD {{params, expect}}, "
                                    "send METHOD {{params}} as $p, reply $p [{{pattern}}])", action));
}

bool PluginRoleRunner::answerHandshake(std::size_t i, std::string& why) {
  Inbound* init = nullptr;
  auto found = [&] {
    for (Inbound& in : inboxOf(i))
      if (!in.consumed && in.msg == dsl::MsgKind::Request && in.method == "plugin/initialize") return (init = &in) != nullptr;
    return false;
  };
  if (!pumpUntil(wire::deadlineIn(std::chrono::milliseconds(slots_[i].startup_ms) + kHandshakeSlack), found)) {
    select(i);
    why = fmt::format("the engine sent no plugin/initialize to `{}` ({})", slots_[i].name, conv_.recentInbound(2, "engine"));
    select(0);
    return false;
  }
  const json::Value* id = json::member(*init->doc, "id");
  init->consumed = true;
  const std::size_t was = cur_;
  select(i);
  send(wire::encodeFrame(fmt::format("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}}",
                                     id ? json::compact(*id) : std::string("null"), handshakeResult(slots_[i]))));
  select(was);
  return true;
}

void PluginRoleRunner::finish() {
  if (!engine_) return;
  if (!engine_exit_) {
    // The engine shuts down as at the end of any session: plugin/shutdown, stdin close, grace, kill
    // (SHUT-01…03); closing the driver's stdin also asks for shutdown (docs/driver-protocol.md).
    (void)call("engine.shutdown", "{}");
    engine_->closeWrite(false);
    std::uint64_t grace_ms = 0;
    for (const ProbeSlot& slot : slots_) grace_ms = std::max(grace_ms, slot.grace_ms);
    pumpUntil(wire::deadlineIn(std::chrono::milliseconds(grace_ms) + kEngineExitSlack), [&] { return engine_exit_.has_value(); });
    if (!engine_exit_ && tw_) tw_->note("the engine under test did not exit after shutdown: killed");
  }
}

void PluginRoleRunner::teardown() {
  if (engine_) engine_->close(false);  // process group SIGKILL + bounded reap
  engine_.reset();
  for (ProbeSlot& slot : slots_) {
    if (slot.chan) slot.chan->close(false);  // the probe sees EOF on the socket and ends
    slot.chan.reset();
    if (slot.sock_fd >= 0) ::close(slot.sock_fd);
    slot.sock_fd = -1;
    if (slot.listen_fd >= 0) ::close(slot.listen_fd);
    slot.listen_fd = -1;
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
}

CaseRun PluginRoleRunner::run() {
  CaseRun out;
  out.result = reports::newCase(case_.id, case_.title, case_.rules);
  auto t0 = std::chrono::steady_clock::now();
  trace::TraceHeader hdr;
  hdr.profile = target_.profile;
  hdr.role = "plugin";
  hdr.peer = target_.argv;
  tw_ = std::make_unique<trace::TraceWriter>(trace_text_, trace_clk_, std::move(hdr),
                                             trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  tw_->caseBegin(case_.id);
  conv_.tw = tw_.get();
  std::string err;
  std::optional<StepFailure> failure;
  if (target_.argv.empty()) err = "no engine command to test (give it after --)";
  if (err.empty() && readOptions(err) && setup(err)) {
    bool run_steps = true;
    const bool main_self = stepsHandleInitialize();
    // The default handshake of every probe whose steps do not answer it themselves.
    std::vector<std::size_t> answered;
    for (std::size_t i = 0; i < slots_.size() && run_steps; ++i) {
      if (i == 0 ? main_self : !slots_[i].answer) continue;
      std::string why;
      if (!answerHandshake(i, why)) {
        out.result.verdict = reports::Verdict::Untested;
        out.result.skip_reason = why;
        run_steps = false;
      }
      answered.push_back(i);
    }
    for (std::size_t i : answered) {
      if (!run_steps || (i == 0 && case_.judges_handshake)) continue;
      select(i);
      std::optional<State> st;
      auto settled = [&] {
        st = state();
        return st && st->state != "connecting";
      };
      pumpUntil(wire::deadlineIn(std::chrono::milliseconds(slots_[i].startup_ms) + kHandshakeSlack), settled);
      if (!st || st->state != "connected") {
        out.result.verdict = reports::Verdict::Untested;
        out.result.skip_reason = fmt::format("the handshake of `{}` did not complete: {}", slots_[i].name,
                                             st ? st->state + " (" + st->reason + ")" : "no status");
        run_steps = false;
      }
    }
    select(0);
    // The steps start with an empty inbox unless the case judges the handshake.
    for (std::size_t i : answered)
      if (i != 0 || !case_.judges_handshake)
        for (Inbound& in : inboxOf(i)) in.consumed = true;
    if (run_steps) {
      // One top-level step at a time, each on the probe it names (`on NAME`); the interpreter
      // keeps its captures across the calls.
      Interpreter interp(*this, conv_);
      for (const dsl::Step& step : case_.steps) {
        select(slotOf(step.plugin));
        if (!interp.execAll(std::vector<dsl::Step>{step})) break;
      }
      select(0);
      failure = interp.failure();
      err = interp.error();
    }
    finish();
  }
  teardown();
  tw_->caseEnd(case_.id);
  tw_->flush();
  conv_.tw = nullptr;
  tw_.reset();
  out.trace = trace_text_.str();
  // Role plugin judges the ENGINE: monitor findings against the plugin side are conform's own.
  finishVerdict(out, caseRule(case_), failure, std::move(err), target_.profile, reports::kBindsEngine);
  out.result.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace detail

CaseRun runPluginCase(const dsl::Case& c, const Target& target) {
  detail::PluginRoleRunner r(c, target);
  return r.run();
}

}  // namespace conform::runner
