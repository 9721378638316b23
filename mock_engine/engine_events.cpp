// mock_engine/engine_events — the simulated runtime's sessions and event log, event delivery
// through the per-plugin 1024 queue, the bus, plugin/emit with grants and quotas, and the
// diagnostics coalescer (PROTOCOL §9–§12; EVT, BUS, EMIT, QUOTA).
#include "mock_engine/engine_impl.h"

namespace conform::engine {

namespace {

// PROTOCOL §11.4 / §18 (QUOTA-01…03).
constexpr std::size_t kMaxEmitPayloadBytes = 262'144;  // 256 KiB
constexpr std::size_t kMaxEmitEventBytes = 278'528;    // 272 KiB
constexpr std::size_t kMaxEmitNameChars = 128;

RecordClass classify(const json::Value& payload, std::string_view type) {
  // EVT-13: chunk = tool_call_progress with non-null output_chunk; terminal = tool_call_terminated.
  if (type == "tool_call_terminated") return RecordClass::Terminal;
  if (type == "tool_call_progress") {
    const json::Value* chunk = json::member(payload, "output_chunk");
    if (chunk && !chunk->IsNull()) return RecordClass::Chunk;
  }
  return RecordClass::Ordinary;
}

}  // namespace

std::string Engine::Impl::timestamp() const { return clock::formatRfc3339(clk.wallNow()); }

// ---- sessions --------------------------------------------------------------------------------------

std::string Engine::createSession(bool persisted) {
  std::string id = newUuid();
  Session& s = impl_->sessions[id];
  s.id = id;
  s.persisted = persisted;
  return id;
}

const Session* Engine::session(const std::string& id) const {
  auto it = impl_->sessions.find(id);
  return it == impl_->sessions.end() ? nullptr : &it->second;
}

Expected<Ok, std::string> Engine::persistSession(const std::string& id) {
  auto it = impl_->sessions.find(id);
  if (it == impl_->sessions.end()) return unexpected("unknown session `" + id + "`");
  Session& s = it->second;
  if (s.persisted) return Ok{};
  s.persisted = true;
  // EVT-04: the whole newly persisted prefix is delivered in order.
  for (auto& r : s.log)
    if (r.seq > s.delivered_through) impl_->deliverRecord(s, r);
  s.delivered_through = s.next_seq - 1;
  return Ok{};
}

void Engine::setSessionPermissions(const std::string& session, std::vector<PermissionRule> rules) {
  auto it = impl_->sessions.find(session);
  if (it != impl_->sessions.end()) it->second.overlay = std::move(rules);
}

Expected<Ok, std::string> Engine::setSessionStalled(const std::string& session, bool stalled) {
  auto it = impl_->sessions.find(session);
  if (it == impl_->sessions.end()) return unexpected("unknown session `" + session + "`");
  it->second.stalled = stalled;
  return Ok{};
}

Expected<std::uint64_t, std::string> Engine::appendEvent(const std::string& session,
                                                         const json::Value& payload,
                                                         const std::string& source_plugin) {
  return impl_->append(session, payload, source_plugin);
}

Expected<std::uint64_t, std::string> Engine::produceEvent(const std::string& session,
                                                          RecordClass cls) {
  Impl& m = *impl_;
  auto it = m.sessions.find(session);
  if (it == m.sessions.end()) return unexpected("unknown session `" + session + "`");
  std::uint64_t n = it->second.next_seq;
  rapidjson::Document ev(rapidjson::kObjectType);
  auto& a = ev.GetAllocator();
  std::string call = newUuid();
  if (cls == RecordClass::Terminal) {
    ev.AddMember("type", "tool_call_terminated", a);
    ev.AddMember("tool_call_id", json::str(call, a), a);
    rapidjson::Value owner(rapidjson::kObjectType);
    owner.AddMember("tool", "bash", a);
    ev.AddMember("owner", owner, a);
    ev.AddMember("outcome", "completed", a);
    ev.AddMember("result", rapidjson::Value(), a);
    ev.AddMember("error", rapidjson::Value(), a);
  } else {
    ev.AddMember("type", "tool_call_progress", a);
    ev.AddMember("tool_call_id", json::str(call, a), a);
    ev.AddMember("message", json::str("progress " + std::to_string(n), a), a);
    if (cls == RecordClass::Chunk) ev.AddMember("output_chunk", json::str("chunk " + std::to_string(n), a), a);
    else ev.AddMember("output_chunk", rapidjson::Value(), a);
  }
  return m.append(session, ev, "");
}

Expected<std::uint64_t, std::string> Engine::Impl::append(const std::string& session,
                                                          const json::Value& payload,
                                                          const std::string& source_plugin) {
  auto it = sessions.find(session);
  if (it == sessions.end()) return unexpected("unknown session `" + session + "`");
  auto type = json::stringMember(payload, "type");
  if (!payload.IsObject() || !type) return unexpected("an event payload is an object with a string `type`");
  Session& s = it->second;
  EventRecord r;
  r.seq = s.next_seq++;
  r.payload = std::make_shared<const std::string>(json::compact(payload));
  r.type = std::string(*type);
  r.timestamp = timestamp();
  r.source_plugin = source_plugin;
  r.cls = classify(payload, *type);
  s.log.push_back(r);
  if (cfg.max_retained_events && s.log.size() > cfg.max_retained_events) s.log.pop_front();
  // EVT-04: delivered only once the append is durable (a persisted session appends durably).
  if (s.persisted) {
    deliverRecord(s, r);
    s.delivered_through = r.seq;
  }
  return r.seq;
}

// ---- delivery ---------------------------------------------------------------------------------------

void Engine::Impl::deliverRecord(const Session& s, const EventRecord& r) {
  // EVT-08: model text and reasoning deltas are never delivered.
  if (r.type == "text_delta" || r.type == "reasoning_delta") return;
  std::shared_ptr<const std::string> prefix, suffix;
  for (auto& p : plugins) {
    Conn* c = conn(p.conn);
    // EVT-01/03/18: subscribed, connected (nothing before the handshake), never the source.
    if (!c || c->ended || !c->handshake_done || c->shutdown_sent) continue;
    if (!p.status.capabilities.subscribe_events || p.cfg.name == r.source_plugin) continue;
    if (!prefix) {
      // The payload is serialised once; only the grant differs per recipient (EVT-02/06/21).
      prefix = std::make_shared<const std::string>(
          R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":)" + quoteJson(s.id) +
          R"(,"context_id":)");
      suffix = std::make_shared<const std::string>(R"(,"seq":)" + std::to_string(r.seq) +
                                                   R"(,"event":)" + *r.payload +
                                                   R"(,"timestamp":)" + quoteJson(r.timestamp) + "}}");
    }
    Delivery d;
    d.cls = r.cls;
    d.session_id = s.id;
    d.frame_prefix = prefix;
    d.frame_suffix = suffix;
    enqueue(*c, std::move(d));
  }
}

void Engine::Impl::enqueue(Conn& c, Delivery d) {
  d.token = self.newUuid();
  c.grants.mint(d.token, d.session_id, GrantKind::Notification);
  PushResult pr = c.queue.push(std::move(d));
  if (pr.lost) noteDrop(c, *pr.lost);
  pump(c);
}

void Engine::Impl::noteDrop(Conn& c, const Delivery& lost) {
  PluginSlot& p = plugins[c.plugin];
  // EMIT-12: a grant whose frame is never written is spent and never becomes valid.
  c.grants.revoke(lost.token, clk.now());
  // EVT-16: dropped_events, per class, and an event_drop diagnostic in the event's session.
  p.status.dropped_events++;
  p.status.dropped_by_class[static_cast<int>(lost.cls)]++;
  recordDiagnostic(lost.session_id, c.plugin, "event_drop",
                   std::string("plugin ") + toString(lost.cls) +
                       " event buffer overflow; event delivery was dropped");
}

void Engine::Impl::pump(Conn& c) {
  while (!c.ended && c.handshake_done && !c.shutdown_sent && !c.stdin_closed && !c.queue.empty() &&
         host.writable(c.id)) {
    auto d = c.queue.pop();
    std::string frame;
    frame.reserve(d->frame_prefix->size() + d->token.size() + 2 + d->frame_suffix->size());
    frame += *d->frame_prefix;
    frame += '"';
    frame += d->token;  // UUID text: nothing to escape
    frame += '"';
    frame += *d->frame_suffix;
    // EMIT-11: the grant activates when the frame is written, not when it was queued.
    c.grants.activate(d->token, clk.now());
    writeFrame(c, frame);
  }
}

void Engine::Impl::publishBus(Conn& publisher, const std::string& session, const std::string& name,
                              const json::Value& payload) {
  std::shared_ptr<const std::string> prefix, suffix;
  for (auto& p : plugins) {
    Conn* c = conn(p.conn);
    // BUS-01: subscribers only, never the publisher.
    if (!c || c == &publisher || c->ended || !c->handshake_done || c->shutdown_sent) continue;
    if (!p.status.capabilities.subscribe_bus) continue;
    if (!prefix) {
      prefix = std::make_shared<const std::string>(
          R"({"jsonrpc":"2.0","method":"plugin/bus_event","params":{"session_id":)" +
          quoteJson(session) + R"(,"context_id":)");
      // BUS-02/07: publisher's configured name, name and payload unchanged.
      suffix = std::make_shared<const std::string>(
          R"(,"plugin":)" + quoteJson(plugins[publisher.plugin].cfg.name) + R"(,"name":)" +
          quoteJson(name) + R"(,"payload":)" + json::compact(payload) + "}}");
    }
    Delivery d;
    d.cls = RecordClass::Ordinary;  // BUS-08
    d.session_id = session;
    d.frame_prefix = prefix;
    d.frame_suffix = suffix;
    enqueue(*c, std::move(d));  // BUS-05: a fresh grant per delivery
  }
}

// ---- emits ------------------------------------------------------------------------------------------

void Engine::Impl::emitResult(Conn& c, const std::string& name, const char* bus,
                              const char* durable, std::optional<std::string> reason) {
  // EMIT-02/03: exactly one result per emit, in arrival order (written directly, never queued).
  std::string f = R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":)" +
                  quoteJson(name) + R"(,"bus":")" + bus + R"(","durable":")" + durable + "\"";
  if (reason) f += R"(,"reason":)" + quoteJson(*reason);
  f += "}}";
  sendOrDefer(c, f);
}

void Engine::Impl::handleEmit(Conn& c, const json::Value& params) {
  PluginSlot& p = plugins[c.plugin];
  const bool v004 = cfg.protocol_version == "0.0.4";
  // EMIT-22: params that fail strict decoding are fatal.
  json::Path::Root root("params");
  json::Path path(root);
  std::string session, token, name;
  json::Document payload;
  {
    json::ObjectMapper o(params, path);
    if (!(o && o.map("session_id", session) && o.map("context_id", token) && o.map("name", name) &&
          o.map("payload", payload) && o.closed()))
      return fatal(c, "malformed plugin/emit: " + root.error().value_or("invalid params"));
  }
  // Row 1 (EMIT-21).
  if (!c.handshake_done)
    return emitResult(c, name, "rejected", "rejected", std::string("plugin is not initialized"));
  // Rows 2–3 (EMIT-04…07, 13…15): one-shot consumption first, whatever follows.
  const char* ctx_bus = v004 ? "dropped" : "rejected";
  GrantCheck g = c.grants.consume(token, session, clk.now());
  switch (g.result) {
    case GrantCheck::Result::Unknown: {
      std::string why = "context_id is unknown to this plugin";
      p.status.reason = "plugin/emit rejected: " + why;  // EMIT-13: status only, no diagnostic
      p.status.notes.push_back(*p.status.reason);
      return emitResult(c, name, ctx_bus, "rejected", why);
    }
    case GrantCheck::Result::Spent: {
      std::string why = "context_id was already consumed, expired, or revoked";
      recordDiagnostic(g.token_session, c.plugin, "context_mismatch", why);  // EMIT-14
      return emitResult(c, name, ctx_bus, "rejected", why);
    }
    case GrantCheck::Result::SessionMismatch: {
      std::string why = "session_id does not match the delivered context";
      recordDiagnostic(g.token_session, c.plugin, "context_mismatch", why);  // EMIT-05
      return emitResult(c, name, ctx_bus, "rejected", why);
    }
    case GrantCheck::Result::Ok: break;
  }
  // Row 4 (QUOTA-01…04).
  std::size_t chars = 0;
  bool cf = controlFree(name, &chars);
  std::string payload_text = json::compact(payload);
  std::string record = R"({"type":"plugin_event_added","plugin":)" + quoteJson(p.cfg.name) +
                       R"(,"name":)" + quoteJson(name) + R"(,"payload":)" + payload_text + "}";
  std::optional<std::string> limit;
  if (chars == 0 || chars > kMaxEmitNameChars || !cf)
    limit = "event name must be 1-128 characters without control characters";
  else if (payload_text.size() > kMaxEmitPayloadBytes)
    limit = "event payload is " + std::to_string(payload_text.size()) + " bytes; the limit is 262144";
  else if (record.size() > kMaxEmitEventBytes)
    limit = "serialized event is " + std::to_string(record.size()) + " bytes; the limit is 278528";
  if (limit) {
    recordDiagnostic(session, c.plugin, "oversized_event", *limit);
    return emitResult(c, name, "dropped", "rejected", *limit);
  }
  // Row 5 (QUOTA-05…09).
  auto q = quota.check(p.cfg.name, session, record.size(), clk.now());
  if (q != PublishQuota::Verdict::Admitted) {
    std::string why = q == PublishQuota::Verdict::RateExceeded
                          ? "publication rate limit exceeded: at most 40 events per second"
                          : "publication volume limit exceeded: at most 4194304 bytes per minute";
    recordDiagnostic(session, c.plugin, "rate_limited", why);
    return emitResult(c, name, "dropped", "rejected", why);
  }
  const auto& caps = p.status.capabilities;
  if (v004) {
    // DELTA-0.0.4: the durable route appends plugin_event_added.
    if (!caps.publish_bus && !caps.publish_session_events)
      return emitResult(c, name, "rejected", "rejected",
                        std::string("plugin did not declare an event publishing capability"));
    const char* durable = "rejected";
    if (caps.publish_session_events) {
      rapidjson::Document ev;
      ev.Parse(record.c_str(), record.size());
      if (!ev.HasParseError() && append(session, ev, p.cfg.name)) durable = "published";
    }
    if (caps.publish_bus) publishBus(c, session, name, payload);
    return emitResult(c, name, caps.publish_bus ? "published" : "rejected", durable, std::nullopt);
  }
  // Row 6 (EMIT-20).
  if (!caps.publish_bus)
    return emitResult(c, name, "rejected", "rejected",
                      std::string("plugin did not declare an event publishing capability"));
  // Row 7 (EMIT-16/17): bus published, durable always rejected in 0.0.6.
  publishBus(c, session, name, payload);
  std::optional<std::string> reason;
  if (caps.publish_session_events)
    reason = "durable session publication is not supported; use plugin/producer/send";
  emitResult(c, name, "published", "rejected", reason);
}

// ---- diagnostics ------------------------------------------------------------------------------------

void Engine::Impl::recordDiagnostic(const std::string& session, std::size_t plugin,
                                    const std::string& kind, std::string_view message) {
  PluginSlot& p = plugins[plugin];
  diags.record(session, p.cfg.name, kind, message);
  p.status.diagnostics[kind]++;
  if (!flush_timer) {
    // QUOTA-13: the batch is swapped every 100 ms by a timer, off the append path.
    flush_timer = timers.schedule(clk.now() + kDiagnosticFlushPeriod, [this] {
      flush_timer = 0;
      flushDiagnostics();
    });
  }
}

void Engine::flushDiagnostics() { impl_->flushDiagnostics(); }

void Engine::Impl::flushDiagnostics() {
  if (flush_timer) { timers.cancel(flush_timer); flush_timer = 0; }
  auto batch = diags.swap();
  for (auto& e : batch) {
    auto sit = sessions.find(e.session);
    if (sit == sessions.end()) continue;
    // QUOTA-16: plugin_diagnostic {plugin, kind, message, count}, appended on behalf of the plugin
    // (EVT-18: never delivered to it).
    rapidjson::Document ev(rapidjson::kObjectType);
    auto& a = ev.GetAllocator();
    ev.AddMember("type", "plugin_diagnostic", a);
    ev.AddMember("plugin", json::str(e.plugin, a), a);
    ev.AddMember("kind", json::str(e.kind, a), a);
    ev.AddMember("message", json::str(e.message, a), a);
    ev.AddMember("count", rapidjson::Value(static_cast<std::uint64_t>(e.count)), a);
    if (!sit->second.stalled) {
      (void)append(e.session, ev, e.plugin);
      continue;
    }
    // QUOTA-14: a stalled append waits at most 250 ms; then the drain is incomplete.
    auto doc = std::make_shared<json::Document>(std::move(ev));
    timers.schedule(clk.now() + kDiagnosticAppendTimeout, [this, e, doc] {
      auto s = sessions.find(e.session);
      if (s != sessions.end() && !s->second.stalled) {
        (void)append(e.session, *doc, e.plugin);
        return;
      }
      for (auto& p : plugins)
        if (p.cfg.name == e.plugin)
          p.status.notes.push_back("diagnostic drain incomplete: append to session " + e.session +
                                   " timed out after 250 ms");
    });
  }
}

}  // namespace conform::engine
