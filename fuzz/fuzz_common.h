// fuzz/fuzz_common.h — what every fuzz target shares: an invariant check that aborts (so libFuzzer
// saves the input as a crash and the plain-main replay exits non-zero), a byte reader for the
// selector bytes some targets take from the front of the input, and a JSON comparison that
// tolerates RapidJSON's known one-ulp round-trip drift (DEPENDENCIES.md: without
// kParseFullPrecisionFlag, which we must not use, a written double may re-read one ulp away).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "core/wire/framing.h"

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

// Distance in representable doubles (0 = identical bit patterns, -0.0 and 0.0 count as equal).
inline std::uint64_t ulpDistance(double a, double b) {
  if (a == b) return 0;
  if (std::isnan(a) || std::isnan(b)) return UINT64_MAX;
  auto ordered = [](double d) {
    auto u = std::bit_cast<std::int64_t>(d);
    return u < 0 ? INT64_MIN - u : u;  // maps the sign-magnitude layout onto a monotone line
  };
  std::int64_t x = ordered(a), y = ordered(b);
  return x > y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
               : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
}

inline double asDouble(const json::Value& v) {
  if (v.IsInt64()) return static_cast<double>(v.GetInt64());
  if (v.IsUint64()) return static_cast<double>(v.GetUint64());
  return v.GetDouble();
}

// How far two numbers may drift through one write + re-read. Integers that fit int64/uint64 are
// written and read exactly; canonical() turns integral doubles below 2^53 into integers, which
// is exact too. Other doubles move: RapidJSON's default (not correctly rounded) reader multiplies
// by a power of ten, and fuzz_json_parse measured 2 ulps in a single trip and drift that goes on
// accumulating over repeated trips (tests/fuzzregress/json_number_test.cpp). 8 ulps still
// catches every real corruption (a lost or changed decimal digit is ~2^40 ulps or more).
inline constexpr std::uint64_t kMaxUlpDrift = 8;

inline bool sameNumber(const json::Value& a, const json::Value& b) {
  if (!a.IsDouble() && !b.IsDouble()) {
    if (a.IsInt64() && b.IsInt64()) return a.GetInt64() == b.GetInt64();
    if (a.IsUint64() && b.IsUint64()) return a.GetUint64() == b.GetUint64();
    return false;
  }
  return ulpDistance(asDouble(a), asDouble(b)) <= kMaxUlpDrift;
}

// CONFORM_FUZZ_STRICT=1: every known, reported, not yet fixed finding (see kKnown* in the
// targets and tests/fuzzregress/) is fatal again. Off by default so CI stays green while the
// owners fix them and the fuzzers keep looking for new ones.
inline bool strictMode() {
  static const bool strict = [] {
    const char* e = std::getenv("CONFORM_FUZZ_STRICT");
    return e && std::string_view(e) == "1";
  }();
  return strict;
}

// Known finding (tests/fuzzregress/json_surrogate_test.cpp): json::parse accepts a lone low
// surrogate escape ("\udc80") and stores its 3-byte encoding, which is not UTF-8; the writers then
// emit text that parse() (and FRAME-04/05) refuse. True when any string or member name holds
// invalid UTF-8, so targets can set such values aside until core/json refuses them.
inline bool hasInvalidUtf8(const json::Value& v) {
  auto bad = [](const json::Value& s) {
    return wire::firstInvalidUtf8(std::string_view(s.GetString(), s.GetStringLength())) != wire::npos;
  };
  if (v.IsString()) return bad(v);
  if (v.IsArray())
    for (auto& e : v.GetArray())
      if (hasInvalidUtf8(e)) return true;
  if (v.IsObject())
    for (auto& m : v.GetObject())
      if (bad(m.name) || hasInvalidUtf8(m.value)) return true;
  return false;
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
