// Issue 6 (lint performance) changed how the monitors keep state and how Profile::validate decides;
// these tests pin that the findings did not change:
//   * the emit monitor's grant table forgets dead grants by trace time, so memory stays bounded on
//     long traces — recently spent tokens are still judged exactly (EMIT-06), unknown tokens are
//     still judged on long traces (EMIT-04), and a token it forgot is never mistaken for an unknown
//     one;
//   * Profile::validate's fast pre-check — exercised here on every frame of the lint fixtures and on
//     systematic mutations of them. Debug builds (the test builds) re-run valijson after every fast
//     "valid" and abort on a disagreement, so this file is the differential test of the pre-check;
//     it also checks that invalid values keep their violation (path and rule).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/json/json.h"
#include "harness/rules/monitor.h"
#include "tests/rules/script.h"

using namespace conform;
using namespace conform::rules;

namespace {

constexpr const char* kSid = "0191c0de-0000-7000-8000-000000000001";

// Feeds frames straight into a MonitorSet, one parsed frame at a time (constant memory, unlike
// test::Script, which keeps every event: these traces have hundreds of thousands).
class Feeder {
 public:
  Feeder() {
    frame(Dir::EngineToPlugin, 0, test::kInit);
    frame(Dir::PluginToEngine, 1'000, test::initResult());
  }
  void frame(Dir d, std::int64_t t_us, const std::string& text) {
    auto p = json::parse(text);
    if (!p) FAIL("test frame does not parse: " << text);
    trace::TraceEvent ev;
    ev.line = ++line_;
    ev.t_us = t_us;
    ev.dir = d;
    ev.kind = trace::Kind::Frame;
    ev.raw = text;
    ev.line_text = text;
    ev.frame = &p->doc;
    ev.duplicates = &p->duplicates;
    set_.feed(ev);
  }
  void busEvent(std::int64_t t_us, const std::string& token) {
    frame(Dir::EngineToPlugin, t_us,
          fmt::format(R"({{"jsonrpc":"2.0","method":"plugin/bus_event","params":{{"session_id":"{}","context_id":"{}","plugin":"other","name":"x","payload":{{}}}}}})",
                      kSid, token));
  }
  // A plugin/emit with `token` and its published result 1 ms later.
  void emitPublished(std::int64_t t_us, const std::string& token) {
    frame(Dir::PluginToEngine, t_us,
          fmt::format(R"({{"jsonrpc":"2.0","method":"plugin/emit","params":{{"session_id":"{}","context_id":"{}","name":"n","payload":{{}}}}}})",
                      kSid, token));
    frame(Dir::EngineToPlugin, t_us + 1'000,
          R"({"jsonrpc":"2.0","method":"plugin/emit_result","params":{"name":"n","bus":"published","durable":"rejected"}})");
  }
  std::vector<reports::Finding> finish() {
    set_.finish();
    return set_.findings();
  }

 private:
  MonitorSet set_;
  std::uint64_t line_ = 1;
};

}  // namespace

TEST_CASE("lint: a spent token is still judged after the grant table was pruned", "[rules][lint][perf]") {
  Feeder f;
  f.busEvent(1'000'000, "tok-first");
  f.emitPublished(1'001'000, "tok-first");
  // Ten times the prune floor of deliveries, 1 ms apart: the table is pruned several times (the
  // expired, unused tokens go) while the spent one is within its 60 s memory.
  std::int64_t t = 2'000'000;
  for (int i = 0; i < 40'000; ++i, t += 1'000) f.busEvent(t, fmt::format("tok-{}", i));
  f.emitPublished(t + 1'000'000, "tok-first");  // reused 43 s later: EMIT-06, as before pruning existed
  f.emitPublished(t + 2'000'000, "tok-never");  // never delivered: EMIT-04
  f.emitPublished(t + 3'000'000, "tok-5");      // expired 35 s ago and forgotten: still EMIT-10, not EMIT-04
  const auto found = f.finish();
  CHECK(test::engineIds(found) == std::vector<std::string>{"EMIT-06", "EMIT-04", "EMIT-10"});
  CHECK(test::pluginIds(found) == std::vector<std::string>{"EMIT-06", "EMIT-04", "EMIT-10"});
}

TEST_CASE("lint: unknown tokens are still judged after more spent tokens than the table holds",
          "[rules][lint][perf]") {
  Feeder f;
  // 70,000 deliveries (more than kMaxGrants), each spent at once: 33 emits/s (under QUOTA-05's
  // 40/s), each token used once.
  std::int64_t t = 1'000'000;
  for (int i = 0; i < 70'000; ++i, t += 30'000) {
    const std::string tok = fmt::format("tok-{}", i);
    f.busEvent(t, tok);
    f.emitPublished(t + 1'000, tok);
  }
  // Before, the table filled up with spent tokens for good and every unknown token went unjudged.
  f.emitPublished(t + 1'000'000, "tok-never");  // never delivered: EMIT-04
  // tok-0 was spent 35 minutes ago and forgotten: its reuse is still EMIT-06 (the forgotten set is
  // exact), never "never delivered".
  f.emitPublished(t + 2'000'000, "tok-0");
  // A recently spent token is still remembered with its line.
  f.emitPublished(t + 3'000'000, "tok-69999");
  const auto found = f.finish();
  CHECK(test::engineIds(found) == std::vector<std::string>{"EMIT-04", "EMIT-06", "EMIT-06"});
  CHECK(test::pluginIds(found) == std::vector<std::string>{"EMIT-04", "EMIT-06", "EMIT-06"});
}

namespace {

// Mutations of one value: each member removed, replaced by values of other types, a member added;
// applied at every object nesting level. Calls `check` for each mutated copy of `root`.
template <class F>
void mutations(json::Document& root, json::Value& v, F&& check, int depth = 0) {
  auto& a = root.GetAllocator();
  if (v.IsObject() && depth < 4) {
    const rapidjson::SizeType n = v.MemberCount();
    for (rapidjson::SizeType i = 0; i < n; ++i) {
      json::Value& mv = (v.MemberBegin() + i)->value;
      json::Value saved(mv, a);
      const char* replacements[] = {"null", "0", "-1", "1.5", "2.0", "18446744073709551615", "\"\"",
                                    "\"x\"", "\"0191c0de-0000-7000-8000-000000000001\"",
                                    "\"2026-01-01T00:00:01Z\"", "true", "{}", "[]", "[{}]",
                                    "{\"type\":\"text\"}", "{\"kind\":\"single\",\"text\":\"t\"}",
                                    "{\"kind\":\"named\",\"streams\":[]}", "\"published\"", "\"a\\u0000b\""};
      for (const char* r : replacements) {
        auto parsed = json::parse(r);
        mv.CopyFrom(parsed->doc, a);
        check();
      }
      mv.CopyFrom(saved, a);
      mutations(root, mv, check, depth + 1);
    }
    // Each member removed (moved out and back, keeping the order).
    for (rapidjson::SizeType i = 0; i < v.MemberCount(); ++i) {
      json::Value copy(v, a);
      v.EraseMember(v.MemberBegin() + i);
      check();
      v.Swap(copy);
    }
    v.AddMember("zz_extra", json::Value(1), a);
    check();
    v.RemoveMember("zz_extra");
  } else if (v.IsArray() && depth < 4) {
    for (auto& e : v.GetArray()) mutations(root, e, check, depth + 1);
  }
}

}  // namespace

TEST_CASE("Profile::validate: the fast pre-check agrees with valijson on fixtures and mutations",
          "[rules][lint][perf][profile]") {
  // The params of every fixture request/notification and the result of every response (paired
  // with its request's method by id), each distinct value once, unmutated and mutated, in both
  // profiles.
  std::set<std::string> seen;
  std::size_t checked = 0;
  const auto dir = std::filesystem::path(CONFORM_SOURCE_DIR) / "tests/data/traces";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".ndjson") continue;
    std::map<std::string, std::string> methods;  // direction + id of a request → its method
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      auto doc = json::parse(line);
      if (!doc) continue;
      const json::Value* frame = json::member(doc->doc, "frame");
      const std::string dir_name(json::stringMember(doc->doc, "dir").value_or(""));
      if (!frame || !frame->IsObject()) continue;
      const json::Value* id = json::member(*frame, "id");
      const std::string id_text = id ? json::canonical(*id) : std::string();
      std::string method(json::stringMember(*frame, "method").value_or(""));
      protocol::Part part = protocol::Part::Params;
      const json::Value* value = json::member(*frame, "params");
      if (method.empty()) {
        part = protocol::Part::Result;
        value = json::member(*frame, "result");
        auto it = methods.find((dir_name == "e2p" ? "p2e" : "e2p") + id_text);
        if (it == methods.end()) continue;
        method = it->second;
      } else if (id) {
        methods[dir_name + id_text] = method;
      }
      if (!value || !seen.insert(method + (part == protocol::Part::Params ? " params " : " result ") +
                                 json::canonical(*value)).second)
        continue;
      for (const protocol::Profile* prof : protocol::allProfiles()) {
        const protocol::MethodInfo* m = prof->findMethod(method);
        if (!m) continue;
        json::Document copy;
        copy.CopyFrom(*value, copy.GetAllocator());
        auto check = [&] {
          (void)prof->validate(m->name, part, copy);
          ++checked;
        };
        check();
        mutations(copy, copy, check);
      }
    }
  }
  INFO(checked << " validations");
  CHECK(checked > 5'000);
}

TEST_CASE("Profile::validate: violations keep their path and rule with the fast pre-check",
          "[rules][lint][perf][profile]") {
  const protocol::Profile& p = protocol::profileV006();
  auto v = [&](std::string_view method, protocol::Part part, const char* text) {
    auto doc = json::parse(text);
    REQUIRE(doc);
    return p.validate(method, part, doc->doc);
  };
  using protocol::Part;
  const std::string ev_ok = fmt::format(
      R"({{"session_id":"{}","context_id":"c","seq":1,"event":{{"type":"x"}},"timestamp":"2026-01-01T00:00:01Z"}})", kSid);
  CHECK_FALSE(v("plugin/event", Part::Params, ev_ok.c_str()));
  // seq below its minimum, an unknown member, a bad uuid, an event without a type.
  auto seq0 = v("plugin/event", Part::Params,
                fmt::format(R"({{"session_id":"{}","context_id":"c","seq":0,"event":{{"type":"x"}},"timestamp":"2026-01-01T00:00:01Z"}})", kSid).c_str());
  REQUIRE(seq0);
  CHECK(seq0->path == "seq");
  CHECK(seq0->rule_id == "EVT-02");
  auto extra = v("plugin/emit", Part::Params,
                 fmt::format(R"({{"session_id":"{}","context_id":"c","name":"n","payload":1,"x":1}})", kSid).c_str());
  REQUIRE(extra);
  CHECK(extra->rule_id == "EMIT-01");
  auto uuid = v("plugin/emit", Part::Params, R"({"session_id":"not-a-uuid","context_id":"c","name":"n","payload":1})");
  REQUIRE(uuid);
  CHECK(uuid->path == "session_id");
  auto untyped = v("plugin/event", Part::Params,
                   fmt::format(R"({{"session_id":"{}","context_id":"c","seq":1,"event":{{}},"timestamp":"2026-01-01T00:00:01Z"}})", kSid).c_str());
  REQUIRE(untyped);
  CHECK(untyped->rule_id == "EVT-10");
  // oneOf of the tool output: `single` with streams is neither branch.
  auto out = v("plugin/tools/call", Part::Result, R"({"output":{"kind":"single","streams":[]},"is_error":false})");
  REQUIRE(out);
  CHECK(out->rule_id == "TOOL-09");
  CHECK_FALSE(v("plugin/tools/call", Part::Result, R"({"output":{"kind":"single","text":"t"},"is_error":false})"));
  CHECK_FALSE(v("plugin/tools/call", Part::Result,
                R"({"output":{"kind":"named","streams":[{"stream":"a","text":""}]},"display":null,"is_error":true})"));
  // A ping result must be the empty object.
  CHECK_FALSE(v("plugin/ping", Part::Result, "{}"));
  CHECK(v("plugin/ping", Part::Result, R"({"a":1})"));
}

namespace {
long rssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
}  // namespace

TEST_CASE("trace reader: memory does not grow with the number of lines", "[rules][lint][perf][trace]") {
  // The reader's parse stack once lived in a never-freeing pool: ≥ 1 KiB per line, ~200 MB here.
  std::string text = R"({"conform_trace":1,"started":"2026-01-01T00:00:00.000000Z","profile":"0.0.6","role":"engine","peer":[],"clock":"real"})";
  text += '\n';
  const std::string event =
      R"({"t":5,"dir":"e2p","frame":{"jsonrpc":"2.0","method":"plugin/ping","id":3,"params":{"a":[1,2,{"b":"c"}]}}})";
  constexpr int kLines = 200'000;
  text.reserve(text.size() + kLines * (event.size() + 1));
  for (int i = 0; i < kLines; ++i) (text += event) += '\n';
  auto reader = trace::TraceReader::fromString(std::move(text));
  const long before = rssKb();
  int events = 0;
  while (true) {
    auto ev = reader->next();
    if (!ev) FAIL(ev.error().str());
    if (!*ev) break;
    ++events;
  }
  const long after = rssKb();
  CHECK(events == kLines);
  if (before > 0 && after > 0) CHECK(after - before < 32 * 1024);
}

TEST_CASE("EMIT-06 a forgotten spent token delivered again stays spent — the plugin is not blamed for using it",
          "[rules][lint][perf]") {
  Feeder f;
  f.busEvent(1'000'000, "tok-a");
  f.emitPublished(1'001'000, "tok-a");
  // 75 s of deliveries 1 ms apart: the table is pruned many times and tok-a (spent > 60 s ago) is
  // forgotten into the exact set.
  std::int64_t t = 2'000'000;
  for (int i = 0; i < 75'000; ++i, t += 1'000) f.busEvent(t, fmt::format("tok-{}", i));
  f.busEvent(t + 1'000, "tok-a");       // the engine delivers the spent token again
  f.emitPublished(t + 2'000, "tok-a");  // and publishes its use: the engine broke EMIT-06
  const auto found = f.finish();
  CHECK(test::engineIds(found) == std::vector<std::string>{"EMIT-06"});
  CHECK(test::pluginIds(found).empty());
}

// compactSize() replaced a rapidjson::Writer into a counting stream (issue 6). QUOTA-01 and QUOTA-06
// judge by its figures, so it must give exactly the length of the Writer's compact form, and count
// every number (the size tolerance is per number).
TEST_CASE("QUOTA-01 compactSize is exactly the length of the compact serialisation", "[rules][lint][perf][quota]") {
  std::string every_byte;
  for (int c = 1; c < 0x80; ++c) every_byte += static_cast<char>(c);
  every_byte += "\xC3\xA9\xF0\x9F\x98\x80";  // 2- and 4-byte UTF-8 sequences are copied as they are
  const std::string escaped_text = json::compact(json::Value(every_byte.c_str(), static_cast<rapidjson::SizeType>(every_byte.size())));
  const std::vector<std::string> texts = {
      "null", "true", "false", "0", "-1", "9223372036854775807", "-9223372036854775808",
      "18446744073709551615", "4294967296", "2147483648", "-2147483649", "0.1", "-0.0", "1.0", "1e300",
      "-2.5e-300", "5e-324", "1.7976931348623157e308", "123456.789", "0.92", R"("")", R"("a\u0000b")",
      R"("\u001f\u007f \/ \" \\ \b\f\n\r\t")", escaped_text, "{}", "[]", "[[],{},[{}]]", R"({"a":1})",
      R"({"k\"ey":[1,2.5,"x",null,true,{"n":-3}]})", R"({"a":{"b":{"c":[0,0.0,-0,1e-7]}},"d":"\u00e9"})",
      R"({"files":14,"warnings":0,"cache_hit":0.92,"note":"incremental build after edit of the parser module"})",
  };
  for (const std::string& t : texts) {
    INFO(t);
    auto p = json::parse(t);
    REQUIRE(p);
    const CompactSize got = compactSize(p->doc);
    CHECK(got.bytes == compactText(p->doc).size());
    std::size_t numbers = 0;
    std::function<void(const json::Value&)> count = [&](const json::Value& v) {
      if (v.IsNumber()) ++numbers;
      if (v.IsArray())
        for (const json::Value& e : v.GetArray()) count(e);
      if (v.IsObject())
        for (const auto& m : v.GetObject()) count(m.value);
    };
    count(p->doc);
    CHECK(got.numbers == numbers);
  }
  // Where the Writer stops (a non-finite double: it writes nothing more), the count stops too.
  json::Document d;
  d.SetArray();
  d.PushBack(1, d.GetAllocator());
  d.PushBack(std::numeric_limits<double>::infinity(), d.GetAllocator());
  d.PushBack(2, d.GetAllocator());
  CHECK(compactSize(d).bytes == compactText(d).size());
  CHECK(compactText(d) == "[1,");
}
