// harness/runner/replay_command — `conform replay TRACE -- CMD…`.
//
// Plays the engine side of a recorded trace into a freshly started plugin and compares what the
// plugin answers with what it answered in the recording. Why: a recording made with `conform
// record` (or by any command) is a regression test for free — after a plugin change, a replay says
// whether the plugin still converses the same way, and where it first differs.
//
// What "the same" means (docs/trace-format.md "Replay"):
//   * values that legitimately change from run to run are replaced by placeholders before the
//     comparison, consistently (the same recorded value always maps to the same placeholder):
//     UUID-shaped strings, RFC 3339 timestamps, context tokens ("context_id"), producer/message/
//     attempt/invocation ids, idempotency keys, and the ids of requests the plugin sends;
//   * objects compare with member order ignored (json::canonical);
//   * responses are matched by id (the engine's request ids are replayed verbatim, so they agree);
//     requests and notifications from the plugin may arrive in another order — each recorded one
//     is matched with the first unmatched replayed frame of the same method that is equal;
//   * the exit status is compared when the recording has one.
// The first divergence (by recorded line) is printed with both versions side by side.
//
// `--role plugin` (playing the plugin side into an engine) is a documented follow-up: it needs the
// engine's stimuli (driver protocol) to be replayed too, which a wire trace does not contain.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/trace/trace.h"
#include "core/wire/channel.h"
#include "harness/rules/lint.h"
#include "harness/runner/trace_commands.h"

namespace conform::runner {
namespace {

using Clock = std::chrono::steady_clock;

// After the last step: how long the plugin may take to exit once its stdin is closed, beyond the
// step timeout (PROTOCOL §7.2: after plugin/shutdown and stdin close the plugin exits promptly).
constexpr auto kExitGrace = std::chrono::seconds(5);
// Frame text shown per side of a divergence: enough to read, bounded for 4 MiB frames (FRAME-06).
constexpr std::size_t kShownBytes = 600;
// Monitor findings on the replayed conversation listed in the summary.
constexpr std::size_t kShownFindings = 5;

// Members whose string values are chosen afresh in every run (PROTOCOL §11.3 context tokens,
// §14 producer ids / message ids / attempts / idempotency keys, §13 invocation ids).
constexpr std::string_view kVolatileKeys[] = {"context_id",     "producer_id",     "message_id",
                                              "attempt_id",     "invocation_id",   "idempotency_key",
                                              "checkpoint_id",  "cancellation_token", "receipt"};

bool isHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

// 8-4-4-4-12 hex digits (RFC 4122 text form).
bool looksLikeUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !isHex(s[i])) return false;
  }
  return true;
}

// RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM).
bool looksLikeTimestamp(std::string_view s) {
  if (s.size() < 20 || s.size() > 40) return false;
  const char* p = "dddd-dd-ddTdd:dd:dd";
  for (std::size_t i = 0; i < 19; ++i) {
    if (p[i] == 'd' ? !isDigit(s[i]) : (p[i] == 'T' ? (s[i] != 'T' && s[i] != 't') : s[i] != p[i])) return false;
  }
  std::size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && isDigit(s[i])) ++i;
  }
  std::string_view zone = s.substr(i);
  return zone == "Z" || zone == "z" ||
         (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':');
}

// Placeholder tables of one side (recorded or replayed). Both sides are seeded with the same
// engine frames, so engine-chosen values get the same numbers on both sides.
struct Normalizer {
  std::map<std::string, std::string, std::less<>> seen;  // original → placeholder
  std::map<std::string, std::size_t, std::less<>> counters;

  std::string placeholder(std::string_view cls, std::string_view original) {
    std::string key = std::string(cls) + '\x1f' + std::string(original);
    auto it = seen.find(key);
    if (it != seen.end()) return it->second;
    std::string ph = fmt::format("<{}#{}>", cls, ++counters[std::string(cls)]);
    seen.emplace(std::move(key), ph);
    return ph;
  }

  void walk(json::Value& v, json::Allocator& a, std::string_view key) {
    if (v.IsObject()) {
      // Index loop: RapidJSON's mutable member iterators trip C++20's reversed-operator check.
      auto members = v.MemberBegin();
      for (rapidjson::SizeType i = 0, n = v.MemberCount(); i < n; ++i)
        walk(members[i].value, a, std::string_view(members[i].name.GetString(), members[i].name.GetStringLength()));
    } else if (v.IsArray()) {
      for (auto& e : v.GetArray()) walk(e, a, {});
    } else if (v.IsString()) {
      std::string_view s(v.GetString(), v.GetStringLength());
      std::string repl;
      if (std::find(std::begin(kVolatileKeys), std::end(kVolatileKeys), key) != std::end(kVolatileKeys))
        repl = placeholder(key, s);
      else if (looksLikeUuid(s))
        repl = placeholder("uuid", s);
      else if (looksLikeTimestamp(s))
        repl = "<timestamp>";
      if (!repl.empty()) v.SetString(repl.data(), static_cast<rapidjson::SizeType>(repl.size()), a);
    }
  }

  // A normalised copy of a frame. `own_request`: a request this side's peer (the plugin) sent, whose
  // id is its own choice and is numbered by order of appearance.
  std::string normalize(const json::Value& frame, bool own_request) {
    json::Document d = json::copy(frame);
    if (d.IsObject()) {
      auto members = d.MemberBegin();
      for (rapidjson::SizeType i = 0, n = d.MemberCount(); i < n; ++i) {
        auto& m = members[i];
        std::string_view k(m.name.GetString(), m.name.GetStringLength());
        if (k == "id") {
          if (own_request) {
            std::string ph = placeholder("request-id", json::compact(m.value));
            m.value.SetString(ph.data(), static_cast<rapidjson::SizeType>(ph.size()), d.GetAllocator());
          }
        } else {
          walk(m.value, d.GetAllocator(), k);
        }
      }
    }
    return json::canonical(d);
  }
};

// One frame of either side, kept for the comparison.
struct Frame {
  std::uint64_t line = 0;  // trace line (recorded trace, or the replay's own trace)
  std::int64_t t_us = 0;
  trace::Kind kind = trace::Kind::Frame;
  std::string raw;         // exact bytes (frame) / head (oversized)
  bool had_cr = false, unterminated = false;
  std::shared_ptr<const json::Document> doc;  // parsed when kind == Frame (shared: Documents do not copy)
  std::string method;      // "" for responses and non-JSON
  bool is_request = false, is_response = false;
  std::string id;          // compact id text ("" when none)
  std::string norm;        // normalised text (Frame) or a kind tag + bytes
};

void classify(Frame& f) {
  if (!f.doc || !f.doc->IsObject()) return;
  const json::Value& o = *f.doc;
  auto mit = o.FindMember("method");
  auto iit = o.FindMember("id");
  if (mit != o.MemberEnd() && mit->value.IsString()) f.method = mit->value.GetString();
  if (iit != o.MemberEnd()) f.id = json::compact(iit->value);
  f.is_request = !f.method.empty() && iit != o.MemberEnd();
  f.is_response = f.method.empty() && iit != o.MemberEnd() &&
                  (o.HasMember("result") || o.HasMember("error"));
}

Frame fromTraceEvent(const trace::TraceEvent& ev) {
  Frame f;
  f.line = ev.line;
  f.t_us = ev.t_us;
  f.kind = ev.kind;
  f.raw = std::string(ev.raw);
  f.had_cr = ev.had_cr;
  f.unterminated = ev.unterminated;
  // Parsed again from the exact bytes rather than copied: the reader's DOM holds in-situ strings
  // that point into its line buffer, and RapidJSON 1.1's CopyFrom shares such strings.
  if (ev.kind == trace::Kind::Frame)
    if (auto p = json::parse(f.raw)) f.doc = std::make_shared<const json::Document>(std::move(p->doc));
  classify(f);
  return f;
}

// A recorded engine-side step: a frame to write, or closing the plugin's stdin.
struct Step {
  enum class Kind { Write, CloseStdin } kind = Kind::Write;
  Frame frame;
  std::size_t p2e_before = 0;  // recorded plugin frames before this step (fast timing waits for them)
};

struct Recording {
  std::string profile;
  std::vector<Step> steps;
  std::vector<Frame> p2e;
  std::optional<wire::ExitStatus> exit;
};

Expected<Recording, trace::TraceError> load(const std::string& path) {
  auto reader = trace::TraceReader::open(path);
  auto hdr = reader->header();
  if (!hdr) return unexpected(hdr.error());
  Recording rec;
  rec.profile = (*hdr)->profile;
  while (true) {
    auto ev = reader->next();
    if (!ev) return unexpected(ev.error());
    if (!*ev) break;
    const trace::TraceEvent& e = **ev;
    using K = trace::Kind;
    const bool is_frame = e.kind == K::Frame || e.kind == K::Text || e.kind == K::Binary ||
                          e.kind == K::Oversized || e.kind == K::Raw;
    if (e.dir == trace::Dir::EngineToPlugin && is_frame) {
      Step s;
      s.frame = fromTraceEvent(e);
      s.p2e_before = rec.p2e.size();
      rec.steps.push_back(std::move(s));
    } else if (e.dir == trace::Dir::EngineToPlugin && e.kind == K::Eof) {
      Step s;
      s.kind = Step::Kind::CloseStdin;
      s.frame.line = e.line;
      s.frame.t_us = e.t_us;
      s.p2e_before = rec.p2e.size();
      rec.steps.push_back(std::move(s));
    } else if (e.dir == trace::Dir::PluginToEngine && is_frame) {
      rec.p2e.push_back(fromTraceEvent(e));
    } else if (e.kind == K::Exit) {
      wire::ExitStatus st;
      if (e.signal) {
        st.signaled = true;
        st.signal = *e.signal;
      } else {
        st.code = e.exit_code.value_or(0);
      }
      rec.exit = st;
    }
  }
  return rec;
}

std::string shown(std::string_view s) {
  if (s.size() <= kShownBytes) return std::string(s);
  return fmt::format("{}… ({} bytes)", s.substr(0, kShownBytes), s.size());
}

std::string display(const Frame& f) {
  if (f.kind == trace::Kind::Frame || f.kind == trace::Kind::Text) return shown(f.raw);
  return fmt::format("<{} frame, {} bytes: {}>", trace::toString(f.kind), f.raw.size(),
                     trace::base64Encode(f.raw.substr(0, 48)));
}

// Path of the first difference between two normalised frames ("" when they are equal).
std::string firstDifference(const json::Value& a, const json::Value& b, const std::string& path) {
  if (a.GetType() != b.GetType() || (a.IsNumber() && !json::equal(a, b)))
    return path.empty() ? "/" : path;
  if (a.IsObject()) {
    for (auto& m : a.GetObject()) {
      std::string p = path + "/" + m.name.GetString();
      auto it = b.FindMember(m.name);
      if (it == b.MemberEnd()) return p + " (missing in replay)";
      std::string d = firstDifference(m.value, it->value, p);
      if (!d.empty()) return d;
    }
    for (auto& m : b.GetObject())
      if (!a.HasMember(m.name)) return path + "/" + m.name.GetString() + " (only in replay)";
    return {};
  }
  if (a.IsArray()) {
    if (a.Size() != b.Size()) return fmt::format("{} (length {} vs {})", path.empty() ? "/" : path, a.Size(), b.Size());
    for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
      std::string d = firstDifference(a[i], b[i], path + "/" + std::to_string(i));
      if (!d.empty()) return d;
    }
    return {};
  }
  if (!json::equal(a, b)) return path.empty() ? "/" : path;
  return {};
}

struct Divergence {
  std::uint64_t recorded_line = 0;  // 0: not tied to a recorded frame (an extra replayed frame)
  std::string reason;
  const Frame* recorded = nullptr;
  const Frame* replayed = nullptr;
  std::string where;                // first differing JSON path, when both are JSON
};

// The engine side, running: the plugin process, the replay's own trace, and what came back.
class Session {
 public:
  Session(const ReplayCommandOptions& opt, const Recording& rec, trace::TraceWriter& tw)
      : opt_(opt), rec_(rec), tw_(tw) {}

  bool start(std::ostream& err) {
    wire::SpawnOptions so;
    so.program = opt_.command.front();
    so.args.assign(opt_.command.begin() + 1, opt_.command.end());
    wire::SpawnError se;
    ch_ = wire::spawnProcess(reactor_, so, &se);
    if (!ch_) {
      err << "conform replay: " << se.message << "\n";
      return false;
    }
    return true;
  }

  void run() {
    const auto step_timeout = std::chrono::milliseconds(opt_.step_timeout_ms);
    const auto t0 = Clock::now();
    for (const Step& s : rec_.steps) {
      if (opt_.timing == "recorded") {
        pumpUntil(t0 + std::chrono::microseconds(s.frame.t_us), [] { return false; });
      } else {
        pumpUntil(Clock::now() + step_timeout, [&] { return replayed_.size() >= s.p2e_before; });
      }
      if (s.kind == Step::Kind::CloseStdin) {
        ch_->closeWrite();
        tw_.eof(trace::Dir::EngineToPlugin);
        continue;
      }
      send(s.frame, step_timeout);
    }
    // The rest of the recorded answers, then the exit when the recording has one.
    const auto tail = opt_.timing == "recorded" && !rec_.p2e.empty()
                          ? std::chrono::microseconds(std::max<std::int64_t>(0, rec_.p2e.back().t_us)) + step_timeout
                          : std::chrono::microseconds(step_timeout);
    const auto base = opt_.timing == "recorded" ? t0 : Clock::now();
    pumpUntil(base + tail, [&] { return replayed_.size() >= rec_.p2e.size(); });
    if (rec_.exit) pumpUntil(Clock::now() + step_timeout + kExitGrace, [&] { return exit_.has_value(); });
    if (!exit_) {
      // Not expected to exit (or hung): end it. Frames already in flight are drained first.
      pumpUntil(Clock::now() + std::chrono::milliseconds(50), [] { return false; });
      ch_->close();
      while (auto ev = ch_->poll()) handle(*ev);
      if (!exit_ && ch_->exitStatus()) exit_ = *ch_->exitStatus();
      killed_by_us_ = true;
    }
    tw_.flush();
  }

  const std::vector<Frame>& replayed() const { return replayed_; }
  const std::optional<wire::ExitStatus>& exitStatus() const { return exit_; }
  bool killedByUs() const { return killed_by_us_; }
  std::size_t idRewrites() const { return id_rewrites_; }

 private:
  template <class Pred>
  void pumpUntil(Clock::time_point deadline, Pred done) {
    while (!done()) {
      auto ev = ch_->next(deadline);
      if (!ev) return;  // deadline
      handle(*ev);
    }
  }

  void handle(const wire::ChannelEvent& ev) {
    using K = wire::ChannelEvent::Kind;
    switch (ev.kind) {
      case K::Frame:
      case K::FrameError: {
        tw_.frameEvent(trace::Dir::PluginToEngine, ev.frame);
        Frame f;
        f.line = tw_.linesWritten();
        f.raw = ev.frame.bytes;
        f.had_cr = ev.frame.had_cr;
        f.unterminated = ev.frame.unterminated;
        if (ev.frame.kind == wire::FrameEvent::Kind::Oversized) {
          f.kind = trace::Kind::Oversized;
        } else if (auto p = json::parse(f.raw)) {
          f.kind = trace::Kind::Frame;
          f.doc = std::make_shared<const json::Document>(std::move(p->doc));
        } else {
          f.kind = wire::firstInvalidUtf8(f.raw) == wire::npos ? trace::Kind::Text : trace::Kind::Binary;
        }
        classify(f);
        if (f.is_request) replayed_requests_[f.method].push_back(f.id);
        replayed_.push_back(std::move(f));
        break;
      }
      case K::Stderr: tw_.stderrLine(ev.text); break;
      case K::Eof: tw_.eof(trace::Dir::PluginToEngine); break;
      case K::Exited:
        exit_ = ev.status;
        if (ev.status.signaled) tw_.exitSignal(ev.status.signal);
        else tw_.exitCode(ev.status.code);
        break;
      case K::WriteFailed: tw_.note(fmt::format("write failed: {}", ev.text)); break;
    }
  }

  // A recorded engine frame answering a request the plugin sent: the plugin may have chosen another
  // id this time, so the id is translated to the one of the matching replayed request (same method,
  // same ordinal). Waits (bounded) for that request to arrive.
  std::string translate(const Frame& f, std::chrono::milliseconds step_timeout) {
    if (!f.doc || !f.doc->IsObject() || !f.method.empty() || f.id.empty()) return {};
    // Which recorded plugin request does this answer?
    std::map<std::string, std::size_t> ordinal;
    const Frame* req = nullptr;
    std::size_t nth = 0;
    for (const Frame& p : rec_.p2e) {
      if (p.line > f.line) break;
      if (!p.is_request) continue;
      std::size_t k = ordinal[p.method]++;
      if (p.id == f.id) { req = &p; nth = k; }
    }
    if (!req) return {};
    pumpUntil(Clock::now() + step_timeout, [&] { return replayed_requests_[req->method].size() > nth; });
    auto& ids = replayed_requests_[req->method];
    if (ids.size() <= nth || ids[nth] == f.id) return {};
    auto newid = json::parse(ids[nth]);
    if (!newid) return {};
    json::Document d = json::copy(*f.doc);
    d["id"].CopyFrom(newid->doc, d.GetAllocator());
    ++id_rewrites_;
    return json::compact(d);
  }

  void send(const Frame& f, std::chrono::milliseconds step_timeout) {
    std::string bytes = translate(f, step_timeout);
    if (bytes.empty()) bytes = f.raw;
    const bool rewritten = bytes != f.raw;
    std::string wire_bytes = bytes;
    if (f.kind != trace::Kind::Raw && !f.unterminated) wire_bytes += f.had_cr ? "\r\n" : "\n";
    if (f.kind == trace::Kind::Raw) tw_.raw(trace::Dir::EngineToPlugin, bytes);
    else tw_.frame(trace::Dir::EngineToPlugin, bytes, f.had_cr, trace::TraceWriter::kNow,
                   trace::FrameHint::Unknown, f.unterminated);
    if (rewritten) tw_.note(fmt::format("id translated from recorded line {}", f.line));
    if (!ch_->write(wire_bytes)) tw_.note(fmt::format("could not write recorded line {}", f.line));
  }

  const ReplayCommandOptions& opt_;
  const Recording& rec_;
  trace::TraceWriter& tw_;
  wire::Reactor reactor_;
  std::unique_ptr<wire::Channel> ch_;
  std::vector<Frame> replayed_;
  std::map<std::string, std::vector<std::string>> replayed_requests_;
  std::optional<wire::ExitStatus> exit_;
  bool killed_by_us_ = false;
  std::size_t id_rewrites_ = 0;
};

// Normalises both sides and finds the divergences, first (by recorded line) first.
// `recorded` receives the normalised recorded frames (the returned divergences point into both).
std::vector<Divergence> compare(const Recording& rec, std::vector<Frame>& recorded, std::vector<Frame>& replayed) {
  Normalizer nrec, nrep;
  for (const Step& s : rec.steps)  // engine frames are the same on both sides: seed both tables
    if (s.frame.doc) {
      nrec.normalize(*s.frame.doc, false);
      nrep.normalize(*s.frame.doc, false);
    }
  auto norm = [](Normalizer& n, Frame& f) {
    if (f.doc) f.norm = n.normalize(*f.doc, f.is_request);
    else f.norm = std::string(trace::toString(f.kind)) + ":" + f.raw;
  };
  recorded = rec.p2e;
  for (Frame& f : recorded) norm(nrec, f);
  for (Frame& f : replayed) norm(nrep, f);

  std::vector<Divergence> out;
  std::vector<bool> used(replayed.size(), false);
  for (const Frame& r : recorded) {
    std::optional<std::size_t> pick, candidate;
    for (std::size_t i = 0; i < replayed.size() && !pick; ++i) {
      if (used[i]) continue;
      const Frame& p = replayed[i];
      const bool same_slot = r.is_response ? (p.is_response && p.id == r.id)
                                           : (!p.is_response && p.method == r.method && p.kind == r.kind);
      if (!same_slot) continue;
      if (p.norm == r.norm) pick = i;
      else if (!candidate) candidate = i;
    }
    if (pick) { used[*pick] = true; continue; }
    Divergence d;
    d.recorded_line = r.line;
    d.recorded = &r;
    if (candidate) {
      used[*candidate] = true;
      d.replayed = &replayed[*candidate];
      d.reason = r.is_response ? fmt::format("the response to request id {} differs", r.id)
                               : fmt::format("{} differs", r.method.empty() ? "a non-JSON frame" : r.method);
      if (r.doc && d.replayed->doc) {
        auto a = json::parse(r.norm), b = json::parse(d.replayed->norm);
        if (a && b) d.where = firstDifference(a->doc, b->doc, "");
      }
    } else {
      d.reason = r.is_response ? fmt::format("no response to request id {} came back", r.id)
                               : fmt::format("{} never came back", r.method.empty() ? "this frame" : r.method);
    }
    out.push_back(std::move(d));
  }
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    if (used[i]) continue;
    Divergence d;
    d.replayed = &replayed[i];
    d.reason = "the plugin sent a frame the recording does not have";
    out.push_back(std::move(d));
  }
  return out;
}

void printDivergence(const Divergence& d, const ReplayCommandOptions& opt, const std::string& out_name,
                     std::ostream& out) {
  out << fmt::format("conform replay: DIVERGENCE{}: {}\n",
                     d.recorded_line ? fmt::format(" at {}:{}", opt.trace, d.recorded_line) : "", d.reason);
  const std::string lrec = d.recorded ? fmt::format("{}:{}", opt.trace, d.recorded->line) : opt.trace;
  const std::string lrep = d.replayed ? fmt::format("{}:{}", out_name, d.replayed->line) : out_name;
  const std::size_t w = std::max(lrec.size(), lrep.size());
  out << fmt::format("  recorded  {:<{}}  {}\n", lrec, w, d.recorded ? display(*d.recorded) : "(nothing)");
  out << fmt::format("  replayed  {:<{}}  {}\n", lrep, w, d.replayed ? display(*d.replayed) : "(nothing)");
  if (!d.where.empty()) out << fmt::format("  first difference at {}\n", d.where);
  if (d.recorded && d.replayed && d.recorded->doc && d.replayed->doc) {
    out << fmt::format("  normalised recorded  {}\n", shown(d.recorded->norm));
    out << fmt::format("  normalised replayed  {}\n", shown(d.replayed->norm));
  }
}

}  // namespace

int runReplay(const ReplayCommandOptions& opt, std::ostream& out, std::ostream& err) {
  if (opt.command.empty()) {
    err << "conform replay: no command given (usage: conform replay TRACE -- CMD...)\n";
    return kExitHarness;
  }
  if (opt.role != "engine") {
    err << "conform replay: --role " << opt.role
        << " is not supported yet (follow-up: playing the plugin side needs the engine's stimuli)\n";
    return kExitHarness;
  }
  if (opt.timing != "fast" && opt.timing != "recorded") {
    err << "conform replay: --timing must be recorded or fast\n";
    return kExitHarness;
  }
  auto rec = load(opt.trace);
  if (!rec) {
    const auto& e = rec.error();
    err << fmt::format("conform replay: {}{}: {}\n", opt.trace, e.line ? fmt::format(":{}", e.line) : "", e.message);
    return kExitHarness;
  }

  // The replay's own trace: the file asked for, or memory (the monitors still read it).
  trace::TraceHeader hdr;
  hdr.role = "engine";
  hdr.peer = opt.command;
  hdr.profile = opt.profile.empty() ? rec->profile : opt.profile;
  std::ostringstream mem;
  std::unique_ptr<trace::TraceWriter> tw;
  if (!opt.out.empty()) {
    auto w = trace::TraceWriter::open(opt.out, clock::RealClock::instance(), std::move(hdr));
    if (!w) {
      err << fmt::format("conform replay: cannot write {}: {}\n", opt.out, w.error());
      return kExitHarness;
    }
    tw = std::move(*w);
  } else {
    tw = std::make_unique<trace::TraceWriter>(mem, clock::RealClock::instance(), std::move(hdr),
                                              trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  }
  const std::string out_name = opt.out.empty() ? "replay" : opt.out;

  std::vector<Frame> replayed;
  std::optional<wire::ExitStatus> status;
  bool killed = false;
  std::size_t rewrites = 0;
  {
    Session s(opt, *rec, *tw);
    if (!s.start(err)) return kExitHarness;
    s.run();
    replayed = s.replayed();
    status = s.exitStatus();
    killed = s.killedByUs();
    rewrites = s.idRewrites();
  }
  tw->flush();
  tw.reset();

  std::vector<Frame> recorded;
  auto divs = compare(*rec, recorded, replayed);
  if (rec->exit && (killed || !status || status->signaled != rec->exit->signaled ||
                    (status->signaled ? status->signal != rec->exit->signal : status->code != rec->exit->code))) {
    Divergence d;
    d.reason = fmt::format("recorded {}, replayed {}", rec->exit->str(),
                           killed ? std::string("no exit (killed by conform after the deadline)")
                                  : (status ? status->str() : std::string("no exit")));
    divs.push_back(std::move(d));
  }

  out << fmt::format("conform replay: {} engine frame(s) sent, {} plugin frame(s) recorded, {} replayed{}\n",
                     rec->steps.size(), rec->p2e.size(), replayed.size(),
                     rewrites ? fmt::format(", {} id(s) translated", rewrites) : "");
  if (opt.lint) {
    auto reader = opt.out.empty() ? trace::TraceReader::fromString(mem.str()) : trace::TraceReader::open(opt.out);
    rules::LintOptions lo;
    lo.profile = opt.profile;
    if (auto lr = rules::lint(*reader, lo)) {
      out << fmt::format("conform replay: monitors on the replayed conversation: {} finding(s)\n", lr->findings.size());
      for (std::size_t i = 0; i < lr->findings.size() && i < kShownFindings; ++i) {
        const auto& f = lr->findings[i];
        std::uint64_t line = 0;
        for (const auto& e : f.evidence) if (e.line) { line = e.line; break; }
        out << fmt::format("  {}:{}: {} ({}) {}\n", out_name, line, f.rule_id, reports::toString(f.level), f.message);
      }
    }
  }
  if (divs.empty()) {
    out << "conform replay: no divergence\n";
    return kExitPass;
  }
  printDivergence(divs.front(), opt, out_name, out);
  if (divs.size() > 1) out << fmt::format("conform replay: {} more divergence(s) after the first\n", divs.size() - 1);
  return kExitFindings;
}

}  // namespace conform::runner
