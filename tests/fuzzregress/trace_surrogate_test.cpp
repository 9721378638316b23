// tests/fuzzregress/trace_surrogate_test — a find of the CI libFuzzer smoke (fuzz_trace_reader,
// crash-d85544ce…, now the seed fuzz/corpus/trace_reader/regress-lone-surrogate-in-frame): the trace
// reader's own SAX pass accepted a lone UTF-16 surrogate escape ("\udc00") inside a "frame" member,
// which core/json parse() refuses (FRAME-04), so a frame the reader returned did not parse again
// from its own bytes. The reader and the writer's frame classifier now refuse it like core/json.
#include <catch2/catch.hpp>

#include <string>

#include "core/json/json.h"
#include "core/trace/trace.h"

using namespace conform;

namespace {
const char* kHeader =
    R"({"conform_trace":1,"started":"2026-03-04T05:06:07.000000Z","profile":"0.0.6","role":"engine","peer":["./plug"],"clock":"virtual"})";
}

TEST_CASE("FRAME-04 the trace reader refuses a lone surrogate escape in a frame, as core/json does", "[fuzzregress][trace]") {
  const std::string frame = R"({"jsonrpc":"2.0","id":"ping-9","method":"plug\udc00g","params":{}})";
  REQUIRE_FALSE(json::parse(frame).has_value());  // the reference behaviour
  auto r = trace::TraceReader::fromString(std::string(kHeader) + "\n" + R"({"t":5,"dir":"e2p","frame":)" + frame + "}\n");
  auto ev = r->next();
  REQUIRE_FALSE(ev.has_value());
  CHECK(ev.error().line == 2);
  CHECK(ev.error().message.find("surrogate") != std::string::npos);
  // A paired surrogate (a real code point) stays fine.
  const std::string paired = R"({"jsonrpc":"2.0","id":1,"method":"plug\ud83d\ude00g","params":{}})";
  auto r2 = trace::TraceReader::fromString(std::string(kHeader) + "\n" + R"({"t":5,"dir":"e2p","frame":)" + paired + "}\n");
  auto ev2 = r2->next();
  REQUIRE(ev2.has_value());
  CHECK(ev2->has_value());
}

TEST_CASE("FRAME-04 the trace writer stores a frame with a lone surrogate escape as text, not JSON", "[fuzzregress][trace]") {
  CHECK(trace::classifyFrame(R"({"method":"a\udc00"})") == trace::FrameForm::Text);
  CHECK(trace::classifyFrame(R"({"\udc00":1})") == trace::FrameForm::Text);
  CHECK(trace::classifyFrame(R"({"method":"a\ud83d\ude00"})") == trace::FrameForm::Json);
}
