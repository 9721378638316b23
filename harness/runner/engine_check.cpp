// harness/runner/engine_check — one case in role plugin (see engine_check.h, docs/check-engine.md):
// per case a temp folder with the Unix socket and the engine configuration, a fresh engine process
// driven on its stdin/stdout, the probe's connection, the default handshake answer, the steps (the
// shared interpreter, check_steps.cpp), engine shutdown, and the verdict (expectations + monitor
// findings against the ENGINE side).
#include "harness/runner/engine_check.h"

#include <cerrno>
#include <charconv>
#include <cstring>
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

std::string selfExe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

}  // namespace

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
  std::vector<std::string> items(bool tools) override { return tools ? tools_ : intercept_; }
  Outcome drive(const std::string& action, const std::vector<std::string>& args, const json::Document& json) override;
  Outcome advance(dsl::Millis d) override;
  Outcome fault(dsl::FaultKind k, dsl::Millis d) override;

 private:
  bool readOptions(std::string& err);
  bool setup(std::string& err);
  void drain();
  // One driver request, answered synchronously (I/O keeps flowing meanwhile).
  Expected<json::Document, std::string> call(const std::string& method, const std::string& params);
  std::string handshakeResult() const;
  bool stepsHandleInitialize() const;
  void closePluginOutput();
  void finish();
  void teardown();

  const dsl::Case& case_;
  Target target_;
  wire::Reactor reactor_;
  std::ostringstream trace_text_;
  std::unique_ptr<trace::TraceWriter> tw_;
  Conversation conv_;
  std::string dir_, sock_path_, config_path_;
  int listen_fd_ = -1;
  // Our own descriptor of the probe's socket, for shutdown(2): plugin_ closes its read fd at EOF,
  // and a half-close must still reach the probe afterwards.
  int sock_fd_ = -1;
  std::unique_ptr<wire::Channel> engine_, plugin_;
  bool plugin_out_closed_ = false;
  std::optional<wire::ExitStatus> engine_exit_;
  std::int64_t next_driver_id_ = 1;
  std::map<std::int64_t, json::Document> replies_;
  // Options of the case (handshake / config directives).
  std::string hs_name_ = kProbeName, hs_version_ = "0.1.0", hs_protocol_;
  std::map<std::string, bool> hs_caps_;
  std::vector<std::string> tools_, intercept_;
  bool hs_answer_ = true;
  std::uint64_t startup_ms_ = 10000, grace_ms_ = 3000;
  std::string plugin_cfg_, engine_cfg_;  // extra JSON members of the plugin entry / the engine config
  bool virtual_clock_ = true;
  // `fault stall-reading D`: when reading resumes (real time); unset = not stalled.
  std::optional<wire::SteadyTime> stall_until_;
  void endStallIfDue();
};

bool PluginRoleRunner::readOptions(std::string& err) {
  hs_protocol_ = target_.profile;
  for (const auto& [k, v] : case_.handshake) {
    if (k == "name") hs_name_ = v;
    else if (k == "version") hs_version_ = v;
    else if (k == "protocol_version") hs_protocol_ = v;
    else if (k == "tools") tools_ = splitList(v);
    else if (k == "intercept") intercept_ = splitList(v);
    else if (k == "answer" && (v == "yes" || v == "no")) hs_answer_ = v == "yes";
    else if (kBoolCaps.count(k) && (v == "true" || v == "false")) hs_caps_[k] = v == "true";
    else {
      err = fmt::format("{}: unknown handshake key or value `{}={}` (name, version, protocol_version, tools=a,b, "
                        "intercept=h1,h2, answer=yes|no, resources|subscribe_events|subscribe_bus|publish_bus|"
                        "publish_session_events|producer_messaging=true|false)", case_.loc.str(), k, v);
      return false;
    }
  }
  std::string permission = "allow";
  for (const auto& kv : case_.config) {
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
      plugin_cfg_ += fmt::format(",\"{}\":{}", k, n);
      return true;
    };
    if (k == "engine_version") engine_cfg_ += ",\"engine_version\":" + quote(v);
    else if (k == "startup_timeout_ms") { if (!ms(&startup_ms_)) return false; }
    else if (k == "shutdown_grace_ms") { if (!ms(&grace_ms_)) return false; }
    else if (k == "interception_timeout_ms" || k == "tool_timeout_ms") { if (!ms(nullptr)) return false; }
    else if (k == "producer_messaging" && (v == "true" || v == "false")) {
      plugin_cfg_ += ",\"producer_messaging\":" + v;
      engine_cfg_ += ",\"producer_handler\":" + v;
    } else if (k == "producer_handler" && (v == "true" || v == "false")) {
      // The runtime producer handler alone (the plugin entry does not opt in): the engine
      // advertises producer_messaging false (INIT-24's one-sided opt-in).
      engine_cfg_ += ",\"producer_handler\":" + v;
    } else if (k == "permissions" && (v == "allow" || v == "ask" || v == "deny")) {
      permission = v;
    } else {
      err = fmt::format("{}: unknown config key or value `{} {}` in role plugin (engine_version, startup_timeout_ms, "
                        "shutdown_grace_ms, interception_timeout_ms, tool_timeout_ms, producer_messaging true|false, "
                        "producer_handler true|false, permissions allow|ask|deny)", case_.loc.str(), k, v);
      return false;
    }
  }
  engine_cfg_ += fmt::format(",\"permissions\":{{\"plugin\":{{\"*\":\"{}\"}}}}", permission);
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
std::string PluginRoleRunner::handshakeResult() const {
  auto cap = [&](const char* k) {
    auto it = hs_caps_.find(k);
    return it != hs_caps_.end() && it->second ? "true" : "false";
  };
  std::string caps = fmt::format(
      "{{\"tools\":{},\"resources\":{},\"subscribe_events\":{},\"subscribe_bus\":{},\"publish_bus\":{},"
      "\"publish_session_events\":{}",
      tools_.empty() ? "false" : "true", cap("resources"), cap("subscribe_events"), cap("subscribe_bus"),
      cap("publish_bus"), cap("publish_session_events"));
  // INIT-17: producer_messaging is required in 0.0.6 and absent from the 0.0.4 shape.
  if (hs_protocol_ != "0.0.4") caps += fmt::format(",\"producer_messaging\":{}", cap("producer_messaging"));
  caps += ",\"intercept\":[";
  for (std::size_t i = 0; i < intercept_.size(); ++i) caps += (i ? "," : "") + quote(intercept_[i]);
  caps += "]}";
  std::string tools = "[";
  for (std::size_t i = 0; i < tools_.size(); ++i)
    tools += (i ? "," : "") + fmt::format(
        "{{\"name\":{},\"description\":\"conform probe tool\",\"parameters\":{{\"type\":\"object\","
        "\"properties\":{{\"path\":{{\"type\":\"string\"}}}}}},\"permission_name\":{},\"primary_resource_param\":null}}",
        quote(tools_[i]), quote(tools_[i]));
  tools += "]";
  return fmt::format("{{\"protocol_version\":{},\"name\":{},\"version\":{},\"capabilities\":{},\"tools\":{}}}",
                     quote(hs_protocol_), quote(hs_name_), quote(hs_version_), caps, tools);
}

// A case that starts with `expect request plugin/initialize …` (or `expect frame …`) answers the
// handshake itself; so does `handshake answer=no`.
bool PluginRoleRunner::stepsHandleInitialize() const {
  if (!hs_answer_) return true;
  if (case_.steps.empty()) return false;
  const dsl::Step& s = case_.steps.front();
  return s.kind == dsl::Step::Kind::Expect &&
         (s.msg == dsl::MsgKind::Frame || (s.msg == dsl::MsgKind::Request && (s.method.empty() || s.method == "plugin/initialize")));
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
  sock_path_ = dir_ + "/probe.sock";
  config_path_ = dir_ + "/engine.json";
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, sock_path_.data(), std::min(sock_path_.size(), sizeof(addr.sun_path) - 1));
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 4) != 0) {
    err = fmt::format("cannot listen on {}: {}", sock_path_, std::strerror(errno));
    return false;
  }
  // The engine clears the probe's environment (PROTOCOL §1.2): everything goes in the arguments.
  std::string cfg = fmt::format(
      "{{\"protocol_version\":{},\"plugins\":{{\"{}\":{{\"command\":{},\"args\":[\"probe\",\"--connect\",{}]{}}}}}{}}}\n",
      quote(target_.profile), kProbeName, quote(probe), quote(sock_path_), plugin_cfg_, engine_cfg_);
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
  // Wait for the probe to connect (the engine spawns it eagerly, §16.3).
  auto deadline = wire::deadlineIn(kConnectWithin);
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      sock_fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      int wfd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      plugin_ = wire::fdChannel(reactor_, fd, wfd);
      if (tw_) tw_->note("the engine started the probe; connected");
      return true;
    }
    drain();
    if (engine_exit_) {
      err = fmt::format("the engine under test ended ({}) before starting its plugin `{}`", engine_exit_->str(), kProbeName);
      return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      err = fmt::format("the engine under test did not start its plugin `{}` within {} (see the adapter contract in "
                        "docs/check-engine.md)", kProbeName, dsl::formatDuration(kConnectWithin));
      return false;
    }
    reactor_.waitAny(std::min(deadline, wire::deadlineIn(kPollSlice)));
  }
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
  if (plugin_) {
    while (auto ev = plugin_->poll()) {
      using K = wire::ChannelEvent::Kind;
      switch (ev->kind) {
        case K::Frame:
        case K::FrameError:
          if (tw_) tw_->frameEvent(trace::Dir::EngineToPlugin, ev->frame);
          conv_.pushFrame(ev->frame.bytes, ev->frame.kind == wire::FrameEvent::Kind::Frame);
          break;
        case K::Eof:
          // The engine closed the probe's stdin (SHUT-02, or after a fatal error). A conforming
          // plugin exits on stdin EOF (SHUT-08): close our output so the probe ends.
          if (tw_) tw_->eof(trace::Dir::EngineToPlugin);
          conv_.pushEof();
          closePluginOutput();
          break;
        case K::WriteFailed:
          if (tw_) tw_->note("probe: write failed: " + ev->text);
          break;
        default:
          break;
      }
    }
  }
}

void PluginRoleRunner::closePluginOutput() {
  if (plugin_out_closed_ || sock_fd_ < 0) return;
  plugin_->flush(wire::deadlineIn(std::chrono::milliseconds(500)));
  ::shutdown(sock_fd_, SHUT_WR);  // the probe closes its stdout: the engine sees EOF
  plugin_out_closed_ = true;
  if (tw_) tw_->eof(trace::Dir::PluginToEngine);
}

void PluginRoleRunner::send(std::string_view bytes) {
  conv_.traceBytes(trace::Dir::PluginToEngine, bytes);
  if (!plugin_ || plugin_out_closed_) {
    if (tw_) tw_->note("write skipped: the probe's stdout is closed");
    return;
  }
  (void)plugin_->write(bytes);
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
  if (!stall_until_ || std::chrono::steady_clock::now() < *stall_until_) return;
  stall_until_.reset();
  if (plugin_) plugin_->stallReading(false);
  if (tw_) tw_->note("fault stall-reading over: reading again");
}

Expected<json::Document, std::string> PluginRoleRunner::call(const std::string& method, const std::string& params) {
  if (!engine_ || engine_exit_) return unexpected(std::string("the engine under test is not running"));
  std::int64_t id = next_driver_id_++;
  std::string frame = fmt::format("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":{},\"params\":{}}}", id, quote(method), params);
  if (tw_) tw_->note("driver → " + frame);
  if (!engine_->writeFrame(frame)) return unexpected(std::string("cannot write to the engine's driver stdin"));
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

std::optional<Peer::State> PluginRoleRunner::state() {
  auto r = call("plugin.status", fmt::format("{{\"plugin\":\"{}\"}}", kProbeName));
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
  drain();
  return Outcome::ok();
}

Peer::Outcome PluginRoleRunner::fault(dsl::FaultKind k, dsl::Millis d) {
  if (!plugin_) return Outcome::error("no probe connection");
  if (tw_) tw_->note(fmt::format("fault {}", toString(k)));
  switch (k) {
    case dsl::FaultKind::Disconnect:
      // The plugin closes its stdout but keeps running (FRAME-17).
      closePluginOutput();
      return Outcome::ok();
    case dsl::FaultKind::StallReading:
      // Role plugin: the stall runs in the background for D of real time while the next steps
      // drive the engine (a backlog needs events produced DURING the stall: EVT-05/14/16,
      // EMIT-11). The probe then blocks on the full socket, stops reading its stdin, and the
      // engine's pipe, channel buffer and finally its 1024-record queue fill. pumpUntil() resumes
      // reading when D is over; an `expect` waits for that.
      plugin_->stallReading(true);
      stall_until_ = wire::deadlineIn(d);
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
  if (action == "ping") return result("plugin.ping", fmt::format("{{\"plugin\":\"{}\"}}", kProbeName), nullptr);
  if (action == "shutdown") return result("engine.shutdown", "{}", nullptr);
  if (action == "flush") return result("diagnostics.flush", "{}", nullptr);
  // drive check METHOD {"params": {…}, "expect": {pattern}}: a driver method whose result must
  // match the subset pattern (docs/check-engine.md) — how a case judges what only the engine's
  // inspection interface shows (drop counters, diagnostics about the plugin itself, EVT-16).
  if (action == "check") {
    auto method = arg(0);
    const json::Value* params = json.IsObject() ? json::member(json, "params") : nullptr;
    const json::Value* pattern = json.IsObject() ? json::member(json, "expect") : nullptr;
    if (!method || !pattern)
      return Outcome::error("drive check: expected `drive check METHOD {\"params\": {…}, \"expect\": {pattern}}`");
    // Polled like `expect state`: frames the probe just sent (a hook answer) travel on another
    // channel than the driver request, so the engine may not have read them yet.
    const std::string p = params ? json::compact(*params) : std::string("{}");
    const auto deadline = wire::deadlineIn(kCheckWithin);
    while (true) {
      auto r = call(*method, p);
      if (!r) return Outcome::failure(fmt::format("drive check {}: {}", *method, r.error()), fmt::format("the driver performs {}", *method), r.error());
      drain();
      json::Captures caps;
      auto mm = json::matchSubset(*pattern, *r, caps);
      if (!mm) {
        Outcome o = Outcome::ok();
        o.doc = std::make_shared<json::Document>(std::move(*r));
        return o;
      }
      if (std::chrono::steady_clock::now() >= deadline)
        return Outcome::failure(fmt::format("driver {} result does not match within {}: {}", *method, dsl::formatDuration(kCheckWithin), mm->str()),
                                json::compact(*pattern), reports::shortenEvidence(json::compact(*r), 400));
      pumpUntil(wire::deadlineIn(kPollSlice * 5), [] { return false; });
    }
  }
  // drive call METHOD {params} [as $x]: any driver method; `as` binds its result.
  if (action == "call") {
    auto method = arg(0);
    if (!method) return Outcome::error("drive call: expected `drive call METHOD {params}`");
    return result(method->c_str(), json::compact(json), nullptr);
  }
  return Outcome::error(fmt::format("unknown drive action `{}` in role plugin (session.create, event, tool.call, ping, "
                                    "shutdown, flush, call METHOD {{params}}, check METHOD {{params, expect}})", action));
}

void PluginRoleRunner::finish() {
  if (!engine_) return;
  if (!engine_exit_) {
    // The engine shuts down as at the end of any session: plugin/shutdown, stdin close, grace, kill
    // (SHUT-01…03); closing the driver's stdin also asks for shutdown (docs/driver-protocol.md).
    (void)call("engine.shutdown", "{}");
    engine_->closeWrite(false);
    pumpUntil(wire::deadlineIn(std::chrono::milliseconds(grace_ms_) + kEngineExitSlack), [&] { return engine_exit_.has_value(); });
    if (!engine_exit_ && tw_) tw_->note("the engine under test did not exit after shutdown: killed");
  }
}

void PluginRoleRunner::teardown() {
  if (engine_) engine_->close(false);  // process group SIGKILL + bounded reap
  engine_.reset();
  if (plugin_) plugin_->close(false);  // the probe sees EOF on the socket and ends
  plugin_.reset();
  if (sock_fd_ >= 0) ::close(sock_fd_);
  sock_fd_ = -1;
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
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
  tw_ = std::make_unique<trace::TraceWriter>(trace_text_, clock::RealClock::instance(), std::move(hdr),
                                             trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  tw_->caseBegin(case_.id);
  conv_.tw = tw_.get();
  std::string err;
  std::optional<StepFailure> failure;
  if (target_.argv.empty()) err = "no engine command to test (give it after --)";
  if (err.empty() && readOptions(err) && setup(err)) {
    bool run_steps = true;
    if (!stepsHandleInitialize()) {
      // The default handshake: answer the engine's plugin/initialize from the `handshake` keys.
      Inbound* init = nullptr;
      auto found = [&] {
        for (Inbound& in : conv_.inbox)
          if (!in.consumed && in.msg == dsl::MsgKind::Request && in.method == "plugin/initialize") return (init = &in) != nullptr;
        return false;
      };
      if (!pumpUntil(wire::deadlineIn(std::chrono::milliseconds(startup_ms_) + kHandshakeSlack), found)) {
        out.result.verdict = reports::Verdict::Untested;
        out.result.skip_reason = "the engine sent no plugin/initialize (" + conv_.recentInbound(2, "engine") + ")";
        run_steps = false;
      } else {
        const json::Value* id = json::member(*init->doc, "id");
        init->consumed = true;
        send(wire::encodeFrame(fmt::format("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}}", json::compact(*id), handshakeResult())));
        if (!case_.judges_handshake) {
          std::optional<State> st;
          auto settled = [&] {
            st = state();
            return st && st->state != "connecting";
          };
          pumpUntil(wire::deadlineIn(std::chrono::milliseconds(startup_ms_) + kHandshakeSlack), settled);
          if (!st || st->state != "connected") {
            out.result.verdict = reports::Verdict::Untested;
            out.result.skip_reason = fmt::format("the handshake did not complete: {}", st ? st->state + " (" + st->reason + ")" : "no status");
            run_steps = false;
          }
        }
      }
      // The steps start with an empty inbox unless the case judges the handshake.
      if (!case_.judges_handshake)
        for (Inbound& in : conv_.inbox) in.consumed = true;
    }
    if (run_steps) {
      Interpreter interp(*this, conv_);
      interp.execAll(case_.steps);
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
