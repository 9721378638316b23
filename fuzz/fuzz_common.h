// fuzz/fuzz_common.h — what every fuzz target shares: an invariant check that aborts (so libFuzzer
// saves the input as a crash and the plain-main replay exits non-zero), a byte reader for the
// selector bytes some targets take from the front of the input, and an exact positional JSON
// comparison (core/json reads doubles correctly rounded and writes them round-trip, so a write +
// re-read must give every number back bit for bit).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"

// Never compiled out (unlike assert): a fuzz target without its invariants only finds crashes.
#define FUZZ_CHECK(cond, what)                                                                   \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n  %s\n", __FILE__, __LINE__,    \
                   #cond, std::string(what).c_str());                                            \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)

namespace conform::fuzz {

inline std::string_view asText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Takes selector bytes from the front; returns 0 once the input is used up, so every input
// (even an empty one) is a valid test case.
class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  std::uint8_t byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  std::string_view rest() const { return asText(p_, n_); }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
};

// Numbers compare exactly: integers that fit int64/uint64 are read and written exactly; doubles are
// read correctly rounded (core/json re-reads them with std::from_chars) and written in a form that
// round-trips (Grisu2), and canonical() turns integral doubles below 2^53 into integers, which is
// exact too. Any difference is a finding (tests/fuzzregress/json_number_test.cpp).
inline bool sameNumber(const json::Value& a, const json::Value& b) {
  if (!a.IsDouble() && !b.IsDouble()) {
    if (a.IsInt64() && b.IsInt64()) return a.GetInt64() == b.GetInt64();
    if (a.IsUint64() && b.IsUint64()) return a.GetUint64() == b.GetUint64();
    return false;
  }
  return json::equal(a, b);  // by value: 1 == 1.0, as canonical() writes an integral double
}

// CONFORM_FUZZ_STRICT=1: decoder/schema disagreements no profile promises to rule out are fatal
// too (fuzz/profile_target.h); off by default so the fuzzers keep looking for new findings.
inline bool strictMode() {
  static const bool strict = [] {
    const char* e = std::getenv("CONFORM_FUZZ_STRICT");
    return e && std::string_view(e) == "1";
  }();
  return strict;
}

enum class Members { InOrder, SortLeft };

// Positional structural comparison: arrays element by element, objects member by member (so
// duplicate member names are compared too, which json::equal cannot do). With SortLeft the left
// side's members are stably sorted by name first — the order canonical() writes.
inline bool sameValue(const json::Value& a, const json::Value& b, Members order = Members::InOrder) {
  if (a.IsNumber() && b.IsNumber()) return sameNumber(a, b);
  if (a.GetType() != b.GetType()) return false;
  if (a.IsString())
    return std::string_view(a.GetString(), a.GetStringLength()) ==
           std::string_view(b.GetString(), b.GetStringLength());
  if (a.IsArray()) {
    if (a.Size() != b.Size()) return false;
    for (rapidjson::SizeType i = 0; i < a.Size(); ++i)
      if (!sameValue(a[i], b[i], order)) return false;
    return true;
  }
  if (a.IsObject()) {
    if (a.MemberCount() != b.MemberCount()) return false;
    std::vector<const json::Value::Member*> ma;
    for (auto& m : a.GetObject()) ma.push_back(&m);
    if (order == Members::SortLeft)
      std::stable_sort(ma.begin(), ma.end(), [](auto* x, auto* y) {
        return std::string_view(x->name.GetString(), x->name.GetStringLength()) <
               std::string_view(y->name.GetString(), y->name.GetStringLength());
      });
    std::size_t i = 0;
    for (auto& mb : b.GetObject()) {
      const auto* m = ma[i++];
      if (!sameValue(m->name, mb.name) || !sameValue(m->value, mb.value, order)) return false;
    }
    return true;
  }
  return true;  // null, true, false: the type says it all
}

}  // namespace conform::fuzz
