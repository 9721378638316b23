// The crash test of issue 5 (PROD-17, PROD-18, PROD-20, PROD-21): conform-engine runs with a
// journal and one producer plugin; the plugin sends 1,000 messages one after another; the test
// SIGKILLs the engine at random points, restarts it, and finally checks that every acknowledged
// message is present exactly once with its original message_id and that every retry was
// deduplicated. Bounded: at most kMaxLifetimes engine lifetimes, every wait has a deadline.
//
// The plugin is this very executable: with CONFORM_CRASH_PLUGIN=1 in its environment a static
// initializer runs the plugin loop (raw frames, not mock_plugin code: the engine and the plugin
// stay independent implementations) and exits before Catch2's main runs.
//
// Plugin state across its own restarts lives in files: `acks` (one "<index> <message_id>" line per
// ACK, written before the next send) and `dups` (one "<index> <message_id>" line per deliberate
// retry of an acknowledged send after a restart). A send whose ACK never came is commit-uncertain:
// the next plugin process re-registers and sends it again with the same key and body (PROD-21).
// Pacing uses a FIFO: the plugin writes "ready" and "ack <n>" lines the test blocks on.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>

#include "core/json/json.h"
#include "core/wire/channel.h"

namespace {

constexpr int kMessages = 1000;
constexpr int kMaxLifetimes = 120;

// ---------------------------------------------------------------------------------------------
// The plugin side
// ---------------------------------------------------------------------------------------------

void out(const std::string& frame) {
  std::fwrite(frame.data(), 1, frame.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::optional<conform::json::Document> readFrame() {
  static std::string line;
  line.clear();
  int ch;
  while ((ch = std::fgetc(stdin)) != EOF && ch != '\n') line.push_back(static_cast<char>(ch));
  if (ch == EOF) return std::nullopt;  // the engine died or closed our stdin: exit
  auto p = conform::json::parse(line);
  if (!p) return std::nullopt;
  return std::move(p->doc);
}

void appendLine(const char* env, const std::string& line) {
  const char* path = std::getenv(env);
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) std::_Exit(4);
  std::string l = line + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) std::_Exit(4);
  ::close(fd);
}

std::map<int, std::string> readPairs(const std::string& path) {
  std::map<int, std::string> m;
  std::ifstream f(path);
  int i;
  std::string id;
  while (f >> i >> id) m[i] = id;
  return m;
}

std::string sendParams(const std::string& session, const std::string& producer, int i) {
  return R"({"session_id":")" + session + R"(","producer_id":")" + producer + R"(","mode":")" +
         (i % 2 ? "queue" : "steer") + R"(","idempotency_key":"key-)" + std::to_string(i) +
         R"(","description":"crash test message )" + std::to_string(i) + R"(","body":"body of message )" +
         std::to_string(i) + R"("})";
}

// Sends one request and reads frames until its response; nullopt on EOF.
std::optional<conform::json::Document> request(std::int64_t id, const std::string& method,
                                              const std::string& params) {
  out(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method + R"(","params":)" + params + "}");
  for (;;) {
    auto f = readFrame();
    if (!f) return std::nullopt;
    const conform::json::Value* i = conform::json::member(*f, "id");
    if (i && i->IsInt64() && i->GetInt64() == id && !conform::json::member(*f, "method")) return f;
  }
}

[[noreturn]] void pluginMain() {
  auto init = readFrame();
  if (!init) std::_Exit(0);
  out(R"({"jsonrpc":"2.0","id":1,"result":{"protocol_version":"0.0.6","name":"crashy","version":"1","capabilities":{"tools":false,"resources":false,"subscribe_events":true,"subscribe_bus":false,"publish_bus":false,"publish_session_events":false,"producer_messaging":true,"intercept":[]},"tools":[]}})");
  std::string session;
  while (session.empty()) {
    auto f = readFrame();
    if (!f) std::_Exit(0);
    auto m = conform::json::stringMember(*f, "method");
    if (m && *m == "plugin/recovery/start") appendLine("CRASH_FIFO", "ready");
    if (m && *m == "plugin/event") session = std::string(conform::json::stringMember((*f)["params"], "session_id").value_or(""));
  }
  std::int64_t id = 10;
  auto reg = request(id++, "plugin/producer/register", R"({"session_id":")" + session + R"("})");
  if (!reg) std::_Exit(0);
  if (!reg->HasMember("result")) std::_Exit(5);
  std::string producer = (*reg)["result"]["producer_id"].GetString();  // PROD-06: never reused
  auto acks = readPairs(std::getenv("CRASH_ACKS"));
  int next = acks.empty() ? 0 : acks.rbegin()->first + 1;
  if (next > 0) {
    // A deliberate retry of the last acknowledged send: it must return the original id.
    int i = next - 1;
    auto r = request(id++, "plugin/producer/send", sendParams(session, producer, i));
    if (!r) std::_Exit(0);
    if (!r->HasMember("result")) std::_Exit(6);
    appendLine("CRASH_DUPS", std::to_string(i) + " " + (*r)["result"]["message_id"].GetString());
  }
  for (int i = next; i < kMessages; ++i) {
    auto r = request(id++, "plugin/producer/send", sendParams(session, producer, i));
    if (!r) std::_Exit(0);  // ACK lost with the engine: commit-uncertain, retried next time
    if (!r->HasMember("result")) std::_Exit(7);
    appendLine("CRASH_ACKS", std::to_string(i) + " " + (*r)["result"]["message_id"].GetString());
    appendLine("CRASH_FIFO", "ack");
  }
  appendLine("CRASH_FIFO", "done");
  while (readFrame()) {
  }
  std::_Exit(0);
}

const bool kIsPlugin = [] {
  if (const char* v = std::getenv("CONFORM_CRASH_PLUGIN"); v && std::string(v) == "1") pluginMain();
  return false;
}();

// ---------------------------------------------------------------------------------------------
// The test side
// ---------------------------------------------------------------------------------------------

using namespace conform;
using Clock = std::chrono::steady_clock;

struct EngineProc {
  wire::Reactor reactor;
  std::unique_ptr<wire::Channel> ch;
  std::int64_t next_id = 1;

  explicit EngineProc(const std::string& config) {
    wire::SpawnOptions o;
    o.program = std::string(CONFORM_BIN_DIR) + "/conform-engine";
    o.args = {"--config", config, "--driver", "stdio"};
    wire::SpawnError err;
    ch = wire::spawnProcess(reactor, o, &err);
    REQUIRE(ch);
  }
  json::Document call(const std::string& method, const std::string& params) {
    std::int64_t id = next_id++;
    REQUIRE(ch->writeFrame(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
                           R"(","params":)" + params + "}"));
    auto deadline = Clock::now() + std::chrono::seconds(20);
    for (;;) {
      auto ev = ch->next(deadline);
      REQUIRE(ev);  // deadline
      REQUIRE(ev->kind != wire::ChannelEvent::Kind::Exited);
      if (ev->kind != wire::ChannelEvent::Kind::Frame) continue;
      auto p = json::parse(ev->frame.bytes);
      REQUIRE(p);
      const json::Value* i = json::member(p->doc, "id");
      if (i && i->IsInt64() && i->GetInt64() == id) {
        INFO(ev->frame.bytes);
        REQUIRE(p->doc.HasMember("result"));
        return std::move(p->doc);
      }
    }
  }
  void kill9() {
    ch->signal(SIGKILL);
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!ch->exitStatus()) {
      auto ev = ch->next(deadline);
      REQUIRE(ev);
    }
  }
};

// Reads one line from the FIFO, waiting at most `ms`.
std::optional<std::string> fifoLine(int fd, std::string& buf, int ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      std::string l = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return l;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char tmp[4096];
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n > 0) buf.append(tmp, static_cast<std::size_t>(n));
  }
}

void reapOrphans() {
  // We are a child subreaper: plugins orphaned by a killed engine come back to us.
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

TEST_CASE("PROD-17 PROD-18 PROD-20 PROD-21 SIGKILL at random points during 1,000 producer sends loses nothing and duplicates nothing", "[engine_crash]") {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/conform-crash-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  fs::path dir = tmpl;
  std::string fifo = (dir / "fifo").string(), acks = (dir / "acks").string(), dups = (dir / "dups").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  int fifo_fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);  // RDWR: never blocks, never EOF
  REQUIRE(fifo_fd >= 0);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string config = (dir / "engine.json").string();
  {
    std::ofstream f(config);
    f << R"({"producer_handler":true,"journal_dir":)" << json::compact(json::Value(rapidjson::StringRef((dir / "journal").c_str())))
      << R"(,"plugins":{"crashy":{"command":)" << json::compact(json::Value(rapidjson::StringRef(self.c_str())))
      << R"(,"producer_messaging":true,"env":{"CONFORM_CRASH_PLUGIN":"1","CRASH_ACKS":")" << acks
      << R"(","CRASH_DUPS":")" << dups << R"(","CRASH_FIFO":")" << fifo << R"("}}}})";
  }
  std::mt19937 rng(Catch::rngSeed());
  std::string session, buf;
  int kills = 0, lifetimes = 0;
  bool done = false;
  while (!done && lifetimes < kMaxLifetimes) {
    ++lifetimes;
    EngineProc e(config);
    if (session.empty()) session = e.call("session.create", "{}")["result"]["session_id"].GetString();
    // Lines the previous plugin wrote after we stopped reading (an ACK racing the kill) come first.
    std::optional<std::string> ready;
    while ((ready = fifoLine(fifo_fd, buf, 20000)) && *ready != "ready") {
    }
    REQUIRE(ready);
    // The event tells the plugin the session (it registers anew every lifetime, PROD-06).
    e.call("event.append", R"({"session_id":")" + session + R"(","event":{"type":"crash_test_tick"}})");
    // Kill after a random number of ACKs, plus a random sub-millisecond offset, so kills land
    // before, during and after the journal write and the ACK of the next send.
    int target = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int seen = 0; seen < target && !done;) {
      auto l = fifoLine(fifo_fd, buf, 20000);
      REQUIRE(l);
      if (*l == "ack") ++seen;
      if (*l == "done") done = true;
    }
    if (done) {
      e.call("engine.shutdown", R"({"wait":true})");
      break;
    }
    ::usleep(std::uniform_int_distribution<unsigned>(0, 800)(rng));
    e.kill9();
    ++kills;
    reapOrphans();
  }
  REQUIRE(done);
  // A final lifetime replays the journal once more and answers the inspection.
  EngineProc e(config);
  std::optional<std::string> ready;
  while ((ready = fifoLine(fifo_fd, buf, 20000)) && *ready != "ready") {
  }
  REQUIRE(ready);
  auto msgs = e.call("producer.messages", R"({"session_id":")" + session + R"("})");
  auto ack = readPairs(acks);
  auto dup = readPairs(dups);
  std::map<std::string, std::string> by_key;  // key -> message id
  std::size_t stored = 0;
  std::set<std::string> ids;
  std::map<std::string, int> states;  // PROD-43: queue messages start runs, steer ones wait for one
  for (auto& m : msgs["result"]["messages"].GetArray()) {
    ++stored;
    states[m["state"].GetString()]++;
    std::string k = m["idempotency_key"].GetString(), id = m["message_id"].GetString();
    CHECK(by_key.count(k) == 0);  // exactly once per key
    by_key[k] = id;
    ids.insert(id);
  }
  int losses = 0, mismatched_retries = 0;
  for (auto& [i, id] : ack)
    if (by_key["key-" + std::to_string(i)] != id) ++losses;
  for (auto& [i, id] : dup)
    if (ack[i] != id) ++mismatched_retries;
  e.call("engine.shutdown", R"({"wait":true})");
  reapOrphans();
  ::close(fifo_fd);
  std::fprintf(stderr,
               "crash test: lifetimes=%d kills=%d acked=%zu stored=%zu distinct_ids=%zu retries=%zu "
               "mismatched_retries=%d losses=%d\n",
               lifetimes, kills, ack.size(), stored, ids.size(), dup.size(), mismatched_retries, losses);
  std::fprintf(stderr, "crash test: message states at the end: waiting=%d claimed=%d consumed=%d discarded=%d\n",
               states["waiting"], states["claimed"], states["consumed"], states["discarded"]);
  CHECK(states["discarded"] == 0);  // nobody discarded anything
  CHECK(ack.size() == static_cast<std::size_t>(kMessages));
  CHECK(stored == static_cast<std::size_t>(kMessages));
  CHECK(ids.size() == stored);
  CHECK(losses == 0);
  CHECK(mismatched_retries == 0);
  CHECK(kills > 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}
