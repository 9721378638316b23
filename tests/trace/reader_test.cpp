// Reader errors (every malformed line is named by its line number, never a crash), slicing, and the
// golden trace under tests/data/traces/.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/clock/clock.h"
#include "core/json/json.h"
#include "core/trace/detail.h"
#include "core/trace/trace.h"

using namespace conform;
using namespace conform::trace;

namespace {

const std::string kHeader =
    R"({"conform_trace":1,"started":"2026-11-30T07:00:00.000000Z","profile":"0.0.6","role":"engine","peer":["./p"],"clock":"virtual"})"
    "\n";

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("reader errors: a bad header is reported on line 1 and is sticky", "[trace][errors]") {
  struct C {
    std::string text, needle;
  };
  const C cases[] = {
      {"", "empty file"},
      {"not json\n", "not valid JSON"},
      {"[1]\n", "not an object"},
      {"{\"t\":0}\n", "not a conform trace"},
      {R"({"conform_trace":2,"started":"x","profile":"0.0.6","role":"engine","clock":"real"})" "\n",
       "unsupported trace version 2"},
      {R"({"conform_trace":1,"started":"x","profile":"0.0.6","role":"judge","clock":"real"})" "\n",
       "\"role\" must be"},
      {R"({"conform_trace":1,"started":"x","profile":"0.0.6","role":"tap","clock":"sundial"})" "\n",
       "\"clock\" must be"},
      {R"({"conform_trace":1,"profile":"0.0.6","role":"tap","clock":"real"})" "\n", "\"started\""},
      {R"({"conform_trace":1,"started":"x","profile":"0.0.6","role":"tap","clock":"real","peer":[1]})" "\n",
       "\"peer\""},
  };
  for (const auto& c : cases) {
    auto r = TraceReader::fromString(c.text);
    auto e = r->next();
    REQUIRE(!e);
    INFO(e.error().str());
    CHECK(e.error().line == 1);
    CHECK(e.error().str().find(c.needle) != std::string::npos);
    auto again = r->next();
    REQUIRE(!again);
    CHECK(again.error().message == e.error().message);
  }
}

TEST_CASE("reader errors: each malformed event line names its line and reason", "[trace][errors]") {
  struct C {
    std::string line, needle;
  };
  const C cases[] = {
      {"not json", "not valid JSON"},
      {"", "empty line"},
      {R"({"dir":"p2e","frame":{}})", "missing member \"t\""},
      {R"({"t":-1,"dir":"p2e","frame":{}})", "non-negative integer"},
      {R"({"t":1.5,"dir":"p2e","frame":{}})", "non-negative integer"},
      {R"({"t":1,"dir":"p2e","bogus":1})", "unknown event kind"},
      {R"({"t":1,"dir":"p2e","text":"a","note":"b"})", "two event kinds"},
      {R"({"t":1,"frame":{}})", "missing member \"dir\""},
      {R"({"t":1,"dir":"up","frame":{}})", "\"dir\" must be"},
      {R"({"t":1,"dir":"p2e","frame":{},"cr":true})", "last member"},
      {R"({"t":1,"t":2,"dir":"p2e","frame":{}})", "duplicate member t"},
      {R"({"t":1,"dir":"p2e","b64":"!!"})", "not valid base64"},
      {R"({"t":1,"dir":"p2e","eof":false})", "\"eof\" must be true"},
      {R"({"t":1,"exit":{"code":1,"signal":9}})", "exactly one"},
      {R"({"t":1,"exit":{"signal":-3}})", "positive integer"},
      {R"({"t":1,"case":"X-01"})", "phase"},
      {R"({"t":1,"note":5})", "must be a string"},
      {R"({"t":1,"dir":"p2e","cr":"yes","frame":{}})", "boolean"},
      {R"({"t":1,"dir":"p2e","oversized":"big"})", "bytes seen"},
      {R"({"t":1,"dir":"p2e","fr\u0061me":{}})", "literally"},
      {"{\"t\":1,\"note\":\"\xFF\"}", "not valid JSON"},
      {R"({"t":1,"dir":"p2e","frame":1.8e308})", "not finite"},
      {R"({"t":1,"dir":"p2e","frame":)" + std::string(600, '[') + std::string(600, ']') + "}",
       "nested deeper"},
      {std::string("{\"t\":1,\"note\":\"a\"}\0 junk", 24), "NUL byte"},
  };
  for (const auto& c : cases) {
    const std::string text = kHeader + R"({"t":0,"note":"ok"})" "\n" + c.line + "\n" +
                             R"({"t":9,"note":"after"})" "\n";
    auto r = TraceReader::fromString(text);
    auto first = r->next();
    REQUIRE(first);
    auto e = r->next();
    INFO(c.line);
    REQUIRE(!e);
    INFO(e.error().str());
    CHECK(e.error().line == 3);
    CHECK(e.error().str().rfind("line 3: ", 0) == 0);
    CHECK(e.error().message.find(c.needle) != std::string::npos);
    // The reader resynchronises: the next line is read normally.
    auto after = r->next();
    REQUIRE(after);
    REQUIRE(after->has_value());
    CHECK((*after)->text == "after");
    CHECK((*after)->line == 4);
  }
}

TEST_CASE("reader: unknown extra members are allowed and visible through the line object", "[trace]") {
  auto r = TraceReader::fromString(kHeader + R"({"t":3,"src":"runner","dir":"e2p","frame":{"id":1}})" "\n");
  auto e = r->next();
  REQUIRE(e);
  REQUIRE(e->has_value());
  CHECK((*e)->raw == R"({"id":1})");
  REQUIRE(json::member(*(*e)->object, "src"));
}

TEST_CASE("reader: a truncated last line is an error naming its line", "[trace][errors]") {
  const std::string text = kHeader + R"({"t":0,"note":"ok"})" "\n" + R"({"t":5,"dir":"p2e","frame":{"id")";
  auto r = TraceReader::fromString(text);
  REQUIRE(r->next());
  auto e = r->next();
  REQUIRE(!e);
  CHECK(e.error().line == 3);
  CHECK(e.error().message.find("truncated last line") != std::string::npos);
  auto end = r->next();
  REQUIRE(end);
  CHECK(!end->has_value());
}

TEST_CASE("reader: a complete last line without its newline is accepted", "[trace]") {
  auto r = TraceReader::fromString(kHeader + R"({"t":5,"dir":"p2e","frame":{"id":1}})");
  auto e = r->next();
  REQUIRE(e);
  REQUIRE(e->has_value());
  CHECK((*e)->raw == R"({"id":1})");
}

TEST_CASE("reader: an overlong line is refused with the cap in the message, then reading goes on",
          "[trace][errors]") {
  const std::string huge = R"({"t":1,"note":")" + std::string(kMaxLineBytes + 10, 'a') + "\"}";
  for (bool via_stream : {false, true}) {
    const std::string text = kHeader + huge + "\n" + R"({"t":2,"note":"after"})" "\n";
    std::istringstream is(text);
    auto r = via_stream ? TraceReader::fromStream(is) : TraceReader::fromString(text);
    auto e = r->next();
    REQUIRE(!e);
    CHECK(e.error().line == 2);
    CHECK(e.error().message.find(std::to_string(kMaxLineBytes) + "-byte cap") != std::string::npos);
    auto after = r->next();
    REQUIRE(after);
    REQUIRE(after->has_value());
    CHECK((*after)->line == 3);
    CHECK((*after)->text == "after");
  }
}

TEST_CASE("reader: a missing file is reported, not a crash", "[trace][errors]") {
  auto r = TraceReader::open("/nonexistent/dir/trace.ndjson");
  auto e = r->next();
  REQUIRE(!e);
  CHECK(e.error().line == 0);
  CHECK(e.error().str().find("cannot open trace") != std::string::npos);
}

TEST_CASE("reader: a stream source is read in blocks across line boundaries", "[trace]") {
  std::string text = kHeader;
  for (int i = 0; i < 20000; ++i)
    text += R"({"t":)" + std::to_string(i) + R"(,"dir":"e2p","frame":{"jsonrpc":"2.0","id":)" +
            std::to_string(i) + R"(,"method":"plugin/ping","params":{"pad":")" + std::string(100, 'x') +
            "\"}}}\n";
  std::istringstream is(text);
  auto r = TraceReader::fromStream(is);
  std::int64_t expect = 0;
  for (;;) {
    auto e = r->next();
    REQUIRE(e);
    if (!*e) break;
    REQUIRE((*e)->t_us == expect);
    REQUIRE((*e)->frame->IsObject());
    ++expect;
  }
  CHECK(expect == 20000);
}

// ---------------------------------------------------------------------------------------------
// Slicing
// ---------------------------------------------------------------------------------------------

namespace {
std::string sampleTrace() {
  clock::VirtualClock vc;
  std::ostringstream os;
  TraceHeader h;
  h.started = "2026-11-30T07:00:00.000000Z";
  {
    TraceWriter w(os, vc, std::move(h), {FlushPolicy::Buffered, false});
    w.caseBegin("LIFE-01");                                         // line 2, t=0
    w.frame(Dir::EngineToPlugin, R"({"id":1,"method":"a"})");       // line 3
    vc.advance(std::chrono::microseconds(100));
    w.frame(Dir::PluginToEngine, R"({"id":1,"result":{}})");        // line 4, t=100
    w.caseEnd("LIFE-01");                                           // line 5
    vc.advance(std::chrono::microseconds(100));
    w.caseBegin("EMIT-04");                                         // line 6, t=200
    w.frame(Dir::EngineToPlugin, R"({"a":1,"a":2})", true);         // line 7
    vc.advance(std::chrono::microseconds(100));
    w.stderrLine("oops");                                           // line 8, t=300
    w.caseEnd("EMIT-04");                                           // line 9
  }
  return os.str();
}
std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}
}  // namespace

TEST_CASE("slice by line range copies the header and the chosen lines verbatim", "[trace][slice]") {
  const std::string src = sampleTrace();
  const auto all = linesOf(src);
  auto r = TraceReader::fromString(src);
  clock::VirtualClock vc;
  std::ostringstream os;
  TraceWriter w(os, vc, TraceWriter::NoHeader{});
  auto st = sliceLines(*r, w, 3, 4);
  REQUIRE(st);
  CHECK(st->lines_read == 8);
  CHECK(st->events_written == 2);
  CHECK(os.str() == all[0] + "\n" + all[2] + "\n" + all[3] + "\n");
}

TEST_CASE("slice by case id keeps its begin..end markers and frames byte for byte", "[trace][slice]") {
  const std::string src = sampleTrace();
  const auto all = linesOf(src);
  auto r = TraceReader::fromString(src);
  clock::VirtualClock vc;
  std::ostringstream os;
  TraceWriter w(os, vc, TraceWriter::NoHeader{});
  auto st = sliceCase(*r, w, "EMIT-04");
  REQUIRE(st);
  CHECK(st->events_written == 4);
  CHECK(os.str() == all[0] + "\n" + all[5] + "\n" + all[6] + "\n" + all[7] + "\n" + all[8] + "\n");
  // The slice is a valid trace whose frame is still the duplicate-member original.
  auto back = TraceReader::fromString(os.str());
  back->next();
  auto f = back->next();
  REQUIRE(f);
  REQUIRE(f->has_value());
  CHECK((*f)->raw == R"({"a":1,"a":2})");
  CHECK((*f)->had_cr);
  CHECK((*f)->line == 3);
}

TEST_CASE("slice by time range is inclusive on both ends", "[trace][slice]") {
  const std::string src = sampleTrace();
  const auto all = linesOf(src);
  auto r = TraceReader::fromString(src);
  clock::VirtualClock vc;
  std::ostringstream os;
  TraceWriter w(os, vc, TraceWriter::NoHeader{});
  auto st = sliceTime(*r, w, 100, 200);
  REQUIRE(st);
  CHECK(os.str() == all[0] + "\n" + all[3] + "\n" + all[4] + "\n" + all[5] + "\n" + all[6] + "\n");
}

TEST_CASE("slice stops at a malformed line and names it", "[trace][slice][errors]") {
  auto r = TraceReader::fromString(kHeader + R"({"t":0,"note":"a"})" "\n{oops\n");
  clock::VirtualClock vc;
  std::ostringstream os;
  TraceWriter w(os, vc, TraceWriter::NoHeader{});
  auto st = sliceLines(*r, w, 0, 0);
  REQUIRE(!st);
  CHECK(st.error().line == 3);
}

// ---------------------------------------------------------------------------------------------
// Golden file: the writer's exact output for a fixed script, and the reader's view of it.
// ---------------------------------------------------------------------------------------------

TEST_CASE("golden trace: writer output matches tests/data/traces/small.ndjson byte for byte",
          "[trace][golden]") {
  const std::string golden_path = std::string(CONFORM_SOURCE_DIR) + "/tests/data/traces/small.ndjson";
  clock::VirtualClock vc(clock::VirtualClock::defaultWallStart() + std::chrono::hours(24 * 333 + 7));
  std::ostringstream os;
  {
    TraceHeader h;
    h.peer = {"./my-plugin", "--flag"};
    h.extra.AddMember("name", "golden", h.extra.GetAllocator());
    TraceWriter w(os, vc, std::move(h));
    w.caseBegin("LIFE-01");
    w.frame(Dir::EngineToPlugin,
            R"({"jsonrpc":"2.0","id":1,"method":"plugin/initialize","params":{"protocol_version":"0.0.6"}})");
    vc.advance(std::chrono::microseconds(1234));
    w.frame(Dir::PluginToEngine, R"({"jsonrpc":"2.0","id":1,"result":{},"result":null})", true);
    vc.advance(std::chrono::microseconds(10));
    w.stderrLine("plugin says hi");
    w.frame(Dir::PluginToEngine, "{not json");
    w.frame(Dir::PluginToEngine, "\xFF\xFE");
    w.oversized(Dir::PluginToEngine, 4'194'305, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"");
    w.raw(Dir::EngineToPlugin, "\n\n");
    w.note("fault step wrote two empty lines");
    vc.advance(std::chrono::seconds(5));
    w.timeout("response to id 2");
    w.eof(Dir::EngineToPlugin);
    w.eof(Dir::PluginToEngine);
    w.exitSignal(9);
    w.caseEnd("LIFE-01");
  }
  // Re-approve after an intended format change: CONFORM_APPROVE=1 test_trace "[golden]".
  if (std::getenv("CONFORM_APPROVE")) std::ofstream(golden_path, std::ios::binary) << os.str();
  const std::string golden = readFile(golden_path);
  if (golden != os.str()) {
    INFO("actual output:\n" << os.str());
    CHECK(golden == os.str());
  }

  auto r = TraceReader::open(golden_path);
  auto h = r->header();
  REQUIRE(h);
  CHECK((*h)->started == "2026-11-30T07:00:00.000000Z");
  std::vector<Kind> kinds;
  for (;;) {
    auto e = r->next();
    INFO((e ? std::string() : e.error().str()));
    REQUIRE(e);
    if (!*e) break;
    kinds.push_back((*e)->kind);
  }
  CHECK(kinds == std::vector<Kind>{Kind::Case, Kind::Frame, Kind::Frame, Kind::Stderr, Kind::Text,
                                   Kind::Binary, Kind::Oversized, Kind::Raw, Kind::Note, Kind::Timeout,
                                   Kind::Eof, Kind::Eof, Kind::Exit, Kind::Case});
}

// The reader parses a plain-ASCII line without RapidJSON's UTF-8 validation and without the
// surrogate scan (detail::plainAscii, issue 6 lint throughput), and copies string runs with SIMD.
// Both shortcuts must leave every verdict exactly as core/json parse() gives it: the same frames
// accepted (with the same values), the same refused. Lines with non-ASCII bytes take the full checks.
TEST_CASE("FRAME-04 reader: the plain-ASCII fast path accepts and refuses exactly what core/json does",
          "[trace][errors]") {
  CHECK(detail::plainAscii(R"({"a":"b\"c\\d\n"})"));
  CHECK(detail::plainAscii(R"({"a":"\\udc00"})"));     // an escaped backslash, then the letters "udc00"
  CHECK(detail::plainAscii(R"({"a":"\u00e9\uabcd"})"));  // escapes of BMP code points
  CHECK_FALSE(detail::plainAscii(R"({"a":"\udc00"})"));  // a surrogate escape: full checks
  CHECK_FALSE(detail::plainAscii(R"({"a":"\uD800"})"));
  CHECK_FALSE(detail::plainAscii(R"({"a":"\\\uDBFF"})"));  // escaped backslash, then a real escape
  CHECK_FALSE(detail::plainAscii("{\"a\":\"\xC3\xA9\"}"));  // any non-ASCII byte: full checks
  CHECK_FALSE(detail::plainAscii(std::string(40, 'x') + "\x80"));  // past the 8-byte words
  CHECK_FALSE(detail::plainAscii(std::string(20, 'x') + "\x1d"));  // a control byte: full checks
  CHECK_FALSE(detail::plainAscii("\x1f"));
  CHECK(detail::plainAscii(""));
  CHECK(detail::plainAscii("\\"));

  std::vector<std::string> frames = {
      R"({"m":"plain"})",
      R"({"m":"a\\udc00b"})",                // accepted: no escape of a surrogate
      R"({"m":"a\udc00b"})",                 // refused: lone low surrogate
      R"({"m":"a\uD800b"})",                 // refused: lone high surrogate
      R"({"m":"\ud83d\ude00"})",             // accepted: a pair
      R"({"\udc00":1})",                     // refused: in a member name
      "{\"m\":\"caf\xC3\xA9\"}",             // accepted: valid UTF-8
      "{\"m\":\"\xFF\"}",                    // refused: invalid UTF-8
      "{\"m\":\"\xED\xA0\x80\"}",            // refused: a surrogate encoded in UTF-8
      "{\"m\":\"tab\there\"}",               // refused: a raw control character
      R"({"m":"esc \t \n \" \\ \/ \b \f \r"})",
      R"({"m":"bad \x escape"})",            // refused: unknown escape
      R"({"m":"unterminated})",              // refused
  };
  // Strings of every length 0..40 with an escape, a quote or a control byte at every offset cover
  // the SIMD loop's 16-byte blocks and the scalar code around them.
  for (int len = 0; len <= 40; ++len) {
    frames.push_back(R"({"s":")" + std::string(static_cast<std::size_t>(len), 'a') + R"("})");
    for (int at = 0; at < len; ++at) {
      std::string body(static_cast<std::size_t>(len), 'b');
      frames.push_back(R"({"s":")" + body.substr(0, static_cast<std::size_t>(at)) + R"(\"x\\)" +
                       body.substr(static_cast<std::size_t>(at)) + R"("})");
      // 0x1A–0x1F too: RapidJSON's SIMD scanner lets them through (its threshold is 0x19), so
      // lines with a control byte must take the validating path (fuzz_trace_reader find).
      for (char c : {'\x01', '\x19', '\x1a', '\x1d', '\x1f'}) {
        std::string ctl = body;
        ctl[static_cast<std::size_t>(at)] = c;
        frames.push_back(R"({"s":")" + ctl + R"("})");
      }
    }
  }
  for (const std::string& f : frames) {
    INFO(f);
    auto ref = json::parse(f);
    auto r = TraceReader::fromString(kHeader + R"({"t":5,"dir":"e2p","frame":)" + f + "}\n");
    auto ev = r->next();
    REQUIRE(ev.has_value() == ref.has_value());
    if (!ref) continue;
    REQUIRE(ev->has_value());
    REQUIRE((*ev)->frame);
    CHECK(json::compact(*(*ev)->frame) == json::compact(ref->doc));
    CHECK((*ev)->raw == f);
  }
}
