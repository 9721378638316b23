// mock_engine/journal — see journal.h.
#include "mock_engine/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/crc.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace conform::engine {

namespace {

std::uint32_t crc32(std::string_view s) {
  boost::crc_32_type c;
  c.process_bytes(s.data(), s.size());
  return c.checksum();
}

void putU32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint32_t getU32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string errnoText(const std::string& what, const std::string& path) {
  return what + " `" + path + "`: " + std::strerror(errno);
}

Expected<std::string, std::string> readAll(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unexpected(errnoText("cannot open journal segment", path));
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string e = errnoText("cannot read journal segment", path);
      ::close(fd);
      return unexpected(e);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

bool fsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

std::string Journal::frame(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  putU32(out, static_cast<std::uint32_t>(payload.size()));
  putU32(out, crc32(payload));
  out.append(payload);
  return out;
}

Journal::Journal(Journal&& o) noexcept { *this = std::move(o); }
Journal& Journal::operator=(Journal&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    dir_ = std::move(o.dir_);
    fd_ = std::exchange(o.fd_, -1);
    replayed_ = std::move(o.replayed_);
    report_ = std::move(o.report_);
    syncs_ = o.syncs_;
    size_ = o.size_;
  }
  return *this;
}
Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<Journal, std::string> Journal::open(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return unexpected("cannot create journal directory `" + dir + "`: " + ec.message());
  std::vector<std::pair<unsigned long, std::string>> segs;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() != 14 || name.substr(6) != ".journal") continue;
    if (!std::all_of(name.begin(), name.begin() + 6, [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;
    segs.emplace_back(std::stoul(name.substr(0, 6)), e.path().string());
  }
  if (ec) return unexpected("cannot list journal directory `" + dir + "`: " + ec.message());
  std::sort(segs.begin(), segs.end());
  Journal j;
  j.dir_ = dir;
  j.report_.segments = segs.size();
  for (std::size_t si = 0; si < segs.size(); ++si) {
    const std::string& path = segs[si].second;
    bool newest = si + 1 == segs.size();
    auto data = readAll(path);
    if (!data) return unexpected(data.error());
    std::size_t pos = 0;
    std::string bad;
    while (pos < data->size()) {
      std::size_t left = data->size() - pos;
      if (left < 8) { bad = "short record header"; break; }
      std::uint32_t len = getU32(data->data() + pos);
      std::uint32_t crc = getU32(data->data() + pos + 4);
      if (len > kMaxJournalRecordBytes) { bad = "impossible record length " + std::to_string(len); break; }
      if (left - 8 < len) { bad = "short record payload"; break; }
      std::string_view payload(data->data() + pos + 8, len);
      if (crc32(payload) != crc) { bad = "record checksum mismatch"; break; }
      j.replayed_.emplace_back(payload);
      pos += 8 + len;
    }
    if (!bad.empty()) {
      if (!newest)
        return unexpected("journal segment `" + path + "` is corrupt at byte " + std::to_string(pos) +
                          " (" + bad + ") although a newer segment exists");
      // The torn tail of a crashed lifetime: nothing in it was acknowledged (the ACK follows the
      // fsync of the whole record), so cutting it loses nothing promised.
      if (::truncate(path.c_str(), static_cast<off_t>(pos)) != 0)
        return unexpected(errnoText("cannot cut the torn tail of", path));
      if (!fsyncPath(path)) return unexpected(errnoText("cannot fsync", path));
      j.report_.torn_bytes = data->size() - pos;
      j.report_.torn_reason = bad + " at byte " + std::to_string(pos) + " of " +
                              fs::path(path).filename().string();
    }
  }
  j.report_.records = j.replayed_.size();
  char name[32];
  std::snprintf(name, sizeof name, "%06lu.journal", segs.empty() ? 1UL : segs.back().first + 1);
  std::string path = (fs::path(dir) / name).string();
  j.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (j.fd_ < 0) return unexpected(errnoText("cannot create journal segment", path));
  // The new file's directory entry must be durable too, or a crash could lose the whole segment.
  if (::fsync(j.fd_) != 0 || !fsyncPath(dir)) return unexpected(errnoText("cannot fsync", path));
  return j;
}

Expected<Ok, std::string> Journal::append(std::string_view payload) {
  return append(std::vector<std::string>{std::string(payload)});
}

Expected<Ok, std::string> Journal::append(const std::vector<std::string>& payloads) {
  if (fd_ < 0) return unexpected(std::string("journal is not open"));
  std::string buf;
  for (auto& p : payloads) {
    if (p.size() > kMaxJournalRecordBytes)
      return unexpected("journal record of " + std::to_string(p.size()) + " bytes exceeds the limit");
    buf += frame(p);
  }
  std::size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = ::write(fd_, buf.data() + off, buf.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string e = errnoText("cannot append to journal in", dir_);
      // A partial batch must not stay in front of later records of this lifetime: cut it (and if
      // even that fails, refuse every later append — the caller answers -32049).
      if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) { ::close(fd_); fd_ = -1; }
      return unexpected(e);
    }
    off += static_cast<std::size_t>(n);
  }
  // fdatasync: the file size is metadata needed for replay, and fdatasync covers it.
  if (::fdatasync(fd_) != 0) {
    std::string e = errnoText("cannot fsync journal in", dir_);
    ::close(fd_);  // after a failed fsync the page state is unknown: stop appending (fail closed)
    fd_ = -1;
    return unexpected(e);
  }
  size_ += buf.size();
  ++syncs_;
  return Ok{};
}

}  // namespace conform::engine
