// core/trace/detail — internals shared by the trace writer and reader (not part of the API).
//
// Why a SAX handler of our own instead of calling json::parse() per line: lint must read at least
// 500,000 frames/s and at least half as fast as a bare RapidJSON parse (issue 2). json::parse()
// builds a fresh Document (a new allocator) per call and makes extra passes. Here ONE RapidJSON pass
// per line does everything core/json's hardening does — depth cap, UTF-8 validation
// (kParseValidateEncodingFlag), non-finite numbers rejected, duplicate names reported — while the
// DOM goes into a reused, pooled Document. The depth check runs in StartObject/StartArray, so the
// recursive parser stops long before the stack could overflow (DEPENDENCIES.md: ~10^6 levels).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/reader.h>

#include "core/json/json.h"

namespace conform::trace::detail {

enum class SaxFault { None, TooDeep, NonFinite, Surrogate };

// True when `s` is plain ASCII (every byte < 0x80) and holds no `\u` escape starting with d/D.
// Such a line cannot hold invalid UTF-8 (ASCII is valid UTF-8) nor a lone surrogate (only a
// \uD800–\uDFFF escape can yield one), so parsing it without kParseValidateEncodingFlag and
// without the per-string surrogate scan accepts and refuses exactly what the full checks do —
// at about half the cost (RapidJSON validates string bytes one code point at a time; lint
// throughput, issue 6). Escapes are walked pairwise (an escaped backslash followed by "ud" is not
// an escape); a backslash outside a string fails the parse either way. Lines with any non-ASCII
// byte always take the full checks.
//
// A line holding a control byte (< 0x20) takes the full checks too: RapidJSON 1.1's SIMD string
// scanner, used only without kParseValidateEncodingFlag, tests "c < 0x20" as max(c, 0x19) == 0x19
// and so lets 0x1A–0x1F through inside a string when they fall in a 16-byte block (fuzz_trace_reader
// find: the frame then did not parse again from its own bytes). The validating path checks each
// byte. Compact JSON lines hold no control byte at all, so this costs nothing on real traces.
inline bool plainAscii(std::string_view s) {
  const char* p = s.data();
  std::size_t n = s.size();
  std::uint64_t high = 0, low = 0;
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    high |= w;
    low |= (w - 0x20 * kOnes) & ~w & kHigh;  // a byte < 0x20 (exact for bytes < 0x80)
  }
  for (; n; ++p, --n) {
    const auto c = static_cast<unsigned char>(*p);
    high |= c;
    low |= c < 0x20 ? 0x80u : 0u;
  }
  if ((high & kHigh) || low) return false;
  for (const char* b = s.data(); (b = static_cast<const char*>(std::memchr(b, '\\', static_cast<std::size_t>(s.data() + s.size() - b))));) {
    ++b;
    const std::size_t left = static_cast<std::size_t>(s.data() + s.size() - b);
    if (left >= 2 && b[0] == 'u' && (b[1] == 'd' || b[1] == 'D')) return false;
    if (left) ++b;  // the escaped character (it may itself be a backslash)
  }
  return true;
}

// Forwards every event to `Next` (a GenericDocument, or the no-op NullSink) after checking it.
// With track_keys it records member names per object and reports duplicates at EndObject.
template <class Next>
class HardenedSax {
 public:
  HardenedSax(Next& next, std::size_t max_depth, bool track_keys)
      : next_(next), max_depth_(max_depth), track_keys_(track_keys) {}

  SaxFault fault = SaxFault::None;
  // Off only for a line plainAscii() vouched for (no lone surrogate can occur in it).
  bool check_surrogates = true;
  // With track_keys: where the name of the root object's member "frame" starts, as RapidJSON
  // handed it over (in situ: a position in the parsed buffer). The reader slices the frame's exact
  // bytes from there instead of re-scanning the line (issue 6). nullptr: no such member.
  const char* frame_key = nullptr;

  // Ready for the next parse; keeps the vectors' capacity (no allocation per line).
  void reset() {
    fault = SaxFault::None;
    frame_key = nullptr;
    depth_ = 0;
    stack_.clear();
    keys_.clear();
  }

  // A duplicate found: `depth` = nesting of the object holding it (1 = the root object),
  // `path` = member path segments below the root, rendered by the caller.
  struct Dup {
    std::size_t depth;
    std::string path;  // json::Path::str() style, relative to the root
  };
  std::vector<Dup>* dups = nullptr;  // set by the caller when track_keys

  bool Null() { value(); return next_.Null(); }
  bool Bool(bool b) { value(); return next_.Bool(b); }
  bool Int(int i) { value(); return next_.Int(i); }
  bool Uint(unsigned u) { value(); return next_.Uint(u); }
  bool Int64(std::int64_t i) { value(); return next_.Int64(i); }
  bool Uint64(std::uint64_t u) { value(); return next_.Uint64(u); }
  bool Double(double d) {
    // RapidJSON turns 1.8e308 into +inf without an error (DEPENDENCIES.md); its Writer then
    // writes nothing. Such a number is refused, as core/json parse() does.
    if (!std::isfinite(d)) { fault = SaxFault::NonFinite; return false; }
    value();
    return next_.Double(d);
  }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    value();
    return next_.RawNumber(s, n, copy);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    // A lone surrogate escape is refused, as core/json parse() refuses it (FRAME-04): otherwise a
    // frame the reader accepted would not parse again from its own bytes (fuzz_trace_reader find).
    if (check_surrogates && json::holdsSurrogate(s, n)) { fault = SaxFault::Surrogate; return false; }
    value();
    return next_.String(s, n, copy);
  }
  bool StartObject() {
    if (!open(true)) return false;
    return next_.StartObject();
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    if (check_surrogates && json::holdsSurrogate(s, n)) { fault = SaxFault::Surrogate; return false; }
    if (track_keys_) {
      keys_.emplace_back(s, n);  // insitu/stable input: the view stays valid for the parse
      stack_.back().key = std::string_view(s, n);
      if (stack_.size() == 1 && n == 5 && std::memcmp(s, "frame", 5) == 0) frame_key = s;
    }
    return next_.Key(s, n, copy);
  }
  bool EndObject(rapidjson::SizeType count) {
    if (track_keys_) checkDuplicates();
    close();
    return next_.EndObject(count);
  }
  bool StartArray() {
    if (!open(false)) return false;
    return next_.StartArray();
  }
  bool EndArray(rapidjson::SizeType count) {
    close();
    return next_.EndArray(count);
  }

 private:
  struct Level {
    bool is_object;
    std::size_t keys_start;  // index into keys_ of this object's first key
    std::size_t count = 0;   // array: elements started so far
    std::string_view key;    // object: current member name
  };

  // An element of an array gets its index when it starts.
  void value() {
    if (track_keys_ && !stack_.empty() && !stack_.back().is_object) ++stack_.back().count;
  }
  bool open(bool is_object) {
    value();
    if (depth_ + 1 > max_depth_) { fault = SaxFault::TooDeep; return false; }
    ++depth_;
    if (track_keys_) stack_.push_back(Level{is_object, keys_.size(), 0, {}});
    return true;
  }
  void close() {
    --depth_;
    if (track_keys_) {
      keys_.resize(stack_.back().keys_start);
      stack_.pop_back();
    }
  }
  void checkDuplicates() {
    const std::size_t start = stack_.back().keys_start, n = keys_.size() - start;
    if (n < 2) return;
    // Objects in protocol frames are small: a quadratic scan beats sorting up to a few dozen.
    auto report = [&](std::string_view k) {
      if (dups) dups->push_back(Dup{stack_.size(), renderPath(k)});
    };
    if (n <= 32) {
      // Length and first byte before memcmp: the names of one object rarely share both.
      auto same = [](std::string_view a, std::string_view b) {
        return a.size() == b.size() && (a.empty() || (a[0] == b[0] && std::memcmp(a.data(), b.data(), a.size()) == 0));
      };
      for (std::size_t i = start + 1; i < keys_.size(); ++i)
        for (std::size_t j = start; j < i; ++j)
          if (same(keys_[i], keys_[j])) { report(keys_[i]); break; }
      return;
    }
    std::vector<std::string_view> sorted(keys_.begin() + static_cast<std::ptrdiff_t>(start), keys_.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 1; i < sorted.size(); ++i)
      if (sorted[i] == sorted[i - 1] && (i + 1 == sorted.size() || sorted[i + 1] != sorted[i]))
        report(sorted[i]);
  }
  static bool isIdent(std::string_view k) {
    if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
    for (char c : k)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
        return false;
    return true;
  }
  static void appendKey(std::string& out, std::string_view k) {
    if (isIdent(k)) {
      if (!out.empty()) out += '.';
      out += k;
    } else {
      out += "[\"";
      for (char c : k) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
      out += "\"]";
    }
  }
  // Path of member `k` of the innermost object, e.g. `params.items[2].name`.
  std::string renderPath(std::string_view k) const {
    std::string out;
    for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Level& l = stack_[i];
      if (l.is_object) appendKey(out, l.key);
      else out += "[" + std::to_string(l.count - 1) + "]";
    }
    appendKey(out, k);
    return out;
  }

  Next& next_;
  std::size_t max_depth_;
  bool track_keys_;
  std::size_t depth_ = 0;
  std::vector<Level> stack_;
  std::vector<std::string_view> keys_;
};

// A handler that accepts everything (validation-only parses).
struct NullSink : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, NullSink> {
  bool Default() { return true; }
};

}  // namespace conform::trace::detail
