// The reference engine's journal (ARCHITECTURE.md "Durability in the reference engine"): framing,
// replay, torn-tail detection and truncation, corruption in older segments.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/engine/producer_rig.h"

using namespace enginetest;
namespace fs = std::filesystem;

namespace {
std::vector<fs::path> segments(const std::string& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}
void appendRaw(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::app);
  f << bytes;
}
}  // namespace

TEST_CASE("PROD-17 journal: records replay in order across lifetimes, one segment per lifetime", "[engine][journal]") {
  TempDir d;
  {
    auto j = Journal::open(d.path);
    REQUIRE(j);
    REQUIRE(j->append(std::vector<std::string>{"a", "b"}));
    REQUIRE(j->append("c"));
    CHECK(j->syncs() == 2);
  }
  {
    auto j = Journal::open(d.path);
    REQUIRE(j);
    CHECK(j->replayed() == std::vector<std::string>{"a", "b", "c"});
    REQUIRE(j->append("d"));
  }
  auto j = Journal::open(d.path);
  REQUIRE(j);
  CHECK(j->replayed() == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(j->report().segments == 2);  // segments found at open; this lifetime starts a third
  CHECK(j->report().torn_reason.empty());
}

TEST_CASE("PROD-17 journal: a torn tail (partial header, partial payload, bad CRC) is detected and cut", "[engine][journal]") {
  auto torn = GENERATE(std::string("\x05\x00\x00", 3), Journal::frame("hello").substr(0, 10),
                       [] { std::string f = Journal::frame("hello"); f.back() ^= 1; return f; }());
  TempDir d;
  {
    auto j = Journal::open(d.path);
    REQUIRE(j);
    REQUIRE(j->append("kept"));
  }
  auto seg = segments(d.path).back();
  auto before = fs::file_size(seg);
  appendRaw(seg, torn);
  auto j = Journal::open(d.path);
  REQUIRE(j);
  CHECK(j->replayed() == std::vector<std::string>{"kept"});
  CHECK(j->report().torn_bytes == torn.size());
  CHECK_FALSE(j->report().torn_reason.empty());
  CHECK(fs::file_size(seg) == before);  // cut on disk
  REQUIRE(j->append("after"));
  auto j2 = Journal::open(d.path);
  REQUIRE(j2);
  CHECK(j2->replayed() == std::vector<std::string>{"kept", "after"});
  CHECK(j2->report().torn_reason.empty());
}

TEST_CASE("PROD-17 journal: corruption in an older segment is an error, never silently dropped", "[engine][journal]") {
  TempDir d;
  {
    auto j = Journal::open(d.path);
    REQUIRE(j);
    REQUIRE(j->append("one"));
  }
  {
    auto j = Journal::open(d.path);
    REQUIRE(j);
    REQUIRE(j->append("two"));
  }
  auto first = segments(d.path).front();
  {
    std::fstream f(first, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(9);
    f.put('X');
  }
  auto j = Journal::open(d.path);
  REQUIRE_FALSE(j);
  CHECK(j.error().find("corrupt") != std::string::npos);
}

TEST_CASE("PROD-17 journal: an impossible length is a torn tail, and a missing directory is created", "[engine][journal]") {
  TempDir d;
  std::string sub = d.path + "/nested/dir";
  {
    auto j = Journal::open(sub);
    REQUIRE(j);
  }
  appendRaw(segments(sub).back(), std::string("\xff\xff\xff\x7f\0\0\0\0", 8));
  auto j = Journal::open(sub);
  REQUIRE(j);
  CHECK(j->report().torn_reason.find("impossible record length") != std::string::npos);
}
