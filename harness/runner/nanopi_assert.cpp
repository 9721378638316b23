// harness/runner/nanopi_assert — `drive assert WHAT …` of profile nanopi-0.12 (docs/nanopi.md):
// checks of what the reference host observed during the case. Each names in its failure text what
// was expected; the finding goes to the case's rule (the case is titled by it).
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "harness/runner/nanopi_peer.h"
#include "mock_engine/nanopi/events.h"

namespace conform::runner::detail {

using nanopi::Delivery;

namespace {

bool reached(Delivery::Status s) {
  return s == Delivery::Status::Delivered || s == Delivery::Status::Trapped || s == Delivery::Status::TimedOut;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

bool has(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

Peer::Outcome NanopiPeer::driveAssert(const std::vector<std::string>& args, const json::Value& json) {
  if (args.empty()) return Outcome::error("drive assert: missing what to check");
  nanopi::Host& h = *host();
  const std::string& what = args[0];
  auto arg = [&](std::size_t i) { return i < args.size() ? args[i] : std::string(); };
  const auto& dl = h.deliveries();
  const auto& subs = h.subscriptions();
  const std::vector<std::string> granted = h.config().events.value_or(std::vector<std::string>{});

  if (what == "loaded") {
    if (h.loadState() != nanopi::Host::LoadState::Loaded)
      return Outcome::failure("the component did not load", "loaded", "[" + h.loadErrorRule() + "] " + h.loadError());
    return Outcome::ok();
  }
  if (what == "delivered" || what == "not-delivered") {
    if (arg(1).empty()) return Outcome::error("drive assert delivered: missing the event name");
    bool any = std::any_of(dl.begin(), dl.end(), [&](const Delivery& d) { return d.event == arg(1) && reached(d.status); });
    if (any != (what == "delivered"))
      return Outcome::failure(fmt::format("{} was {}delivered", arg(1), any ? "" : "not "), what + " " + arg(1),
                              fmt::format("subscriptions: {}", join(subs)));
    return Outcome::ok();
  }
  if (what == "no-deliveries") {
    for (const auto& d : dl)
      if (reached(d.status)) return Outcome::failure(fmt::format("{} reached the plugin", d.event), "no delivery", toString(d.status));
    return Outcome::ok();
  }
  if (what == "hooks-off") {
    // NP-32: with --no-hooks every emission stops at the hooks_active() gate.
    for (const auto& d : dl)
      if (d.status != Delivery::Status::HooksOff)
        return Outcome::failure(fmt::format("{} was not stopped by --no-hooks", d.event), "hooks-off", toString(d.status));
    return Outcome::ok();
  }
  if (what == "only-subscribed-delivered") {
    // NP-05: delivered iff requested AND granted.
    for (const auto& d : dl) {
      bool sub = has(subs, d.event);
      if (reached(d.status) && !sub)
        return Outcome::failure(fmt::format("{} reached the plugin but is not in its effective subscription", d.event),
                                "subscriptions: " + join(subs), d.event);
      if (sub && d.status == Delivery::Status::NotSubscribed)
        return Outcome::failure(fmt::format("{} is subscribed but was not delivered", d.event), "delivered", toString(d.status));
    }
    return Outcome::ok();
  }
  if (what == "subscriptions-within-grant") {
    // NP-05 / NP-10: effective = requested ∩ granted, in the plugin's order.
    std::vector<std::string> want;
    for (const auto& r : h.requested())
      if (has(granted, r) && nanopi::isEventName(r) && !has(want, r)) want.push_back(r);
    if (want != subs) return Outcome::failure("the effective subscription is not requested ∩ granted", join(want), join(subs));
    return Outcome::ok();
  }
  if (what == "subscriptions-fixed") {
    if (subs != subs_at_load_) return Outcome::failure("the subscription changed after load", join(subs_at_load_), join(subs));
    return Outcome::ok();
  }
  if (what == "list-events-once") {
    // NP-07: called once at load (when exported) and never again, rebuilds included.
    auto n = h.listCalls(nanopi::GuestCall::Purpose::ListEvents);
    bool exported = h.loadState() == nanopi::Host::LoadState::Loaded && h.listEventsValue().has_value();
    if (n > 1 || (exported && n != 1))
      return Outcome::failure(fmt::format("the host called list-events {} times", n), "exactly once, at load", fmt::format("{}", n));
    return Outcome::ok();
  }
  if (what == "diagnostic") {
    if (arg(1).empty()) return Outcome::error("drive assert diagnostic RULE \"text\": missing the rule");
    for (const auto& d : h.diagnostics())
      if (d.rule == arg(1) && d.text.find(arg(2)) != std::string::npos) return Outcome::ok();
    std::string all;
    for (const auto& d : h.diagnostics()) all += fmt::format("[{}] {}; ", d.rule, d.text);
    return Outcome::failure(fmt::format("no startup diagnostic of {} containing \"{}\"", arg(1), arg(2)),
                            fmt::format("[{}] …{}…", arg(1), arg(2)), all.empty() ? "no diagnostics" : all);
  }
  if (what == "ungranted-named") {
    // NP-09: each requested-but-not-granted name is named at startup.
    for (const auto& r : h.requested()) {
      if (!nanopi::isEventName(r) || has(subs, r)) continue;
      bool named = std::any_of(h.diagnostics().begin(), h.diagnostics().end(),
                               [&](const nanopi::Diagnostic& d) { return d.text.find("\"" + r + "\"") != std::string::npos && d.text.find("not granted") != std::string::npos; });
      named = named || std::any_of(h.diagnostics().begin(), h.diagnostics().end(), [&](const nanopi::Diagnostic& d) {
                return d.text.find("\"" + r + "\"") != std::string::npos && d.text.find("did not grant") != std::string::npos;
              });
      if (!named) return Outcome::failure(fmt::format("{} is requested, not granted, and not named at startup", r), "a startup message naming it", "nothing");
    }
    return Outcome::ok();
  }
  if (what == "log") {
    for (const auto& l : h.log())
      if (l.find(arg(1)) != std::string::npos) return Outcome::ok();
    return Outcome::failure(fmt::format("no host log line contains \"{}\"", arg(1)), arg(1), fmt::format("{} log lines", h.log().size()));
  }
  if (what == "dropped-logged") {
    // NP-21: one exact line per dropped delivery.
    std::size_t lines = 0;
    for (const auto& l : h.log())
      if (l.rfind("nanopi: dropped event delivery, plugin busy [event=", 0) == 0) ++lines;
    if (lines != h.droppedEvents() || lines == 0)
      return Outcome::failure("busy drops are not each logged", fmt::format("{} lines `nanopi: dropped event delivery, plugin busy [event=X]`", h.droppedEvents()),
                              fmt::format("{} lines", lines));
    return Outcome::ok();
  }
  if (what == "tools-report") {
    // NP-29/30: the Watching-events row is the effective subscription; no row when empty; the
    // grants row carries events(...).
    std::string rep = h.toolsReport();
    std::string row = join(subs);
    bool ok = rep.find(fmt::format("Watching events ({} plugins)", subs.empty() ? 0 : 1)) != std::string::npos;
    if (!subs.empty()) ok = ok && rep.find(row) != std::string::npos && rep.find("events(" + row + ")") != std::string::npos;
    else ok = ok && rep.find("events(") == std::string::npos;
    if (!ok) return Outcome::failure("the /tools report does not show the effective subscription", "rows for: " + row, rep);
    return Outcome::ok();
  }
  if (what == "payloads-identical") {
    // NP-16/17: handle-event got the builder's exact bytes and the PI name.
    std::size_t k = 0;
    for (const auto& d : dl) {
      if (!reached(d.status)) continue;
      if (k >= sent_.size()) return Outcome::failure("a delivery is missing from the wire", d.event, "no handle-event call");
      const Sent& s = sent_[k++];
      if (s.event != d.event || s.payload != d.payload)
        return Outcome::failure(fmt::format("handle-event for {} did not carry the hook payload bytes", d.event), d.event + " " + d.payload,
                                s.event + " " + s.payload);
      auto p = json::parse(s.payload);
      if (!p || json::stringMember(p->doc, "hook_event_name").value_or("") != s.event)
        return Outcome::failure("the payload does not name the PI event", s.event, s.payload);
    }
    return Outcome::ok();
  }
  if (what == "original-arguments") {
    // NP-18: the tool_execution_start payload on the wire holds the model's arguments.
    for (auto it = sent_.rbegin(); it != sent_.rend(); ++it) {
      if (it->event != "tool_execution_start") continue;
      auto p = json::parse(it->payload);
      const json::Value* a = p ? json::member(p->doc, "arguments") : nullptr;
      if (!a || !json::equal(*a, json)) return Outcome::failure("tool_execution_start did not carry the original arguments", json::compact(json), it->payload);
      return Outcome::ok();
    }
    return Outcome::failure("no tool_execution_start reached the plugin", "a delivery", "none");
  }
  if (what == "agent-tool") {
    // NP-02 / NP-19: the hook's decision stands whatever the plugin returned.
    if (!agent_tool_executed_) return Outcome::error("drive assert agent-tool: no `drive agent-tool` ran");
    bool want = arg(1) != "blocked";
    if (*agent_tool_executed_ != want)
      return Outcome::failure("the tool call's fate changed", want ? "executed" : "blocked", *agent_tool_executed_ ? "executed" : "blocked");
    return Outcome::ok();
  }
  if (what == "message-end-shape") {
    // NP-40: counts, not text.
    auto p = nanopi::buildPayload("message_end", json::Document(rapidjson::kObjectType));
    auto d = p ? json::parse(*p) : decltype(json::parse("")){unexpected(json::ParseError{})};
    if (!d || !json::member(d->doc, "turn_count") || !json::member(d->doc, "response_length") || json::member(d->doc, "text") ||
        json::member(d->doc, "content"))
      return Outcome::failure("message_end's payload is not {turn_count, response_length}", "turn_count and response_length, no text", p ? *p : p.error());
    return Outcome::ok();
  }
  if (what == "event-names") {
    // NP-11: exactly the eleven PI names (the seed's list, written out here independently).
    const std::vector<std::string> seed = {"tool_execution_start", "tool_execution_end", "input", "before_agent_start", "turn_start", "turn_end",
                                           "message_end", "session_start", "session_shutdown", "session_before_compact", "session_compact"};
    std::vector<std::string> host_names(nanopi::kEventNames.begin(), nanopi::kEventNames.end());
    if (host_names != seed) return Outcome::failure("the deliverable names differ from the seed's eleven", join(seed), join(host_names));
    for (const auto& n : seed)
      if (!nanopi::isEventName(n)) return Outcome::failure(n + " is not deliverable", n, "refused");
    return Outcome::ok();
  }
  if (what == "delivery-continues") {
    // NP-22 / NP-24 / NP-26: after a trap or an overrun the instance is rebuilt and later events
    // are still delivered; list-* are not called again.
    std::size_t stops = 0;
    for (std::size_t i = 0; i < dl.size(); ++i) {
      if (dl[i].status != Delivery::Status::Trapped && dl[i].status != Delivery::Status::TimedOut) continue;
      ++stops;
      bool later = false;
      for (std::size_t j = i + 1; j < dl.size(); ++j) later = later || reached(dl[j].status);
      bool any_after = false;
      for (std::size_t j = i + 1; j < dl.size(); ++j) any_after = any_after || has(subs, dl[j].event);
      if (any_after && !later)
        return Outcome::failure(fmt::format("no delivery reached the plugin after {} {}", dl[i].event, toString(dl[i].status)),
                                "later events delivered to the rebuilt instance", "none");
    }
    if (h.rebuilds() < stops)  // a restarted runner (session.h) is a rebuild without a trap
      return Outcome::failure("not every trap/overrun rebuilt the instance", fmt::format("{} rebuilds", stops), fmt::format("{}", h.rebuilds()));
    if (h.listCalls(nanopi::GuestCall::Purpose::ListEvents) > 1 || h.listCalls(nanopi::GuestCall::Purpose::ListTools) > 1)
      return Outcome::failure("a rebuild called list-* again", "list-* once, at load", "more");
    return Outcome::ok();
  }
  if (what == "import-refused") {
    // NP-39 (and every grant): a refused import answers in-band "error: …".
    for (const auto& i : h.imports())
      if (i.name == arg(1) && (!i.answer || i.answer->rfind("error: ", 0) != 0))
        return Outcome::failure(fmt::format("{} was answered without a grant", arg(1)), "error: …", i.answer.value_or("(void)"));
    return Outcome::ok();
  }
  if (what == "notify-limit") {
    // NP-38: at most 10 lines shown per plugin per turn (the "… N more suppressed" line aside).
    std::size_t shown = 0;
    for (const auto& n : h.notifications())
      if (n.find("more suppressed") == std::string::npos) ++shown;
    std::size_t turns = std::max<std::size_t>(1, std::count_if(dl.begin(), dl.end(), [](const Delivery& d) { return d.event == "turn_start"; }));
    if (shown > nanopi::kNotifyPerTurn * turns)
      return Outcome::failure("more notifications shown than the per-turn limit allows", fmt::format("≤ {} per turn", nanopi::kNotifyPerTurn),
                              fmt::format("{} over {} turn(s)", shown, turns));
    return Outcome::ok();
  }
  if (what == "no-list-events-no-subscriptions") {
    // NP-36: without list-events the plugin loads and subscribes to nothing.
    if (h.listEventsValue()) return Outcome::ok();  // it exports list-events: nothing to show here
    if (h.loadState() != nanopi::Host::LoadState::Loaded) return Outcome::failure("a component without list-events did not load", "loaded", h.loadError());
    if (!subs.empty()) return Outcome::failure("a component without list-events has subscriptions", "none", join(subs));
    return Outcome::ok();
  }
  return Outcome::error(fmt::format("drive assert: unknown check `{}`", what));
}

}  // namespace conform::runner::detail
