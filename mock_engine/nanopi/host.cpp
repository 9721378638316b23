// mock_engine/nanopi/host — the load sequence, grants, delivery and busy-drop of the reference
// nanopi host (host.h). Host imports are in host_imports.cpp, reports in host_report.cpp.
#include "mock_engine/nanopi/host.h"

#include <algorithm>

#include <fmt/format.h>

#include "mock_engine/nanopi/events.h"

namespace conform::nanopi {

const std::vector<std::string>& rootImports() {
  static const std::vector<std::string> v = {"host-log",       "host-fs-read",     "host-http-get",
                                             "host-store-get", "host-store-set",   "host-notify",
                                             "host-set-context", "host-call-tool", "host-send-user-message"};
  return v;
}

const char* toString(GuestCall::Purpose p) {
  switch (p) {
    case GuestCall::Purpose::ListTools: return "list-tools";
    case GuestCall::Purpose::ListCommands: return "list-commands";
    case GuestCall::Purpose::ListEvents: return "list-events";
    case GuestCall::Purpose::HandleEvent: return "handle-event";
    case GuestCall::Purpose::ExecuteTool: return "execute-tool";
    case GuestCall::Purpose::ExecuteCommand: return "execute-command";
  }
  return "?";
}

const char* toString(Delivery::Status s) {
  switch (s) {
    case Delivery::Status::Delivered: return "delivered";
    case Delivery::Status::Trapped: return "trapped";
    case Delivery::Status::TimedOut: return "timed-out";
    case Delivery::Status::Failed: return "failed";
    case Delivery::Status::Dropped: return "dropped";
    case Delivery::Status::NotSubscribed: return "not-subscribed";
    case Delivery::Status::HooksOff: return "hooks-off";
    case Delivery::Status::NotLoaded: return "not-loaded";
  }
  return "?";
}

namespace {

bool fromJSONLoad(const json::Value& v, LoadInfo& li, json::Path p) {
  json::ObjectMapper o(v, p);
  std::optional<std::string> world;
  if (!o) return false;
  if (!o.mapNullable("world", world) || !o.map("exports", li.exports) || !o.map("imports", li.imports) ||
      !o.map("unsupported_imports", li.unsupported_imports) || !o.map("instantiated", li.instantiated))
    return false;
  li.world = world.value_or("");
  return true;
}

std::string shorten(std::string_view s, std::size_t n = 200) {
  if (s.size() <= n) return std::string(s);
  return fmt::format("{}… ({} bytes)", s.substr(0, n), s.size());
}

bool contains(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

Expected<LoadInfo, std::string> decodeLoadInfo(const json::Value& result) {
  json::Path::Root root("load");
  LoadInfo li;
  if (!fromJSONLoad(result, li, json::Path(root))) return unexpected(root.error().value_or("invalid load result"));
  return li;
}

Expected<CallResult, std::string> decodeCallResult(const json::Value& result) {
  CallResult r;
  auto outcome = json::stringMember(result, "outcome");
  if (!outcome) return unexpected(std::string("call result: `outcome` missing"));
  if (*outcome == "ok") r.outcome = CallResult::Outcome::Ok;
  else if (*outcome == "trap") r.outcome = CallResult::Outcome::Trap;
  else if (*outcome == "timeout") r.outcome = CallResult::Outcome::Timeout;
  else return unexpected(fmt::format("call result: unknown outcome `{}`", *outcome));
  if (const json::Value* v = json::member(result, "value"); v && v->IsString()) r.value = std::string(v->GetString(), v->GetStringLength());
  if (auto m = json::stringMember(result, "message")) r.message = std::string(*m);
  if (const json::Value* b = json::member(result, "rebuilt"); b && b->IsBool()) r.rebuilt = b->GetBool();
  if (const json::Value* g = json::member(result, "guest_ms"); g && g->IsNumber()) r.guest_ms = g->GetDouble();
  if (const json::Value* e = json::member(result, "elapsed_ms"); e && e->IsNumber()) r.elapsed_ms = e->GetDouble();
  return r;
}

Host::Host(ExtensionConfig cfg, HostOptions opts, const clock::Clock& clk)
    : cfg_(std::move(cfg)), opts_(std::move(opts)), clk_(clk), stem_(pluginStem(cfg_.path)) {}

void Host::warn(std::string rule, std::string text) {
  log_.push_back(fmt::format("nanopi: [{}] {}", stem_, text));
  diags_.push_back({Diagnostic::Level::Warn, std::move(rule), std::move(text)});
}

void Host::fault(std::string rule, std::string message, std::string expected, std::string actual) {
  faults_.push_back({std::move(rule), std::move(message), std::move(expected), std::move(actual)});
}

void Host::hardError(std::string rule, std::string text) {
  state_ = LoadState::Failed;
  queue_.clear();
  load_error_ = text;
  load_error_rule_ = rule;
  log_.push_back(fmt::format("nanopi: failed to load plugin {}: {}", stem_, text));
  diags_.push_back({Diagnostic::Level::Error, rule, text});
  fault(std::move(rule), "the plugin fails to load: " + text, "the plugin loads", text);
}

bool Host::exported(const std::string& name) const { return contains(info_.exports, name); }

void Host::enqueue(GuestCall::Purpose p, std::string exp, std::vector<std::string> args, std::uint32_t budget,
                   std::string event) {
  GuestCall c;
  c.seq = next_seq_++;
  c.purpose = p;
  c.export_name = std::move(exp);
  c.args = std::move(args);
  c.budget_ms = budget;
  c.event = std::move(event);
  queue_.push_back(std::move(c));
}

std::uint64_t Host::listCalls(GuestCall::Purpose p) const {
  auto it = calls_by_purpose_.find(p);
  return it == calls_by_purpose_.end() ? 0 : it->second;
}

void Host::loadFailed(const std::string& why) {
  state_ = LoadState::Loading;
  hardError("NP-33", "the runner could not load the component: " + why);
}

void Host::beginLoad(const LoadInfo& info) {
  info_ = info;
  state_ = LoadState::Loading;
  // NP-34: every import lives on world `extension`; anything else (wasi:*) cannot be linked.
  if (!info.unsupported_imports.empty()) {
    std::string list;
    for (const auto& i : info.unsupported_imports) list += (list.empty() ? "" : ", ") + i;
    return hardError("NP-34", fmt::format("the component imports {} — nanopi links only the nine root imports of world "
                                          "`extension`, so it cannot be instantiated",
                                          list));
  }
  if (!info.instantiated) return hardError("NP-33", "the component could not be instantiated");
  // §2 steps 2–3: list-tools and execute-tool are required.
  for (const char* req : {"list-tools", "execute-tool"})
    if (!exported(req)) return hardError("NP-33", fmt::format("the component does not export `{}`", req));
  // NP-33: a component targeting extension-events (it exports list-events or handle-event) must
  // also export list-commands and execute-command. nanopi itself only needs them when commands are
  // listed, so this is a finding, not a load error.
  if (exported("list-events") || exported("handle-event"))
    for (const char* req : {"list-commands", "execute-command"})
      if (!exported(req))
        fault("NP-33", fmt::format("the component exports list-events/handle-event (world extension-events) but not `{}`", req),
              "list-commands and execute-command exported (stubs are fine)", "exports: " + [&] {
                std::string s;
                for (const auto& e : info.exports) s += (s.empty() ? "" : ", ") + e;
                return s;
              }());
  enqueue(GuestCall::Purpose::ListTools, "list-tools", {}, kToolBudgetMs);
}

std::optional<GuestCall> Host::takeCall() {
  if (in_flight_ || queue_.empty()) return std::nullopt;
  in_flight_ = std::move(queue_.front());
  queue_.pop_front();
  ++calls_by_purpose_[in_flight_->purpose];
  return in_flight_;
}

void Host::onCallResult(std::uint64_t seq, const CallResult& r) {
  if (!in_flight_ || in_flight_->seq != seq) {
    log_.push_back(fmt::format("nanopi: internal: result for call {} that is not in flight (ignored)", seq));
    return;
  }
  GuestCall c = std::move(*in_flight_);
  in_flight_.reset();
  if ((r.outcome == CallResult::Outcome::Trap || r.outcome == CallResult::Outcome::Timeout) &&
      state_ == LoadState::Loaded)
    afterTrapOrTimeout(c, r);
  switch (c.purpose) {
    case GuestCall::Purpose::ListTools: return onListTools(r);
    case GuestCall::Purpose::ListCommands: return onListCommands(r);
    case GuestCall::Purpose::ListEvents: return onListEvents(r);
    case GuestCall::Purpose::HandleEvent: return onHandleEvent(c, r);
    case GuestCall::Purpose::ExecuteTool:
    case GuestCall::Purpose::ExecuteCommand:
      if (r.outcome == CallResult::Outcome::Ok) last_tool_result_ = r.value.value_or("");
      else last_tool_result_ = "error: " + (r.message.empty() ? std::string("the call failed") : r.message);
      return;
  }
}

void Host::afterTrapOrTimeout(const GuestCall& c, const CallResult& r) {
  // §2: trap or epoch overrun -> PluginRebuild (the runner did it): fresh instance, grants and host
  // store kept, guest memory lost, no list-* call repeated (NP-22: delivery goes on).
  const bool trap = r.outcome == CallResult::Outcome::Trap;
  const std::string how = trap ? "trapped" : "ran past its budget";
  // nanopi's wording (NANOPI-HOST.md §2): "nanopi: handle-event trapped, resetting plugin [event=X]: …".
  std::string what = c.purpose == GuestCall::Purpose::HandleEvent ? fmt::format("handle-event {}, resetting plugin [event={}]", how, c.event)
                                                                  : fmt::format("{} {}, resetting plugin", c.export_name, how);
  log_.push_back(fmt::format("nanopi: {}: {}", what, r.message.empty() ? "-" : r.message));
  if (r.rebuilt) ++rebuilds_;
  else log_.push_back("nanopi: the runner did not rebuild the instance after " + what);
}

void Host::noteRunnerRestart(const std::string& why, bool counted) {
  if (!counted) {
    log_.push_back("nanopi: " + why);
    return;
  }
  log_.push_back(fmt::format("nanopi: the guest runner stopped answering ({}); restarted it with a fresh instance, no list-* call repeated", why));
  ++rebuilds_;
}

void Host::nextLoadStep(GuestCall::Purpose after) {
  if (state_ != LoadState::Loading) return;
  if (after == GuestCall::Purpose::ListTools && exported("list-commands"))
    return enqueue(GuestCall::Purpose::ListCommands, "list-commands", {}, kToolBudgetMs);
  if (after != GuestCall::Purpose::ListEvents && exported("list-events"))
    return enqueue(GuestCall::Purpose::ListEvents, "list-events", {}, kToolBudgetMs);
  // Done: the intersection is computed once, here, and never again (NP-08).
  state_ = LoadState::Loaded;
  EventGrants g = parseEventGrants(cfg_.events.value_or(std::vector<std::string>{}));
  for (auto& d : g.diagnostics) warn(d.rule, d.text);
  for (const std::string& e : requested_) {
    if (contains(g.deliverable, e)) {
      if (!contains(subs_, e)) subs_.push_back(e);  // plugin's order; a repeat is delivered once
    } else if (isEventName(e)) {
      // NP-09 (and NP-10 when `events` is absent or empty): named at startup.
      std::string text = fmt::format("requested event \"{}\" but the config's `events` did not grant it — not delivered.", e);
      warn(cfg_.events && !cfg_.events->empty() ? "NP-09" : "NP-10", text);
      fault("NP-09", fmt::format("the plugin requests {} but the grant does not include it: it will never be delivered", e),
            fmt::format("\"{}\" in the `events` grant (--grant {})", e, e), text);
    }
  }
  // NP-31: events + network is an exfiltration channel: warned about, not refused.
  if (cfg_.events && !cfg_.events->empty() && cfg_.allow_network)
    warn("NP-31", "has both `events` and `allow_network = true` — this plugin can observe lifecycle events AND reach the "
                  "network, and could exfiltrate event payloads. Grant both only if you trust the plugin.");
  if (contains(cfg_.url_allowlist, "*")) warn("NP-31", "url_allowlist = [\"*\"] lets the plugin reach any host");
  if (!subs_.empty()) {
    std::string list;
    for (const auto& s : subs_) list += (list.empty() ? "" : ", ") + s;
    log_.push_back(fmt::format("nanopi: [{}] registered for events: {}", stem_, list));
    diags_.push_back({Diagnostic::Level::Info, "NP-29", "registered for events: " + list});
  }
}

void Host::onListTools(const CallResult& r) {
  if (r.outcome != CallResult::Outcome::Ok)
    return hardError("NP-33", fmt::format("list-tools {}: {}", r.outcome == CallResult::Outcome::Trap ? "trapped" : "failed", r.message));
  auto p = json::parse(r.value.value_or(""));
  if (!p || !p->doc.IsArray()) return hardError("NP-33", "list-tools did not return a JSON array: " + shorten(r.value.value_or("(void)")));
  for (const auto& t : p->doc.GetArray())
    if (auto n = json::stringMember(t, "name")) tools_.emplace_back(*n);
  nextLoadStep(GuestCall::Purpose::ListTools);
}

void Host::onListCommands(const CallResult& r) {
  if (r.outcome != CallResult::Outcome::Ok)
    return hardError("NP-33", fmt::format("list-commands {}: {}", r.outcome == CallResult::Outcome::Trap ? "trapped" : "failed", r.message));
  auto p = json::parse(r.value.value_or(""));
  if (!p || !p->doc.IsArray()) return hardError("NP-33", "list-commands did not return a JSON array: " + shorten(r.value.value_or("(void)")));
  if (p->doc.Size() > kMaxCommands)
    return hardError("NP-33", fmt::format("list-commands lists {} commands (at most {})", p->doc.Size(), kMaxCommands));
  if (p->doc.Size() > 0 && !exported("execute-command"))
    return hardError("NP-33", "list-commands is non-empty but the component does not export `execute-command`");
  for (const auto& t : p->doc.GetArray())
    if (auto n = json::stringMember(t, "name")) commands_.emplace_back(*n);
  nextLoadStep(GuestCall::Purpose::ListCommands);
}

void Host::onListEvents(const CallResult& r) {
  // NP-37: a trap, invalid JSON, not an array of strings, or more than 32 names is a hard error.
  if (r.outcome == CallResult::Outcome::Trap || r.outcome == CallResult::Outcome::Timeout)
    return hardError("NP-37", fmt::format("list-events {}: {}", r.outcome == CallResult::Outcome::Trap ? "trapped" : "ran past its 30 s budget", r.message));
  if (r.outcome != CallResult::Outcome::Ok) return hardError("NP-37", "list-events could not be called: " + r.message);
  const std::string text = r.value.value_or("");
  list_events_value_ = text;
  auto p = json::parse(text);
  if (!p) {
    fault("NP-06", "list-events did not return JSON", "a JSON array of PI event names", shorten(text));
    return hardError("NP-37", fmt::format("list-events returned malformed JSON ({}): {}", p.error().message, shorten(text)));
  }
  bool strings = p->doc.IsArray();
  if (strings)
    for (const auto& v : p->doc.GetArray()) strings = strings && v.IsString();
  if (!strings) {
    fault("NP-06", "list-events did not return an array of strings", "a JSON array of PI event names", shorten(text));
    return hardError("NP-37", "list-events did not return a JSON array of strings: " + shorten(text));
  }
  if (p->doc.Size() > kMaxEvents)
    return hardError("NP-37", fmt::format("list-events lists {} names (at most {})", p->doc.Size(), kMaxEvents));
  for (const auto& v : p->doc.GetArray()) requested_.emplace_back(v.GetString(), v.GetStringLength());
  // NP-35: once you ask, you must handle.
  if (!requested_.empty() && !exported("handle-event"))
    return hardError("NP-35", "list-events is non-empty but the component does not export `handle-event`");
  // NP-06: items are PI event names (nanopi does not check; conform reports each other name).
  for (const std::string& e : requested_) {
    if (isEventName(e)) continue;
    std::string why = isNeverDeliverable(e) ? "a per-delta event that is never delivered (NP-14)"
                      : retiredRewrite(e)    ? fmt::format("a retired Claude Code name — did you mean \"{}\"? (NP-13)", *retiredRewrite(e))
                                             : "not one of the eleven PI event names";
    fault("NP-06", fmt::format("list-events asks for \"{}\": {}; it can never be delivered", e, why),
          "PI event names: " + validNamesList(), e);
    if (isNeverDeliverable(e)) fault("NP-14", fmt::format("list-events asks for \"{}\", which is never delivered to plugins", e), "", e);
    if (retiredRewrite(e))
      fault("NP-13", fmt::format("list-events asks for the retired name \"{}\" (did you mean \"{}\"?)", e, *retiredRewrite(e)), "", e);
  }
  nextLoadStep(GuestCall::Purpose::ListEvents);
}

Delivery::Status Host::deliver(const std::string& event, const std::string& payload) {
  Delivery d{event, payload, Delivery::Status::NotLoaded, std::nullopt, 0};
  if (state_ != LoadState::Loaded) d.status = Delivery::Status::NotLoaded;
  else if (!opts_.hooks_active) d.status = Delivery::Status::HooksOff;  // NP-32: hooks_active() gate
  else if (!contains(subs_, event)) d.status = Delivery::Status::NotSubscribed;  // NP-05 (one map lookup, NP-25)
  else if (busy() || !queue_.empty()) {
    // NP-20/21: try_lock failed — drop at once, count, log; never wait.
    d.status = Delivery::Status::Dropped;
    ++dropped_;
    log_.push_back(fmt::format("nanopi: dropped event delivery, plugin busy [event={}]", event));
  } else {
    d.status = Delivery::Status::Delivered;
    enqueue(GuestCall::Purpose::HandleEvent, "handle-event", {event, payload}, kEventBudgetMs, event);
    delivery_of_call_[queue_.back().seq] = deliveries_.size();
  }
  deliveries_.push_back(std::move(d));
  return deliveries_.back().status;
}

void Host::onHandleEvent(const GuestCall& c, const CallResult& r) {
  Delivery* d = nullptr;
  if (auto it = delivery_of_call_.find(c.seq); it != delivery_of_call_.end() && it->second < deliveries_.size())
    d = &deliveries_[it->second];
  switch (r.outcome) {
    case CallResult::Outcome::Ok: {
      // NP-03: the value is discarded (it goes nowhere but this report); plugins should return "{}".
      const std::string v = r.value.value_or("");
      auto p = json::parse(v);
      if (!p || !p->doc.IsObject() || p->doc.MemberCount() != 0)
        fault("NP-03", fmt::format("handle-event for {} returned something other than \"{{}}\" (discarded)", c.event), "\"{}\"",
              shorten(v));
      if (d) d->returned = v;
      break;
    }
    case CallResult::Outcome::Trap:
      if (d) d->status = Delivery::Status::Trapped;
      fault("NP-24", fmt::format("handle-event trapped on {}: {}", c.event, r.message), "handle-event returns", "trap: " + r.message);
      break;
    case CallResult::Outcome::Timeout:
      if (d) d->status = Delivery::Status::TimedOut;
      fault("NP-26", fmt::format("handle-event for {} ran past its {} ms budget and was stopped", c.event, kEventBudgetMs),
            fmt::format("handle-event returns within {} ms of guest time", kEventBudgetMs),
            fmt::format("still running at {:.0f} ms (guest {:.0f} ms)", r.elapsed_ms, r.guest_ms));
      break;
    case CallResult::Outcome::Failed:
      if (d) d->status = Delivery::Status::Failed;
      log_.push_back(fmt::format("nanopi: handle-event [event={}] could not be called: {}", c.event, r.message));
      break;
  }
  if (d) d->elapsed_ms = r.elapsed_ms;
}

bool Host::callTool(const std::string& name, const std::string& args_json) {
  if (state_ != LoadState::Loaded || busy() || !queue_.empty()) return false;
  enqueue(GuestCall::Purpose::ExecuteTool, "execute-tool", {name, args_json}, kToolBudgetMs);
  return true;
}

void Host::startTurn() {
  if (suppressed_this_turn_)
    notices_.push_back(fmt::format("[{}] … {} more suppressed", stem_, suppressed_this_turn_));
  notify_this_turn_ = suppressed_this_turn_ = sent_this_turn_ = 0;
}

}  // namespace conform::nanopi
