// mock_engine/grants — see grants.h.
#include "mock_engine/grants.h"

namespace conform::engine {

void GrantTable::mint(const std::string& token, const std::string& session, GrantKind kind,
                      clock::Duration request_cap) {
  Grant g;
  g.session = session;
  g.kind = kind;
  g.cap = request_cap;
  if (live_.emplace(token, std::move(g)).second) ++pending_;
}

void GrantTable::activate(const std::string& token, clock::TimePoint now) {
  purge(now);
  auto it = live_.find(token);
  if (it == live_.end() || it->second.state != State::Pending) return;
  Grant& g = it->second;
  g.state = State::Active;
  --pending_;
  g.expires = now + (g.kind == GrantKind::Notification ? kNotificationGrantLifetime
                                                       : g.cap + kRequestGrantSlack);
  g.activation = ++serial_;
  active_order_.emplace_back(token, g.activation);
  // R4 [impl]: at most 1024 active tokens; the oldest becomes spent.
  while (active_order_.size() > kMaxActiveGrants) {
    auto [old, serial] = active_order_.front();
    active_order_.pop_front();
    auto o = live_.find(old);
    if (o != live_.end() && o->second.state == State::Active && o->second.activation == serial) {
      std::string s = o->second.session;
      live_.erase(o);
      spend(old, s, now);
    }
  }
}

void GrantTable::revoke(const std::string& token, clock::TimePoint now) {
  auto it = live_.find(token);
  if (it == live_.end()) return;
  if (it->second.state == State::Pending) --pending_;
  std::string s = std::move(it->second.session);
  live_.erase(it);  // its active_order_ entry (if any) goes stale and is skipped later
  spend(token, s, now);
}

GrantCheck GrantTable::consume(const std::string& token, const std::string& session,
                               clock::TimePoint now) {
  purge(now);
  GrantCheck r;
  auto it = live_.find(token);
  if (it != live_.end()) {
    Grant& g = it->second;
    r.token_session = g.session;
    bool usable = g.state == State::Active && now < g.expires;
    if (g.state == State::Pending) --pending_;
    live_.erase(it);
    spend(token, r.token_session, now);  // one-shot: spent whatever follows (EMIT-07)
    if (!usable) r.result = GrantCheck::Result::Spent;
    else if (r.token_session != session) r.result = GrantCheck::Result::SessionMismatch;
    else r.result = GrantCheck::Result::Ok;
    return r;
  }
  auto s = spent_.find(token);
  if (s != spent_.end()) {
    r.result = GrantCheck::Result::Spent;
    r.token_session = s->second;
    return r;
  }
  r.result = GrantCheck::Result::Unknown;
  return r;
}

void GrantTable::clear() {
  live_.clear();
  active_order_.clear();
  spent_.clear();
  spent_order_.clear();
  pending_ = 0;
}

void GrantTable::spend(const std::string& token, const std::string& session, clock::TimePoint now) {
  if (spent_.insert_or_assign(token, session).second) spent_order_.emplace_back(token, now);
  while (spent_order_.size() > kMaxSpentGrants) {
    spent_.erase(spent_order_.front().first);
    spent_order_.pop_front();
  }
}

void GrantTable::purge(clock::TimePoint now) {
  // Expired active tokens become spent (remembered 30 s), stale order entries are dropped.
  while (!active_order_.empty()) {
    auto& [tok, serial] = active_order_.front();
    auto it = live_.find(tok);
    if (it == live_.end() || it->second.state != State::Active || it->second.activation != serial) {
      active_order_.pop_front();
      continue;
    }
    // Only notification grants expire in activation order; a request grant is revoked by its
    // request, so the front may be a live request: stop scanning there.
    if (now < it->second.expires) break;
    std::string t = tok, s = it->second.session;
    live_.erase(it);
    active_order_.pop_front();
    spend(t, s, now);
  }
  while (!spent_order_.empty() && now - spent_order_.front().second >= kSpentGrantMemory) {
    spent_.erase(spent_order_.front().first);
    spent_order_.pop_front();
  }
}

}  // namespace conform::engine
