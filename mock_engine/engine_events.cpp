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

std::string Engine::Impl::timestamp() const {
  // Every event carries a timestamp; formatting the calendar part once per wall-clock second
  // (instead of gmtime + fmt per event) keeps it off the fan-out hot path. The output equals
  // clock::formatRfc3339 (2026-01-01T00:00:00.000000Z).
  auto us = clk.wallNow().time_since_epoch().count();
  std::int64_t secs = us / 1000000, frac = us % 1000000;
  if (frac < 0) { frac += 1000000; --secs; }
  if (!ts_cache_valid || secs != ts_cache_secs) {
    std::string full = clock::formatRfc3339(clock::WallTime(std::chrono::seconds(secs)));
    ts_cache_prefix = full.substr(0, full.size() - 7);  // up to and including the '.'
    ts_cache_secs = secs;
    ts_cache_valid = true;
  }
  std::string out = ts_cache_prefix;
  char digits[7];
  for (int i = 5; i >= 0; --i, frac /= 10) digits[i] = static_cast<char>('0' + frac % 10);
  digits[6] = 'Z';
  out.append(digits, 7);
  return out;
}

static void appendQuoted(std::string& out, std::string_view s) {
  // Fast path for the engine's own identifiers (UUIDs, timestamps): nothing to escape.
  bool plain = true;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f) { plain = false; break; }
  }
  if (!plain) { out += quoteJson(s); return; }
  out += '"';
  out.append(s);
  out += '"';
}

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
  // EVT-04: the whole newly persisted prefix is made durable, then delivered in order.
  for (auto& r : s.log) {
    if (r.seq <= s.delivered_through) continue;
    if (impl_->append_sink && !impl_->append_sink(s, r)) continue;
    impl_->deliverRecord(s, r);
  }
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

void Engine::setAppendSink(AppendSink sink) { impl_->append_sink = std::move(sink); }

bool Engine::restoreEvent(const std::string& session, std::uint64_t seq, std::string timestamp,
                          std::string source_plugin, std::shared_ptr<const std::string> payload_json) {
  auto parsed = json::parse(*payload_json);
  if (!parsed || !parsed->doc.IsObject()) return false;
  auto type = json::stringMember(parsed->doc, "type");
  if (!type) return false;
  restoreSession(session);
  Session& s = impl_->sessions[session];
  if (seq < s.next_seq) return false;  // seqs only grow (EVT-05); a repeat is not re-added
  EventRecord r;
  r.seq = seq;
  r.type = std::string(*type);
  r.cls = classify(parsed->doc, r.type);
  r.payload = std::move(payload_json);
  r.timestamp = std::move(timestamp);
  r.source_plugin = std::move(source_plugin);
  s.next_seq = seq + 1;
  s.delivered_through = seq;
  s.log.push_back(std::move(r));
  return true;
}

Expected<std::uint64_t, std::string> Engine::produceEvent(const std::string& session,
                                                          RecordClass cls) {
  Impl& m = *impl_;
  auto it = m.sessions.find(session);
  if (it == m.sessions.end()) return unexpected("unknown session `" + session + "`");
  std::uint64_t n = it->second.next_seq;
  // A string template instead of a JSON DOM: the benchmark drives millions of these, and every
  // member is the engine's own text (UUID, digits), so nothing needs escaping.
  std::string call = newUuid();
  std::string ev;
  ev.reserve(256);
  if (cls == RecordClass::Terminal) {
    // PROTOCOL §5.3 / R4 schema: owner is an AssistantToolCallRef, outcome a
    // ToolTerminationOutcome, result a PersistedToolResult or null, error a SafeToolError or null.
    ev += R"({"type":"tool_call_terminated","tool_call_id":")";
    ev += call;
    ev += R"(","owner":{"model_turn_seq":1,"content_index":0,"model_call_id":"call_)";
    ev += std::to_string(n);
    ev += R"(","provider_item_id":null},"outcome":"completed","result":null,"error":null})";
  } else {
    ev += R"({"type":"tool_call_progress","tool_call_id":")";
    ev += call;
    ev += R"(","message":"progress )";
    ev += std::to_string(n);
    if (cls == RecordClass::Chunk) {
      ev += R"(","output_chunk":"chunk )";
      ev += std::to_string(n);
      ev += "\"}";
    } else {
      ev += R"(","output_chunk":null})";
    }
  }
  return m.appendSerialized(it->second,
                            std::make_shared<const std::string>(std::move(ev)),
                            cls == RecordClass::Terminal ? "tool_call_terminated" : "tool_call_progress",
                            cls, "");
}

Expected<std::uint64_t, std::string> Engine::Impl::append(const std::string& session,
                                                          const json::Value& payload,
                                                          const std::string& source_plugin) {
  auto it = sessions.find(session);
  if (it == sessions.end()) return unexpected("unknown session `" + session + "`");
  auto type = json::stringMember(payload, "type");
  if (!payload.IsObject() || !type) return unexpected("an event payload is an object with a string `type`");
  return appendSerialized(it->second, std::make_shared<const std::string>(json::compact(payload)),
                          *type, classify(payload, *type), source_plugin);
}

std::uint64_t Engine::Impl::appendSerialized(Session& s, std::shared_ptr<const std::string> payload,
                                             std::string_view type, RecordClass cls,
                                             const std::string& source_plugin) {
  EventRecord r;
  r.seq = s.next_seq++;
  r.payload = std::move(payload);
  r.type = std::string(type);
  r.timestamp = timestamp();
  r.source_plugin = source_plugin;
  r.cls = cls;
  // EVT-04: delivered only once the append is durable (a persisted session appends durably; with
  // a journal the sink has fsynced the record before anyone sees it).
  if (s.persisted || has(EngineFault::DeliverBeforePersist)) {
    bool durable = !s.persisted || !append_sink || append_sink(s, r);
    if (durable) deliverRecord(s, r);
    s.delivered_through = r.seq;
  }
  std::uint64_t seq = r.seq;
  s.log.push_back(std::move(r));
  if (cfg.max_retained_events && s.log.size() > cfg.max_retained_events) s.log.pop_front();
  return seq;
}

// ---- delivery ---------------------------------------------------------------------------------------

void Engine::Impl::deliverRecord(const Session& s, const EventRecord& r) {
  // EVT-08: model text and reasoning deltas are never delivered.
  if ((r.type == "text_delta" || r.type == "reasoning_delta") && !has(EngineFault::DeliverTextDelta))
    return;
  std::shared_ptr<const std::string> prefix, suffix;
  for (auto& p : plugins) {
    Conn* c = conn(p.conn);
    // EVT-01/03/18: subscribed, connected (nothing before the handshake), never the source.
    if (!c || c->ended || !c->handshake_done || c->shutdown_sent) continue;
    if (!p.status.capabilities.subscribe_events && !has(EngineFault::DeliverUnsubscribed)) continue;
    if (p.cfg.name == r.source_plugin && !has(EngineFault::DeliverOwnDiagnostic)) continue;
    if (!prefix) {
      // The payload is serialised once; only the grant differs per recipient (EVT-02/06/21).
      // The prefix depends on the session only: reuse it while events stay in one session.
      if (event_prefix_session != &s || !event_prefix) {
        std::string pre = R"({"jsonrpc":"2.0","method":"plugin/event","params":{"session_id":)";
        appendQuoted(pre, s.id);
        pre += R"(,"context_id":)";
        event_prefix = std::make_shared<const std::string>(std::move(pre));
        event_prefix_session = &s;
      }
      std::string suf;
      suf.reserve(r.payload->size() + 80);
      suf += R"(,"seq":)";
      suf += std::to_string(r.seq);
      suf += R"(,"event":)";
      suf += *r.payload;
      suf += R"(,"timestamp":)";
      suf += '"';
      suf += r.timestamp;  // RFC 3339 text made by timestamp(): nothing to escape
      suf += "\"}}";
      prefix = event_prefix;
      suffix = std::make_shared<const std::string>(std::move(suf));
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
  if (fault != EngineFault::None) {
    c.grants.setNeverExpire(has(EngineFault::NeverExpireTokens));
    c.queue.setTerminalFirstEviction(has(EngineFault::EvictTerminalFirst));
  }
  c.grants.mint(d.token, d.session_id, GrantKind::Notification);
  // EMIT-11 broken: the grant's 5 s start while the record still waits in the queue.
  if (has(EngineFault::GrantAtQueueTime)) c.grants.activate(d.token, clk.now());
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
  if (has(EngineFault::NoDropDiagnostic)) return;
  recordDiagnostic(lost.session_id, c.plugin, "event_drop",
                   std::string("plugin ") + toString(lost.cls) +
                       " event buffer overflow; event delivery was dropped");
}

void Engine::Impl::pump(Conn& c) {
  while (!c.ended && c.handshake_done && !c.shutdown_sent && !c.stdin_closed && !c.queue.empty() &&
         host.writable(c.id)) {
    auto d = c.queue.pop();
    if (has(EngineFault::DeliverOutOfOrder) && !c.queue.empty()) {
      // EVT-05 broken: the next record goes out first, this one after it.
      auto next = c.queue.pop();
      c.queue.push(std::move(*d));
      d = std::move(next);
    }
    std::string frame;
    frame.reserve(d->frame_prefix->size() + d->token.size() + 3 + d->frame_suffix->size());
    frame += *d->frame_prefix;
    frame += '"';
    frame += d->token;  // UUID text: nothing to escape
    frame += '"';
    frame += *d->frame_suffix;
    // EMIT-11: the grant activates when the frame is written, not when it was queued.
    c.grants.activate(d->token, clk.now());
    // writeFrame() without its extra copy (the loop condition already holds its guards,
    // FRAME-15/SHUT-05): the frame is built with its LF (FRAME-03) and written as is.
    frame += '\n';
    host.write(c.id, frame);
    if (observer)
      observer->onFrame(plugins[c.plugin].cfg.name, c.id, Direction::ToPlugin,
                        std::string_view(frame.data(), frame.size() - 1), clk.now());
  }
}

Expected<std::uint64_t, std::string> Engine::subscribeDaemon(const std::string& session) {
  if (!impl_->sessions.count(session)) return unexpected("unknown session `" + session + "`");
  std::uint64_t id = impl_->next_daemon++;
  impl_->daemon_clients[id].session = session;
  return id;
}

std::optional<Engine::DaemonInbox> Engine::readDaemon(std::uint64_t client) {
  auto it = impl_->daemon_clients.find(client);
  if (it == impl_->daemon_clients.end()) return std::nullopt;
  DaemonInbox out;
  out.session = it->second.session;
  out.notifications.assign(std::make_move_iterator(it->second.inbox.begin()),
                           std::make_move_iterator(it->second.inbox.end()));
  out.dropped = it->second.dropped;
  it->second.inbox.clear();
  it->second.dropped = 0;
  return out;
}

bool Engine::unsubscribeDaemon(std::uint64_t client) { return impl_->daemon_clients.erase(client) > 0; }

void Engine::Impl::publishBus(Conn& publisher, const std::string& session, const std::string& name,
                              const json::Value& payload) {
  std::shared_ptr<const std::string> prefix, suffix;
  // BUS-04: the publication is also an engine PluginEvent, notified as `events.plugin` to the
  // daemon clients subscribed to this session only (never to clients of other sessions).
  std::string note;
  for (auto& [id, dc] : daemon_clients) {
    if (dc.session != session) continue;
    if (note.empty())
      note = R"({"jsonrpc":"2.0","method":"events.plugin","params":{"session_id":)" + quoteJson(session) +
             R"(,"plugin":)" + quoteJson(plugins[publisher.plugin].cfg.name) + R"(,"name":)" +
             quoteJson(name) + R"(,"payload":)" + json::compact(payload) + "}}";
    if (dc.inbox.size() >= kMaxDaemonInbox) {
      dc.inbox.pop_front();
      ++dc.dropped;
    }
    dc.inbox.push_back(note);
  }
  for (auto& p : plugins) {
    Conn* c = conn(p.conn);
    // BUS-01: subscribers only, never the publisher.
    if (!c || (c == &publisher && !has(EngineFault::DeliverOwnBus)) || c->ended || !c->handshake_done || c->shutdown_sent) continue;
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
  if (has(EngineFault::NoEmitResult) && std::string_view(bus) == "published") return;
  if (has(EngineFault::EmitResultOutOfOrder)) {
    // EMIT-02 broken: every other result waits for the next emit's result.
    if (!held_emit_result) { held_emit_result = f; return; }
    sendOrDefer(c, f);
    sendOrDefer(c, *held_emit_result);
    held_emit_result.reset();
    return;
  }
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
      if (has(EngineFault::AcceptReusedToken)) break;  // EMIT-06 broken
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
  emitResult(c, name, "published", has(EngineFault::DurablePublished) ? "published" : "rejected",
             reason);
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
