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
// `--role plugin` plays the plugin side into an engine instead; see the section "--role plugin"
// below (the engine is started and driven like check-engine does, with the recorded driver notes).
#include <sys/socket.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
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
#include <rapidjson/pointer.h>

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
// `seeds`: the frames we played (the same on both sides), which seed both placeholder tables;
// `recorded` / `replayed`: the frames of the process under test; `who` names it in messages.
std::vector<Divergence> compareFrames(const std::vector<const json::Value*>& seeds, std::vector<Frame>& recorded,
                                      std::vector<Frame>& replayed, std::string_view who) {
  Normalizer nrec, nrep;
  for (const json::Value* v : seeds) {
    nrec.normalize(*v, false);
    nrep.normalize(*v, false);
  }
  auto norm = [](Normalizer& n, Frame& f) {
    if (f.doc) f.norm = n.normalize(*f.doc, f.is_request);
    else f.norm = std::string(trace::toString(f.kind)) + ":" + f.raw;
  };
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
    d.reason = fmt::format("{} sent a frame the recording does not have", who);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Divergence> compare(const Recording& rec, std::vector<Frame>& recorded, std::vector<Frame>& replayed) {
  std::vector<const json::Value*> seeds;  // engine frames are the same on both sides
  for (const Step& s : rec.steps)
    if (s.frame.doc) seeds.push_back(s.frame.doc.get());
  recorded = rec.p2e;
  return compareFrames(seeds, recorded, replayed, "the plugin");
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

int finishReplay(const ReplayCommandOptions& opt, const std::vector<Divergence>& divs, const std::ostringstream& mem,
                 const std::string& out_name, std::ostream& out);

// ---------------------------------------------------------------------------------------------
// --role plugin: conform plays the recorded PLUGIN side into an engine (docs/trace-format.md
// "Replay as the plugin").
//
// Design (the simplest sound one): an engine only talks to a plugin it started itself, and it only
// does things (sessions, tool calls, runs) when something drives it. Both needs are met exactly as
// `conform check-engine` meets them (docs/check-engine.md, the adapter contract): the engine is
// started as `CMD… --config engine.json --driver stdio --virtual-clock`, the configuration names
// `conform probe --connect SOCK` as the plugin, and the probe relays the plugin's stdio to our Unix
// socket. The stimuli are the driver requests the recording made: check-engine traces (and the
// replay's own --out traces) carry each one as a note "driver → {request}", each reply as "driver ←
// {reply}", and the configuration as "engine config: {…}". A trace without driver notes (a `conform
// record` tap) replays what the engine does on its own: handshake, recovery/start, shutdown.
//
// Values the engine chooses afresh (session ids, context tokens, invocation ids, its request ids)
// are learned as recorded → replayed pairs while the replay runs — from the engine's frames matched
// to the recorded ones (requests and notifications by method and ordinal) and from the driver
// replies — and substituted into every later plugin frame and driver request we send, so the
// plugin side answers the replayed engine, not the recorded one. The comparison of the engine's
// frames is the one of role engine (compare(): normalised, responses by id, others by method).
// ---------------------------------------------------------------------------------------------

// The adapter contract of check-engine: the engine starts its plugins eagerly (§16.3).
constexpr auto kConnectWithin = std::chrono::seconds(10);
// Reactor slice while waiting on two channels (engine driver + plugin socket).
constexpr auto kPollSlice = std::chrono::milliseconds(20);
// SHUT-07: each plugin task is bounded by shutdown_grace_ms (3,000 ms default) + 6,000 ms.
constexpr auto kEngineExitWithin = std::chrono::milliseconds(9000);
constexpr std::string_view kConfigNote = "engine config: ";
constexpr std::string_view kDriverOut = "driver \xE2\x86\x92 ";  // "driver → "
constexpr std::string_view kDriverIn = "driver \xE2\x86\x90 ";   // "driver ← "
constexpr std::string_view kStallNote = "fault stall-reading";

struct PluginStep {
  enum class Kind { Write, CloseWrite, Drive, AwaitReply, Stall } kind = Kind::Write;
  Frame frame;               // Write: the recorded plugin frame
  std::string driver;        // Drive: the recorded driver request (JSON text); AwaitReply: its id
  bool stall = false;        // Stall: stop (true) or resume (false) reading the engine's frames
  std::size_t e2p_before = 0;  // recorded engine frames before this step
};

struct PluginRecording {
  std::string profile;
  std::string config;  // the recorded engine configuration ("" when the trace has none)
  std::vector<PluginStep> steps;
  std::vector<Frame> e2p;
  std::map<std::string, std::string> driver_replies;  // recorded driver id (compact) → reply text
};

// The id of a driver reply from its (possibly shortened) text: `{"jsonrpc":"2.0","id":N,…`.
std::optional<std::string> replyId(std::string_view text) {
  const std::size_t at = text.find("\"id\":");
  if (at == std::string_view::npos || at > 40) return std::nullopt;
  std::size_t i = at + 5, j = i;
  while (j < text.size() && (isDigit(text[j]) || text[j] == '-')) ++j;
  if (j == i) return std::nullopt;
  return std::string(text.substr(i, j - i));
}

// The "state" string of a (possibly shortened) plugin.status reply ("" when absent).
std::string replyState(std::string_view text) {
  const std::size_t at = text.find("\"state\":\"");
  if (at == std::string_view::npos) return {};
  const std::size_t from = at + 9, to = text.find('"', from);
  return to == std::string_view::npos ? std::string() : std::string(text.substr(from, to - from));
}

Expected<PluginRecording, trace::TraceError> loadPluginSide(const std::string& path) {
  auto reader = trace::TraceReader::open(path);
  auto hdr = reader->header();
  if (!hdr) return unexpected(hdr.error());
  PluginRecording rec;
  rec.profile = (*hdr)->profile;
  while (true) {
    auto ev = reader->next();
    if (!ev) return unexpected(ev.error());
    if (!*ev) break;
    const trace::TraceEvent& e = **ev;
    using K = trace::Kind;
    const bool is_frame = e.kind == K::Frame || e.kind == K::Text || e.kind == K::Binary ||
                          e.kind == K::Oversized || e.kind == K::Raw;
    if (e.kind == K::Note) {
      std::string_view t = e.text;
      if (t.substr(0, kConfigNote.size()) == kConfigNote && rec.config.empty()) {
        rec.config = std::string(t.substr(kConfigNote.size()));
      } else if (t.substr(0, kDriverOut.size()) == kDriverOut) {
        PluginStep s;
        s.kind = PluginStep::Kind::Drive;
        s.driver = std::string(t.substr(kDriverOut.size()));
        s.frame.line = e.line;
        s.e2p_before = rec.e2p.size();
        rec.steps.push_back(std::move(s));
      } else if (t.substr(0, kDriverIn.size()) == kDriverIn) {
        // The recording waited for this reply before its next step: so does the replay. Replies are
        // noted shortened (evidence style, 300 bytes), so the id is read from the text's head.
        if (auto id = replyId(t.substr(kDriverIn.size()))) {
          rec.driver_replies[*id] = std::string(t.substr(kDriverIn.size()));
          PluginStep s;
          s.kind = PluginStep::Kind::AwaitReply;
          s.driver = *id;
          s.frame.line = e.line;
          s.e2p_before = rec.e2p.size();
          rec.steps.push_back(std::move(s));
        }
      } else if (t.substr(0, kStallNote.size()) == kStallNote) {
        // check-engine's `fault stall-reading` step (and its end): the plugin stops reading.
        PluginStep s;
        s.kind = PluginStep::Kind::Stall;
        s.stall = t.find(" over") == std::string_view::npos;
        s.frame.line = e.line;
        s.e2p_before = rec.e2p.size();
        rec.steps.push_back(std::move(s));
      }
    } else if (e.dir == trace::Dir::PluginToEngine && is_frame) {
      PluginStep s;
      s.frame = fromTraceEvent(e);
      s.e2p_before = rec.e2p.size();
      rec.steps.push_back(std::move(s));
    } else if (e.dir == trace::Dir::PluginToEngine && e.kind == K::Eof) {
      PluginStep s;
      s.kind = PluginStep::Kind::CloseWrite;
      s.frame.line = e.line;
      s.e2p_before = rec.e2p.size();
      rec.steps.push_back(std::move(s));
    } else if (e.dir == trace::Dir::EngineToPlugin && is_frame) {
      rec.e2p.push_back(fromTraceEvent(e));
    }
  }
  return rec;
}

bool volatileString(std::string_view key, std::string_view s) {
  return std::find(std::begin(kVolatileKeys), std::end(kVolatileKeys), key) != std::end(kVolatileKeys) ||
         looksLikeUuid(s) || key == "session_id";
}

// Learns recorded → replayed pairs of engine-chosen strings from two frames of the same slot.
void learnPairs(const json::Value& rec, const json::Value& rep, std::string_view key,
                std::map<std::string, std::string, std::less<>>& pairs) {
  if (rec.IsObject() && rep.IsObject()) {
    for (auto& m : rec.GetObject()) {
      auto it = rep.FindMember(m.name);
      if (it != rep.MemberEnd())
        learnPairs(m.value, it->value, std::string_view(m.name.GetString(), m.name.GetStringLength()), pairs);
    }
  } else if (rec.IsArray() && rep.IsArray()) {
    for (rapidjson::SizeType i = 0; i < rec.Size() && i < rep.Size(); ++i) learnPairs(rec[i], rep[i], key, pairs);
  } else if (rec.IsString() && rep.IsString()) {
    std::string_view a(rec.GetString(), rec.GetStringLength()), b(rep.GetString(), rep.GetStringLength());
    if (a != b && volatileString(key, a)) pairs.try_emplace(std::string(a), std::string(b));
  }
}

// Replaces learned strings in place; true when something changed.
bool substitute(json::Value& v, json::Allocator& a, const std::map<std::string, std::string, std::less<>>& pairs) {
  bool changed = false;
  if (v.IsObject()) {
    auto members = v.MemberBegin();
    for (rapidjson::SizeType i = 0, n = v.MemberCount(); i < n; ++i) changed |= substitute(members[i].value, a, pairs);
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) changed |= substitute(e, a, pairs);
  } else if (v.IsString()) {
    auto it = pairs.find(std::string_view(v.GetString(), v.GetStringLength()));
    if (it != pairs.end()) {
      v.SetString(it->second.data(), static_cast<rapidjson::SizeType>(it->second.size()), a);
      changed = true;
    }
  }
  return changed;
}

std::string jsonQuote(std::string_view s) {
  json::Document d;
  d.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), d.GetAllocator());
  return json::compact(d);
}

std::string selfExecutable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// The plugin name the recording's handshake reported (INIT-13: the configured name must match).
std::string recordedPluginName(const PluginRecording& rec) {
  for (const PluginStep& s : rec.steps)
    if (s.kind == PluginStep::Kind::Write && s.frame.doc && s.frame.is_response)
      if (const json::Value* r = json::member(*s.frame.doc, "result"))
        if (auto n = json::stringMember(*r, "name"); n && json::member(*r, "capabilities"))
          return std::string(*n);
  return "conform-probe";
}

// The recorded configuration with every probe pointed at our socket and our executable; or a
// minimal one naming the recorded plugin.
Expected<std::string, std::string> replayConfig(const PluginRecording& rec, const std::string& sock,
                                               const std::string& self) {
  if (rec.config.empty())
    return fmt::format("{{\"protocol_version\":{},\"plugins\":{{{}:{{\"command\":{},\"args\":[\"probe\",\"--connect\",{}]}}}}}}",
                       jsonQuote(rec.profile), jsonQuote(recordedPluginName(rec)), jsonQuote(self), jsonQuote(sock));
  auto p = json::parse(rec.config);
  if (!p || !p->doc.IsObject()) return unexpected(std::string("the recorded engine config note is not a JSON object"));
  json::Document d = json::copy(p->doc);
  json::Value* plugins = rapidjson::Pointer("/plugins").Get(d);
  std::size_t probes = 0;
  if (plugins && plugins->IsObject()) {
    // Index loop: RapidJSON's mutable member iterators trip C++20's reversed-operator check.
    auto members = plugins->MemberBegin();
    for (rapidjson::SizeType pi = 0, pn = plugins->MemberCount(); pi < pn; ++pi) {
      auto& m = members[pi];
      json::Value* args = m.value.IsObject() && m.value.HasMember("args") ? &m.value["args"] : nullptr;
      if (!args || !args->IsArray()) continue;
      for (rapidjson::SizeType i = 0; i + 1 < args->Size(); ++i)
        if ((*args)[i].IsString() && std::string_view((*args)[i].GetString()) == "--connect") {
          (*args)[i + 1].SetString(sock.data(), static_cast<rapidjson::SizeType>(sock.size()), d.GetAllocator());
          m.value["command"].SetString(self.data(), static_cast<rapidjson::SizeType>(self.size()), d.GetAllocator());
          ++probes;
        }
    }
  }
  if (probes != 1) return unexpected(fmt::format("the recorded engine config names {} probe plugin(s); replay plays exactly one", probes));
  return json::compact(d);
}

class EngineSession {
 public:
  EngineSession(const ReplayCommandOptions& opt, const PluginRecording& rec, trace::TraceWriter& tw)
      : opt_(opt), rec_(rec), tw_(tw) {}
  ~EngineSession() {
    if (engine_) engine_->close();
    if (plugin_) plugin_->close();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (sock_fd_ >= 0) ::close(sock_fd_);
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  bool start(std::ostream& err) {
    const std::string self = selfExecutable();
    char tmpl[] = "/tmp/conform-replay-XXXXXX";
    if (self.empty() || !::mkdtemp(tmpl)) {
      err << "conform replay: cannot create a temp folder or find the conform executable\n";
      return false;
    }
    dir_ = tmpl;
    const std::string sock = dir_ + "/probe.sock", cfg_path = dir_ + "/engine.json";
    auto cfg = replayConfig(rec_, sock, self);
    if (!cfg) {
      err << "conform replay: " << cfg.error() << "\n";
      return false;
    }
    {
      std::ofstream f(cfg_path, std::ios::binary);
      f << *cfg << "\n";
      if (!f) {
        err << "conform replay: cannot write " << cfg_path << "\n";
        return false;
      }
    }
    tw_.note(std::string(kConfigNote) + *cfg);
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, sock.data(), std::min(sock.size(), sizeof(addr.sun_path) - 1));
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 4) != 0) {
      err << fmt::format("conform replay: cannot listen on {}: {}\n", sock, std::strerror(errno));
      return false;
    }
    wire::SpawnOptions so;
    so.program = opt_.command.front();
    so.args.assign(opt_.command.begin() + 1, opt_.command.end());
    for (const char* a : {"--config", cfg_path.c_str(), "--driver", "stdio", "--virtual-clock"}) so.args.emplace_back(a);
    wire::SpawnError se;
    engine_ = wire::spawnProcess(reactor_, so, &se);
    if (!engine_) {
      err << "conform replay: " << se.message << "\n";
      return false;
    }
    const auto deadline = wire::deadlineIn(kConnectWithin);
    while (true) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        sock_fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        int wfd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        plugin_ = wire::fdChannel(reactor_, fd, wfd);
        return true;
      }
      drain();
      if (engine_exit_ || Clock::now() >= deadline) {
        err << "conform replay: the engine did not start its plugin (the probe) within 10 s; it must accept "
               "`--config FILE --driver stdio --virtual-clock` (docs/check-engine.md)\n";
        return false;
      }
      reactor_.waitAny(std::min(deadline, wire::deadlineIn(kPollSlice)));
    }
  }

  void run() {
    const auto step_timeout = std::chrono::milliseconds(opt_.step_timeout_ms);
    for (const PluginStep& s : rec_.steps) {
      if (!stalled_) pumpUntil(Clock::now() + step_timeout, [&] { return replayed_.size() >= s.e2p_before; });
      switch (s.kind) {
        case PluginStep::Kind::Write: writePlugin(s.frame); break;
        case PluginStep::Kind::CloseWrite: closePluginOutput(); break;
        case PluginStep::Kind::Drive: drive(s.driver); break;
        case PluginStep::Kind::AwaitReply: awaitReply(s.driver, step_timeout); break;
        case PluginStep::Kind::Stall:
          stalled_ = s.stall;
          plugin_->stallReading(s.stall);
          tw_.note(s.stall ? "fault stall-reading" : "fault stall-reading over: reading again");
          break;
      }
    }
    if (stalled_) plugin_->stallReading(false);
    pumpUntil(Clock::now() + step_timeout, [&] { return replayed_.size() >= rec_.e2p.size(); });
    // The end: closing the driver's stdin shuts the engine down (docs/driver-protocol.md).
    engine_->closeWrite();
    pumpUntil(Clock::now() + kEngineExitWithin, [&] { return engine_exit_.has_value(); });
    closePluginOutput();
    pumpUntil(Clock::now() + std::chrono::milliseconds(200), [] { return false; });
    if (!engine_exit_) tw_.note("the engine did not exit after its driver closed: killed");
    engine_->close();
    while (auto ev = engine_->poll()) onEngine(*ev);
    tw_.flush();
  }

  const std::vector<Frame>& replayed() const { return replayed_; }
  std::size_t substitutions() const { return substitutions_; }

 private:
  template <class Pred>
  void pumpUntil(Clock::time_point deadline, Pred done) {
    while (true) {
      drain();
      if (done() || Clock::now() >= deadline) return;
      reactor_.waitAny(std::min(deadline, wire::deadlineIn(kPollSlice)));
    }
  }

  void drain() {
    if (engine_)
      while (auto ev = engine_->poll()) onEngine(*ev);
    if (plugin_)
      while (auto ev = plugin_->poll()) onPlugin(*ev);
  }

  void onEngine(const wire::ChannelEvent& ev) {
    using K = wire::ChannelEvent::Kind;
    if (ev.kind == K::Frame) {
      tw_.note(std::string(kDriverIn) + ev.frame.bytes);
      auto p = json::parse(ev.frame.bytes);
      if (!p) return;
      const json::Value* id = json::member(p->doc, "id");
      if (!id) return;
      auto it = driver_ids_.find(json::compact(*id));
      if (it == driver_ids_.end()) return;
      live_replies_[json::compact(*id)] = json::compact(p->doc);
      auto r = rec_.driver_replies.find(it->second);
      if (r == rec_.driver_replies.end()) return;
      auto recorded = json::parse(r->second);
      const json::Value* a = recorded ? json::member(recorded->doc, "result") : nullptr;
      const json::Value* b = json::member(p->doc, "result");
      if (a && b) learnPairs(*a, *b, {}, pairs_);
    } else if (ev.kind == K::Stderr) {
      tw_.note("engine stderr: " + ev.text);
    } else if (ev.kind == K::Exited) {
      engine_exit_ = ev.status;
      tw_.note("the engine ended: " + ev.status.str());
    }
  }

  void onPlugin(const wire::ChannelEvent& ev) {
    using K = wire::ChannelEvent::Kind;
    if (ev.kind == K::Eof) {
      tw_.eof(trace::Dir::EngineToPlugin);
      return;
    }
    if (ev.kind != K::Frame && ev.kind != K::FrameError) return;
    tw_.frameEvent(trace::Dir::EngineToPlugin, ev.frame);
    Frame f;
    f.line = tw_.linesWritten();
    f.raw = ev.frame.bytes;
    if (ev.frame.kind == wire::FrameEvent::Kind::Oversized) {
      f.kind = trace::Kind::Oversized;
    } else if (auto p = json::parse(f.raw)) {
      f.kind = trace::Kind::Frame;
      f.doc = std::make_shared<const json::Document>(std::move(p->doc));
    } else {
      f.kind = wire::firstInvalidUtf8(f.raw) == wire::npos ? trace::Kind::Text : trace::Kind::Binary;
    }
    classify(f);
    learnFrom(f);
    replayed_.push_back(std::move(f));
  }

  // Matches an engine frame with its recorded counterpart (requests/notifications: same method
  // and ordinal) and learns the engine-chosen values, its request id included.
  void learnFrom(const Frame& f) {
    if (!f.doc || f.method.empty()) return;
    std::size_t nth = seen_methods_[f.method]++;
    std::size_t k = 0;
    for (const Frame& r : rec_.e2p) {
      if (r.method != f.method || k++ != nth) continue;
      if (!r.doc) return;
      learnPairs(*r.doc, *f.doc, {}, pairs_);
      if (f.is_request && r.is_request && r.id != f.id) id_map_[r.id] = f.id;
      return;
    }
  }

  void writePlugin(const Frame& f) {
    std::string bytes = f.raw;
    if (f.doc && f.kind == trace::Kind::Frame) {
      json::Document d = json::copy(*f.doc);
      bool changed = substitute(d, d.GetAllocator(), pairs_);
      if (f.is_response) {
        auto it = id_map_.find(f.id);
        if (it != id_map_.end())
          if (auto nid = json::parse(it->second)) {
            d["id"].CopyFrom(nid->doc, d.GetAllocator());
            changed = true;
          }
      }
      if (changed) {
        bytes = json::compact(d);
        ++substitutions_;
      }
    }
    std::string wire_bytes = bytes;
    if (f.kind != trace::Kind::Raw && !f.unterminated) wire_bytes += f.had_cr ? "\r\n" : "\n";
    if (f.kind == trace::Kind::Raw) tw_.raw(trace::Dir::PluginToEngine, bytes);
    else tw_.frame(trace::Dir::PluginToEngine, bytes, f.had_cr, trace::TraceWriter::kNow, trace::FrameHint::Unknown,
                   f.unterminated);
    if (plugin_out_closed_ || !plugin_->write(wire_bytes))
      tw_.note(fmt::format("could not write recorded line {}", f.line));
  }

  void drive(const std::string& text) {
    auto p = json::parse(text);
    if (!p || !p->doc.IsObject()) {
      tw_.note("driver: recorded request is not a JSON object: " + text);
      return;
    }
    json::Document d = json::copy(p->doc);
    if (d.HasMember("params")) substitute(d["params"], d.GetAllocator(), pairs_);
    std::string recorded_id = json::member(d, "id") ? json::compact(d["id"]) : std::string();
    const int id = next_driver_id_++;
    if (json::member(d, "id")) d["id"].SetInt(id);
    driver_ids_[std::to_string(id)] = recorded_id;
    latest_for_recorded_[recorded_id] = std::to_string(id);
    std::string frame = json::compact(d);
    sent_driver_[recorded_id] = frame;
    tw_.note(std::string(kDriverOut) + frame);
    if (!engine_->writeFrame(frame)) tw_.note("driver: write failed");
  }

  // Waits (bounded) for the live reply to the request the recording got reply `recorded_id` for.
  // plugin.status is how a driver waits for a state (check-engine polls it until the handshake is
  // decided): while the live state differs from the recorded one, the request is sent again.
  void awaitReply(const std::string& recorded_id, std::chrono::milliseconds step_timeout) {
    const auto deadline = Clock::now() + step_timeout;
    while (true) {
      auto our = latest_for_recorded_.find(recorded_id);
      if (our == latest_for_recorded_.end()) return;
      const std::string our_id = our->second;
      pumpUntil(deadline, [&] { return live_replies_.count(our_id) > 0; });
      if (!live_replies_.count(our_id) || Clock::now() >= deadline) return;
      auto sent = sent_driver_.find(recorded_id);
      if (sent == sent_driver_.end() || sent->second.find("\"plugin.status\"") == std::string::npos) return;
      const std::string rs = replyState(rec_.driver_replies.at(recorded_id));
      const std::string ls = replyState(live_replies_[our_id]);
      if (rs.empty() || rs == ls) return;
      pumpUntil(Clock::now() + kPollSlice, [] { return false; });
      auto again = json::parse(sent->second);
      if (!again) return;
      json::Document d = json::copy(again->doc);
      const int id = next_driver_id_++;
      d["id"].SetInt(id);
      driver_ids_[std::to_string(id)] = recorded_id;
      latest_for_recorded_[recorded_id] = std::to_string(id);
      const std::string frame = json::compact(d);
      tw_.note(std::string(kDriverOut) + frame);
      if (!engine_->writeFrame(frame)) return;
    }
  }

  void closePluginOutput() {
    if (plugin_out_closed_ || sock_fd_ < 0) return;
    plugin_->flush(wire::deadlineIn(std::chrono::milliseconds(500)));
    ::shutdown(sock_fd_, SHUT_WR);  // the probe closes its stdout: the engine sees EOF
    plugin_out_closed_ = true;
    tw_.eof(trace::Dir::PluginToEngine);
  }

  const ReplayCommandOptions& opt_;
  const PluginRecording& rec_;
  trace::TraceWriter& tw_;
  wire::Reactor reactor_;
  std::unique_ptr<wire::Channel> engine_, plugin_;
  std::string dir_;
  int listen_fd_ = -1, sock_fd_ = -1;
  bool plugin_out_closed_ = false;
  std::optional<wire::ExitStatus> engine_exit_;
  std::vector<Frame> replayed_;
  std::map<std::string, std::size_t> seen_methods_;
  std::map<std::string, std::string, std::less<>> pairs_;  // recorded → replayed engine-chosen strings
  std::map<std::string, std::string> id_map_;              // recorded engine request id → replayed
  std::map<std::string, std::string> driver_ids_;          // our driver id → recorded driver id
  std::map<std::string, std::string> latest_for_recorded_; // recorded driver id → our latest id for it
  std::map<std::string, std::string> sent_driver_;         // recorded driver id → the frame we sent
  std::map<std::string, std::string> live_replies_;        // our driver id → its reply
  bool stalled_ = false;
  int next_driver_id_ = 1;
  std::size_t substitutions_ = 0;
};

// The replay's own trace: the file `--out` names, or `mem` (the monitors still read it); null after
// saying why on `err`.
std::unique_ptr<trace::TraceWriter> openReplayTrace(const ReplayCommandOptions& opt, const char* role,
                                                    const std::string& recorded_profile, std::ostringstream& mem,
                                                    std::ostream& err) {
  trace::TraceHeader hdr;
  hdr.role = role;
  hdr.peer = opt.command;
  hdr.profile = opt.profile.empty() ? recorded_profile : opt.profile;
  if (opt.out.empty())
    return std::make_unique<trace::TraceWriter>(mem, clock::RealClock::instance(), std::move(hdr),
                                                trace::WriterOptions{trace::FlushPolicy::Buffered, false});
  auto w = trace::TraceWriter::open(opt.out, clock::RealClock::instance(), std::move(hdr));
  if (!w) {
    err << fmt::format("conform replay: cannot write {}: {}\n", opt.out, w.error());
    return nullptr;
  }
  return std::move(*w);
}

int runReplayAsPlugin(const ReplayCommandOptions& opt, std::ostream& out, std::ostream& err) {
  auto rec = loadPluginSide(opt.trace);
  if (!rec) {
    const auto& e = rec.error();
    err << fmt::format("conform replay: {}{}: {}\n", opt.trace, e.line ? fmt::format(":{}", e.line) : "", e.message);
    return kExitHarness;
  }
  std::ostringstream mem;
  auto tw = openReplayTrace(opt, "plugin", rec->profile, mem, err);
  if (!tw) return kExitHarness;
  const std::string out_name = opt.out.empty() ? "replay" : opt.out;
  std::vector<Frame> replayed;
  std::size_t subs = 0;
  {
    EngineSession s(opt, *rec, *tw);
    if (!s.start(err)) return kExitHarness;
    s.run();
    replayed = s.replayed();
    subs = s.substitutions();
  }
  tw->flush();
  tw.reset();

  std::vector<const json::Value*> seeds;
  for (const PluginStep& s : rec->steps)
    if (s.kind == PluginStep::Kind::Write && s.frame.doc) seeds.push_back(s.frame.doc.get());
  std::vector<Frame> recorded = rec->e2p;
  auto divs = compareFrames(seeds, recorded, replayed, "the engine");
  std::size_t drives = 0, writes = 0;
  for (const PluginStep& s : rec->steps) {
    drives += s.kind == PluginStep::Kind::Drive ? 1 : 0;
    writes += s.kind == PluginStep::Kind::Write ? 1 : 0;
  }
  out << fmt::format("conform replay: {} plugin frame(s) sent, {} driver request(s), {} engine frame(s) recorded, "
                     "{} replayed{}\n",
                     writes, drives, rec->e2p.size(), replayed.size(),
                     subs ? fmt::format(", {} frame(s) with engine-chosen values substituted", subs) : "");
  return finishReplay(opt, divs, mem, out_name, out);
}

}  // namespace

int runReplay(const ReplayCommandOptions& opt, std::ostream& out, std::ostream& err) {
  if (opt.command.empty()) {
    err << "conform replay: no command given (usage: conform replay TRACE -- CMD...)\n";
    return kExitHarness;
  }
  if (opt.role != "engine" && opt.role != "plugin") {
    err << "conform replay: --role must be engine or plugin\n";
    return kExitHarness;
  }
  if (opt.timing != "fast" && opt.timing != "recorded") {
    err << "conform replay: --timing must be recorded or fast\n";
    return kExitHarness;
  }
  if (opt.role == "plugin") {
    if (opt.timing == "recorded") {
      err << "conform replay: --role plugin paces by the engine's frames (--timing fast); the engine's own time "
             "runs on its virtual clock, advanced by the recorded clock.advance driver requests\n";
      return kExitHarness;
    }
    return runReplayAsPlugin(opt, out, err);
  }
  auto rec = load(opt.trace);
  if (!rec) {
    const auto& e = rec.error();
    err << fmt::format("conform replay: {}{}: {}\n", opt.trace, e.line ? fmt::format(":{}", e.line) : "", e.message);
    return kExitHarness;
  }

  // The replay's own trace: the file asked for, or memory (the monitors still read it).
  std::ostringstream mem;
  auto tw = openReplayTrace(opt, "engine", rec->profile, mem, err);
  if (!tw) return kExitHarness;
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
  return finishReplay(opt, divs, mem, out_name, out);
}

namespace {
int finishReplay(const ReplayCommandOptions& opt, const std::vector<Divergence>& divs, const std::ostringstream& mem,
                 const std::string& out_name, std::ostream& out) {
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
}  // namespace

}  // namespace conform::runner
