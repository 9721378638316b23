// fuzz_rpc — core/wire decodeMessage on one frame (the frame decoder has already removed LF/CR).
// Invariants:
//  * never crashes; an error names a rule and renders (EnvelopeError::str);
//  * the three entry points agree: decoding the text, decoding the parsed document and decoding
//    a borrowed value give the same verdict, kind and id (a monitor reading a trace and a channel
//    reading a pipe must classify a frame alike);
//  * a decoded message re-encodes with the encode*() functions (by hand only for a request or
//    notification without params, which encode*() never writes, RPC-11) and decodes again to
//    an equal message: same kind, id (JSON type kept, RPC-05/08), method, params / result / error
//    (numbers bit for bit), and no duplicate member the original lacked.
#include "core/json/json.h"
#include "core/wire/rpc.h"
#include "fuzz/fuzz_common.h"

namespace json = conform::json;
namespace wire = conform::wire;
using conform::fuzz::sameValue;

namespace {

bool samePart(const json::Value* a, const json::Value* b) {
  if (!a || !b) return a == b;
  return sameValue(*a, *b);
}

std::string byHand(const wire::Message& m) {
  json::Document d;
  d.SetObject();
  auto& al = d.GetAllocator();
  d.AddMember("jsonrpc", "2.0", al);
  if (m.isRequest()) d.AddMember("id", m.id.toJSON(al), al);
  d.AddMember("method", json::str(m.method, al), al);
  return json::compact(d);
}

std::string reencode(const wire::Message& m) {
  switch (m.kind) {
    case wire::MessageKind::Request:
      return m.params ? wire::encodeRequest(m.id, m.method, *m.params) : byHand(m);
    case wire::MessageKind::Notification:
      return m.params ? wire::encodeNotification(m.method, *m.params) : byHand(m);
    case wire::MessageKind::Success: return wire::encodeResult(m.id, *m.result);
    case wire::MessageKind::Error:
      return wire::encodeError(m.id, m.error.code, m.error.message, m.error.data);
  }
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame = conform::fuzz::asText(data, size);
  wire::DecodeOptions opts;
  opts.direction = size % 2 ? wire::Direction::EngineToPlugin : wire::Direction::PluginToEngine;
  auto m = wire::decodeMessage(frame, opts);
  if (!m) {
    FUZZ_CHECK(m.error().rule != nullptr && *m.error().rule != '\0', "an error without a rule");
    (void)m.error().str();
  }

  // Same verdict from an already-parsed document and from a borrowed value.
  if (auto parsed = json::parse(frame)) {
    json::Document borrowed = json::copy(parsed->doc);
    auto from_doc = wire::decodeMessage(std::move(*parsed), opts);
    auto from_value = wire::decodeMessage(static_cast<const json::Value&>(borrowed), opts);
    FUZZ_CHECK(from_doc.has_value() == m.has_value(), "decodeMessage(Parsed) verdict differs");
    FUZZ_CHECK(from_value.has_value() == m.has_value(), "decodeMessage(Value) verdict differs");
    if (m) {
      FUZZ_CHECK(from_doc->kind == m->kind && from_doc->id == m->id, "decodeMessage(Parsed) differs");
      FUZZ_CHECK(from_value->kind == m->kind && from_value->id == m->id, "decodeMessage(Value) differs");
      FUZZ_CHECK(from_doc->duplicates == m->duplicates, "duplicates differ");
    } else {
      FUZZ_CHECK(from_doc.error().kind == m.error().kind, "decodeMessage(Parsed) error kind differs");
      FUZZ_CHECK(from_value.error().kind == m.error().kind, "decodeMessage(Value) error kind differs");
    }
  }
  if (!m) return 0;

  FUZZ_CHECK(m->raw == frame, "keep_raw did not keep the frame");
  const std::string again_text = reencode(*m);
  auto again = wire::decodeMessage(again_text, opts);
  FUZZ_CHECK(again.has_value(), "re-encoded frame refused: " + again_text + " -> " + again.error().str());
  FUZZ_CHECK(again->kind == m->kind, again_text);
  FUZZ_CHECK(again->id == m->id, again_text);
  FUZZ_CHECK(again->method == m->method, again_text);
  FUZZ_CHECK(samePart(again->params, m->params), again_text);
  FUZZ_CHECK(samePart(again->result, m->result), again_text);
  FUZZ_CHECK(again->error.code == m->error.code && again->error.message == m->error.message, again_text);
  FUZZ_CHECK(samePart(again->error.data, m->error.data), again_text);
  for (const auto& d : again->duplicates)
    FUZZ_CHECK(std::find(m->duplicates.begin(), m->duplicates.end(), d) != m->duplicates.end(),
               "re-encoding invented duplicate " + d);
  return 0;
}
