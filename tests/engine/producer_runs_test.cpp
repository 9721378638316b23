// Producer messages consumed by runs (PROD-43 steer versus queue placement, PROD-29/30 claims seen
// from a real run) and the durability of session events (issue 5 "Durability": every session
// event, hook audit records and plugin diagnostics included, goes through the journal and survives
// an engine restart). In process on the virtual clock; the plugin side is played with raw frames.
#include <set>

#include "mock_engine/runtime.h"
#include "tests/engine/producer_rig.h"

using namespace enginetest;
using namespace std::chrono_literals;

namespace {

json::Document parseObj(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p);
  return std::move(p->doc);
}

// A producer rig with the simulated runtime attached (as conform-engine's driver does) and
// plugins that may intercept hooks; hook requests are answered by hand.
struct RunRig : ProdRig {
  std::unique_ptr<Runtime> rt;
  std::set<std::int64_t> answered;

  explicit RunRig(std::vector<std::string> names = {"alpha"}) : ProdRig(std::move(names)) {}

  // Boots with `intercept` (JSON array) on the first plugin, installs runtime + producers.
  void up(const std::string& intercept = "[]") {
    engine = std::make_unique<Engine>(cfg, host, clk);
    std::optional<Journal> j;
    if (journal_dir) {
      auto o = Journal::open(*journal_dir);
      REQUIRE(o);
      j.emplace(std::move(*o));
    }
    svc = std::make_unique<ProducerService>(*engine, std::move(j));
    engine->start();
    for (auto& p : cfg.plugins) {
      Caps c;
      c.producer_messaging = true;
      c.subscribe_events = true;
      if (p.name == cfg.plugins.front().name) c.intercept = intercept;
      answerInit(p.name, c);
    }
    rt = std::make_unique<Runtime>(*engine);
    rt->setProducers(svc.get());
  }
  // The engine process "crashes" and comes back on the same journal.
  void crashAndRestart(const std::string& intercept = "[]") {
    rt.reset();
    svc.reset();
    engine.reset();
    host.procs.clear();
    answered.clear();
    up(intercept);
  }
  std::optional<json::Document> openHook(const std::string& hook) {
    for (auto& f : written("alpha")) {
      auto p = json::parse(f);
      REQUIRE(p);
      auto m = json::stringMember(p->doc, "method");
      const json::Value* id = json::member(p->doc, "id");
      if (m && id && *m == "plugin/intercept/" + hook && !answered.count(id->GetInt64()))
        return std::move(p->doc);
    }
    return std::nullopt;
  }
  json::Document answer(const std::string& hook, const std::string& result) {
    auto req = openHook(hook);
    REQUIRE(req);
    std::int64_t id = (*req)["id"].GetInt64();
    answered.insert(id);
    send("alpha", R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":)" + result + "}");
    return std::move(*req);
  }
  std::string run(const std::string& session, const std::string& script_json) {
    auto script = parseRunScript(parseObj(script_json));
    REQUIRE(script);
    auto id = rt->startRun(session, std::move(*script), std::nullopt);
    REQUIRE(id);
    return *id;
  }
  MessageState state(const std::string& id) { return svc->message(id)->state; }
  std::string mid(const json::Document& ack) { return str(ack["result"], "message_id"); }
  static bool mentions(const RunRecord& rec, std::size_t attempt, const std::string& text) {
    REQUIRE(rec.requests.size() > attempt);
    return json::compact(*rec.requests[attempt]).find(text) != std::string::npos;
  }
};

const std::string kBeforeRequest = R"(["model_before_request"])";
const std::string kKeep = R"({"action":"keep"})";

}  // namespace

TEST_CASE("PROD-43 PROD-29 a steer message joins the active run at its next steering boundary, claimed before model_before_request", "[engine][producer][runs]") {
  RunRig r;
  r.up(kBeforeRequest);
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto run = r.run(s, R"({"input":"go","turns":[{"text":"first"},{"text":"second"}]})");
  REQUIRE(r.openHook("model_before_request"));  // attempt 1 is being prepared
  auto m = r.mid(r.sendMsg("alpha", s, p, "k1", "STEER-BODY", "steer"));
  r.advance(0ms);
  CHECK(r.state(m) == MessageState::Waiting);  // attempt 1 claimed before the message existed
  CHECK(r.answer("model_before_request", kKeep)["params"]["messages"].Size() == 2);  // system, user
  // Attempt 2 is the next steering boundary: claimed before its model_before_request (PROD-29).
  auto req2 = r.openHook("model_before_request");
  REQUIRE(req2);
  CHECK(r.state(m) == MessageState::Claimed);
  CHECK(json::compact((*req2)["params"]["messages"]).find("STEER-BODY") != std::string::npos);
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard",
                             R"({"session_id":")" + s + R"(","message_id":")" + m + R"("})")) == -32047);
  r.answer("model_before_request", kKeep);
  // Prepared: consumed, never back to waiting (PROD-30).
  CHECK(r.state(m) == MessageState::Consumed);
  const RunRecord& rec = *r.rt->run(run);
  CHECK(rec.state == RunRecord::State::Completed);
  CHECK_FALSE(RunRig::mentions(rec, 0, "STEER-BODY"));
  CHECK(RunRig::mentions(rec, 1, "STEER-BODY"));
  CHECK(rec.producer_messages == std::vector<std::string>{m});
  CHECK(r.rt->runsOf(s).size() == 1);  // steering never starts a run of its own
  bool audited = false;
  for (auto& e : r.engine->session(s)->log)
    audited = audited || (e.type == "user_input_submitted" && e.payload->find(m) != std::string::npos);
  CHECK(audited);
}

TEST_CASE("PROD-43 a steer message sent while the session is idle is the next run's input, not a run of its own", "[engine][producer][runs]") {
  RunRig r;
  r.up();
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto m = r.mid(r.sendMsg("alpha", s, p, "k1", "IDLE-STEER", "steer"));
  r.advance(1s);
  CHECK(r.rt->runsOf(s).empty());
  CHECK(r.state(m) == MessageState::Waiting);
  auto run = r.run(s, R"({"input":"hello"})");
  const RunRecord& rec = *r.rt->run(run);
  REQUIRE(rec.state == RunRecord::State::Completed);
  CHECK(RunRig::mentions(rec, 0, "IDLE-STEER"));
  CHECK(r.state(m) == MessageState::Consumed);
}

TEST_CASE("PROD-43 a queue message waits for an idle session and then starts a new turn with its body as input", "[engine][producer][runs]") {
  RunRig r;
  r.up(kBeforeRequest);
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto first = r.run(s, R"({"input":"go","turns":[{"text":"a"},{"text":"b"}]})");
  auto m = r.mid(r.sendMsg("alpha", s, p, "q1", "QUEUE-BODY", "queue"));
  r.advance(0ms);
  r.answer("model_before_request", kKeep);
  r.advance(0ms);
  // Busy: not steered into the active run, no second run.
  CHECK(r.state(m) == MessageState::Waiting);
  CHECK(r.rt->runsOf(s).size() == 1);
  r.answer("model_before_request", kKeep);
  CHECK(r.rt->run(first)->state == RunRecord::State::Completed);
  CHECK_FALSE(RunRig::mentions(*r.rt->run(first), 1, "QUEUE-BODY"));
  r.advance(0ms);  // idle now: the queue message starts the next turn
  auto runs = r.rt->runsOf(s);
  REQUIRE(runs.size() == 2);
  CHECK(runs[1]->origin == "producer_queue");
  CHECK(r.state(m) == MessageState::Claimed);  // its request is being prepared
  auto req = r.answer("model_before_request", kKeep);
  CHECK(json::compact(req["params"]["messages"]).find("QUEUE-BODY") != std::string::npos);
  CHECK(r.state(m) == MessageState::Consumed);
  CHECK(runs[1]->state == RunRecord::State::Completed);
  CHECK(runs[1]->input == "QUEUE-BODY");
  CHECK(runs[1]->producer_messages == std::vector<std::string>{m});
  r.advance(0ms);
  CHECK(r.rt->runsOf(s).size() == 2);  // consumed once: no further run
}

TEST_CASE("PROD-43 queue messages on an idle session run one turn each, in acceptance order", "[engine][producer][runs]") {
  RunRig r;
  r.up();
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto m1 = r.mid(r.sendMsg("alpha", s, p, "q1", "ONE", "queue"));
  auto m2 = r.mid(r.sendMsg("alpha", s, p, "q2", "TWO", "queue"));
  for (int i = 0; i < 4; ++i) r.advance(0ms);
  auto runs = r.rt->runsOf(s);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0]->input == "ONE");
  CHECK(runs[1]->input == "TWO");
  CHECK(r.state(m1) == MessageState::Consumed);
  CHECK(r.state(m2) == MessageState::Consumed);
}

TEST_CASE("PROD-30 a queue message whose run ends before its request is prepared returns to waiting and can be discarded", "[engine][producer][runs]") {
  RunRig r;
  r.up(R"(["model_before_select"])");
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto m = r.mid(r.sendMsg("alpha", s, p, "q1", "BLOCKED", "queue"));
  r.advance(0ms);
  REQUIRE(r.rt->runsOf(s).size() == 1);
  CHECK(r.state(m) == MessageState::Claimed);
  r.answer("model_before_select", R"({"action":"block","reason":"no model today"})");
  CHECK(r.rt->runsOf(s)[0]->state == RunRecord::State::Blocked);
  CHECK(r.state(m) == MessageState::Waiting);
  r.advance(0ms);
  CHECK(r.rt->runsOf(s).size() == 1);  // not retried in a loop
  CHECK(ProdRig::code(r.call("alpha", "plugin/producer/discard",
                             R"({"session_id":")" + s + R"(","message_id":")" + m + R"("})")) == 0);
  CHECK(r.state(m) == MessageState::Discarded);
}

TEST_CASE("PROD-43 a queue message accepted before a crash starts its turn after the restart", "[engine][producer][runs][journal]") {
  TempDir dir;
  RunRig r;
  r.journal_dir = dir.path;
  r.up(R"(["model_before_select"])");
  std::string s = r.svc->createSession();
  auto p = r.registerProducer("alpha", s);
  auto m = r.mid(r.sendMsg("alpha", s, p, "q1", "SURVIVES", "queue"));
  r.advance(0ms);
  REQUIRE(r.state(m) == MessageState::Claimed);  // the run waits on model_before_select
  r.crashAndRestart();  // the claim was not journaled: waiting again
  r.advance(0ms);
  auto runs = r.rt->runsOf(s);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0]->input == "SURVIVES");
  CHECK(runs[0]->state == RunRecord::State::Completed);
  CHECK(r.state(m) == MessageState::Consumed);
}

TEST_CASE("issue 5 durability: session events, hook audit records and plugin diagnostics are journaled and survive a restart", "[engine][journal][runs]") {
  TempDir dir;
  RunRig r;
  r.journal_dir = dir.path;
  r.up(R"(["user_before_input","agent_before_start"])");
  std::string s = r.svc->createSession();
  auto run = r.run(s, R"({"input":"original"})");
  r.answer("user_before_input", R"({"action":"transform","new_text":"rewritten"})");
  // agent_before_start injects a message (message_injected, HOOK-31).
  r.answer("agent_before_start", R"({"inject_message":{"role":"user","content":"INJECTED"}})");
  REQUIRE(r.rt->run(run)->state == RunRecord::State::Completed);
  r.engine->recordPluginDiagnostic(s, "alpha", "hook_blocked", "a recorded hook diagnostic");
  r.advance(200ms);  // the coalescer flushes (QUOTA-13)
  std::vector<std::string> before;
  std::set<std::string> types;
  for (auto& e : r.engine->session(s)->log) {
    before.push_back(std::to_string(e.seq) + " " + e.timestamp + " " + e.source_plugin + " " + *e.payload);
    types.insert(e.type);
  }
  for (const char* t : {"message_injected", "user_input_submitted", "user_input_transformed", "plugin_diagnostic",
                        "run_started", "run_completed"})
    CHECK(types.count(t) == 1);
  r.crashAndRestart();
  const Session* restored = r.engine->session(s);
  REQUIRE(restored);
  std::vector<std::string> after;
  for (auto& e : restored->log)
    after.push_back(std::to_string(e.seq) + " " + e.timestamp + " " + e.source_plugin + " " + *e.payload);
  CHECK(after == before);
  // New appends continue the sequence (EVT-05) and are journaled as well.
  auto seq = r.engine->appendEvent(s, parseObj(R"({"type":"custom_marker"})"));
  REQUIRE(seq);
  CHECK(*seq == before.size() + 1);
  r.crashAndRestart();
  CHECK(r.engine->session(s)->log.size() == before.size() + 1);
  CHECK(r.engine->session(s)->log.back().type == "custom_marker");
}

TEST_CASE("issue 5 durability: without a journal nothing is persisted and a restart starts empty", "[engine][journal][runs]") {
  RunRig r;
  r.up();
  std::string s = r.svc->createSession();
  r.run(s, R"({"input":"x"})");
  REQUIRE_FALSE(r.engine->session(s)->log.empty());
  r.crashAndRestart();
  CHECK(r.engine->session(s) == nullptr);
}

TEST_CASE("EVT-04 durability: a buffered session's prefix is journaled when it is persisted, not before", "[engine][journal][runs]") {
  TempDir dir;
  RunRig r;
  r.journal_dir = dir.path;
  r.up();
  std::string buffered = r.svc->createSession(false);
  std::string later = r.svc->createSession(false);
  for (const char* t : {"one", "two"}) {
    REQUIRE(r.engine->appendEvent(buffered, parseObj(std::string(R"({"type":"custom","n":")") + t + "\"}")));
    REQUIRE(r.engine->appendEvent(later, parseObj(std::string(R"({"type":"custom","n":")") + t + "\"}")));
  }
  REQUIRE(r.engine->persistSession(buffered));
  r.crashAndRestart();
  // Persisted: both records, same seqs. Never persisted: nothing was durable, so nothing returns.
  REQUIRE(r.engine->session(buffered));
  REQUIRE(r.engine->session(buffered)->log.size() == 2);
  CHECK(r.engine->session(buffered)->log.front().seq == 1);
  CHECK(r.engine->session(buffered)->log.back().payload->find("two") != std::string::npos);
  REQUIRE(r.engine->session(later));  // the session record itself was journaled
  CHECK(r.engine->session(later)->log.empty());
}
