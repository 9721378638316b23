// harness/dsl/lexer — see lexer.h.
#include "harness/dsl/lexer.h"

#include <fmt/format.h>

namespace conform::dsl::detail {
namespace {

bool isIdent(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Index one past the closing quote of the JSON string starting at `i` (line[i] == '"'), or npos.
std::size_t stringEnd(std::string_view s, std::size_t i) {
  for (std::size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') { ++j; continue; }
    if (s[j] == '"') return j + 1;
  }
  return std::string_view::npos;
}

// Decodes a JSON string literal with core/json (the only JSON parser we use).
bool decodeString(std::string_view lit, std::string& out, std::string& err) {
  auto p = json::parse(lit);
  if (!p || !p->doc.IsString()) {
    err = p ? "not a string" : p.error().message;
    return false;
  }
  out.assign(p->doc.GetString(), p->doc.GetStringLength());
  return true;
}

}  // namespace

std::string quoteBareRefs(std::string_view s, std::vector<std::size_t>* shifts) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '"') {
      std::size_t e = stringEnd(s, i);
      if (e == std::string_view::npos) e = s.size();
      out.append(s.substr(i, e - i));
      i = e;
    } else if (c == '$' && i + 1 < s.size() && (isIdent(s[i + 1]) || s[i + 1] == '$')) {
      std::size_t j = i + 1;
      while (j < s.size() && (isIdent(s[j]) || s[j] == '.' || s[j] == '$')) ++j;
      if (shifts) shifts->push_back(out.size());
      out += '"';
      out.append(s.substr(i, j - i));
      out += '"';
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

bool decodeHex(std::string_view hex, std::string& out) {
  out.clear();
  int hi = -1;
  for (char c : hex) {
    if (c == ' ' || c == '_') continue;
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else return false;
    if (hi < 0) { hi = v; continue; }
    out += static_cast<char>((hi << 4) | v);
    hi = -1;
  }
  return hi < 0;
}

bool lexLine(std::string_view line, std::vector<Token>& out, std::uint32_t& err_column,
             std::string& err_message) {
  out.clear();
  auto fail = [&](std::size_t at, std::string msg) {
    err_column = static_cast<std::uint32_t>(at + 1);
    err_message = std::move(msg);
    return false;
  };
  std::size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') { ++i; continue; }
    if (c == '#') break;
    Token t;
    t.column = static_cast<std::uint32_t>(i + 1);
    if (c == '"') {
      std::size_t e = stringEnd(line, i);
      if (e == std::string_view::npos) return fail(i, "unterminated string");
      std::string err;
      if (!decodeString(line.substr(i, e - i), t.text, err)) return fail(i, "invalid string: " + err);
      t.kind = Token::Kind::String;
      i = e;
    } else if (c == '{' || c == '[') {
      // A block opener `{` is a lone `{` at the end of a line; the parser decides (see below).
      std::size_t depth = 0, j = i;
      for (; j < line.size(); ++j) {
        char d = line[j];
        if (d == '"') {
          std::size_t e = stringEnd(line, j);
          if (e == std::string_view::npos) return fail(j, "unterminated string inside JSON");
          j = e - 1;
        } else if (d == '{' || d == '[') {
          ++depth;
        } else if (d == '}' || d == ']') {
          if (--depth == 0) break;
        }
      }
      if (j >= line.size()) {
        // A lone `{` (block opener) is a word; anything else is an unbalanced literal.
        std::string_view rest = line.substr(i + 1);
        if (c == '{' && rest.find_first_not_of(" \t\r") == std::string_view::npos) {
          t.kind = Token::Kind::Word;
          t.text = "{";
          out.push_back(std::move(t));
          break;
        }
        return fail(i, fmt::format("unbalanced JSON literal: missing `{}` (JSON literals stay on one line)",
                                   c == '{' ? '}' : ']'));
      }
      std::string_view lit = line.substr(i, j + 1 - i);
      std::vector<std::size_t> shifts;
      std::string rewritten = quoteBareRefs(lit, &shifts);
      json::ParseOptions po;
      po.reject_duplicates = true;  // a duplicate in a script is a typo; `send raw` sends odd JSON
      auto p = json::parse(rewritten, po);
      if (!p) {
        std::size_t off = p.error().offset;
        for (std::size_t s : shifts)
          if (s < off) off = off >= 2 ? off - 2 : 0;
        return fail(i + off, "invalid JSON: " + p.error().message);
      }
      t.kind = Token::Kind::Json;
      t.text = std::string(lit);
      t.json = std::make_shared<json::Document>(std::move(p->doc));
      i = j + 1;
    } else {
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') {
        if (line[j] == '"' && line.substr(i, j - i) == "text:") break;
        ++j;
      }
      t.text = std::string(line.substr(i, j - i));
      if (t.text == "text:" && j < line.size() && line[j] == '"') {
        std::size_t e = stringEnd(line, j);
        if (e == std::string_view::npos) return fail(j, "unterminated string after text:");
        std::string err;
        if (!decodeString(line.substr(j, e - j), t.text, err)) return fail(j, "invalid string: " + err);
        t.kind = Token::Kind::Text;
        j = e;
      }
      i = j;
    }
    out.push_back(std::move(t));
  }
  return true;
}

}  // namespace conform::dsl::detail
