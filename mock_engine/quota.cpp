// mock_engine/quota — see quota.h.
#include "mock_engine/quota.h"

namespace conform::engine {

PublishQuota::Verdict PublishQuota::check(const std::string& plugin, const std::string& session,
                                          std::uint64_t bytes, clock::TimePoint now) {
  Windows& w = windows_[{plugin, session}];
  if (!w.started) {
    w.started = true;
    w.second_start = w.minute_start = now;
  }
  if (now - w.second_start >= kRateWindow) { w.second_start = now; w.count = 0; }
  if (now - w.minute_start >= kVolumeWindow) { w.minute_start = now; w.bytes = 0; }
  if (w.count >= rate_limit_) return Verdict::RateExceeded;
  if (w.bytes + bytes > kEmitBytesPerMinute) return Verdict::VolumeExceeded;
  ++w.count;
  w.bytes += bytes;
  return Verdict::Admitted;
}

std::string normaliseDiagnosticMessage(std::string_view m) {
  std::string out;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < m.size() && chars < kDiagnosticMessageChars; ++chars) {
    auto c = static_cast<unsigned char>(m[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
    if (i + len > m.size()) len = m.size() - i;
    bool control = c < 0x20 || c == 0x7F ||
                   (c == 0xC2 && len == 2 && static_cast<unsigned char>(m[i + 1]) <= 0x9F);
    if (control) out.push_back(' ');
    else out.append(m.substr(i, len));
    i += len;
  }
  return out;
}

void DiagnosticCoalescer::record(const std::string& session, const std::string& plugin,
                                 const std::string& kind, std::string_view message,
                                 std::uint64_t n) {
  total_ += n;
  Key k{session, plugin, kind, normaliseDiagnosticMessage(message)};
  auto it = detailed_.find(k);
  if (it != detailed_.end()) { it->second += n; return; }
  if (detailed_.size() < kDiagnosticKeysPerBatch) { detailed_.emplace(std::move(k), n); return; }
  overflow_[{session, plugin, kind}] += n;  // QUOTA-12: exact, never lost
}

std::vector<DiagnosticEntry> DiagnosticCoalescer::swap() {
  std::vector<DiagnosticEntry> out;
  out.reserve(detailed_.size() + overflow_.size());
  for (auto& [k, n] : detailed_)
    out.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), n});
  for (auto& [k, n] : overflow_)
    out.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), "(overflow)", n});
  detailed_.clear();
  overflow_.clear();
  return out;
}

}  // namespace conform::engine
