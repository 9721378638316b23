// harness/runner/nanopi_drive — the `drive` actions of profile nanopi-0.12 (docs/nanopi.md): the
// reference host acts (load, events, tools, turns, busy deliveries) and `drive assert …` checks what
// it observed. A failed assertion is a finding on the case's rule; a bad argument is a harness ERROR.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "harness/runner/nanopi_peer.h"
#include "mock_engine/nanopi/events.h"

namespace conform::runner::detail {

using nanopi::Delivery;

namespace {

// The lifecycle order of one scripted session (docs/nanopi.md "drive session"), with the two
// per-delta events where they would stream (they must never be delivered, NP-14).
const char* const kSessionOrder[] = {"session_start", "input",          "before_agent_start", "turn_start",
                                     "message_update", "tool_execution_start", "tool_execution_update",
                                     "tool_execution_end", "message_end", "turn_end", "session_before_compact",
                                     "session_compact", "session_shutdown"};

// The common members (session_id, cwd) of `fields` for an event payload.
json::Document commonOf(const json::Value& fields) {
  json::Document d(rapidjson::kObjectType);
  if (!fields.IsObject()) return d;
  for (const char* k : {"session_id", "cwd"})
    if (const json::Value* v = json::member(fields, k)) {
      json::Value c;
      json::deepCopy(c, *v, d.GetAllocator());
      d.AddMember(json::str(k, d.GetAllocator()), c, d.GetAllocator());
    }
  return d;
}

}  // namespace

Peer::Outcome NanopiPeer::driveEvent(const std::vector<std::string>& args, const json::Value& fields, bool wait) {
  if (args.empty()) return Outcome::error("drive event: missing the event name");
  const std::string& ev = args[0];
  std::string payload;
  if (nanopi::isEventName(ev)) {
    static const json::Value kEmpty(rapidjson::kObjectType);
    auto p = nanopi::buildPayload(ev, fields.IsObject() ? fields : kEmpty);
    if (!p) return Outcome::error("drive event: " + p.error());
    payload = *p;
  } else {
    payload = "{\"hook_event_name\":\"" + ev + "\"}";  // a per-delta or unknown name: never delivered anyway
  }
  if (!host()) return Outcome::error("drive event: nothing loaded");
  Delivery::Status st = wait ? session_->deliver(ev, payload) : session_->startDeliver(ev, payload);
  flushHostLog();
  if (tw_) tw_->note(fmt::format("host: emit {} -> {}", ev, toString(st)));
  return Outcome::ok(std::string(toString(st)));
}

Peer::Outcome NanopiPeer::driveSession(const json::Value& common) {
  if (!host()) return Outcome::error("drive session: nothing loaded");
  json::Document c = commonOf(common);
  for (const char* ev : kSessionOrder) {
    if (std::string_view(ev) == "turn_start") host()->startTurn();
    auto o = driveEvent({ev}, c, true);
    if (o.kind != Outcome::Kind::Ok) return o;
  }
  return Outcome::ok();
}

Peer::Outcome NanopiPeer::driveBusy() {
  // NP-20/21: a delivery while the plugin is inside another guest call is dropped at once, counted
  // and logged; delivery resumes once the call is over.
  nanopi::Host* h = host();
  if (!h || h->subscriptions().empty()) return Outcome::error("drive busy: needs a loaded component with a subscription (add `needs subscribe_events`)");
  const std::vector<std::string> subs = h->subscriptions();
  auto first = driveEvent({subs[0]}, json::Document(rapidjson::kObjectType), false);
  if (first.value != std::string("delivered"))
    return Outcome::failure("drive busy: the first delivery did not start", "delivered", first.value.value_or("?"));
  const std::uint64_t before = h->droppedEvents();
  for (const auto& ev : subs) {
    auto t0 = std::chrono::steady_clock::now();
    auto o = driveEvent({ev}, json::Document(rapidjson::kObjectType), true);
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (o.value != std::string("dropped"))
      return Outcome::failure(fmt::format("a delivery of {} while the plugin was busy was not dropped", ev), "dropped",
                              o.value.value_or("?"));
    // "never waited for": a drop is decided without touching the guest (generous bound for CI).
    if (ms > 100) return Outcome::failure(fmt::format("dropping {} took {:.1f} ms", ev, ms), "an immediate drop", fmt::format("{:.1f} ms", ms));
  }
  if (h->droppedEvents() - before != subs.size())
    return Outcome::failure("the busy drops were not counted", fmt::format("{} more dropped_events", subs.size()),
                            fmt::format("{}", h->droppedEvents() - before));
  session_->finishPending();
  flushHostLog();
  auto again = driveEvent({subs[0]}, json::Document(rapidjson::kObjectType), true);
  if (again.value == std::string("dropped") || again.value == std::string("not-loaded"))
    return Outcome::failure("delivery did not resume after the busy call ended", "delivered", again.value.value_or("?"));
  if (tw_) tw_->note(fmt::format("host: {} deliveries dropped while busy (dropped_events = {})", subs.size(), h->droppedEvents()));
  return Outcome::ok();
}

Peer::Outcome NanopiPeer::driveAgentTool(const std::vector<std::string>& args, const json::Value& targs) {
  // The agent dispatches a tool call: tool_execution_start is delivered with the model's ORIGINAL
  // arguments (NP-18) before a hook's block or rewrite is applied (NP-19); the block is kept aside.
  if (args.empty()) return Outcome::error("drive agent-tool: missing the tool name");
  bool block = std::find(args.begin(), args.end(), "block") != args.end();
  bool rewrite = std::find(args.begin(), args.end(), "rewrite") != args.end();
  json::Document f(rapidjson::kObjectType);
  auto& a = f.GetAllocator();
  f.AddMember("tool_name", json::str(args[0], a), a);
  json::Value original(rapidjson::kObjectType);
  if (targs.IsObject()) json::deepCopy(original, targs, a);
  f.AddMember("arguments", original, a);
  auto o = driveEvent({"tool_execution_start"}, f, true);
  if (o.kind != Outcome::Kind::Ok) return o;
  // The hook's decision applies after delivery; the plugin's return value plays no part (NP-02).
  agent_tool_executed_ = !block;
  if (tw_) tw_->note(fmt::format("host: hook {} the call to {}", block ? "blocked" : rewrite ? "rewrote" : "allowed", args[0]));
  if (!block) {
    auto e = driveEvent({"tool_execution_end"}, json::Document(rapidjson::kObjectType), true);
    if (e.kind != Outcome::Kind::Ok) return e;
  }
  return Outcome::ok();
}

Peer::Outcome NanopiPeer::driveProbeListEvents() {
  // NP-08 (TH): the host never calls list-events again; the harness does, as a probe, to show a
  // component whose answer would widen its own subscription if a host re-derived it.
  nanopi::Host* h = host();
  if (!h || h->loadState() != nanopi::Host::LoadState::Loaded || !first_list_events_) return Outcome::ok();
  json::Document p(rapidjson::kObjectType);
  auto& a = p.GetAllocator();
  p.AddMember("export", "list-events", a);
  p.AddMember("args", json::Value(rapidjson::kArrayType), a);
  p.AddMember("budget_ms", json::Value(nanopi::kToolBudgetMs), a);
  if (tw_) tw_->note("harness probe (not the host): list-events called a second time to compare");
  auto r = session_->client().await(session_->client().request("call", p), std::chrono::milliseconds(nanopi::kToolBudgetMs) + nanopi::kRunnerSlack);
  if (!r) return Outcome::ok();
  auto cr = nanopi::decodeCallResult(*r);
  if (!cr || cr->outcome != nanopi::CallResult::Outcome::Ok || !cr->value) return Outcome::ok();
  auto a1 = json::parse(*first_list_events_);
  auto a2 = json::parse(*cr->value);
  if (a1 && a2 && json::equal(a1->doc, a2->doc)) return Outcome::ok();
  extra_.push_back(reports::makeFinding("NP-08", reports::kBindsPlugin,
                                        "list-events answers differently on a second call: the subscription fixed at load is the only one "
                                        "that counts, and a host re-deriving it would let the plugin widen its own grant",
                                        "the same list every time: " + *first_list_events_, *cr->value, {{conv_.traceLine(), "probe"}}));
  return Outcome::ok();
}

Peer::Outcome NanopiPeer::drive(const std::string& action, const std::vector<std::string>& args, const json::Document& json) {
  if (action == "load") {
    auto r = doLoad(json);
    if (!r) return Outcome::error(r.error());
    Outcome o = Outcome::ok();
    o.doc = std::make_shared<json::Document>(host()->reportJson());
    return o;
  }
  if (action == "expect-config-error") {
    // NP-15: a misspelled grant KEY is a hard configuration error naming it.
    auto c = nanopi::parseExtensionConfig(json);
    if (c) return Outcome::failure("the [[extensions]] entry was accepted", "a configuration error naming the misspelled key", json::compact(json));
    if (c.error().find("NP-15") == std::string::npos || c.error().find("unknown key") == std::string::npos)
      return Outcome::failure("the configuration error does not name the unknown key", "unknown key … (NP-15)", c.error());
    if (tw_) tw_->note("host: config error: " + c.error());
    return Outcome::ok();
  }
  if (!host()) return Outcome::error(fmt::format("drive {}: nothing loaded", action));
  if (action == "event") return driveEvent(args, json, true);
  if (action == "session") return driveSession(json);
  if (action == "turn-start") {
    host()->startTurn();
    return driveEvent({"turn_start"}, json, true);
  }
  if (action == "busy") return driveBusy();
  if (action == "agent-tool") return driveAgentTool(args, json);
  if (action == "probe-list-events") return driveProbeListEvents();
  if (action == "tool") {
    if (args.empty()) return Outcome::error("drive tool: missing the tool name");
    if (!session_->callTool(args[0], json::compact(json))) return Outcome::error("drive tool: the host refused (busy or not loaded)");
    flushHostLog();
    return Outcome::ok(host()->lastToolResult());
  }
  if (action == "report") {
    if (tw_) tw_->note("host: /tools\n" + host()->toolsReport());
    Outcome o = Outcome::ok();
    o.doc = std::make_shared<json::Document>(host()->reportJson());
    return o;
  }
  if (action == "assert") return driveAssert(args, json);
  return Outcome::error(fmt::format(
      "unknown drive action `{}` (load, expect-config-error, event, session, turn-start, busy, agent-tool, probe-list-events, tool, "
      "report, assert)",
      action));
}

}  // namespace conform::runner::detail
