// Writer → reader round trips: every event kind comes back with the exact bytes and fields it was
// written with (docs/trace-format.md). Timestamps come from a VirtualClock, so lines are exact.
#include <catch2/catch.hpp>

#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/clock/clock.h"
#include "core/trace/trace.h"
#include "core/wire/framing.h"

using namespace conform;
using namespace conform::trace;

namespace {

TraceHeader testHeader() {
  TraceHeader h;
  h.started = "2026-11-30T07:00:00.000000Z";
  h.profile = "0.0.6";
  h.role = "engine";
  h.peer = {"./my-plugin", "--flag"};
  return h;
}

// Writes with `fill`, returns the whole trace text.
template <class F>
std::string writeTrace(F&& fill) {
  clock::VirtualClock vc;
  std::ostringstream os;
  {
    TraceWriter w(os, vc, testHeader(), {FlushPolicy::Buffered, false});
    fill(w, vc);
  }
  return os.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}

// Reads the single event after the header.
struct One {
  std::unique_ptr<TraceReader> r;
  TraceEvent ev;
};
One readOne(const std::string& text) {
  One o{TraceReader::fromString(text), {}};
  auto e = o.r->next();
  INFO((e ? std::string("ok") : e.error().str()));
  REQUIRE(e);
  REQUIRE(e->has_value());
  o.ev = **e;
  return o;
}

}  // namespace

TEST_CASE("trace header is line 1 with the documented members", "[trace]") {
  const std::string text = writeTrace([](TraceWriter&, clock::VirtualClock&) {});
  CHECK(text ==
        "{\"conform_trace\":1,\"started\":\"2026-11-30T07:00:00.000000Z\",\"profile\":\"0.0.6\","
        "\"role\":\"engine\",\"peer\":[\"./my-plugin\",\"--flag\"],\"clock\":\"virtual\"}\n");
  auto r = TraceReader::fromString(text);
  auto h = r->header();
  REQUIRE(h);
  CHECK((*h)->version == 1);
  CHECK((*h)->profile == "0.0.6");
  CHECK((*h)->role == "engine");
  CHECK((*h)->clock == "virtual");
  CHECK((*h)->peer == std::vector<std::string>{"./my-plugin", "--flag"});
  auto e = r->next();
  REQUIRE(e);
  CHECK(!e->has_value());
}

TEST_CASE("trace header keeps extra members and takes 'started' from the clock", "[trace]") {
  clock::VirtualClock vc;
  std::ostringstream os;
  TraceHeader h;
  h.role = "tap";
  h.extra.AddMember("name", "smoke", h.extra.GetAllocator());
  { TraceWriter w(os, vc, std::move(h)); }
  CHECK(os.str() ==
        "{\"conform_trace\":1,\"started\":\"2026-01-01T00:00:00.000000Z\",\"profile\":\"0.0.6\","
        "\"role\":\"tap\",\"peer\":[],\"clock\":\"virtual\",\"name\":\"smoke\"}\n");
  auto r = TraceReader::fromString(os.str());
  auto hd = r->header();
  REQUIRE(hd);
  auto* name = json::member((*hd)->extra, "name");
  REQUIRE(name);
  CHECK(std::string(name->GetString()) == "smoke");
}

TEST_CASE("FRAME-01 a valid frame is stored verbatim as the last member and read back byte for byte",
          "[trace][frame]") {
  // Duplicate members (FRAME-19), odd spacing, number spellings and escapes must all survive.
  const std::vector<std::string> frames = {
      R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{}})",
      R"({"a":1,"a":2})",
      R"(  {"x" : 1.50e+01 , "y":"\u00e9\n", "z":[ ]}	)",
      R"([1,2,3])",
      R"(42)",
      R"("just a string")",
      "{\"k\":\"caf\xC3\xA9\"}",
      R"({"frame":{"frame":1},"t":"}"})",
      "{\"a\":\r1}\r",  // CR is JSON whitespace: inside a trace line it is content, not a line end
  };
  for (const auto& f : frames) {
    const std::string text = writeTrace([&](TraceWriter& w, clock::VirtualClock& vc) {
      vc.advance(std::chrono::microseconds(12));
      w.frame(Dir::PluginToEngine, f);
    });
    CHECK(lines(text)[1] == "{\"t\":12,\"dir\":\"p2e\",\"frame\":" + f + "}");
    auto o = readOne(text);
    CHECK(o.ev.kind == Kind::Frame);
    CHECK(o.ev.dir == Dir::PluginToEngine);
    CHECK(o.ev.t_us == 12);
    CHECK(o.ev.line == 2);
    CHECK(o.ev.raw == f);
    REQUIRE(o.ev.frame != nullptr);
    CHECK(!o.ev.had_cr);
  }
}

TEST_CASE("FRAME-19 duplicate member names inside a frame are reported with frame-relative paths",
          "[trace][frame]") {
  const std::string text = writeTrace([](TraceWriter& w, clock::VirtualClock&) {
    w.frame(Dir::EngineToPlugin, R"({"id":1,"params":{"a":1,"b":[{"c":1,"c":2}],"a":3},"id":2})");
  });
  auto o = readOne(text);
  REQUIRE(o.ev.duplicates != nullptr);
  CHECK(*o.ev.duplicates == std::vector<std::string>{"params.b[0].c", "params.a", "id"});
  // RapidJSON keeps both; FindMember finds the first, receivers keep the last (FRAME-19).
  CHECK(o.ev.frame->IsObject());
  CHECK(o.ev.frame->MemberCount() == 3);
}

TEST_CASE("FRAME-08 a CR flag is written before the frame and read back", "[trace][frame]") {
  const std::string text = writeTrace([](TraceWriter& w, clock::VirtualClock&) {
    w.frame(Dir::PluginToEngine, R"({"id":1})", true);
  });
  CHECK(lines(text)[1] == R"({"t":0,"dir":"p2e","cr":true,"frame":{"id":1}})");
  auto o = readOne(text);
  CHECK(o.ev.had_cr);
  CHECK(o.ev.raw == R"({"id":1})");
}

TEST_CASE("FRAME-09 an unterminated last frame keeps its flag", "[trace][frame]") {
  wire::FrameEvent fe;
  fe.kind = wire::FrameEvent::Kind::Frame;
  fe.bytes = R"({"method":"plugin/shutdown"})";
  fe.unterminated = true;
  const std::string text = writeTrace([&](TraceWriter& w, clock::VirtualClock&) {
    w.frameEvent(Dir::EngineToPlugin, fe);
  });
  auto o = readOne(text);
  CHECK(o.ev.kind == Kind::Frame);
  CHECK(o.ev.unterminated);
  CHECK(o.ev.dir == Dir::EngineToPlugin);
  CHECK(o.ev.raw == fe.bytes);
}

TEST_CASE("FRAME-13 a frame that is not one JSON value is stored as escaped text", "[trace][frame]") {
  const std::vector<std::string> frames = {
      "{bad", "", "{}{}", "{} x", "\xEF\xBB\xBF{}" /* FRAME-14 BOM */, "{\"a\":1e400}" /* non-finite */,
      std::string("{}\0x", 4) /* embedded NUL */, std::string(600, '[') + std::string(600, ']') /* too deep */,
      "tab\there \"quoted\" \x01"};
  for (const auto& f : frames) {
    CHECK(classifyFrame(f) == FrameForm::Text);
    const std::string text = writeTrace([&](TraceWriter& w, clock::VirtualClock&) {
      w.frame(Dir::PluginToEngine, f);
    });
    CHECK(lines(text)[1].find("\"text\":") != std::string::npos);
    auto o = readOne(text);
    CHECK(o.ev.kind == Kind::Text);
    CHECK(o.ev.raw == f);
    CHECK(o.ev.frame == nullptr);
  }
}

TEST_CASE("FRAME-04 a frame that is not valid UTF-8 is stored as base64 and decoded exactly",
          "[trace][frame]") {
  const std::vector<std::string> frames = {"\xFF", "{\"a\":\"\xC3\x28\"}", "\xED\xA0\x80",
                                           std::string("\x00\xFF\x0D", 3)};
  for (const auto& f : frames) {
    CHECK(classifyFrame(f) == FrameForm::Binary);
    const std::string text = writeTrace([&](TraceWriter& w, clock::VirtualClock&) {
      w.frame(Dir::PluginToEngine, f, true);
    });
    CHECK(lines(text)[1].find("\"b64\":\"") != std::string::npos);
    auto o = readOne(text);
    CHECK(o.ev.kind == Kind::Binary);
    CHECK(o.ev.raw == f);
    CHECK(o.ev.had_cr);
  }
  CHECK(lines(writeTrace([](TraceWriter& w, clock::VirtualClock&) {
          w.frame(Dir::PluginToEngine, "\xFF");
        }))[1] == R"({"t":0,"dir":"p2e","b64":"/w=="})");
}

TEST_CASE("a frame hint skips classification but never produces an unreadable line", "[trace]") {
  const std::string text = writeTrace([](TraceWriter& w, clock::VirtualClock&) {
    w.frame(Dir::PluginToEngine, R"({"id":7})", false, TraceWriter::kNow, FrameHint::ValidJson);
    w.frame(Dir::PluginToEngine, "{bad", false, TraceWriter::kNow, FrameHint::NotJson);
    w.frame(Dir::PluginToEngine, "\xFF", false, TraceWriter::kNow, FrameHint::NotJson);
  });
  auto r = TraceReader::fromString(text);
  const Kind kinds[] = {Kind::Frame, Kind::Text, Kind::Binary};
  for (Kind k : kinds) {
    auto e = r->next();
    REQUIRE(e);
    REQUIRE(e->has_value());
    CHECK((*e)->kind == k);
  }
}

TEST_CASE("FRAME-06 an oversized frame keeps its size and head (text or base64)", "[trace][frame]") {
  const std::string head(256, 'x');
  const std::string bin_head = "{\"a\":\"\xE2\x82";  // cut inside a UTF-8 sequence
  const std::string text = writeTrace([&](TraceWriter& w, clock::VirtualClock&) {
    w.oversized(Dir::PluginToEngine, 4'194'305, head);
    w.oversized(Dir::EngineToPlugin, 5'000'000, bin_head);
  });
  CHECK(lines(text)[1] == "{\"t\":0,\"dir\":\"p2e\",\"oversized\":4194305,\"head\":\"" + head + "\"}");
  auto r = TraceReader::fromString(text);
  auto a = r->next();
  REQUIRE(a);
  REQUIRE(a->has_value());
  CHECK((*a)->kind == Kind::Oversized);
  CHECK((*a)->oversized_bytes == 4'194'305);
  CHECK((*a)->raw == head);
  auto b = r->next();
  REQUIRE(b);
  REQUIRE(b->has_value());
  CHECK((*b)->oversized_bytes == 5'000'000);
  CHECK((*b)->raw == bin_head);
  CHECK((*b)->dir == Dir::EngineToPlugin);
}

TEST_CASE("FRAME-02 stderr lines round trip, invalid UTF-8 as stderr_b64", "[trace]") {
  const std::string text = writeTrace([](TraceWriter& w, clock::VirtualClock& vc) {
    w.stderrLine("warning: {\"not\":\"protocol\"}");
    vc.advance(std::chrono::milliseconds(3));
    w.stderrLine("bad \xFF byte");
  });
  CHECK(lines(text)[1] == R"({"t":0,"dir":"p2e","stderr":"warning: {\"not\":\"protocol\"}"})");
  CHECK(lines(text)[2] == R"({"t":3000,"dir":"p2e","stderr_b64":"YmFkIP8gYnl0ZQ=="})");
  auto r = TraceReader::fromString(text);
  auto a = r->next();
  REQUIRE(a);
  REQUIRE(a->has_value());
  CHECK((*a)->kind == Kind::Stderr);
  CHECK((*a)->raw == "warning: {\"not\":\"protocol\"}");
  auto b = r->next();
  REQUIRE(b);
  REQUIRE(b->has_value());
  CHECK((*b)->kind == Kind::Stderr);
  CHECK((*b)->raw == "bad \xFF byte");
  CHECK((*b)->t_us == 3000);
}

TEST_CASE("FRAME-17 FRAME-18 eof in both directions, exit by code and by signal", "[trace]") {
  const std::string text = writeTrace([](TraceWriter& w, clock::VirtualClock&) {
    w.eof(Dir::PluginToEngine);
    w.eof(Dir::EngineToPlugin);
    w.exitCode(0);
    w.exitSignal(9);
    w.exitSignal(11, "SIGSEGV");
  });
  auto ls = lines(text);
  REQUIRE(ls.size() == 6);
  CHECK(ls[1] == R"({"t":0,"dir":"p2e","eof":true})");
  CHECK(ls[2] == R"({"t":0,"dir":"e2p","eof":true})");
  CHECK(ls[3] == R"({"t":0,"exit":{"code":0}})");
  CHECK(ls[4] == R"({"t":0,"exit":{"signal":9,"name":"SIGKILL"}})");
  auto r = TraceReader::fromString(text);
  std::vector<TraceEvent> evs;
  std::vector<std::string> names;  // views are only valid until the next read: copy
  for (int i = 0; i < 5; ++i) {
    auto e = r->next();
    REQUIRE(e);
    REQUIRE(e->has_value());
    evs.push_back(**e);
    names.emplace_back((*e)->signal_name);
  }
  CHECK(evs[0].kind == Kind::Eof);
  CHECK(evs[0].dir == Dir::PluginToEngine);
  CHECK(evs[1].dir == Dir::EngineToPlugin);
  CHECK(evs[2].kind == Kind::Exit);
  CHECK(evs[2].exit_code == 0);
  CHECK(!evs[2].signal);
  CHECK(evs[3].signal == 9);
  CHECK(!evs[3].exit_code);
  CHECK(names[3] == "SIGKILL");
  CHECK(names[4] == "SIGSEGV");
  CHECK(evs[4].signal == 11);
  CHECK(evs[3].dir == Dir::None);
}

TEST_CASE("notes, timeouts, case markers and raw writes round trip", "[trace]") {
  const std::string text = writeTrace([](TraceWriter& w, clock::VirtualClock& vc) {
    w.caseBegin("EMIT-04");
    vc.advance(std::chrono::microseconds(5));
    w.note("sent \"x\"\n then waited");
    w.timeout("response to id 3");
    w.raw(Dir::EngineToPlugin, std::string("\xFF\n\x00", 3));
    w.note("bad \xFF utf8");  // harness text is sanitised, never makes an unreadable line
    w.caseEnd("EMIT-04", 99);
  });
  auto ls = lines(text);
  CHECK(ls[1] == R"({"t":0,"case":"EMIT-04","phase":"begin"})");
  CHECK(ls[6] == R"({"t":99,"case":"EMIT-04","phase":"end"})");
  auto r = TraceReader::fromString(text);
  auto next = [&] {
    auto e = r->next();
    INFO((e ? std::string() : e.error().str()));
    REQUIRE(e);
    REQUIRE(e->has_value());
    return **e;
  };
  auto c = next();
  CHECK(c.kind == Kind::Case);
  CHECK(c.text == "EMIT-04");
  CHECK(c.phase == CasePhase::Begin);
  auto n = next();
  CHECK(n.kind == Kind::Note);
  CHECK(n.text == "sent \"x\"\n then waited");
  CHECK(n.t_us == 5);
  auto t = next();
  CHECK(t.kind == Kind::Timeout);
  CHECK(t.text == "response to id 3");
  auto raw = next();
  CHECK(raw.kind == Kind::Raw);
  CHECK(raw.raw == std::string("\xFF\n\x00", 3));
  CHECK(raw.dir == Dir::EngineToPlugin);
  auto bad = next();
  CHECK(bad.text == "bad \xEF\xBF\xBD utf8");
  auto e = next();
  CHECK(e.phase == CasePhase::End);
  CHECK(e.t_us == 99);
  CHECK(e.line == 7);
}

TEST_CASE("FRAME-06 a frame of exactly 4,194,304 bytes round trips through a file", "[trace][frame]") {
  std::string big = R"({"jsonrpc":"2.0","method":"x","params":{"pad":")";
  big += std::string(wire::kMaxFrameBytes - big.size() - 3, 'a');
  big += "\"}}";
  REQUIRE(big.size() == wire::kMaxFrameBytes);
  const std::string path = "/tmp/conform-trace-test-big-" + std::to_string(::getpid()) + ".ndjson";
  clock::VirtualClock vc;
  {
    auto w = TraceWriter::open(path, vc, testHeader());
    REQUIRE(w);
    (*w)->frame(Dir::PluginToEngine, big);
    (*w)->frame(Dir::PluginToEngine, std::string(wire::kMaxFrameBytes, '\x01'));  // worst-case escape
    (*w)->note("after");
    CHECK((*w)->ok());
  }
  auto r = TraceReader::open(path);
  auto a = r->next();
  REQUIRE(a);
  REQUIRE(a->has_value());
  CHECK((*a)->raw == big);
  auto b = r->next();
  REQUIRE(b);
  REQUIRE(b->has_value());
  CHECK((*b)->kind == Kind::Text);
  CHECK((*b)->raw.size() == wire::kMaxFrameBytes);
  auto c = r->next();
  REQUIRE(c);
  REQUIRE(c->has_value());
  CHECK((*c)->text == "after");
  std::remove(path.c_str());
}

TEST_CASE("a thread-safe writer keeps lines whole and times non-decreasing", "[trace]") {
  clock::VirtualClock vc;
  std::ostringstream os;
  {
    TraceWriter w(os, vc, testHeader(), {FlushPolicy::Buffered, true});
    std::vector<std::thread> ts;
    for (int k = 0; k < 4; ++k)
      ts.emplace_back([&] {
        for (int i = 0; i < 500; ++i) w.frame(Dir::PluginToEngine, R"({"id":1})");
      });
    for (auto& t : ts) t.join();
    CHECK(w.linesWritten() == 2001);
  }
  auto r = TraceReader::fromString(os.str());
  int n = 0;
  for (;;) {
    auto e = r->next();
    REQUIRE(e);
    if (!*e) break;
    ++n;
  }
  CHECK(n == 2000);
}

TEST_CASE("base64 helpers follow RFC 4648 and refuse malformed input", "[trace]") {
  CHECK(base64Encode("") == "");
  CHECK(base64Encode("f") == "Zg==");
  CHECK(base64Encode("fo") == "Zm8=");
  CHECK(base64Encode("foobar") == "Zm9vYmFy");
  CHECK(base64Decode("Zm9vYg==") == std::optional<std::string>("foob"));
  CHECK(!base64Decode("Zm9"));
  CHECK(!base64Decode("Zm=v"));
  CHECK(!base64Decode("Zm9v!A=="));
  CHECK(signalName(15) == "SIGTERM");
  CHECK(signalName(0).empty());
}
