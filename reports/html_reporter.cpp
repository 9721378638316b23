// reports/html_reporter — one self-contained HTML file per run (STYLE.md: Catch2 reporters collect
// then render; Autobahn: every case keeps its raw wire log and the HTML report shows it).
//
// Why self-contained: the report is attached to CI runs and mailed around; it must open from disk
// with no network and no build step. So CSS and the sequence diagrams are inline (SVG), nothing is
// fetched, and the page reads fully without JavaScript; a few lines of inline JS only add verdict
// filters (the filter bar stays hidden when scripts are off, so no dead controls are shown).
//
// Layout: header (run metadata, verdict totals), summary by protocol area, the cases (findings as
// requirement → expected → actual with evidence; a sequence diagram for every failing case; the
// wire log), and the rule coverage matrix over the whole catalogue.
//
// Escaping: every byte of data goes through esc(). Frames may hold any text — markup, quotes, a
// "</pre>" or "</script>", control bytes, invalid UTF-8 (FRAME-04) — and none of it may change the
// document's structure. Bytes that are not valid UTF-8, and control characters, are shown as \xNN
// (C1 controls and Unicode noncharacters, which HTML also forbids as text, as \uXXXX).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/json/json.h"
#include "core/trace/trace.h"
#include "core/wire/framing.h"
#include "reports/writers.h"

namespace conform::reports {
namespace {

// A diagram beyond ~200 arrows is unreadable and a lint of a long session would make a huge page;
// the window is placed around the first evidence line, the rest is summarised in a note.
constexpr std::size_t kMaxArrows = 200;
// The wire log is shown in full up to this many lines; beyond it only the evidence lines follow
// (the complete log is the trace file). Keeps a million-frame lint report openable in a browser.
constexpr std::size_t kMaxWireLogLines = 2000;
// One trace line may hold a 4 MiB frame (FRAME-06); the report shows its start.
constexpr std::size_t kMaxWireLineBytes = 2048;
// Arrow labels must fit between the lifelines (monospace 11px ≈ 6.6px a character, 420px gap).
constexpr std::size_t kMaxLabelChars = 56;
// Tooltips show the frame text; enough to recognise it, not a second copy of the log.
constexpr std::size_t kMaxTooltipBytes = 300;

// ---- escaping ---------------------------------------------------------------------------------

void hexByte(std::string& out, unsigned char c) {
  static const char* const hex = "0123456789ABCDEF";
  out += "\\x";
  out += hex[c >> 4];
  out += hex[c & 15];
}

// Decodes one code point of a sequence already known to be valid UTF-8.
char32_t decode(std::string_view s, std::size_t i, std::size_t& len) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  if (c < 0x80) { len = 1; return c; }
  if (c < 0xE0) { len = 2; return ((c & 0x1Fu) << 6) | (b(1) & 0x3Fu); }
  if (c < 0xF0) { len = 3; return ((c & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu); }
  len = 4;
  return ((c & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
}

// Text and attribute values alike (quotes are escaped too). Tab and, when `keep_newlines`, LF stay.
std::string esc(std::string_view s, bool keep_newlines = false) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  std::size_t i = 0;
  while (i < s.size()) {
    std::string_view rest = s.substr(i);
    std::size_t bad = wire::firstInvalidUtf8(rest);
    std::size_t good = bad == std::string_view::npos ? rest.size() : bad;
    for (std::size_t k = 0; k < good;) {
      std::size_t len = 1;
      char32_t cp = decode(rest, k, len);
      if (cp == '<') out += "&lt;";
      else if (cp == '>') out += "&gt;";
      else if (cp == '&') out += "&amp;";
      else if (cp == '"') out += "&quot;";
      else if (cp == '\'') out += "&#39;";
      else if (cp == '\t' || (cp == '\n' && keep_newlines)) out += static_cast<char>(cp);
      else if (cp < 0x20 || cp == 0x7F) hexByte(out, static_cast<unsigned char>(cp));
      else if ((cp >= 0x80 && cp <= 0x9F) || (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE)
        out += fmt::format("\\u{:04X}", static_cast<std::uint32_t>(cp));
      else out.append(rest.substr(k, len));
      k += len;
    }
    i += good;
    if (i < s.size()) hexByte(out, static_cast<unsigned char>(s[i++]));
  }
  return out;
}

// The first `max` bytes, cut back to a character start so a cut never invents an invalid byte.
std::string_view clip(std::string_view s, std::size_t max, bool* cut = nullptr) {
  if (cut) *cut = s.size() > max;
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string escClip(std::string_view s, std::size_t max) {
  bool cut = false;
  std::string out = esc(clip(s, max, &cut));
  if (cut) out += fmt::format("… ({} bytes)", s.size());
  return out;
}

// Rule texts are Markdown as written in RULES.md; `code` spans are the only markup worth keeping.
std::string mdInline(std::string_view s) {
  std::string out;
  bool in_code = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != '`') continue;
    std::string_view part = s.substr(start, i - start);
    if (in_code) out += "<code>" + esc(part) + "</code>";
    else out += esc(part);
    if (i < s.size()) {
      // An unmatched trailing backtick stays literal instead of opening a span that never closes.
      if (!in_code && s.find('`', i + 1) == std::string_view::npos) {
        out += esc(s.substr(i));
        return out;
      }
      in_code = !in_code;
    }
    start = i + 1;
  }
  return out;
}

const char* vclass(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Fail: return "fail";
    case Verdict::NonStrict: return "nonstrict";
    case Verdict::NotApplicable: return "na";
    case Verdict::Untested: return "untested";
    case Verdict::Error: return "error";
  }
  return "error";
}

std::string badge(Verdict v) {
  return fmt::format("<span class=\"badge v-{}\">{}</span>", vclass(v), toString(v));
}

constexpr Verdict kAllVerdicts[] = {Verdict::Pass,          Verdict::Fail,     Verdict::NonStrict,
                                    Verdict::NotApplicable, Verdict::Untested, Verdict::Error};

std::size_t countOf(const Counts& n, Verdict v) {
  switch (v) {
    case Verdict::Pass: return n.pass;
    case Verdict::Fail: return n.fail;
    case Verdict::NonStrict: return n.non_strict;
    case Verdict::NotApplicable: return n.not_applicable;
    case Verdict::Untested: return n.untested;
    case Verdict::Error: return n.error;
  }
  return 0;
}

void add(Counts& n, Verdict v) {
  switch (v) {
    case Verdict::Pass: ++n.pass; break;
    case Verdict::Fail: ++n.fail; break;
    case Verdict::NonStrict: ++n.non_strict; break;
    case Verdict::NotApplicable: ++n.not_applicable; break;
    case Verdict::Untested: ++n.untested; break;
    case Verdict::Error: ++n.error; break;
  }
}

// The case's requirement level: MUST when any finding or listed rule is a hard requirement.
const char* caseLevel(const CaseResult& c) {
  bool any = false;
  for (const Finding& f : c.findings) {
    if (f.level == Level::Must) return "MUST";
    any = true;
  }
  for (const std::string& id : c.rules) {
    if (const RuleInfo* r = findRule(id)) {
      if (effectiveLevel(r->level).level == Level::Must) return "MUST";
      any = true;
    }
  }
  return any ? "SHOULD" : "—";
}

std::set<std::uint64_t> evidenceSet(const CaseResult& c) {
  std::set<std::uint64_t> s;
  for (const Finding& f : c.findings)
    for (const Evidence& e : f.evidence)
      if (e.line) s.insert(e.line);
  return s;
}

// ---- the sequence diagram ---------------------------------------------------------------------

struct Row {
  enum Kind { ToPlugin, ToEngine, Note } kind = Note;
  std::uint64_t line = 0;  // 0: a row of the diagram's own ("… N frames not shown")
  std::int64_t t_us = 0;
  std::string label;       // raw text; escaped when drawn
  std::string tooltip;     // raw text
  bool evidence = false;
};

std::string idText(const json::Value* id) { return id ? " #" + json::compact(*id) : std::string(); }

std::string frameLabel(const trace::TraceEvent& ev) {
  std::string label;
  const json::Value* f = ev.frame;
  if (f && f->IsObject()) {
    auto method = json::stringMember(*f, "method");
    const json::Value* id = json::member(*f, "id");
    if (method) {
      label = std::string(*method) + idText(id);
    } else if (json::member(*f, "result")) {
      label = "result" + idText(id);
    } else if (const json::Value* e = json::member(*f, "error")) {
      const json::Value* code = json::member(*e, "code");
      label = "error" + (code ? " " + json::compact(*code) : std::string()) + idText(id);
    } else {
      label = "object without method/result/error" + idText(id);
    }
  } else if (f) {
    label = std::string("JSON ") + json::typeName(*f) + " (not an object)";
  }
  if (ev.had_cr) label += " +CR";
  if (ev.unterminated) label += " (no LF)";
  if (ev.duplicates && !ev.duplicates->empty()) label += " (dup member)";
  return label;
}

Row rowOf(const trace::TraceEvent& ev) {
  Row r;
  r.line = ev.line;
  r.t_us = ev.t_us;
  bool arrow = true;
  switch (ev.kind) {
    case trace::Kind::Frame: r.label = frameLabel(ev); break;
    case trace::Kind::Text: r.label = fmt::format("not JSON ({} bytes)", ev.raw.size()); break;
    case trace::Kind::Binary: r.label = fmt::format("invalid UTF-8 ({} bytes)", ev.raw.size()); break;
    case trace::Kind::Oversized: r.label = fmt::format("oversized frame ({} bytes)", ev.oversized_bytes); break;
    case trace::Kind::Raw: r.label = fmt::format("raw bytes ({})", ev.raw.size()); break;
    default: arrow = false; break;
  }
  if (arrow && ev.dir != trace::Dir::None) {
    r.kind = ev.dir == trace::Dir::EngineToPlugin ? Row::ToPlugin : Row::ToEngine;
    r.tooltip = std::string(clip(ev.raw, kMaxTooltipBytes));
    return r;
  }
  r.kind = Row::Note;
  switch (ev.kind) {
    case trace::Kind::Stderr: r.label = "stderr: " + std::string(ev.raw); break;
    case trace::Kind::Eof:
      r.label = ev.dir == trace::Dir::EngineToPlugin ? "engine closed the plugin's stdin" : "plugin stdout reached EOF";
      break;
    case trace::Kind::Exit:
      if (ev.exit_code) r.label = fmt::format("plugin exited with code {}", *ev.exit_code);
      else r.label = fmt::format("plugin killed by signal {} {}", ev.signal.value_or(0), ev.signal_name);
      break;
    case trace::Kind::Timeout: r.label = "timeout: " + std::string(ev.text); break;
    case trace::Kind::Note: r.label = "note: " + std::string(ev.text); break;
    case trace::Kind::Case:
      r.label = fmt::format("case {} {}", ev.text, ev.phase == trace::CasePhase::Begin ? "begins" : "ends");
      break;
    default:  // a frame event without a direction: keep what the arrow label would have said
      r.label = std::string(trace::toString(ev.kind)) + (r.label.empty() ? "" : ": " + r.label);
      break;
  }
  r.tooltip = r.label;
  return r;
}

struct Diagram {
  std::vector<Row> rows;
  std::string role;             // trace header role: who conform played
  std::size_t before = 0;       // rows left out before the window
  std::size_t after = 0;        // rows left out after it
  std::vector<std::uint64_t> evidence_outside;  // cited lines not in the window
  std::string error;            // the trace could not be read at all
};

// Streams the trace once, keeping at most kMaxArrows rows: until the first evidence line is seen
// only the last kMaxArrows/2 rows are kept (context before it), then the window fills up.
Diagram buildDiagram(const CaseResult& c, const std::set<std::uint64_t>& evidence) {
  Diagram d;
  auto reader = trace::TraceReader::fromString(c.trace);
  auto head = reader->header();
  if (!head) {
    d.error = head.error().str();
    return d;
  }
  d.role = (*head)->role;
  std::uint64_t first_ev = evidence.empty() ? 0 : *evidence.begin();
  bool window_started = first_ev == 0;
  std::deque<Row> rows;
  std::uint64_t last_error_line = 0;
  std::set<std::uint64_t> shown;
  for (;;) {
    auto next = reader->next();
    Row r;
    if (!next) {
      // A malformed line is shown as a note and reading goes on; a sticky error repeats its line.
      if (next.error().line == last_error_line || next.error().line == 0) break;
      last_error_line = next.error().line;
      r.line = next.error().line;
      r.label = "unreadable trace line: " + next.error().message;
      r.tooltip = r.label;
    } else if (!*next) {
      break;
    } else {
      r = rowOf(**next);
    }
    r.evidence = evidence.count(r.line) != 0;
    if (!window_started && r.line >= first_ev) window_started = true;
    if (rows.size() >= kMaxArrows) {
      ++d.after;
      continue;
    }
    rows.push_back(std::move(r));
    if (!window_started && rows.size() > kMaxArrows / 2) {
      rows.pop_front();
      ++d.before;
    }
  }
  for (Row& r : rows) {
    if (r.evidence) shown.insert(r.line);
    d.rows.push_back(std::move(r));
  }
  for (std::uint64_t l : evidence)
    if (!shown.count(l)) d.evidence_outside.push_back(l);
  return d;
}

std::string shortLabel(std::string_view s) {
  // Counted in characters (not bytes) so a label of CJK method names still fits.
  std::size_t chars = 0, i = 0;
  while (i < s.size() && chars < kMaxLabelChars) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    i += c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    ++chars;
  }
  if (i >= s.size()) return esc(s);
  return esc(clip(s, i)) + "…";
}

void renderDiagram(std::ostream& out, const Diagram& d, std::size_t case_no) {
  constexpr int kWidth = 760, kEngineX = 220, kPluginX = 640, kTop = 44, kRowH = 24;
  const int mid = (kEngineX + kPluginX) / 2;
  std::vector<Row> rows;
  if (d.before) rows.push_back({Row::Note, 0, 0, fmt::format("… {} earlier event(s) not drawn", d.before), "", false});
  rows.insert(rows.end(), d.rows.begin(), d.rows.end());
  if (d.after) rows.push_back({Row::Note, 0, 0, fmt::format("… {} later event(s) not drawn", d.after), "", false});
  const int height = kTop + static_cast<int>(rows.size()) * kRowH + 16;
  // Which side conform played, from the trace header, so the reader knows whose frames are judged.
  const char* engine_who = d.role == "engine" ? " (conform)" : d.role == "plugin" ? " (under test)" : "";
  const char* plugin_who = d.role == "engine" ? " (under test)" : d.role == "plugin" ? " (conform)" : "";
  out << fmt::format(
      "<svg class=\"seq\" role=\"img\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">"
      "<title>Sequence diagram of case {2}: engine on the left, plugin on the right</title>\n",
      kWidth, height, case_no);
  out << fmt::format("<rect class=\"head\" x=\"{}\" y=\"4\" width=\"160\" height=\"24\" rx=\"4\"/>"
                     "<text class=\"head\" x=\"{}\" y=\"21\">engine{}</text>\n",
                     kEngineX - 80, kEngineX, engine_who);
  out << fmt::format("<rect class=\"head\" x=\"{}\" y=\"4\" width=\"160\" height=\"24\" rx=\"4\"/>"
                     "<text class=\"head\" x=\"{}\" y=\"21\">plugin{}</text>\n",
                     kPluginX - 80, kPluginX, plugin_who);
  out << fmt::format("<line class=\"life\" x1=\"{0}\" y1=\"28\" x2=\"{0}\" y2=\"{1}\"/>"
                     "<line class=\"life\" x1=\"{2}\" y1=\"28\" x2=\"{2}\" y2=\"{1}\"/>\n",
                     kEngineX, height - 4, kPluginX);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const int y0 = kTop + static_cast<int>(i) * kRowH;
    const int y = y0 + 16;
    std::string cls = r.evidence ? " ev" : "";
    if (r.evidence)
      out << fmt::format("<rect class=\"hl\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/>", y0, kWidth, kRowH);
    if (r.line) {
      out << fmt::format("<a href=\"#c{}-L{}\">", case_no, r.line);
      out << fmt::format("<text class=\"ln{}\" x=\"4\" y=\"{}\">L{} {:.3f}s</text>", cls, y,
                         r.line, static_cast<double>(r.t_us) / 1e6);
    }
    if (r.kind == Row::Note) {
      out << fmt::format("<text class=\"note{}\" x=\"{}\" y=\"{}\">{}", cls, mid, y - 2, shortLabel(r.label));
    } else {
      const bool right = r.kind == Row::ToPlugin;
      const int x1 = right ? kEngineX : kPluginX, x2 = right ? kPluginX : kEngineX;
      const int tip = right ? x2 - 8 : x2 + 8;
      out << fmt::format("<line class=\"arrow{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", cls, x1, y, tip, y);
      out << fmt::format("<polygon class=\"tip{}\" points=\"{},{} {},{} {},{}\"/>", cls, x2, y, tip, y - 4, tip, y + 4);
      out << fmt::format("<text class=\"lbl{}\" x=\"{}\" y=\"{}\">{}", cls, mid, y - 4, shortLabel(r.label));
    }
    if (!r.tooltip.empty()) out << "<title>" << esc(r.tooltip) << "</title>";
    out << "</text>";
    if (r.line) out << "</a>";
    out << "\n";
  }
  out << "</svg>\n";
}

// ---- the wire log -----------------------------------------------------------------------------

void renderWireLog(std::ostream& out, const CaseResult& c, std::size_t case_no,
                   const std::set<std::uint64_t>& evidence, bool open) {
  if (c.trace.empty()) {
    out << "<p class=\"muted\">No wire log was kept for this case";
    if (!c.trace_path.empty()) out << " here; see <code>" << esc(c.trace_path) << "</code>";
    out << ".</p>\n";
    return;
  }
  std::size_t lines = std::count(c.trace.begin(), c.trace.end(), '\n');
  if (c.trace.back() != '\n') ++lines;
  out << fmt::format("<details class=\"wire\"{}><summary>Wire log — {} line(s)", open ? " open" : "", lines);
  if (!c.trace_path.empty()) out << " — <code>" << esc(c.trace_path) << "</code>";
  out << "</summary>\n<pre class=\"wire\">";
  std::uint64_t no = 0, last_shown = 0;
  std::size_t pos = 0;
  while (pos < c.trace.size()) {
    std::size_t nl = c.trace.find('\n', pos);
    std::string_view line = std::string_view(c.trace).substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? c.trace.size() : nl + 1;
    ++no;
    const bool ev = evidence.count(no) != 0;
    if (no > kMaxWireLogLines && !ev) continue;
    if (no != last_shown + 1) out << fmt::format("<span class=\"gap\">⋮ {} line(s) not shown</span>\n", no - last_shown - 1);
    last_shown = no;
    out << fmt::format("<span id=\"c{}-L{}\" class=\"l{}\"><span class=\"n\">{}</span>", case_no, no,
                       ev ? " ev" : "", no);
    bool cut = false;
    out << esc(clip(line, kMaxWireLineBytes, &cut));
    if (cut) out << fmt::format("<span class=\"muted\">… ({} bytes)</span>", line.size());
    out << "</span>\n";
  }
  if (no != last_shown)
    out << fmt::format("<span class=\"gap\">⋮ {} line(s) not shown; the full log is the trace file</span>\n",
                       no - last_shown);
  out << "</pre></details>\n";
}

// ---- the page ---------------------------------------------------------------------------------

constexpr std::string_view kStyle = R"(
:root{--pass:#1a7f37;--fail:#cf222e;--nonstrict:#bc4c00;--na:#6e7781;--untested:#afb8c1;--error:#8250df}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;padding:0 16px 48px;color:#1f2328}
h1{font-size:22px;margin:20px 0 8px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:0 0 8px}h4{font-size:14px;margin:8px 0 4px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}table.meta th{width:110px}td.num{text-align:right}
.badge{display:inline-block;padding:0 6px;border-radius:10px;color:#fff;font-size:12px;font-weight:600;white-space:nowrap}
.v-pass{background:var(--pass)}.v-fail{background:var(--fail)}.v-nonstrict{background:var(--nonstrict)}
.v-na{background:var(--na)}.v-untested{background:var(--untested);color:#1f2328}.v-error{background:var(--error)}
.totals .badge{font-size:13px;margin-right:6px}
.bar rect.pass{fill:var(--pass)}.bar rect.fail{fill:var(--fail)}.bar rect.nonstrict{fill:var(--nonstrict)}
.bar rect.na{fill:var(--na)}.bar rect.untested{fill:var(--untested)}.bar rect.error{fill:var(--error)}.bar rect.bg{fill:#eaeef2}
.case{border:1px solid #d0d7de;border-left:6px solid var(--untested);border-radius:6px;padding:10px 14px;margin:14px 0}
.case.v-pass{border-left-color:var(--pass)}.case.v-fail{border-left-color:var(--fail)}.case.v-nonstrict{border-left-color:var(--nonstrict)}
.case.v-na{border-left-color:var(--na)}.case.v-error{border-left-color:var(--error)}
.case.v-pass,.case.v-fail,.case.v-nonstrict,.case.v-na,.case.v-untested,.case.v-error{background:none}
.finding{border-top:1px dashed #d0d7de;padding-top:6px;margin-top:8px}
.finding dl{display:grid;grid-template-columns:110px 1fr;gap:2px 10px;margin:4px 0}.finding dt{font-weight:600;color:#57606a}.finding dd{margin:0}
ul.ev{margin:0;padding-left:18px}ul.ev code{white-space:pre-wrap;word-break:break-all}
.muted{color:#6e7781}.error-text{color:var(--error);font-weight:600}
pre.wire{background:#f6f8fa;padding:6px;overflow-x:auto;max-height:480px;margin:4px 0}
pre.wire .l{display:block;white-space:pre-wrap;word-break:break-all}pre.wire .l.ev{background:#ffebe9;outline:1px solid var(--fail)}
pre.wire .l:target{background:#fff8c5}pre.wire .n{display:inline-block;min-width:44px;color:#6e7781;user-select:none}
pre.wire .gap{display:block;color:#6e7781;font-style:italic}
figure.seq{margin:8px 0;overflow-x:auto}figure.seq figcaption{color:#57606a;font-size:12px}
svg.seq{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11px;background:#fff}
svg.seq rect.head{fill:#f6f8fa;stroke:#57606a}svg.seq text.head{text-anchor:middle;font-weight:600;font-size:12px}
svg.seq line.life{stroke:#8c959f;stroke-dasharray:4 3}svg.seq line.arrow{stroke:#24292f;stroke-width:1.2}svg.seq polygon.tip{fill:#24292f}
svg.seq line.arrow.ev{stroke:var(--fail);stroke-width:2.2}svg.seq polygon.tip.ev{fill:var(--fail)}svg.seq rect.hl{fill:#ffebe9}
svg.seq text.lbl,svg.seq text.note{text-anchor:middle}svg.seq text.note{fill:#57606a;font-style:italic}
svg.seq text.ev{fill:var(--fail);font-weight:700}svg.seq text.ln{fill:#6e7781}svg.seq a:hover text{text-decoration:underline}
tr.uncovered td{color:#6e7781}#filter label{margin-right:10px}
)";

// Filtering only: the page is complete without it (the bar is revealed by the script itself).
constexpr std::string_view kScript = R"(
(function () {
  var bar = document.getElementById('filter');
  bar.hidden = false;
  bar.addEventListener('change', function () {
    var on = {};
    bar.querySelectorAll('input').forEach(function (i) { on[i.value] = i.checked; });
    document.querySelectorAll('section.case').forEach(function (c) { c.hidden = !on[c.dataset.verdict]; });
  });
})();
)";

class HtmlReporter : public CollectingReporter {
 public:
  explicit HtmlReporter(std::ostream& out) : out_(out) {}

  void render(const RunResult& run) override {
    std::vector<RuleCoverage> cov = coverage(run);
    // Which cases touched each rule (listed it or reported on it), for the matrix's links.
    std::map<std::string_view, std::vector<std::size_t>> touched;
    for (std::size_t i = 0; i < run.cases.size(); ++i) {
      auto note = [&](std::string_view id) {
        auto& v = touched[id];
        if (v.empty() || v.back() != i + 1) v.push_back(i + 1);
      };
      for (const std::string& id : run.cases[i].rules) note(id);
      for (const Finding& f : run.cases[i].findings) note(f.rule_id);
    }
    header(run);
    areas(cov, touched);
    out_ << "<h2 id=\"cases\">Cases</h2>\n";
    filterBar();
    for (std::size_t i = 0; i < run.cases.size(); ++i) caseSection(run.cases[i], i + 1);
    matrix(run, cov, touched);
    out_ << "<script>" << kScript << "</script>\n</body>\n</html>\n";
  }

 private:
  void header(const RunResult& run) {
    Counts n = countCases(run);
    std::string title = run.tool + " " + run.command + (run.target.empty() ? "" : " — " + run.target);
    out_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out_ << "<title>" << esc(title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
    out_ << "<header>\n<h1>" << esc(title) << "</h1>\n<table class=\"meta\">\n";
    auto row = [&](std::string_view k, const std::string& v) {
      if (!v.empty()) out_ << "<tr><th>" << k << "</th><td>" << v << "</td></tr>\n";
    };
    row("Tool", esc(run.tool + (run.tool_version.empty() ? "" : " " + run.tool_version)));
    row("Command", esc(run.command));
    row("Target", run.target.empty() ? "" : "<code>" + esc(run.target) + "</code>");
    row("Profile", esc(run.profile));
    // Default mode is not shown (it is the norm); strict mode changes what FAIL means, so it is.
    if (run.strict) row("Mode", "strict: Lvl I ([impl]) and C ([chosen]) rules binding on the target (--strict)");
    row("Started", esc(run.started_at));
    row("Duration", fmt::format("{:.3f} s", run.duration_ms / 1000.0));
    row("Exit code", fmt::format("{}", exitCode(run)));
    out_ << "</table>\n<p class=\"totals\">" << n.total() << " case(s): ";
    for (Verdict v : kAllVerdicts)
      out_ << fmt::format("<span class=\"badge v-{}\">{} {}</span>", vclass(v), toString(v), countOf(n, v));
    out_ << "</p>\n";
    bar(n, 600, 14);
    out_ << "</header>\n";
  }

  // A stacked bar of verdict counts; drawn as SVG so it needs no images or fonts.
  void bar(const Counts& n, int width, int height) {
    out_ << fmt::format("<svg class=\"bar\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">"
                        "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\"/>",
                        width, height);
    double x = 0;
    for (Verdict v : kAllVerdicts) {
      std::size_t k = countOf(n, v);
      if (!k || !n.total()) continue;
      double w = static_cast<double>(k) * width / static_cast<double>(n.total());
      out_ << fmt::format("<rect class=\"{}\" x=\"{:.1f}\" y=\"0\" width=\"{:.1f}\" height=\"{}\">"
                          "<title>{} {}</title></rect>",
                          vclass(v), x, w, height, toString(v), k);
      x += w;
    }
    out_ << "</svg>\n";
  }

  void areas(const std::vector<RuleCoverage>& cov,
             const std::map<std::string_view, std::vector<std::size_t>>& touched) {
    struct Area {
      std::string_view name;
      std::size_t rules = 0, covered = 0, findings = 0;
      Counts verdicts;
    };
    std::vector<Area> list;  // catalogue order (FRAME, RPC, INIT, …)
    for (const RuleCoverage& r : cov) {
      std::string_view a = areaOf(r.rule_id);
      if (list.empty() || list.back().name != a) list.push_back({a, 0, 0, 0, {}});
      Area& area = list.back();
      ++area.rules;
      if (touched.count(r.rule_id)) ++area.covered;
      area.findings += r.findings;
      add(area.verdicts, r.verdict);
    }
    out_ << "<h2 id=\"areas\">Summary by protocol area</h2>\n"
            "<p class=\"muted\">Rules per area of the catalogue, by each rule's verdict over the run.</p>\n"
            "<table class=\"areas\">\n<tr><th>Area</th><th>Rules</th><th>Covered</th><th>Coverage</th>";
    for (Verdict v : kAllVerdicts) out_ << "<th>" << toString(v) << "</th>";
    out_ << "<th>Findings</th></tr>\n";
    for (const Area& a : list) {
      out_ << fmt::format("<tr><td><a href=\"#rules-{0}\">{0}</a></td><td class=\"num\">{1}</td>"
                          "<td class=\"num\">{2}</td><td>",
                          esc(a.name), a.rules, a.covered);
      bar(a.verdicts, 120, 10);
      out_ << "</td>";
      for (Verdict v : kAllVerdicts) {
        std::size_t k = countOf(a.verdicts, v);
        out_ << "<td class=\"num\">" << (k ? fmt::format("{}", k) : "") << "</td>";
      }
      out_ << "<td class=\"num\">" << (a.findings ? fmt::format("{}", a.findings) : "") << "</td></tr>\n";
    }
    out_ << "</table>\n";
  }

  void filterBar() {
    out_ << "<nav id=\"filter\" hidden>Show:";
    for (Verdict v : kAllVerdicts)
      out_ << fmt::format(" <label><input type=\"checkbox\" value=\"{}\" checked> {}</label>", vclass(v), toString(v));
    out_ << "</nav>\n";
  }

  void caseSection(const CaseResult& c, std::size_t no) {
    const std::set<std::uint64_t> evidence = evidenceSet(c);
    // A broken rule gets a diagram even when a harness error elsewhere makes the case ERROR.
    bool failing = c.verdict == Verdict::Fail || c.verdict == Verdict::NonStrict;
    for (const Finding& f : c.findings)
      failing = failing || f.verdict == Verdict::Fail || f.verdict == Verdict::NonStrict;
    out_ << fmt::format("<section class=\"case v-{0}\" id=\"c{1}\" data-verdict=\"{0}\" data-id=\"{2}\">\n",
                        vclass(c.verdict), no, esc(c.id));
    out_ << "<h3>" << badge(c.verdict) << " <code>" << esc(c.id) << "</code> " << esc(c.title) << "</h3>\n";
    out_ << "<table class=\"meta\">\n<tr><th>Level</th><td>" << caseLevel(c) << "</td></tr>\n<tr><th>Rules</th><td>";
    if (c.rules.empty()) out_ << "—";
    for (std::size_t i = 0; i < c.rules.size(); ++i)
      out_ << (i ? ", " : "") << ruleLink(c.rules[i]);
    out_ << fmt::format("</td></tr>\n<tr><th>Duration</th><td>{:.1f} ms</td></tr>\n</table>\n", c.duration_ms);
    if (!c.error.empty())
      out_ << "<p class=\"error-text\">Harness error: " << esc(c.error) << "</p>\n";
    if (!c.skip_reason.empty()) out_ << "<p>Reason: " << esc(c.skip_reason) << "</p>\n";
    for (const Finding& f : c.findings) finding(f, no);
    if (failing && !c.trace.empty()) {
      Diagram d = buildDiagram(c, evidence);
      out_ << "<figure class=\"seq\">\n<figcaption>Exchange of this case";
      if (!d.error.empty()) {
        out_ << ": the wire log could not be read (" << esc(d.error) << ")</figcaption>\n</figure>\n";
      } else {
        out_ << fmt::format(" — {} event(s) drawn", d.rows.size());
        if (d.before || d.after)
          out_ << fmt::format(", capped at {} (the wire log below has every line)", kMaxArrows);
        if (!evidence.empty()) out_ << "; evidence lines in red";
        if (!d.evidence_outside.empty()) {
          out_ << "; evidence outside the drawing: line(s) ";
          for (std::size_t i = 0; i < d.evidence_outside.size(); ++i)
            out_ << fmt::format("{}<a href=\"#c{}-L{}\">{}</a>", i ? ", " : "", no, d.evidence_outside[i],
                                d.evidence_outside[i]);
        }
        out_ << "</figcaption>\n";
        renderDiagram(out_, d, no);
        out_ << "</figure>\n";
      }
    }
    renderWireLog(out_, c, no, evidence, failing || c.verdict == Verdict::Error);
    out_ << "</section>\n";
  }

  static std::string ruleLink(std::string_view id) {
    if (!findRule(id)) return "<code>" + esc(id) + "</code>";
    return fmt::format("<a href=\"#rule-{0}\"><code>{0}</code></a>", esc(id));
  }

  void finding(const Finding& f, std::size_t case_no) {
    out_ << fmt::format("<div class=\"finding\">\n<h4>{} {} <span class=\"muted\">{} {}, binds {}{}</span></h4>\n<dl>\n",
                        badge(f.verdict), ruleLink(f.rule_id), toString(f.level), toString(f.kind),
                        esc(bindsText(f.binds)), f.strict_only ? ", FAIL only under --strict" : "");
    std::string_view req = f.requirement();
    out_ << "<dt>Requirement</dt><dd>" << (req.empty() ? "<span class=\"muted\">unknown rule</span>" : mdInline(req))
         << "</dd>\n";
    if (!f.message.empty()) out_ << "<dt>What</dt><dd>" << esc(f.message) << "</dd>\n";
    out_ << "<dt>Expected</dt><dd>" << esc(f.expected) << "</dd>\n";
    out_ << "<dt>Actual</dt><dd>" << esc(f.actual) << "</dd>\n";
    if (!f.evidence.empty()) {
      out_ << "<dt>Evidence</dt><dd><ul class=\"ev\">\n";
      for (const Evidence& e : f.evidence) {
        out_ << "<li>";
        if (e.line) out_ << fmt::format("<a href=\"#c{0}-L{1}\">line {1}</a>", case_no, e.line);
        else out_ << "<span class=\"muted\">no line</span>";
        if (!e.text.empty()) out_ << " <code>" << escClip(e.text, 2 * kMaxEvidenceTextBytes) << "</code>";
        out_ << "</li>\n";
      }
      out_ << "</ul></dd>\n";
    }
    out_ << "</dl>\n</div>\n";
  }

  void matrix(const RunResult& run, const std::vector<RuleCoverage>& cov,
              const std::map<std::string_view, std::vector<std::size_t>>& touched) {
    std::size_t covered = 0;
    for (const RuleCoverage& r : cov) covered += touched.count(r.rule_id);
    out_ << fmt::format("<h2 id=\"rules\">Rule coverage</h2>\n<p>{} of {} catalogue rules covered by a case "
                        "or a monitor finding. Level: M is MUST (a breach FAILs); I (implementation "
                        "behaviour) and C (profile choice) are SHOULD (NON-STRICT) unless the profile "
                        "pins them. Binds: E engine, P plugin, S SDK.{}</p>\n",
                        covered, cov.size(),
                        run.strict ? " This run is strict (--strict): I and C rules that bind the target FAIL." : "");
    out_ << "<table class=\"rules\">\n<tr><th>Rule</th><th>Level</th><th>Binds</th><th>Covered by</th>"
            "<th>Verdict</th><th>Findings</th><th>Requirement</th></tr>\n";
    std::string_view area;
    for (const RuleCoverage& r : cov) {
      const RuleInfo* info = findRule(r.rule_id);
      auto it = touched.find(r.rule_id);
      const bool is_covered = it != touched.end();
      std::string anchor;
      if (areaOf(r.rule_id) != area) {
        area = areaOf(r.rule_id);
        anchor = fmt::format("<span id=\"rules-{}\"></span>", esc(area));
      }
      out_ << fmt::format("<tr id=\"rule-{0}\"{1}><td>{2}<code>{0}</code></td><td>{3}</td><td>{4}</td><td>",
                          esc(r.rule_id), is_covered ? "" : " class=\"uncovered\"", anchor,
                          info ? toString(info->level) : "?", info ? esc(bindsText(info->binds)) : "?");
      if (!is_covered) out_ << "—";
      else
        for (std::size_t k = 0; k < it->second.size(); ++k) {
          std::size_t no = it->second[k];
          out_ << fmt::format("{}<a href=\"#c{}\"><code>{}</code></a>", k ? ", " : "", no, esc(run.cases[no - 1].id));
        }
      out_ << "</td><td>" << badge(r.verdict) << "</td><td class=\"num\">"
           << (r.findings ? fmt::format("{}", r.findings) : "") << "</td><td>"
           << (info ? mdInline(info->text) : "") << "</td></tr>\n";
    }
    out_ << "</table>\n";
  }

  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> makeHtmlReporter(std::ostream& out) {
  return std::make_unique<HtmlReporter>(out);
}

}  // namespace conform::reports
