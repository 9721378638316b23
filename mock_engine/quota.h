// mock_engine/quota — publication quotas and the diagnostics coalescer (PROTOCOL §12;
// QUOTA-05…16).
//
// Quotas (QUOTA-05/06/07/08): per (plugin, session), at most 40 admitted emits per second and
// 4,194,304 serialized-event bytes per minute, with R4's fixed windows: each window starts at the
// first check and restarts at "now" with zero usage once its age is >= its length; an emit is
// admitted iff count < 40 and bytes + size <= 4 MiB; rejected emits consume nothing.
//
// Coalescer (QUOTA-10…13): increments keyed by (session, plugin, kind, message) with the message
// normalised (controls -> space) and cut to 200 characters; at most 256 detailed keys per batch,
// further distinct keys add to an exact `(overflow)` counter per (session, plugin, kind). The
// engine swaps the batch out every 100 ms (a timer, off the append path) and appends one
// plugin_diagnostic event per key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/clock/clock.h"

namespace conform::engine {

inline constexpr std::uint32_t kEmitsPerSecond = 40;                    // QUOTA-05
inline constexpr std::uint64_t kEmitBytesPerMinute = 4'194'304;         // QUOTA-06
inline constexpr clock::Duration kRateWindow = std::chrono::seconds(1);     // QUOTA-07
inline constexpr clock::Duration kVolumeWindow = std::chrono::seconds(60);  // QUOTA-07
inline constexpr std::size_t kDiagnosticMessageChars = 200;             // QUOTA-11
inline constexpr std::size_t kDiagnosticKeysPerBatch = 256;             // QUOTA-12
inline constexpr clock::Duration kDiagnosticFlushPeriod = std::chrono::milliseconds(100);  // QUOTA-13
inline constexpr clock::Duration kDiagnosticAppendTimeout = std::chrono::milliseconds(250); // QUOTA-14
inline constexpr clock::Duration kDiagnosticShutdownDrain = std::chrono::seconds(5);        // QUOTA-15

class PublishQuota {
 public:
  enum class Verdict { Admitted, RateExceeded, VolumeExceeded };
  Verdict check(const std::string& plugin, const std::string& session, std::uint64_t bytes,
                clock::TimePoint now);
  // The per-second limit (QUOTA-05); only the fault gallery changes it (quota_off_by_one).
  void setRateLimit(std::uint32_t n) { rate_limit_ = n; }

 private:
  struct Windows {
    clock::TimePoint second_start{}, minute_start{};
    std::uint32_t count = 0;
    std::uint64_t bytes = 0;
    bool started = false;
  };
  std::map<std::pair<std::string, std::string>, Windows> windows_;
  std::uint32_t rate_limit_ = kEmitsPerSecond;
};

// Controls -> space, then the first 200 characters (QUOTA-11). Input must be valid UTF-8.
std::string normaliseDiagnosticMessage(std::string_view message);

struct DiagnosticEntry {
  std::string session, plugin, kind, message;
  std::uint64_t count = 0;
};

class DiagnosticCoalescer {
 public:
  void record(const std::string& session, const std::string& plugin, const std::string& kind,
              std::string_view message, std::uint64_t n = 1);
  // Swaps the batch out: detailed keys first (key order), then overflow counters.
  std::vector<DiagnosticEntry> swap();
  bool empty() const { return detailed_.empty() && overflow_.empty(); }
  std::uint64_t totalRecorded() const { return total_; }

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  using OverflowKey = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::uint64_t> detailed_;
  std::map<OverflowKey, std::uint64_t> overflow_;
  std::uint64_t total_ = 0;
};

}  // namespace conform::engine
