// mock_plugin/fixture_producer.cpp — producer and recovery fixture tools (fixture.h,
// docs/sdk-fixture-producer.md). The SDK's producer rules (SDK-09…23, PROD-21/25, RPC-18) are
// about what the producer API does for an author; a case sees them only through a plugin whose
// handlers call that API on demand and report what it returned. So:
//
//   * fixture_producer {action, handle?, session_id?, body?, description?, mode?, key?,
//     message_id?, count?} calls one producer API operation. Handles live in a table keyed by the
//     case's handle name and outlive the tool call that made them (SDK-09). The answer is a single
//     text output: "ok" or "error: KIND[ CODE]" (the SDK's ErrorKind), with the value (producer_id,
//     message_id, error message) in `display`, so a case matches the outcome exactly and captures
//     the value.
//   * fixture_recovery {action, …} resolves a recovery callback that waits for the case
//     (CONFORM_FIXTURE_RECOVERY=await): ready, fail with a message, register+send, discard.
//   * CONFORM_FIXTURE_RECOVERY selects the recovery callback: unset/"ready" (ready at once),
//     "await" (waits for fixture_recovery), "none" (no callback: the SDK's own default, SDK-16).
//   * CONFORM_FIXTURE_OUTBOX names a file where sends that got no ACK are kept (the author's
//     outbox): a send cut by a disconnect (TransportClosed) stays there and is retried with the same
//     body, mode and key after the next recovery starts, on a fresh registration (SDK-23, PROD-21).
//
// Fixture faults (producerFixtureFaults) make one fixture tool or callback misbehave the way a
// faulty SDK would, so the case for that rule FAILs.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "mock_plugin/fixture.h"

namespace conform::plugin {

namespace {

constexpr const char* kEnvRecovery = "CONFORM_FIXTURE_RECOVERY";
constexpr const char* kEnvOutbox = "CONFORM_FIXTURE_OUTBOX";
// A flood is a few hundred calls at most: 129 shows the 128-reply bound (SDK-19/20); more only
// burns the case's time.
constexpr std::int64_t kMaxFlood = 1000;

const std::vector<FixtureFault> kFaults = {
    {"producer_handle_one_shot", "SDK-09", "a producer handle stops working once the tool call that registered it answered"},
    {"producer_steer_shortcut_queues", "SDK-10", "the steer shortcut sends mode \"queue\""},
    {"producer_unregister_consumes_handle", "SDK-12", "a rejected unregister consumes the handle: the retry fails locally, nothing is written"},
    {"producer_discard_needs_registration", "SDK-13", "discard is refused locally after unregister and without a registration"},
    {"recovery_error_reported_ready", "SDK-14", "a failing recovery callback is reported as status ready"},
    {"recovery_reader_blocked", "SDK-15", "a reply to a request made by the recovery callback never reaches it"},
    {"recovery_missing_callback_hangs", "SDK-16", "without a recovery callback plugin/recovery/complete is never sent"},
    {"producer_pending_bound_64", "SDK-19", "producer calls fail locally beyond 64 pending replies instead of 128"},
    {"producer_overflow_written", "SDK-20", "a producer call beyond 128 pending replies is still written once a reply frees a slot"},
    {"producer_disconnect_as_rejection", "SDK-23", "a call cut by a disconnect fails as an engine rejection, not TransportClosed: no retry"},
    {"producer_retry_new_key", "PROD-21", "the commit-uncertain send is retried with a new idempotency key"},
    {"producer_drop_unregisters", "PROD-25", "dropping a producer handle unregisters it"},
    {"producer_shared_id_space", "RPC-18", "an engine request with the id of a pending plugin request resolves that request and goes unanswered"},
};

std::string kindText(const SdkError& e) {
  std::string s = std::string("error: ") + toString(e.kind);
  if (e.kind == ErrorKind::Rpc) s += " " + std::to_string(e.code);
  return s;
}

// One fixture answer: the outcome as text, the value in display (an empty value: no display).
void answer(ToolReply reply, std::string status, std::string value = {}) {
  ToolResult r = ToolResult::success(std::move(status));
  if (!value.empty()) r.withDisplay(std::move(value));
  reply.ok(std::move(r));
}
void answerError(ToolReply reply, const SdkError& e) { answer(std::move(reply), kindText(e), e.message); }

std::string arg(const json::Value& args, const char* name, std::string dflt = {}) {
  return std::string(json::stringMember(args, name).value_or(dflt));
}

// The author's outbox (SDK-23, PROD-21): sends written but not answered. One JSON object a line.
struct OutboxEntry {
  std::string session_id, mode, key, description, body;
};

struct State {
  std::string fault;
  std::map<std::string, ProducerHandle> handles;    // SDK-09: kept across tool calls
  std::set<std::string> consumed;                   // fault producer_unregister_consumes_handle
  std::set<std::string> registered_sessions;        // fault producer_discard_needs_registration
  std::set<std::string> unregistered;               // handles closed by unregister (same fault)
  std::optional<RecoveryDone> parked;               // CONFORM_FIXTURE_RECOVERY=await
  Context recovery_ctx;
  std::string outbox_path;
  std::map<std::uint64_t, OutboxEntry> outbox;      // by local sequence number
  std::uint64_t next_entry = 1;

  bool is(std::string_view f) const { return fault == f; }

  void saveOutbox() const {
    if (outbox_path.empty()) return;
    std::ofstream out(outbox_path, std::ios::trunc);
    for (const auto& [n, e] : outbox) {
      json::Document d(rapidjson::kObjectType);
      auto& a = d.GetAllocator();
      d.AddMember("session_id", json::str(e.session_id, a), a);
      d.AddMember("mode", json::str(e.mode, a), a);
      d.AddMember("key", json::str(e.key, a), a);
      d.AddMember("description", json::str(e.description, a), a);
      d.AddMember("body", json::str(e.body, a), a);
      out << json::compact(d) << '\n';
    }
    // FRAME-02: diagnostics on stderr. Without the file the retry after a reconnect cannot happen,
    // so say why (an unwritable CONFORM_FIXTURE_OUTBOX is a setup problem, not an SDK verdict).
    if (!out.flush()) std::cerr << "fixture_producer: cannot write the outbox " << outbox_path << '\n';
  }
  void loadOutbox() {
    if (outbox_path.empty()) return;
    std::ifstream in(outbox_path);
    for (std::string line; std::getline(in, line);) {
      auto p = json::parse(line);
      if (!p) continue;  // a torn line of a killed process: nothing to retry
      OutboxEntry e{arg(p->doc, "session_id"), arg(p->doc, "mode"), arg(p->doc, "key"),
                    arg(p->doc, "description"), arg(p->doc, "body")};
      outbox[next_entry++] = std::move(e);
    }
  }
};

std::optional<DeliveryMode> parseMode(std::string_view m) {
  if (m == "steer") return DeliveryMode::Steer;
  if (m == "queue") return DeliveryMode::Queue;
  return std::nullopt;
}

// Sends one message through the handle and keeps it in the outbox until the engine answered.
// `done` gets the receipt or the SDK error. A TransportClosed leaves the entry (commit-uncertain,
// SDK-23); any answer or local refusal removes it.
void sendTracked(const std::shared_ptr<State>& st, ProducerHandle h, OutboxEntry e, DeliveryMode mode,
                 ReceiptDone done) {
  auto key = IdempotencyKey::make(e.key);
  if (!key) return done(unexpected(key.error()));
  std::uint64_t n = st->next_entry++;
  st->outbox[n] = e;
  st->saveOutbox();
  h.send(e.body, e.description, mode, *key, [st, n, done](Result<std::string> r) {
    SdkError err = r ? SdkError{} : r.error();
    if (!r && err.kind == ErrorKind::TransportClosed && st->is("producer_disconnect_as_rejection"))
      err = SdkError{ErrorKind::Rpc, "connection lost", -32603};  // the fault: looks like a rejection
    if (r || err.kind != ErrorKind::TransportClosed) {
      st->outbox.erase(n);
      st->saveOutbox();
    }
    if (r) return done(std::move(r));
    done(unexpected(err));
  });
}

// After a reconnect: every commit-uncertain send again, on a fresh registration, with the same
// body, mode and key (SDK-23, PROD-21); then `then`.
void retryOutbox(const std::shared_ptr<State>& st, Context ctx, std::function<void()> then) {
  if (st->outbox.empty()) return then();
  auto first = st->outbox.begin();
  OutboxEntry e = first->second;
  st->outbox.erase(first);
  st->saveOutbox();
  if (st->is("producer_retry_new_key")) e.key += "-retry";
  ctx.registerProducer(e.session_id, [st, ctx, e, then](Result<ProducerHandle> h) {
    if (!h) {
      ctx.log("fixture_producer: outbox retry: register failed: " + h.error().str());
      return retryOutbox(st, ctx, then);
    }
    sendTracked(st, h.value(), e, parseMode(e.mode).value_or(DeliveryMode::Steer),
                [st, ctx, then](Result<std::string> r) {
                  ctx.log(r ? "fixture_producer: outbox retry accepted: " + r.value()
                            : "fixture_producer: outbox retry failed: " + r.error().str());
                  retryOutbox(st, ctx, then);
                });
  });
}

// ---- fixture_producer -----------------------------------------------------------------------

constexpr const char* kProducerSchema = R"({"type":"object","properties":{
  "action":{"enum":["register","send","steer","queue","unregister","discard","discard_ctx","drop_handle","flood"]},
  "handle":{"type":"string"},"session_id":{"type":"string"},"body":{"type":"string"},
  "description":{"type":"string"},"mode":{"type":"string"},"key":{"type":"string"},
  "message_id":{"type":"string"},"count":{"type":"integer","minimum":1,"maximum":1000}},
  "required":["action"]})";

void flood(const std::shared_ptr<State>& st, ProducerHandle h, const json::Value& args, ToolReply reply) {
  std::int64_t count = 1;
  if (const json::Value* c = json::member(args, "count"); c && c->IsInt64()) count = std::min(c->GetInt64(), kMaxFlood);
  struct Tally {
    std::int64_t left = 0, ok = 0, pending = 0, other = 0;
    std::vector<std::int64_t> overflow;  // fault producer_overflow_written: re-issued later
  };
  auto t = std::make_shared<Tally>();
  t->left = count;
  const std::string prefix = arg(args, "key", "flood");
  const std::string body = arg(args, "body", "fixture flood");
  auto finish = [t, reply]() {
    answer(reply, std::to_string(t->ok) + " ok, " + std::to_string(t->pending) + " TooManyPending, " +
                      std::to_string(t->other) + " other");
  };
  for (std::int64_t i = 0; i < count; ++i) {
    auto key = IdempotencyKey::make(prefix + "-" + std::to_string(i));
    if (!key) { --t->left; ++t->other; continue; }
    if (st->is("producer_pending_bound_64") && i >= 64) {  // the fault: a bound of 64, not 128
      --t->left;
      ++t->pending;
      continue;
    }
    h.send(body, "fixture flood message", DeliveryMode::Queue, *key, [st, t, h, i, prefix, body, finish](Result<std::string> r) mutable {
      if (r) ++t->ok;
      else if (r.error().kind == ErrorKind::TooManyPending) {
        ++t->pending;
        if (st->is("producer_overflow_written")) t->overflow.push_back(i);
      } else {
        ++t->other;
      }
      // The fault: a call refused for the bound is written anyway once a reply frees a slot.
      if (r && !t->overflow.empty()) {
        std::int64_t j = t->overflow.back();
        t->overflow.pop_back();
        h.send(body, "fixture flood message", DeliveryMode::Queue, IdempotencyKey::make(prefix + "-" + std::to_string(j)).value(),
               [](Result<std::string>) {});
      }
      if (--t->left == 0) finish();
    });
  }
  if (t->left == 0) finish();
}

void producerTool(const std::shared_ptr<State>& st, Context ctx, ToolCall call, ToolReply reply) {
  const json::Value& a = call.arguments;
  const std::string action = arg(a, "action");
  const std::string name = arg(a, "handle", "h");
  if (action == "register") {
    std::string session = arg(a, "session_id", call.session_id);
    ctx.registerProducer(session, [st, name, session, reply](Result<ProducerHandle> h) {
      if (!h) return answerError(reply, h.error());
      st->handles.insert_or_assign(name, h.value());
      st->registered_sessions.insert(session);
      st->consumed.erase(name);
      st->unregistered.erase(name);
      answer(reply, "ok", h.value().id());
      // The fault: the handle dies with the tool call that made it (SDK-09 wants it to live on).
      if (st->is("producer_handle_one_shot")) st->consumed.insert(name);
    });
    return;
  }
  if (action == "discard_ctx") {
    std::string session = arg(a, "session_id", call.session_id);
    if (st->is("producer_discard_needs_registration") && !st->registered_sessions.count(session))
      return answerError(reply, SdkError{ErrorKind::InvalidArgument, "no registration in this session", 0});
    ctx.discardProducerMessage(session, arg(a, "message_id"), [reply](Result<Ok> r) {
      if (!r) return answerError(reply, r.error());
      answer(reply, "ok");
    });
    return;
  }
  auto it = st->handles.find(name);
  if (it == st->handles.end() || st->consumed.count(name))
    return answer(reply, "error: unknown handle", "no live handle named `" + name + "` in the fixture");
  ProducerHandle h = it->second;
  if (action == "drop_handle") {
    st->handles.erase(it);  // PROD-25, SDK-12: dropping neither unregisters nor discards
    if (st->is("producer_drop_unregisters")) h.unregister([](Result<Ok>) {});
    return answer(reply, "ok");
  }
  if (action == "send" || action == "steer" || action == "queue") {
    OutboxEntry e{h.sessionId(), arg(a, "mode", action == "queue" ? "queue" : "steer"), arg(a, "key"),
                  arg(a, "description", "fixture message"), arg(a, "body", "fixture body")};
    auto mode = parseMode(e.mode);
    if (action == "steer") mode = st->is("producer_steer_shortcut_queues") ? DeliveryMode::Queue : DeliveryMode::Steer;
    if (action == "queue") mode = DeliveryMode::Queue;
    if (!mode) return answer(reply, "error: bad mode", "mode must be steer or queue");
    e.mode = protocol::toString(*mode);
    auto key = IdempotencyKey::make(e.key);  // SDK-10: keys are validated before anything is written
    if (!key) return answerError(reply, key.error());
    if (action == "send") {
      return sendTracked(st, h, e, *mode, [reply](Result<std::string> r) {
        if (!r) return answerError(reply, r.error());
        answer(reply, "ok", r.value());
      });
    }
    // The per-send shortcuts (SDK-10), kept out of the outbox: they exercise the API, not recovery.
    auto done = [reply](Result<std::string> r) {
      if (!r) return answerError(reply, r.error());
      answer(reply, "ok", r.value());
    };
    if (*mode == DeliveryMode::Steer) h.steer(e.body, e.description, *key, done);
    else h.queue(e.body, e.description, *key, done);
    return;
  }
  if (action == "unregister") {
    h.unregister([st, name, reply](Result<Ok> r) {
      if (!r) {
        if (st->is("producer_unregister_consumes_handle")) st->consumed.insert(name);
        return answerError(reply, r.error());
      }
      st->unregistered.insert(name);
      answer(reply, "ok");
    });
    return;
  }
  if (action == "discard") {
    if (st->is("producer_discard_needs_registration") && st->unregistered.count(name))
      return answerError(reply, SdkError{ErrorKind::InvalidArgument, "the handle was unregistered", 0});
    h.discard(arg(a, "message_id"), [reply](Result<Ok> r) {
      if (!r) return answerError(reply, r.error());
      answer(reply, "ok");
    });
    return;
  }
  if (action == "flood") return flood(st, h, a, reply);
  answer(reply, "error: unknown action", action);
}

// ---- fixture_recovery ------------------------------------------------------------------------

constexpr const char* kRecoverySchema = R"({"type":"object","properties":{
  "action":{"enum":["ready","fail","produce","discard"]},"message":{"type":"string"},
  "session_id":{"type":"string"},"body":{"type":"string"},"description":{"type":"string"},
  "mode":{"type":"string"},"key":{"type":"string"},"message_id":{"type":"string"}},
  "required":["action"]})";

void recoveryTool(const std::shared_ptr<State>& st, ToolCall call, ToolReply reply) {
  const json::Value& a = call.arguments;
  const std::string action = arg(a, "action");
  if (!st->parked) return answer(reply, "error: no recovery is waiting", "set CONFORM_FIXTURE_RECOVERY=await");
  RecoveryDone done = *st->parked;
  st->parked.reset();
  Context ctx = st->recovery_ctx;
  if (action == "ready") {
    done.ready();
    return answer(reply, "ok");
  }
  if (action == "fail") {
    const std::string msg = arg(a, "message", "fixture recovery failure");
    if (st->is("recovery_error_reported_ready")) done.ready();  // the fault
    else done.failed(msg);                                        // SDK-14
    return answer(reply, "ok");
  }
  if (action == "produce") {
    // SDK-15: the callback awaits a registration and a send; the reader goes on meanwhile.
    OutboxEntry e{arg(a, "session_id"), arg(a, "mode", "steer"), arg(a, "key"),
                  arg(a, "description", "fixture recovery message"), arg(a, "body", "fixture recovery body")};
    auto mode = parseMode(e.mode).value_or(DeliveryMode::Steer);
    const bool blocked = st->is("recovery_reader_blocked");
    ctx.registerProducer(e.session_id, [st, e, mode, done, reply, blocked](Result<ProducerHandle> h) mutable {
      if (blocked) return;  // the fault: the reply never reaches the waiting callback
      if (!h) {
        done.failed("register failed: " + h.error().str());
        return answerError(reply, h.error());
      }
      sendTracked(st, h.value(), e, mode, [done, reply](Result<std::string> r) mutable {
        if (!r) {
          done.failed("send failed: " + r.error().str());
          return answerError(reply, r.error());
        }
        done.ready();
        answer(reply, "ok", r.value());
      });
    });
    return;
  }
  if (action == "discard") {
    // SDK-13: ctx.discard_producer_message needs no registration, also during recovery.
    std::string session = arg(a, "session_id");
    if (st->is("producer_discard_needs_registration") && !st->registered_sessions.count(session)) {
      done.failed("no registration in this session");
      return answerError(reply, SdkError{ErrorKind::InvalidArgument, "no registration in this session", 0});
    }
    ctx.discardProducerMessage(session, arg(a, "message_id"), [done, reply](Result<Ok> r) mutable {
      if (!r) {
        done.failed("discard failed: " + r.error().str());
        return answerError(reply, r.error());
      }
      done.ready();
      answer(reply, "ok");
    });
    return;
  }
  done.failed("unknown fixture_recovery action");
  answer(reply, "error: unknown action", action);
}

}  // namespace

const std::vector<FixtureFault>& producerFixtureFaults() { return kFaults; }

void addProducerFixtures(PluginBuilder& b, const BehaviourOptions& o, std::string_view fault) {
  if (o.profile == Profile::V004) return;  // producer messaging does not exist in 0.0.4 (SDK-09)
  auto st = std::make_shared<State>();
  st->fault = std::string(fault);
  if (const char* p = std::getenv(kEnvOutbox); p && *p) st->outbox_path = p;
  st->loadOutbox();
  const std::string mode = [] {
    const char* m = std::getenv(kEnvRecovery);
    return std::string(m && *m ? m : "ready");
  }();
  b.enableProducers();
  if (st->is("producer_shared_id_space")) {
    SdkDeviations d;
    d.shared_id_space = true;
    b.deviations(d);
  }
  b.tool(makeTool("fixture_producer", "SDK fixture: one producer API call, reporting what the SDK returned",
                  kProducerSchema, "fixture_producer"),
         [st](Context ctx, ToolCall call, ToolReply reply) { producerTool(st, std::move(ctx), std::move(call), std::move(reply)); });
  b.tool(makeTool("fixture_recovery", "SDK fixture: resolves the recovery callback that waits for the case",
                  kRecoverySchema, "fixture_recovery"),
         [st](Context, ToolCall call, ToolReply reply) { recoveryTool(st, std::move(call), std::move(reply)); });
  if (mode == "none") {
    if (st->is("recovery_missing_callback_hangs")) {
      // The fault: an SDK that, without an author callback, never completes (it keeps the outcome).
      b.onRecovery([st](Context, RecoveryDone done) { st->parked = done; });
    } else {
      b.onRecovery({});  // SDK-16: the SDK's own default, ready at once
    }
    return;
  }
  b.onRecovery([st, mode](Context ctx, RecoveryDone done) {
    retryOutbox(st, ctx, [st, ctx, done, mode]() mutable {
      if (mode == "await") {
        st->parked = done;
        st->recovery_ctx = ctx;
        return;
      }
      done.ready();
    });
  });
}

}  // namespace conform::plugin
