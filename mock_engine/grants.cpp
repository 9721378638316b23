// mock_engine/grants — see grants.h.
#include "mock_engine/grants.h"

#include <cstring>

namespace conform::engine {

bool GrantTable::makeKey(std::string_view token, Key& out) {
  if (token.size() > kMaxTokenChars) return false;
  std::memcpy(out.b.data(), token.data(), token.size());
  out.n = static_cast<std::uint8_t>(token.size());
  return true;
}

std::uint32_t GrantTable::internSession(const std::string& session) {
  if (last_session_ != UINT32_MAX && sessions_[last_session_] == session) return last_session_;
  auto [it, fresh] = session_index_.emplace(session, static_cast<std::uint32_t>(sessions_.size()));
  if (fresh) sessions_.push_back(session);
  last_session_ = it->second;
  return it->second;
}

void GrantTable::mint(const std::string& token, const std::string& session, GrantKind kind,
                      clock::Duration request_cap) {
  Key k;
  if (!makeKey(token, k)) return;
  Grant g;
  g.session = internSession(session);
  g.kind = kind;
  g.cap = request_cap;
  if (live_.emplace(k, g).second) ++pending_;
}

void GrantTable::activate(const std::string& token, clock::TimePoint now) {
  purge(now);
  Key k;
  if (!makeKey(token, k)) return;
  auto it = live_.find(k);
  if (it == live_.end() || it->second.state != State::Pending) return;
  Grant& g = it->second;
  g.state = State::Active;
  --pending_;
  g.expires = now + (g.kind == GrantKind::Notification ? kNotificationGrantLifetime
                                                       : g.cap + kRequestGrantSlack);
  if (never_expire_) g.expires = clock::TimePoint::max();
  g.activation = ++serial_;
  active_order_.emplace_back(k, g.activation);
  // R4 [impl]: at most 1024 active tokens; the oldest becomes spent.
  while (active_order_.size() > kMaxActiveGrants) {
    auto [old, serial] = active_order_.front();
    active_order_.pop_front();
    auto o = live_.find(old);
    if (o != live_.end() && o->second.state == State::Active && o->second.activation == serial) {
      std::uint32_t s = o->second.session;
      live_.erase(o);
      spend(old, s, now);
    }
  }
}

void GrantTable::revoke(const std::string& token, clock::TimePoint now) {
  Key k;
  if (!makeKey(token, k)) return;
  auto it = live_.find(k);
  if (it == live_.end()) return;
  if (it->second.state == State::Pending) --pending_;
  std::uint32_t s = it->second.session;
  live_.erase(it);  // its active_order_ entry (if any) goes stale and is skipped later
  spend(k, s, now);
}

GrantCheck GrantTable::consume(const std::string& token, const std::string& session,
                               clock::TimePoint now) {
  purge(now);
  GrantCheck r;
  Key k;
  if (!makeKey(token, k)) return r;  // never minted: unknown
  auto it = live_.find(k);
  if (it != live_.end()) {
    Grant& g = it->second;
    std::uint32_t si = g.session;
    r.token_session = sessions_[si];
    bool usable = g.state == State::Active && now < g.expires;
    if (g.state == State::Pending) --pending_;
    live_.erase(it);
    spend(k, si, now);  // one-shot: spent whatever follows (EMIT-07)
    if (!usable) r.result = GrantCheck::Result::Spent;
    else if (r.token_session != session) r.result = GrantCheck::Result::SessionMismatch;
    else r.result = GrantCheck::Result::Ok;
    return r;
  }
  auto s = spent_.find(k);
  if (s != spent_.end()) {
    r.result = GrantCheck::Result::Spent;
    r.token_session = sessions_[s->second];
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
  sessions_.clear();
  session_index_.clear();
  last_session_ = UINT32_MAX;
  pending_ = 0;
}

void GrantTable::spend(const Key& token, std::uint32_t session, clock::TimePoint now) {
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
    Key t = tok;
    std::uint32_t s = it->second.session;
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
