// harness/dsl/parser — scenario text → Plan (plan.h). One line at a time: a bad line is reported as
// `file.scn:LINE:COL: …` and parsing resumes at the next line, so a catalogue author sees every
// mistake of a file at once. The grammar is in docs/dsl.md.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "harness/dsl/lexer.h"
#include "harness/dsl/plan.h"

namespace conform::dsl {

using detail::Token;

std::string Loc::str() const { return fmt::format("{}:{}:{}", file, line, column); }
std::string ParseError::str() const { return loc.str() + ": " + message; }

std::string Case::area() const {
  auto dash = id.find('-');
  return dash == std::string::npos ? id : id.substr(0, dash);
}

std::optional<Millis> parseDuration(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '.')) ++n;
  if (n == 0 || n == s.size()) return std::nullopt;
  std::string num(s.substr(0, n));
  if (std::count(num.begin(), num.end(), '.') > 1 || num.front() == '.' || num.back() == '.')
    return std::nullopt;
  double v = std::strtod(num.c_str(), nullptr);
  std::string_view unit = s.substr(n);
  double ms;
  if (unit == "ms") ms = v;
  else if (unit == "s") ms = v * 1000;
  else if (unit == "m") ms = v * 60000;
  else return std::nullopt;
  // Durations beyond a day are a typo, and would overflow deadline arithmetic.
  if (!std::isfinite(ms) || ms > 86'400'000.0 || ms != std::floor(ms)) return std::nullopt;
  return Millis(static_cast<std::int64_t>(ms));
}

std::string formatDuration(Millis d) {
  if (d.count() != 0 && d.count() % 1000 == 0) return fmt::format("{}s", d.count() / 1000);
  return fmt::format("{}ms", d.count());
}

namespace {

bool validId(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return std::isupper(static_cast<unsigned char>(s[0]));
}

bool validRef(std::string_view s) {  // $name or $name.a.b
  if (s.size() < 2 || s[0] != '$') return false;
  if (!std::isalpha(static_cast<unsigned char>(s[1])) && s[1] != '_') return false;
  for (char c : s.substr(1))
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return s.back() != '.';
}

bool plainName(std::string_view s) {  // $name without dots (a capture target)
  return validRef(s) && s.find('.') == std::string_view::npos;
}

class LineParser {
 public:
  LineParser(const std::vector<Token>& toks, Loc base) : t_(toks), base_(std::move(base)) {}

  bool done() const { return i_ >= t_.size(); }
  const Token* peek() const { return done() ? nullptr : &t_[i_]; }
  bool peekWord(std::string_view w) const {
    return !done() && t_[i_].kind == Token::Kind::Word && t_[i_].text == w;
  }
  Loc locHere() const {
    Loc l = base_;
    l.column = done() ? (t_.empty() ? 1 : t_.back().column + static_cast<std::uint32_t>(t_.back().text.size()))
                      : t_[i_].column;
    return l;
  }
  std::string found() const {
    if (done()) return "end of line";
    const Token& k = t_[i_];
    switch (k.kind) {
      case Token::Kind::String: return "a string";
      case Token::Kind::Json: return "a JSON literal";
      case Token::Kind::Text: return "text:\"…\"";
      default: return "`" + k.text + "`";
    }
  }
  // Throws nothing: records the first error and returns false.
  bool error(std::string msg) {
    if (!err_) err_ = ParseError{locHere(), std::move(msg)};
    return false;
  }
  // An error about the token just consumed (a bad value, not a missing one).
  bool errorPrev(std::string msg) {
    if (!err_) {
      Loc l = base_;
      l.column = i_ > 0 ? t_[i_ - 1].column : base_.column;
      err_ = ParseError{l, std::move(msg)};
    }
    return false;
  }
  bool expected(std::string_view what) { return error(fmt::format("expected {}, found {}", what, found())); }

  bool word(std::string& out, std::string_view what) {
    if (done() || t_[i_].kind != Token::Kind::Word) return expected(what);
    out = t_[i_++].text;
    return true;
  }
  bool keyword(std::string_view w) {
    if (!peekWord(w)) return false;
    ++i_;
    return true;
  }
  bool string(std::string& out, std::string_view what) {
    if (done() || t_[i_].kind != Token::Kind::String) return expected(what);
    out = t_[i_++].text;
    return true;
  }
  void text(std::string& out) { out = t_[i_++].text; }
  bool jsonOpt(JsonPtr& out) {
    if (done() || t_[i_].kind != Token::Kind::Json) return true;
    out = t_[i_++].json;
    return true;
  }
  bool jsonObject(JsonPtr& out, std::string_view what) {
    if (done() || t_[i_].kind != Token::Kind::Json || !t_[i_].json->IsObject()) return expected(what);
    out = t_[i_++].json;
    return true;
  }
  bool ref(std::string& out, std::string_view what) {
    if (done() || t_[i_].kind != Token::Kind::Word || !validRef(t_[i_].text)) return expected(what);
    out = t_[i_++].text.substr(1);
    return true;
  }
  bool integer(std::int64_t& out, std::string_view what) {
    if (done() || t_[i_].kind != Token::Kind::Word) return expected(what);
    const std::string& s = t_[i_].text;
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return expected(what);
    ++i_;
    return true;
  }
  bool duration(Millis& out) {
    if (done() || t_[i_].kind != Token::Kind::Word) return expected("a duration like 250ms or 2s");
    auto d = parseDuration(t_[i_].text);
    if (!d) return expected("a duration like 250ms or 2s");
    ++i_;
    out = *d;
    return true;
  }
  // [as $x]
  bool asOpt(std::string& out) {
    if (!keyword("as")) return true;
    if (done() || !plainName(t_[i_].text)) return expected("a capture name like $r after `as`");
    out = t_[i_++].text.substr(1);
    return true;
  }
  // [within D]
  bool withinOpt(std::optional<Millis>& out) {
    if (!keyword("within")) return true;
    Millis d{};
    if (!duration(d)) return false;
    if (d > kMaxWithin) return errorPrev(fmt::format("`within {}` exceeds the {} cap", formatDuration(d), formatDuration(kMaxWithin)));
    out = d;
    return true;
  }
  bool end() {
    if (!done()) return error(fmt::format("unexpected {} at end of step", found()));
    return true;
  }
  std::optional<ParseError>& err() { return err_; }
  const Token& token(std::size_t k) const { return t_[k]; }
  std::size_t pos() const { return i_; }

 private:
  const std::vector<Token>& t_;
  Loc base_;
  std::size_t i_ = 0;
  std::optional<ParseError> err_;
};

// True when the JSON literal holds the string "$pad" somewhere (the padding slot of `size N`).
bool mentionsPad(const json::Value& v) {
  if (v.IsString()) return std::string_view(v.GetString(), v.GetStringLength()) == std::string("$") + kPadCapture;
  if (v.IsObject()) {
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m)
      if (mentionsPad(m->value)) return true;
  } else if (v.IsArray()) {
    for (const auto& e : v.GetArray())
      if (mentionsPad(e)) return true;
  }
  return false;
}

// A method name may hold capture references as whole path segments: plugin/intercept/$h.
bool validMethod(std::string_view m) {
  std::size_t start = 0;
  while (start <= m.size()) {
    std::size_t slash = m.find('/', start);
    std::string_view seg = m.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg.empty()) return false;
    if (seg[0] == '$' && !validRef(seg)) return false;
    if (seg[0] != '$' && seg.find('$') != std::string_view::npos) return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return !m.empty();
}

bool methodWord(LineParser& p, std::string& out) {
  if (!p.word(out, "a method name")) return false;
  if (!validMethod(out))
    return p.errorPrev(fmt::format("invalid method name `{}` (a capture is a whole segment: plugin/intercept/$h)", out));
  return true;
}

bool parseMsgKind(LineParser& p, MsgKind& k) {
  if (p.keyword("request")) k = MsgKind::Request;
  else if (p.keyword("notify")) k = MsgKind::Notify;
  else if (p.keyword("response")) k = MsgKind::Response;
  else if (p.keyword("error")) k = MsgKind::Error;
  else if (p.keyword("frame")) k = MsgKind::Frame;
  else if (p.keyword("answer")) k = MsgKind::Answer;
  else return p.expected("request, notify, response, error, answer or frame");
  return true;
}

// expect [no] request|notify [METHOD] [exact] [{pattern}] [as $x] [within D]
// expect [no] response|error [$r] [CODE] [exact] [{pattern}] [as $x] [within D]
bool parseExpectMsg(LineParser& p, Step& s, bool no) {
  s.kind = no ? Step::Kind::ExpectNo : Step::Kind::Expect;
  if (!parseMsgKind(p, s.msg)) return false;
  if (s.msg == MsgKind::Request || s.msg == MsgKind::Notify) {
    const Token* t = p.peek();
    if (t && t->kind == Token::Kind::Word && t->text != "exact" && t->text != "as" && t->text != "within")
      if (!methodWord(p, s.method)) return false;
  } else if (s.msg == MsgKind::Answer) {
    // expect answer $r [not CODE]: the reference is required (an answer is to one request).
    if (!p.ref(s.ref, "a request reference like $r after `answer`")) return false;
    if (p.keyword("not")) {
      std::int64_t c = 0;
      if (!p.integer(c, "an error code after `not`")) return false;
      s.code = c;
      s.not_code = true;
    }
  } else if (s.msg == MsgKind::Response || s.msg == MsgKind::Error) {
    const Token* t = p.peek();
    if (t && t->kind == Token::Kind::Word && !t->text.empty() && t->text[0] == '$')
      if (!p.ref(s.ref, "a request reference like $r")) return false;
    if (s.msg == MsgKind::Error) {
      t = p.peek();
      if (t && t->kind == Token::Kind::Word && (t->text[0] == '-' || std::isdigit(static_cast<unsigned char>(t->text[0])))) {
        std::int64_t c = 0;
        if (!p.integer(c, "an error code")) return false;
        s.code = c;
      }
    }
  }
  s.exact = p.keyword("exact");
  if (!p.jsonOpt(s.json)) return false;
  if (s.exact && !s.json) return p.expected("a JSON literal after `exact`");
  if (!no && !p.asOpt(s.as)) return false;
  if (!p.withinOpt(s.within)) return false;
  return p.end();
}

bool parseExpect(LineParser& p, Step& s) {
  if (p.keyword("no")) return parseExpectMsg(p, s, true);
  if (p.keyword("exit")) {
    s.kind = Step::Kind::ExpectExit;
    if (p.keyword("zero")) s.exit = ExitWant::Zero;
    else if (p.keyword("nonzero")) s.exit = ExitWant::Nonzero;
    else if (p.keyword("signal")) s.exit = ExitWant::Signal;
    else if (p.keyword("code")) {
      std::int64_t c = 0;
      if (!p.integer(c, "an exit code")) return false;
      if (c < 0 || c > 255) return p.errorPrev("exit codes are 0–255");
      s.exit = ExitWant::Code;
      s.code = c;
    }
    return p.withinOpt(s.within) && p.end();
  }
  if (p.keyword("eof")) {
    s.kind = Step::Kind::ExpectEof;
    return p.withinOpt(s.within) && p.end();
  }
  if (p.keyword("state")) {
    s.kind = Step::Kind::ExpectState;
    if (!p.word(s.text, "a plugin state (connected, failed, disconnected)")) return false;
    if (s.text != "connected" && s.text != "failed" && s.text != "disconnected" && s.text != "connecting")
      return p.errorPrev(fmt::format("unknown state `{}` (known: connected, connecting, failed, disconnected)", s.text));
    if (p.keyword("reason") && !p.string(s.reason, "a quoted substring after `reason`")) return false;
    return p.withinOpt(s.within) && p.end();
  }
  return parseExpectMsg(p, s, false);
}

bool parseSend(LineParser& p, Step& s) {
  if (p.keyword("request")) {
    s.kind = Step::Kind::SendRequest;
    if (!methodWord(p, s.method) || !p.jsonObject(s.json, "a JSON object of params")) return false;
    if (p.keyword("id")) {
      const Token* t = p.peek();
      if (t && t->kind == Token::Kind::String) {
        auto d = std::make_shared<json::Document>();
        d->SetString(t->text.data(), static_cast<rapidjson::SizeType>(t->text.size()), d->GetAllocator());
        s.id = d;
        std::string v;
        p.string(v, "");
      } else {
        auto parsed = t && t->kind == Token::Kind::Word ? json::parse(t->text) : decltype(json::parse("")){unexpected(json::ParseError{})};
        if (!parsed || !(parsed->doc.IsInt64() || parsed->doc.IsUint64() || parsed->doc.IsNumber() || parsed->doc.IsNull()))
          return p.expected("an id (integer, null or quoted string)");
        s.id = std::make_shared<json::Document>(std::move(parsed->doc));
        std::string v;
        p.word(v, "");
      }
    }
    return p.asOpt(s.as) && p.end();
  }
  if (p.keyword("notify")) {
    s.kind = Step::Kind::SendNotify;
    return methodWord(p, s.method) && p.jsonObject(s.json, "a JSON object of params") && p.end();
  }
  if (p.keyword("response")) {
    s.kind = Step::Kind::SendResponse;
    if (!p.ref(s.ref, "a request reference like $r")) return false;
    if (!p.jsonOpt(s.json)) return false;
    if (!s.json) return p.expected("a JSON result");
    return p.end();
  }
  if (p.keyword("error")) {
    s.kind = Step::Kind::SendError;
    std::int64_t c = 0;
    if (!p.ref(s.ref, "a request reference like $r") || !p.integer(c, "an error code")) return false;
    s.code = c;
    return p.string(s.text, "a quoted error message") && p.end();
  }
  if (p.keyword("raw")) {
    s.kind = Step::Kind::SendRaw;
    const Token* t = p.peek();
    if (t && t->kind == Token::Kind::Text) {
      p.text(s.text);
      return p.end();
    }
    if (t && t->kind == Token::Kind::Word && t->text.rfind("hex:", 0) == 0) {
      if (!detail::decodeHex(std::string_view(t->text).substr(4), s.text))
        return p.error("invalid hex after `hex:` (pairs of hex digits)");  // token not consumed yet
      std::string dummy;
      p.word(dummy, "");
      return p.end();
    }
    return p.expected("hex:… or text:\"…\"");
  }
  if (p.keyword("frame")) {
    s.kind = Step::Kind::SendFrame;
    if (!p.jsonOpt(s.json)) return false;
    if (!s.json) return p.expected("a JSON literal");
    if (p.keyword("size")) {
      std::int64_t n = 0;
      if (!p.integer(n, "a frame size in bytes")) return false;
      if (n < 2 || static_cast<std::uint64_t>(n) > kMaxFrameSize)
        return p.errorPrev(fmt::format("frame size must be 2–{} bytes", kMaxFrameSize));
      if (!mentionsPad(*s.json))
        return p.errorPrev(fmt::format("`size` needs a \"${}\" string in the frame to pad", kPadCapture));
      s.size = static_cast<std::uint64_t>(n);
    }
    return p.end();
  }
  return p.expected("request, notify, response, error, raw or frame after `send`");
}

bool parseFault(LineParser& p, Step& s) {
  s.kind = Step::Kind::Fault;
  std::string k;
  if (!p.word(k, "a fault (close-stdin, kill, restart, stall-reading, drop-reply, disconnect)")) return false;
  if (k == "close-stdin") s.fault = FaultKind::CloseStdin;
  else if (k == "kill") s.fault = FaultKind::Kill;
  else if (k == "restart") s.fault = FaultKind::Restart;
  else if (k == "drop-reply") s.fault = FaultKind::DropReply;
  else if (k == "disconnect") s.fault = FaultKind::Disconnect;
  else if (k == "stall-reading") {
    s.fault = FaultKind::StallReading;
    if (!p.duration(s.duration)) return false;
  } else {
    return p.errorPrev(fmt::format("unknown fault `{}` (known: close-stdin, kill, restart, stall-reading D, drop-reply, disconnect)", k));
  }
  return p.end();
}

// drive ACTION args… [as $x]; args are words, strings and JSON literals (at most one JSON literal).
bool parseDrive(LineParser& p, Step& s) {
  s.kind = Step::Kind::Drive;
  if (!p.word(s.text, "a driver action (session.create, event, tool.call, ping, shutdown, …)")) return false;
  while (!p.done()) {
    const Token* t = p.peek();
    if (t->kind == Token::Kind::Word && t->text == "as") break;
    if (t->kind == Token::Kind::Json) {
      if (s.json) return p.error("a drive step takes at most one JSON literal");
      p.jsonOpt(s.json);
      continue;
    }
    if (t->kind == Token::Kind::Text) return p.error("text:\"…\" is only for `send raw`");
    std::string a;
    if (t->kind == Token::Kind::String) {
      p.string(a, "");
      s.args.push_back(fmt::format("\"{}\"", a));  // kept quoted so `$x` inside stays literal
    } else {
      p.word(a, "");
      s.args.push_back(a);
    }
  }
  return p.asOpt(s.as) && p.end();
}

class FileParser {
 public:
  FileParser(std::string file) { plan_.file = std::move(file); }

  Expected<Plan, std::vector<ParseError>> run(std::string_view text) {
    std::uint32_t lineno = 0;
    std::size_t start = 0;
    while (start <= text.size() && errors_.size() < kMaxErrors) {
      std::size_t nl = text.find('\n', start);
      std::string_view line = text.substr(start, nl == std::string_view::npos ? text.size() - start : nl - start);
      ++lineno;
      parseLine(line, lineno);
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
    closeCase(Loc{plan_.file, lineno + 1, 1});
    if (plan_.cases.empty() && errors_.empty())
      errors_.push_back({Loc{plan_.file, 1, 1}, "no `case` in the file"});
    if (!errors_.empty()) return unexpected(std::move(errors_));
    return std::move(plan_);
  }

 private:
  void error(Loc l, std::string msg) { errors_.push_back({std::move(l), std::move(msg)}); }

  void closeCase(Loc at) {
    if (!cur_) return;
    if (!stack_.empty()) error(stack_.back().second, "block opened here is never closed with `}`");
    // Further probes exist only where conform plays the plugin.
    if (cur_->role != "plugin" && !cur_->plugins.empty())
      error(cur_->plugins.front().loc, "`plugin NAME` needs `role plugin` (a further probe the engine under test starts)");
    stack_.clear();
    plan_.cases.push_back(std::move(*cur_));
    cur_.reset();
  }

  std::vector<Step>& target() { return stack_.empty() ? cur_->steps : *stack_.back().first; }

  void parseLine(std::string_view line, std::uint32_t lineno) {
    std::vector<Token> toks;
    std::uint32_t col = 0;
    std::string msg;
    Loc base{plan_.file, lineno, 1};
    if (!detail::lexLine(line, toks, col, msg)) {
      base.column = col;
      return error(base, msg);
    }
    if (toks.empty()) return;
    base.column = toks[0].column;
    LineParser p(toks, base);
    if (toks[0].kind != Token::Kind::Word) return error(base, "expected a step keyword at the start of the line");
    const std::string kw = toks[0].text;
    std::string dummy;
    p.word(dummy, "");

    if (kw == "case") {
      closeCase(base);
      Case c;
      c.loc = base;
      if (!p.word(c.id, "a case id like FRAME-05") ) return flush(p);
      if (!validId(c.id)) return error(Loc{plan_.file, lineno, toks[1].column}, fmt::format("invalid case id `{}` (use the rule id, e.g. FRAME-05)", c.id));
      if (!p.string(c.title, "a quoted title") || !p.end()) return flush(p);
      for (const Case& o : plan_.cases)
        if (o.id == c.id) return error(base, fmt::format("duplicate case id `{}` (first at {})", c.id, o.loc.str()));
      c.rules.push_back(c.id);
      cur_ = std::move(c);
      return;
    }
    if (!cur_) return error(base, fmt::format("`{}` outside a case (start one with `case RULE-ID \"title\"`)", kw));
    if (kw == "}") {
      if (stack_.empty()) return error(base, "`}` without an open block");
      stack_.pop_back();
      p.end();
      return flush(p);
    }
    if (kw == "role" || kw == "profile" || kw == "rules" || kw == "needs" || kw == "handshake" || kw == "config" ||
        kw == "plugin") {
      if (!stack_.empty() || !cur_->steps.empty())
        return error(base, fmt::format("`{}` must come before the case's first step", kw));
      return directive(kw, p, base);
    }
    Step s;
    s.loc = base;
    bool ok = true;
    // on NAME STEP | on NAME handshake … | on NAME config …: addressed to a further probe.
    std::string kw2 = kw;
    if (kw == "on") {
      std::string name;
      if (!p.word(name, "a plugin name declared with `plugin NAME`")) return flush(p);
      const ExtraPlugin* x = findPlugin(name);
      if (!x) return errorAt(p, fmt::format("`on {}`: no `plugin {}` declared in this case", name, name));
      if (p.peekWord("handshake") || p.peekWord("config")) {
        std::string d;
        p.word(d, "");
        if (!stack_.empty() || !cur_->steps.empty())
          return error(base, fmt::format("`on {} {}` must come before the case's first step", name, d));
        return directive(d, p, base, name);
      }
      if (!stack_.empty()) return errorAt(p, "`on NAME` addresses a whole top-level step or block, not a step inside a block");
      if (!p.word(kw2, "a step after `on NAME`")) return flush(p);
      if (kw2 == "on" || kw2 == "}" || kw2 == "case")
        return errorAt(p, fmt::format("`{}` cannot follow `on NAME`", kw2));
      s.plugin = name;
    }
    const std::string& kwr = kw2;
    if (kwr == "send") ok = parseSend(p, s);
    else if (kwr == "expect") ok = parseExpect(p, s);
    else if (kwr == "advance" || kwr == "wait") {
      s.kind = kwr == "advance" ? Step::Kind::Advance : Step::Kind::Wait;
      ok = p.duration(s.duration) && p.end();
    } else if (kwr == "fault") ok = parseFault(p, s);
    else if (kwr == "drive") ok = parseDrive(p, s);
    else if (kwr == "repeat") {
      s.kind = Step::Kind::Repeat;
      std::int64_t n = 0;
      ok = p.integer(n, "a repeat count");
      if (ok && (n < 1 || n > static_cast<std::int64_t>(kMaxRepeat)))
        ok = p.errorPrev(fmt::format("repeat count must be 1–{}", kMaxRepeat));
      s.count = static_cast<std::uint32_t>(n);
      ok = ok && openBlock(p);
    } else if (kwr == "for") {
      std::string what;
      ok = p.keyword("each") || p.expected("`each` after `for`");
      ok = ok && p.word(what, "`tool` or `hook`");
      if (ok && what != "tool" && what != "hook") ok = p.error(fmt::format("`for each` loops over `tool` or `hook`, not `{}`", what));
      s.kind = what == "hook" ? Step::Kind::ForEachHook : Step::Kind::ForEachTool;
      ok = ok && (p.keyword("as") || p.expected("`as $name`"));
      ok = ok && p.ref(s.as, "a capture name like $t");
      if (ok && s.as.find('.') != std::string::npos) ok = p.error("a loop variable has no dots");
      ok = ok && openBlock(p);
    } else {
      return error(base, fmt::format("unknown step `{}` (send, expect, drive, fault, advance, wait, repeat, for each, …)", kwr));
    }
    if (!ok) return flush(p);
    if (!cur_->judges_handshake && cur_->steps.empty() && stack_.empty() && s.kind == Step::Kind::ExpectState &&
        s.plugin.empty())
      cur_->judges_handshake = true;
    target().push_back(std::move(s));
    Step& pushed = target().back();
    if (pushed.kind == Step::Kind::Repeat || pushed.kind == Step::Kind::ForEachTool || pushed.kind == Step::Kind::ForEachHook)
      stack_.push_back({&pushed.body, base});
  }

  bool openBlock(LineParser& p) {
    if (!p.keyword("{")) return p.expected("`{` at the end of the line");
    return p.end();
  }

  ExtraPlugin* findPlugin(const std::string& name) {
    for (ExtraPlugin& x : cur_->plugins)
      if (x.name == name) return &x;
    return nullptr;
  }

  // An error at the token just read (the line's own error slot, reported once by flush()).
  void errorAt(LineParser& p, std::string msg) {
    p.errorPrev(std::move(msg));
    flush(p);
  }

  // plugin NAME [first] [workspace]
  void pluginDirective(LineParser& p, Loc base) {
    ExtraPlugin x;
    x.loc = base;
    if (!p.word(x.name, "a plugin name")) return flush(p);
    // Plugin names: 1–128 characters without control characters (PROTOCOL §1.6); `$`, `{` and
    // quotes would be lexed apart, so a word is what a case can write anyway.
    if (x.name.size() > 128) return errorAt(p, "a plugin name is 1–128 characters");
    if (x.name == kMainProbe) return errorAt(p, fmt::format("`{}` is the main probe's name", kMainProbe));
    if (findPlugin(x.name)) return errorAt(p, fmt::format("plugin `{}` declared twice", x.name));
    if (cur_->plugins.size() >= kMaxExtraPlugins)
      return errorAt(p, fmt::format("at most {} further plugins per case", kMaxExtraPlugins));
    while (!p.done()) {
      if (p.keyword("first")) x.first = true;
      else if (p.keyword("workspace")) x.workspace = true;
      else {
        p.expected("`first`, `workspace` or end of line");
        return flush(p);
      }
    }
    cur_->plugins.push_back(std::move(x));
    flush(p);
  }

  void directive(const std::string& kw, LineParser& p, Loc base, const std::string& on = {}) {
    Case& c = *cur_;
    std::string v;
    if (kw == "plugin") return pluginDirective(p, base);
    if (kw == "role") {
      if (!p.word(v, "engine or plugin")) return flush(p);
      if (v != "engine" && v != "plugin") return error(base, fmt::format("unknown role `{}` (engine or plugin)", v));
      c.role = v;
    } else if (kw == "profile") {
      if (!p.word(v, "0.0.6, 0.0.4, any, nanopi-0.12 or cognipeer-0.10")) return flush(p);
      if (v != "0.0.6" && v != "0.0.4" && v != "any" && v != "nanopi-0.12" && v != "cognipeer-0.10")
        return error(base, fmt::format("unknown profile `{}` (0.0.6, 0.0.4, any, nanopi-0.12 or cognipeer-0.10)", v));
      c.profile = v;
    } else if (kw == "rules") {
      while (!p.done()) {
        if (!p.word(v, "a rule id")) return flush(p);
        if (!validId(v)) return error(base, fmt::format("invalid rule id `{}`", v));
        c.rules.push_back(v);
      }
    } else if (kw == "needs") {
      Need n;
      n.loc = base;
      n.negated = p.keyword("no");
      if (!p.word(v, "a capability, `hook NAME` or `tool [NAME]`")) return flush(p);
      if (v == "tool") {
        n.kind = Need::Kind::Tool;
        // `needs tool NAME`: that very tool (the SDK fixture's tools, docs/sdk-fixture.md)
        if (!p.done() && !p.word(n.name, "a tool name")) return flush(p);
      } else if (v == "hook") {
        n.kind = Need::Kind::Hook;
        if (!p.word(n.name, "a hook name")) return flush(p);
      } else {
        n.name = v;
      }
      c.needs.push_back(std::move(n));
    } else if (kw == "handshake" || kw == "config") {
      ExtraPlugin* x = on.empty() ? nullptr : findPlugin(on);
      auto& dst = kw == "handshake" ? (x ? x->handshake : c.handshake) : (x ? x->config : c.config);
      while (!p.done()) {
        if (kw == "config") {
          std::string key;
          if (!p.word(key, "a config key")) return flush(p);
          const Token* t = p.peek();
          if (!t) { p.expected("a value"); return flush(p); }
          std::string val;
          if (t->kind == Token::Kind::String) p.string(val, "");
          else if (!p.word(val, "a value")) return flush(p);
          dst.emplace_back(key, val);
          continue;
        }
        if (!p.word(v, "key=value")) return flush(p);
        auto eq = v.find('=');
        if (eq == std::string::npos || eq == 0) return error(base, fmt::format("expected key=value, found `{}`", v));
        dst.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      }
    }
    p.end();
    flush(p);
  }

  void flush(LineParser& p) {
    if (p.err()) errors_.push_back(std::move(*p.err()));
  }

  Plan plan_;
  std::optional<Case> cur_;
  std::vector<std::pair<std::vector<Step>*, Loc>> stack_;
  std::vector<ParseError> errors_;
};

}  // namespace

Expected<Plan, std::vector<ParseError>> parse(std::string_view text, std::string file) {
  return FileParser(std::move(file)).run(text);
}

Expected<Plan, std::vector<ParseError>> parseFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unexpected(std::vector<ParseError>{{Loc{path, 0, 0}, "cannot open file"}});
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

}  // namespace conform::dsl
