// mock_engine/journal — the reference engine's crash-safe journal (ARCHITECTURE.md "Durability in
// the reference engine"; PROD-17, PROD-18, PROD-20, PROD-44).
//
// One directory of append-only segment files `NNNNNN.journal`. Every engine lifetime appends to a
// fresh segment, so a crash can only tear the tail of the newest segment of an earlier lifetime.
// A record is framed as
//     u32 little-endian payload length | u32 little-endian CRC-32 (IEEE) of the payload | payload
// and the payload is one compact JSON object (the producer service defines the record types).
//
// Why framing + CRC: a SIGKILL (or power loss) during write() leaves a prefix of the last record;
// a length without a checksum cannot tell "half written" from "complete", and the engine must never
// replay a half-written acceptance (it was never ACKed) nor lose a complete one (it may have been).
// Why fsync before an ACK: the ACK is the engine's promise that the message survives (PROD-17).
//
// open() replays every intact record in order. A torn tail of the newest segment (short header,
// short payload, impossible length, CRC mismatch) is cut with ftruncate and reported; a bad record
// in an older, cleanly closed segment is corruption and an error (never silently dropped).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/expected.h"

namespace conform::engine {

// A record larger than this is an impossible length (the frame limit of PROTOCOL §2 bounds every
// producer body; 16 MiB leaves room for the JSON around it).
inline constexpr std::uint32_t kMaxJournalRecordBytes = 16u << 20;

struct JournalOpenReport {
  std::size_t segments = 0;
  std::size_t records = 0;
  std::uint64_t torn_bytes = 0;  // bytes cut from the tail of the newest segment
  std::string torn_reason;       // "" when nothing was cut
};

class Journal {
 public:
  // Opens (creating if needed) `dir`, replays the intact records into `replayed()`, cuts a torn
  // tail, and starts a new segment for appends.
  static Expected<Journal, std::string> open(const std::string& dir);
  Journal(Journal&&) noexcept;
  Journal& operator=(Journal&&) noexcept;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  ~Journal();

  // Appends records and fsyncs once (group commit) before returning. Only after Ok may the caller
  // acknowledge anything the records describe.
  Expected<Ok, std::string> append(const std::vector<std::string>& payloads);
  Expected<Ok, std::string> append(std::string_view payload);

  const std::vector<std::string>& replayed() const { return replayed_; }
  void dropReplayed() { replayed_.clear(); replayed_.shrink_to_fit(); }
  const JournalOpenReport& report() const { return report_; }
  const std::string& dir() const { return dir_; }
  std::uint64_t syncs() const { return syncs_; }

  // The frame of one record (exposed for the torn-tail tests, which write partial frames).
  static std::string frame(std::string_view payload);

 private:
  Journal() = default;
  std::string dir_;
  int fd_ = -1;
  std::vector<std::string> replayed_;
  JournalOpenReport report_;
  std::uint64_t syncs_ = 0;
  std::uint64_t size_ = 0;  // bytes of the current segment
};

}  // namespace conform::engine
