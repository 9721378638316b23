// core/protocol/validate.cpp — text predicates of PROTOCOL.md §0.3, §5.1 and §8.1 (see validate.h).
// Hand-written rather than regex: they run on every decoded tool name and emit in monitors, and
// std::regex must never see untrusted input (DEPENDENCIES.md).
#include "core/protocol/validate.h"

#include <cstdint>

namespace conform::protocol {
namespace {

// Decodes one UTF-8 scalar at s[i]; returns its length (0 when invalid, RFC 3629).
std::size_t decodeUtf8(std::string_view s, std::size_t i, char32_t& cp) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) { cp = c; return 1; }
  std::size_t n = 0;
  char32_t min = 0;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool isCc(char32_t cp) { return cp <= 0x1F || (cp >= 0x7F && cp <= 0x9F); }

// Unicode White_Space property (the definition Rust's char::is_whitespace uses, R4 trim()).
bool isWhiteSpace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}
bool isLowerDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool isHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool isSnakeCase(std::string_view s) {
  if (s.empty() || s[0] < 'a' || s[0] > 'z') return false;
  bool prev_underscore = false;
  for (char c : s) {
    if (c == '_') {
      if (prev_underscore) return false;
      prev_underscore = true;
    } else if (isLowerDigit(c)) {
      prev_underscore = false;
    } else {
      return false;
    }
  }
  return !prev_underscore;
}

bool isControlFree(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    std::size_t n = decodeUtf8(s, i, cp);
    if (n == 0 || isCc(cp)) return false;
    i += n;
  }
  return true;
}

bool isNonblank(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    std::size_t n = decodeUtf8(s, i, cp);
    if (n == 0) return true;  // not whitespace, whatever it is
    if (!isWhiteSpace(cp)) return true;
    i += n;
  }
  return false;
}

bool isUriSafeStreamName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;  // TOOL-04, §8.1 [chosen C4]: 1–64 (ASCII ⇒ chars = bytes)
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || isDigit(c) || c == '-' || c == '.' ||
              c == '_' || c == '~';
    if (!ok) return false;
  }
  return true;
}

std::optional<std::size_t> utf8Length(std::string_view s) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < s.size(); ++count) {
    char32_t cp = 0;
    std::size_t n = decodeUtf8(s, i, cp);
    if (n == 0) return std::nullopt;
    i += n;
  }
  return count;
}

bool isUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !isHex(s[i])) return false;
  }
  return true;
}

bool isDateTime(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS
  auto digits = [&](std::size_t at, std::size_t n) {
    if (at + n > s.size()) return false;
    for (std::size_t k = 0; k < n; ++k)
      if (!isDigit(s[at + k])) return false;
    return true;
  };
  auto num = [&](std::size_t at, std::size_t n) {
    int v = 0;
    for (std::size_t k = 0; k < n; ++k) v = v * 10 + (s[at + k] - '0');
    return v;
  };
  if (!digits(0, 4) || s.size() < 20 || s[4] != '-' || !digits(5, 2) || s[7] != '-' || !digits(8, 2)) return false;
  if (s[10] != 'T' && s[10] != 't') return false;
  if (!digits(11, 2) || s[13] != ':' || !digits(14, 2) || s[16] != ':' || !digits(17, 2)) return false;
  int mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), sec = num(17, 2);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
  std::size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    std::size_t start = i;
    while (i < s.size() && isDigit(s[i])) ++i;
    if (i == start) return false;
  }
  if (i >= s.size()) return false;
  if (s[i] == 'Z' || s[i] == 'z') return i + 1 == s.size();
  if (s[i] != '+' && s[i] != '-') return false;
  if (!digits(i + 1, 2) || i + 3 >= s.size() || s[i + 3] != ':' || !digits(i + 4, 2)) return false;
  return i + 6 == s.size() && num(i + 1, 2) <= 23 && num(i + 4, 2) <= 59;
}

}  // namespace conform::protocol
