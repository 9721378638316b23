// tests/nanopi/restart_test — a guest runner that stops answering is restarted by HostSession: the
// stuck call ends as a failure after its budget + kRunnerSlack, the component is loaded again in a
// fresh runner (no list-* call repeated) and later deliveries go on (NP-22). The runner here is a
// tiny fake (node) that never answers handle-event unless the payload says "answer".
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/json/json.h"
#include "mock_engine/nanopi/events.h"
#include "mock_engine/nanopi/session.h"

using namespace conform;
namespace fs = std::filesystem;

namespace {
const char* kFakeRunner = R"JS(
import readline from 'node:readline';
const rl = readline.createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'load') send({ jsonrpc: '2.0', id: m.id, result: { world: 'extension-events', instantiated: true,
    exports: ['list-tools', 'execute-tool', 'list-commands', 'execute-command', 'list-events', 'handle-event'],
    imports: [], unsupported_imports: [], load_ms: 1, transpile_ms: 1, instantiate_ms: 1 } });
  else if (m.method === 'call') {
    const e = m.params.export;
    const v = e === 'list-events' ? '["turn_start","input"]' : e === 'handle-event' ? '{}' : '[]';
    if (e === 'handle-event' && !m.params.args[1].includes('answer')) return;  // stuck
    send({ jsonrpc: '2.0', id: m.id, result: { outcome: 'ok', value: v, guest_ms: 0, elapsed_ms: 0, rebuilt: false } });
  } else if (m.method === 'shutdown') { send({ jsonrpc: '2.0', id: m.id, result: {} }); process.exit(0); }
});
rl.on('close', () => process.exit(0));
)JS";
}  // namespace

TEST_CASE("NP-22 a runner that stops answering is restarted and delivery goes on without list-* again", "[nanopi][e2e]") {
  fs::path dir = fs::temp_directory_path() / ("conform-np-fake-" + std::to_string(::getpid()));
  fs::create_directories(dir / "nanopi");
  std::ofstream(dir / "nanopi" / "runner.mjs") << kFakeRunner;
  std::ofstream(dir / "nanopi" / "package.json") << R"({"type":"module"})";
  wire::Reactor reactor;
  nanopi::HostSession s{reactor, clock::RealClock::instance()};
  REQUIRE(s.start(nanopi::runnerDir(dir.string())));
  nanopi::ExtensionConfig c;
  c.path = "fake.wasm";
  c.events = std::vector<std::string>{"turn_start", "input"};
  REQUIRE(s.load(c, {}));
  REQUIRE(s.host()->loadState() == nanopi::Host::LoadState::Loaded);
  json::Document none(rapidjson::kObjectType);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(s.deliver("turn_start", *nanopi::buildPayload("turn_start", none)) == nanopi::Delivery::Status::Delivered);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s.host()->deliveries().back().status == nanopi::Delivery::Status::Failed);
  CHECK(ms < nanopi::kEventBudgetMs + nanopi::kRunnerSlack.count() + 3000);
  CHECK(s.host()->rebuilds() == 1);
  json::Document f(rapidjson::kObjectType);
  f.AddMember("prompt", "answer me", f.GetAllocator());
  CHECK(s.deliver("input", *nanopi::buildPayload("input", f)) == nanopi::Delivery::Status::Delivered);
  CHECK(s.host()->deliveries().back().status == nanopi::Delivery::Status::Delivered);
  CHECK(s.host()->listCalls(nanopi::GuestCall::Purpose::ListEvents) == 1);
  bool logged = false;
  for (const auto& l : s.host()->log()) logged = logged || l.find("stopped answering") != std::string::npos;
  CHECK(logged);
  s.shutdown();
  fs::remove_all(dir);
}
