// mock_engine/grants — the per-connection context-grant table (PROTOCOL §11.3; EMIT-04…15).
//
// A token is minted when a delivery or request is created (state Pending) and activated only when
// its frame is written to the plugin's stdin (EMIT-11: queue time does not count). Notification
// tokens then live 5 s (EMIT-10); request tokens live until their request ends (EMIT-08), capped at
// the request timeout + 100 ms (R4 [impl]). Tokens are one-shot: the first consume() spends the
// token whatever the later checks decide (EMIT-06/07). A token revoked before activation is spent
// and never becomes valid (EMIT-12). Bookkeeping bounds (R4 [impl], PROTOCOL §11.3/§18): at most
// 1024 active tokens (overflow spends the oldest) and 256 spent tokens remembered for 30 s, after
// which they are reported as unknown.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock/clock.h"

namespace conform::engine {

// PROTOCOL §11.3 / §18.
inline constexpr clock::Duration kNotificationGrantLifetime = std::chrono::seconds(5);  // EMIT-10
inline constexpr clock::Duration kRequestGrantSlack = std::chrono::milliseconds(100);  // R4 cap
inline constexpr std::size_t kMaxActiveGrants = 1024;                                   // R4 [impl]
inline constexpr std::size_t kMaxSpentGrants = 256;                                     // R4 [impl]
inline constexpr clock::Duration kSpentGrantMemory = std::chrono::seconds(30);          // R4 [impl]

enum class GrantKind { Notification, Request };

struct GrantCheck {
  enum class Result { Ok, Unknown, Spent, SessionMismatch };
  Result result = Result::Unknown;
  std::string token_session;  // the session the token was delivered with (known tokens)
};

class GrantTable {
 public:
  // Registers a new, not yet active token. `request_cap` is the request timeout (requests only).
  void mint(const std::string& token, const std::string& session, GrantKind kind,
            clock::Duration request_cap = {});
  // The frame carrying `token` was written now (EMIT-11). No-op for unknown/spent tokens.
  void activate(const std::string& token, clock::TimePoint now);
  // Request ended, or the queued delivery was dropped before its write (EMIT-08, EMIT-12).
  void revoke(const std::string& token, clock::TimePoint now);
  // An emit presents `token` for `session`: one-shot, consumed whatever the outcome (EMIT-06/07).
  GrantCheck consume(const std::string& token, const std::string& session, clock::TimePoint now);
  // End of the connection: everything is forgotten (LIFE-11).
  void clear();

  // Fault gallery only (never_expire_tokens, EMIT-10 broken): activated grants never expire.
  void setNeverExpire(bool v) { never_expire_ = v; }

  std::size_t activeCount() const { return active_order_.size(); }
  std::size_t pendingCount() const { return pending_; }
  std::size_t spentCount() const { return spent_order_.size(); }

 private:
  enum class State { Pending, Active };
  // Tokens are held inline (no heap string per token): the fan-out path mints, activates and
  // spends one token per delivery (bench/engine_fanout.cpp). The engine mints 36-character UUIDs;
  // a token longer than kMaxTokenChars is never registered, so presenting one reads as unknown.
  static constexpr std::size_t kMaxTokenChars = 64;
  struct Key {
    std::array<char, kMaxTokenChars> b{};
    std::uint8_t n = 0;
    std::string_view view() const { return {b.data(), n}; }
    bool operator==(const Key& o) const { return view() == o.view(); }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return std::hash<std::string_view>{}(k.view()); }
  };
  static bool makeKey(std::string_view token, Key& out);
  struct Grant {
    std::uint32_t session = 0;  // index into sessions_
    GrantKind kind;
    State state = State::Pending;
    clock::Duration cap{};
    clock::TimePoint expires{};
    std::uint64_t activation = 0;  // serial, to match active_order_ entries
  };
  std::uint32_t internSession(const std::string& session);
  void spend(const Key& token, std::uint32_t session, clock::TimePoint now);
  void purge(clock::TimePoint now);

  std::unordered_map<Key, Grant, KeyHash> live_;
  std::deque<std::pair<Key, std::uint64_t>> active_order_;  // (token, activation serial)
  std::unordered_map<Key, std::uint32_t, KeyHash> spent_;   // token -> session index
  std::deque<std::pair<Key, clock::TimePoint>> spent_order_;
  // Sessions seen by this connection's grants, interned (a connection serves few sessions).
  std::vector<std::string> sessions_;
  std::unordered_map<std::string, std::uint32_t> session_index_;
  std::uint32_t last_session_ = UINT32_MAX;
  std::size_t pending_ = 0;
  std::uint64_t serial_ = 0;
  bool never_expire_ = false;
};

}  // namespace conform::engine
