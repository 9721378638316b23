// core/trace/util — names, base64 and the frame classifier shared by the trace writer and reader.
//
// base64 is written here because none of our dependencies offers it as a public API (Boost.Beast
// has one only in a detail namespace); it is RFC 4648 §4, standard alphabet, with padding.
#include <array>
#include <csignal>
#include <cstring>
#include <string>

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include "core/trace/detail.h"
#include "core/trace/trace.h"
#include "core/wire/framing.h"

namespace conform::trace {

const char* toString(Dir d) {
  switch (d) {
    case Dir::EngineToPlugin: return "e2p";
    case Dir::PluginToEngine: return "p2e";
    case Dir::None: return "none";
  }
  return "none";
}

const char* toString(Kind k) {
  switch (k) {
    case Kind::Frame: return "frame";
    case Kind::Text: return "text";
    case Kind::Binary: return "b64";
    case Kind::Oversized: return "oversized";
    case Kind::Stderr: return "stderr";
    case Kind::Eof: return "eof";
    case Kind::Exit: return "exit";
    case Kind::Timeout: return "timeout";
    case Kind::Note: return "note";
    case Kind::Case: return "case";
    case Kind::Raw: return "raw_b64";
  }
  return "?";
}

std::string TraceError::str() const {
  if (line == 0) return message;
  return "line " + std::to_string(line) + ": " + message;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<signed char, 256> makeB64Index() {
  std::array<signed char, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kB64[i])] = static_cast<signed char>(i);
  return t;
}
constexpr auto kB64Index = makeB64Index();
}  // namespace

std::string base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(in[k]); };
  for (; i + 3 <= in.size(); i += 3) {
    const unsigned v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  const std::size_t rest = in.size() - i;
  if (rest == 1) {
    const unsigned v = byte(i) << 16;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    const unsigned v = (byte(i) << 16) | (byte(i + 1) << 8);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + static_cast<std::size_t>(k)];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad) return std::nullopt;  // data after padding
      v[k] = kB64Index[static_cast<unsigned char>(c)];
      if (v[k] < 0) return std::nullopt;
    }
    const unsigned n = (unsigned(v[0]) << 18) | (unsigned(v[1]) << 12) | (unsigned(v[2]) << 6) | unsigned(v[3]);
    out += static_cast<char>((n >> 16) & 0xFF);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(n & 0xFF);
  }
  return out;
}

std::string_view signalName(int sig) {
  // glibc's sigabbrev_np() knows the names ("KILL"); we add the "SIG" prefix once per number.
  static const std::array<std::string, 65> names = [] {
    std::array<std::string, 65> a;
    for (int s = 1; s < 65; ++s)
      if (const char* abbr = sigabbrev_np(s)) a[static_cast<std::size_t>(s)] = std::string("SIG") + abbr;
    return a;
  }();
  if (sig <= 0 || sig >= 65) return {};
  return names[static_cast<std::size_t>(sig)];
}

FrameForm classifyFrame(std::string_view bytes) {
  if (wire::firstInvalidUtf8(bytes) != wire::npos) return FrameForm::Binary;
  // One validation-only SAX pass (no DOM) with core/json's hardening. A frame that core/json would
  // refuse (too deep, non-finite number) is stored as text, so the reader never meets a "frame"
  // member it cannot parse.
  rapidjson::MemoryStream ms(bytes.data(), bytes.size());
  detail::NullSink sink;
  detail::HardenedSax<detail::NullSink> h(sink, json::kDefaultMaxDepth, false);
  rapidjson::Reader reader;
  const auto r = reader.Parse<rapidjson::kParseValidateEncodingFlag>(ms, h);
  // MemoryStream reports '\0' both at the end and at an embedded NUL byte: only a parse that
  // consumed every byte counts.
  if (r.IsError() || ms.Tell() != bytes.size()) return FrameForm::Text;
  return FrameForm::Json;
}

}  // namespace conform::trace
