// The HTML report beyond its golden file: the structure stays intact whatever the data holds
// (balanced tags, no raw '<' or stray '&' from data, invalid UTF-8 as \xNN), nothing is fetched,
// every failing case gets a sequence diagram, and the caps on diagrams and wire logs hold.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reports/reporter.h"

using namespace conform::reports;

namespace {

// Elements the writer emits. Anything else after a '<' means data leaked into markup.
const std::set<std::string> kKnown = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "table",
    "tr", "th", "td", "p", "span", "a", "code", "nav", "label", "input", "section", "div", "dl",
    "dt", "dd", "ul", "li", "figure", "figcaption", "svg", "rect", "text", "line", "polygon",
    "details", "summary", "pre", "script"};
const std::set<std::string> kVoid = {"meta", "input"};
const std::set<std::string> kSvgLeaf = {"rect", "line", "polygon"};

// A small checker, strict about what this writer produces: returns "" or the first problem.
std::string wellFormed(const std::string& h) {
  const std::string doctype = "<!DOCTYPE html>\n";
  if (h.rfind(doctype, 0) != 0) return "no doctype";
  std::vector<std::string> stack;
  std::size_t i = doctype.size();
  while (i < h.size()) {
    char c = h[i];
    if (c == '>') return "raw '>' in text at " + std::to_string(i);
    if (c == '&') {
      static const char* const entities[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&#39;"};
      bool ok = false;
      for (const char* e : entities) ok = ok || h.compare(i, std::string(e).size(), e) == 0;
      if (!ok) return "bare '&' at " + std::to_string(i);
      ++i;
      continue;
    }
    if (c != '<') {
      ++i;
      continue;
    }
    const bool closing = i + 1 < h.size() && h[i + 1] == '/';
    std::size_t p = i + (closing ? 2 : 1);
    std::size_t n = p;
    while (n < h.size() && ((h[n] >= 'a' && h[n] <= 'z') || (h[n] >= '0' && h[n] <= '9'))) ++n;
    std::string name = h.substr(p, n - p);
    if (!kKnown.count(name)) return "unknown tag <" + h.substr(i, 20) + " at " + std::to_string(i);
    // The rest of the tag: quoted attribute values may not hold '<' or '>' either (esc() quotes them).
    std::size_t e = n;
    bool quoted = false;
    for (; e < h.size(); ++e) {
      if (h[e] == '"') quoted = !quoted;
      else if (h[e] == '<') return "'<' inside tag at " + std::to_string(e);
      else if (h[e] == '>' && !quoted) break;
      else if (h[e] == '>') return "'>' inside attribute at " + std::to_string(e);
    }
    if (e == h.size()) return "unterminated tag at " + std::to_string(i);
    const bool self_closing = h[e - 1] == '/';
    i = e + 1;
    if (closing) {
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes <" + (stack.empty() ? "" : stack.back()) + "> at " + std::to_string(p);
      stack.pop_back();
    } else if (self_closing) {
      if (!kSvgLeaf.count(name)) return "self-closing <" + name + "/>";
    } else if (kVoid.count(name)) {
      // nothing to close
    } else if (name == "style" || name == "script") {
      // Raw-text elements: their content is ours (constant), and must not close early.
      std::size_t end = h.find("</" + name + ">", i);
      if (end == std::string::npos) return "unclosed <" + name + ">";
      if (h.substr(i, end - i).find("</") != std::string::npos) return "'</' inside <" + name + ">";
      i = end + name.size() + 3;
    } else {
      stack.push_back(name);
    }
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

std::string render(const RunResult& run) {
  std::ostringstream out;
  auto rep = makeReporter("html", out);
  REQUIRE(rep.has_value());
  replay(run, **rep);
  return out.str();
}

std::size_t count(const std::string& h, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = h.find(what); p != std::string::npos; p = h.find(what, p + 1)) ++n;
  return n;
}

// The <section> of case number `no` (1-based).
std::string section(const std::string& h, int no) {
  std::size_t b = h.find("<section class=\"case");
  for (int k = 1; k < no && b != std::string::npos; ++k) b = h.find("<section class=\"case", b + 1);
  REQUIRE(b != std::string::npos);
  std::size_t e = h.find("</section>", b);
  REQUIRE(e != std::string::npos);
  return h.substr(b, e - b);
}

const std::string kHeader =
    R"({"conform_trace":1,"started":"2026-01-01T00:00:00.000000Z","profile":"0.0.6","role":"engine","peer":[],"clock":"virtual"})"
    "\n";

std::string frameLine(int t, const char* dir, const std::string& frame) {
  return "{\"t\":" + std::to_string(t) + ",\"dir\":\"" + dir + "\",\"frame\":" + frame + "}\n";
}

// A run whose every text field is hostile.
RunResult hostileRun() {
  RunResult run;
  run.command = "check";
  run.target = "./plugin --flag='x' & <y>";
  run.profile = "v006";
  run.started_at = "2026-01-01T00:00:00Z";
  CaseResult c = newCase("EMIT-06\"><b>", "</h3><script>alert(1)</script>", {"EMIT-06", "NOPE-99"});
  c.trace = kHeader +
            frameLine(1, "p2e", R"({"jsonrpc":"2.0","method":"</text></svg><i>","params":{"x":"\u003c/pre>"}})") +
            R"({"t":2,"dir":"p2e","stderr":"</pre></details><!-- & \u0001"})" "\n" +
            std::string("{\"t\":3,\"dir\":\"p2e\",\"frame\":\"\xFF\xFE\"}\n") +  // not UTF-8: unreadable line
            frameLine(4, "e2p", R"({"jsonrpc":"2.0","id":"<&>","result":{}})");
  c.findings.push_back(makeFinding("EMIT-06", kBindsEngine, "msg </dd>&", "exp <x>", "act \"y\"",
                                   {{2, "ev\x01\xC0</code>"}, {3, ""}}));
  c.findings.push_back(makeFinding("NOPE-99", kBindsPlugin, "unknown <rule>", "", "", {}));
  finalize(c);
  run.cases.push_back(c);
  return run;
}

}  // namespace

TEST_CASE("html: the checker itself rejects broken markup", "[html]") {
  CHECK(wellFormed("<!DOCTYPE html>\n<p>a</p>").empty());
  CHECK(!wellFormed("<!DOCTYPE html>\n<p>a<b></p>").empty());
  CHECK(!wellFormed("<!DOCTYPE html>\n<p>a & b</p>").empty());
  CHECK(!wellFormed("<!DOCTYPE html>\n<p><span></p></span>").empty());
  CHECK(!wellFormed("<!DOCTYPE html>\n<p>").empty());
}

TEST_CASE("html: hostile data never changes the document's structure", "[html]") {
  std::string h = render(hostileRun());
  INFO(h.substr(0, 200));
  CHECK(wellFormed(h) == "");
  CHECK(h.find("<script>alert") == std::string::npos);
  CHECK(h.find("&lt;/h3&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(h.find("&lt;/text&gt;&lt;/svg&gt;&lt;i&gt;") != std::string::npos);
  // Control bytes and invalid UTF-8 are shown as \xNN, never passed through.
  CHECK(h.find("ev\\x01\\xC0&lt;/code&gt;") != std::string::npos);
  CHECK(h.find('\x01') == std::string::npos);
  CHECK(h.find('\xC0') == std::string::npos);
  CHECK(h.find("\\xFF\\xFE") != std::string::npos);  // the unreadable line in the wire log
  CHECK(h.find("unreadable trace line") != std::string::npos);
  // The unknown rule is named but not linked to a matrix row that does not exist.
  CHECK(h.find("href=\"#rule-NOPE-99\"") == std::string::npos);
}

TEST_CASE("html: self-contained, nothing fetched", "[html]") {
  std::string h = render(hostileRun());
  for (const char* s : {"http://", "https://", "src=", "@import", "url(", "<link", "<img", "<iframe"})
    CHECK(h.find(s) == std::string::npos);
  CHECK(h.find("<style>") != std::string::npos);
  // The filter bar is hidden until the script reveals it: without JS the page shows no dead controls.
  CHECK(h.find("<nav id=\"filter\" hidden>") != std::string::npos);
}

TEST_CASE("html: a failing case has a sequence diagram, a passing one does not", "[html]") {
  RunResult run;
  run.command = "check";
  CaseResult ok = newCase("PING-01", "ping", {"PING-01"});
  ok.trace = kHeader + frameLine(0, "e2p", R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping"})") +
             frameLine(5, "p2e", R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CaseResult bad = newCase("EMIT-06", "one-shot tokens", {"EMIT-06"});
  bad.trace = ok.trace + frameLine(9, "p2e", R"({"jsonrpc":"2.0","method":"plugin/emit","params":{}})") +
              R"({"t":10,"exit":{"signal":9,"name":"SIGKILL"}})" "\n";
  bad.findings.push_back(makeFinding("EMIT-06", kBindsEngine, "m", "e", "a", {{4, "emit"}}));
  for (CaseResult* c : {&ok, &bad}) finalize(*c);
  run.cases = {ok, bad};
  std::string h = render(run);
  REQUIRE(wellFormed(h) == "");
  std::string pass = section(h, 1), fail = section(h, 2);
  CHECK(pass.find("<svg class=\"seq\"") == std::string::npos);
  REQUIRE(fail.find("<svg class=\"seq\"") != std::string::npos);
  CHECK(count(fail, "<line class=\"arrow") == 3);                // one per frame
  CHECK(count(fail, "<line class=\"arrow ev\"") == 1);           // the evidence frame highlighted
  CHECK(fail.find(">plugin/ping #1<title>") != std::string::npos);  // method and id label
  CHECK(fail.find(">result #1<title>") != std::string::npos);
  CHECK(fail.find("plugin killed by signal 9 SIGKILL") != std::string::npos);
  CHECK(fail.find("href=\"#c2-L4\"") != std::string::npos);       // arrow → wire-log line
  CHECK(fail.find("id=\"c2-L4\" class=\"l ev\"") != std::string::npos);
  // Requirement → expected → actual, in that order.
  std::size_t r = fail.find("<dt>Requirement</dt>"), e = fail.find("<dt>Expected</dt>"),
              a = fail.find("<dt>Actual</dt>");
  CHECK((r < e && e < a && a != std::string::npos));
}

TEST_CASE("html: the diagram is capped around the evidence, the wire log keeps evidence lines", "[html]") {
  RunResult run;
  CaseResult c = newCase("RPC-01", "long", {"RPC-01"});
  c.trace = kHeader;
  for (int i = 0; i < 2500; ++i)
    c.trace += frameLine(i, i % 2 ? "p2e" : "e2p", "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"i\":" + std::to_string(i) + "}}");
  // Trace line 401 is in the middle of the diagram window; 2400 is past the wire-log cap.
  c.findings.push_back(makeFinding("RPC-01", kBindsPlugin, "m", "e", "a", {{401, ""}, {2400, ""}}));
  finalize(c);
  run.cases = {c};
  std::string h = render(run);
  REQUIRE(wellFormed(h) == "");
  std::size_t arrows = count(h, "<line class=\"arrow");
  CHECK(arrows <= 200);
  CHECK(arrows >= 190);
  CHECK(h.find("earlier event(s) not drawn") != std::string::npos);
  CHECK(h.find("later event(s) not drawn") != std::string::npos);
  CHECK(h.find(">L401 ") != std::string::npos);
  CHECK(h.find("evidence outside the drawing: line(s) <a href=\"#c1-L2400\">") != std::string::npos);
  CHECK(h.find("id=\"c1-L2000\"") != std::string::npos);
  CHECK(h.find("id=\"c1-L2001\"") == std::string::npos);
  CHECK(h.find("id=\"c1-L2400\" class=\"l ev\"") != std::string::npos);
  CHECK(h.find("⋮ 399 line(s) not shown") != std::string::npos);
}

TEST_CASE("html: the coverage matrix lists every catalogue rule", "[html]") {
  RunResult run;
  CaseResult c = newCase("PING-01", "ping", {"PING-01"});
  finalize(c);
  run.cases = {c};
  std::string h = render(run);
  CHECK(count(h, "<tr id=\"rule-") == ruleCatalog().size());
  CHECK(h.find("<tr id=\"rule-PING-01\"><td>") != std::string::npos);  // covered: no "uncovered" class
  CHECK(h.find("<tr id=\"rule-FRAME-01\" class=\"uncovered\">") != std::string::npos);
  CHECK(h.find("No wire log was kept") != std::string::npos);
  // Every area of the catalogue has a summary row linking into the matrix.
  CHECK(h.find("<a href=\"#rules-FRAME\">FRAME</a>") != std::string::npos);
  CHECK(h.find("id=\"rules-FRAME\"") != std::string::npos);
}

TEST_CASE("html: an unreadable wire log still renders", "[html]") {
  RunResult run;
  CaseResult c = newCase("EMIT-06", "x", {"EMIT-06"});
  c.trace = "not a trace header\n";
  c.findings.push_back(makeFinding("EMIT-06", kBindsEngine, "m", "e", "a", {{1, ""}}));
  finalize(c);
  run.cases = {c};
  std::string h = render(run);
  CHECK(wellFormed(h) == "");
  CHECK(h.find("the wire log could not be read") != std::string::npos);
  CHECK(h.find("<svg class=\"seq\"") == std::string::npos);
}
