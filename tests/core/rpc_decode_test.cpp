// Tests of core/wire/rpc decoding: classification (PROTOCOL §3.2), closed envelopes (§3.1), ids,
// parse-level failures. Transcript style: each frame is decoded and rendered as one line.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/wire/rpc.h"

using namespace conform::wire;
namespace json = conform::json;

namespace {

std::string render(const Message& m) {
  std::string s = toString(m.kind);
  if (!m.isNotification()) s += " id=" + m.id.render();
  if (!m.method.empty() || m.isRequest() || m.isNotification()) s += " method=" + std::string(m.method);
  if (m.isRequest() || m.isNotification())
    s += m.params ? " params=" + json::compact(*m.params) : " (no params)";
  if (m.result) s += " result=" + json::compact(*m.result);
  if (m.kind == MessageKind::Error) {
    s += " code=" + std::to_string(m.error.code) + " message=" + std::string(m.error.message);
    if (m.error.data) s += " data=" + json::compact(*m.error.data);
  }
  for (const auto& d : m.duplicates) s += " dup=" + d;
  return s;
}

std::string render(const EnvelopeError& e) {
  std::string s = std::string("ERR ") + e.rule + " " + toString(e.kind) + ": " + e.message;
  if (e.classified_as) s += std::string(" [as ") + toString(*e.classified_as) + "]";
  if (e.id) s += " [id " + e.id->render() + "]";
  for (const auto& d : e.duplicates) s += " dup=" + d;
  return s;
}

std::string decode(std::string_view frame, const DecodeOptions& o = {}) {
  auto r = decodeMessage(frame, o);
  return r ? render(*r) : render(r.error());
}

// Decodes every line of `frames` (one frame a line) and renders one result a line.
std::string transcript(const std::vector<std::string>& frames) {
  std::string out;
  for (const auto& f : frames) out += decode(f) + "\n";
  return out;
}

}  // namespace

TEST_CASE("RPC-02 classification: method+id request, method notification, else response", "[rpc]") {
  CHECK(transcript({
            R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":{}})",
            R"({"jsonrpc":"2.0","method":"plugin/event","params":{"a":1}})",
            R"({"jsonrpc":"2.0","id":1,"result":{}})",
            R"({"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}})",
            R"({"method":"m","jsonrpc":"2.0","id":"r-1"})",
            R"({"jsonrpc":"2.0","id":null,"method":"m","params":[1]})",
        }) ==
        "request id=1 method=plugin/ping params={}\n"
        "notification method=plugin/event params={\"a\":1}\n"
        "success id=1 result={}\n"
        "error id=2 code=-32601 message=nope\n"
        "request id=\"r-1\" method=m (no params)\n"
        "request id=null method=m params=[1]\n");
}

TEST_CASE("RPC-02 a frame without method is classified as a response", "[rpc]") {
  CHECK(decode(R"({"jsonrpc":"2.0","params":{}})") ==
        "ERR RPC-03 unknown-member: member \"params\" is not allowed in a response (closed envelope) "
        "[as success]");
  CHECK(decode(R"({"jsonrpc":"2.0"})") ==
        "ERR RPC-05 bad-id: id: required member is missing [as success]");
}

TEST_CASE("RPC-01 jsonrpc must be exactly the string \"2.0\"", "[rpc]") {
  CHECK(transcript({
            R"({"jsonrpc":"2","id":1,"result":{}})",
            R"({"jsonrpc":"1.0","id":1,"method":"m","params":{}})",
            R"({"jsonrpc":2.0,"id":1,"result":{}})",
            R"({"id":1,"result":{}})",
            R"({"jsonrpc":"2.0 ","method":"m"})",
            R"({"jsonrpc":null,"method":"m"})",
        }) ==
        "ERR RPC-01 bad-jsonrpc: jsonrpc: expected \"2.0\", found string \"2\" [as success] [id 1]\n"
        "ERR RPC-01 bad-jsonrpc: jsonrpc: expected \"2.0\", found string \"1.0\" [as request] [id 1]\n"
        "ERR RPC-01 bad-jsonrpc: jsonrpc: expected \"2.0\", found number 2.0 [as success] [id 1]\n"
        "ERR RPC-01 bad-jsonrpc: jsonrpc: required member is missing [as success] [id 1]\n"
        "ERR RPC-01 bad-jsonrpc: jsonrpc: expected \"2.0\", found string \"2.0 \" [as notification]\n"
        "ERR RPC-01 bad-jsonrpc: jsonrpc: expected \"2.0\", found null [as notification]\n");
}

TEST_CASE("RPC-03 an extra envelope member is malformed", "[rpc]") {
  CHECK(transcript({
            R"({"jsonrpc":"2.0","id":1,"method":"m","params":{},"x":1})",
            R"({"jsonrpc":"2.0","method":"m","params":{},"x":1})",
            R"({"jsonrpc":"2.0","id":1,"result":{},"x":1})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":""},"x":1})",
            R"({"jsonrpc":"2.0","id":1,"method":"m","params":{},"result":1})",
            R"({"jsonrpc":"2.0","method":"m","error":{}})",
            R"({"jsonrpc":"2.0","id":1,"result":{},"params":{}})",
            R"({"jsonrpc":"2.0","id":1,"method":"m","ID":2})",
        }) ==
        "ERR RPC-03 unknown-member: member \"x\" is not allowed in a request (closed envelope) [as request] [id 1]\n"
        "ERR RPC-03 unknown-member: member \"x\" is not allowed in a notification (closed envelope) [as notification]\n"
        "ERR RPC-03 unknown-member: member \"x\" is not allowed in a response (closed envelope) [as success] [id 1]\n"
        "ERR RPC-03 unknown-member: member \"x\" is not allowed in a response (closed envelope) [as error] [id 1]\n"
        "ERR RPC-03 unknown-member: member \"result\" is not allowed in a request (closed envelope) [as request] [id 1]\n"
        "ERR RPC-03 unknown-member: member \"error\" is not allowed in a notification (closed envelope) [as notification]\n"
        "ERR RPC-03 unknown-member: member \"params\" is not allowed in a response (closed envelope) [as success] [id 1]\n"
        "ERR RPC-03 unknown-member: member \"ID\" is not allowed in a request (closed envelope) [as request] [id 1]\n");
}

TEST_CASE("RPC-03 method must be a string", "[rpc]") {
  CHECK(decode(R"({"jsonrpc":"2.0","id":1,"method":5})") ==
        "ERR RPC-03 bad-method: method: expected string, found integer 5 [as request] [id 1]");
  CHECK(decode(R"({"jsonrpc":"2.0","method":null})") ==
        "ERR RPC-03 bad-method: method: expected string, found null [as notification]");
}

TEST_CASE("RPC-03 the error object is closed: code int32, message string, data optional", "[rpc]") {
  CHECK(transcript({
            R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m","data":{"k":[1]}}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m","data":null}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m","x":1}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"message":"m"}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":2147483648,"message":"m"}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":-2147483648,"message":"m"}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":1}})",
            R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":7}})",
            R"({"jsonrpc":"2.0","id":1,"error":"boom"})",
            R"({"jsonrpc":"2.0","id":1,"error":null})",
        }) ==
        "error id=1 code=-32000 message=m data={\"k\":[1]}\n"
        "error id=1 code=-32000 message=m data=null\n"
        "ERR RPC-03 bad-error-object: error.x: member is not allowed in an error object (closed) [as error] [id 1]\n"
        "ERR RPC-03 bad-error-object: error.code: required member is missing [as error] [id 1]\n"
        "ERR RPC-03 bad-error-object: error.code: expected a 32-bit integer, found number 1.5 [as error] [id 1]\n"
        "ERR RPC-03 bad-error-object: error.code: expected a 32-bit integer, found integer 2147483648 [as error] [id 1]\n"
        "error id=1 code=-2147483648 message=m\n"
        "ERR RPC-03 bad-error-object: error.message: required member is missing [as error] [id 1]\n"
        "ERR RPC-03 bad-error-object: error.message: expected string, found integer 7 [as error] [id 1]\n"
        "ERR RPC-03 bad-error-object: error: expected object, found string \"boom\" [as error] [id 1]\n"
        "ERR RPC-03 bad-error-object: error: expected object, found null [as error] [id 1]\n");
}

TEST_CASE("RPC-04 a response carries exactly one of result and error", "[rpc]") {
  CHECK(decode(R"({"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":""}})") ==
        "ERR RPC-04 result-and-error: a response carries both \"result\" and \"error\" [as success] [id 3]");
  CHECK(decode(R"({"jsonrpc":"2.0","id":3})") ==
        "ERR RPC-04 neither-result-nor-error: a response carries neither \"result\" nor \"error\" "
        "[as success] [id 3]");
  // result may be any JSON, null included.
  CHECK(decode(R"({"jsonrpc":"2.0","id":3,"result":null})") == "success id=3 result=null");
}

TEST_CASE("RPC-05 id is an int64 integer, a string or null — anything else is fatal", "[rpc]") {
  CHECK(transcript({
            R"({"jsonrpc":"2.0","id":9223372036854775807,"result":1})",
            R"({"jsonrpc":"2.0","id":-9223372036854775808,"result":1})",
            R"({"jsonrpc":"2.0","id":"","result":1})",
            R"({"jsonrpc":"2.0","id":null,"result":1})",
            R"({"jsonrpc":"2.0","id":9223372036854775808,"result":1})",
            R"({"jsonrpc":"2.0","id":1.5,"method":"m","params":{}})",
            R"({"jsonrpc":"2.0","id":1.0,"result":1})",
            R"({"jsonrpc":"2.0","id":1e2,"result":1})",
            R"({"jsonrpc":"2.0","id":true,"result":1})",
            R"({"jsonrpc":"2.0","id":{},"method":"x"})",
            R"({"jsonrpc":"2.0","id":[1],"result":1})",
        }) ==
        "success id=9223372036854775807 result=1\n"
        "success id=-9223372036854775808 result=1\n"
        "success id=\"\" result=1\n"
        "success id=null result=1\n"
        "ERR RPC-05 bad-id: id: expected an integer (int64), a string or null, found integer 9223372036854775808 [as success]\n"
        "ERR RPC-05 bad-id: id: expected an integer (int64), a string or null, found number 1.5 [as request]\n"
        "ERR RPC-05 bad-id: id: expected an integer (int64), a string or null, found number 1.0 [as success]\n"
        "ERR RPC-05 bad-id: id: expected an integer (int64), a string or null, found number 100.0 [as success]\n"
        "ERR RPC-05 bad-id: id: expected an integer (int64), a string or null, found boolean true [as success]\n"
        "ERR RPC-05 bad-id: id: expected an integer (int64), a string or null, found object [as request]\n"
        "ERR RPC-05 bad-id: id: expected an integer (int64), a string or null, found array [as success]\n");
}

TEST_CASE("RPC-19 a plugin request with an object id fails strict decoding", "[rpc]") {
  auto r = decodeMessage(R"({"jsonrpc":"2.0","id":{},"method":"x"})");
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == EnvelopeErrorKind::BadId);
  CHECK(std::string(r.error().rule) == "RPC-05");
}

TEST_CASE("RPC-11 params may be any JSON or absent at the envelope layer", "[rpc]") {
  auto absent = decodeMessage(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping"})");
  REQUIRE(absent);
  CHECK_FALSE(absent->hasParams());
  auto nul = decodeMessage(R"({"jsonrpc":"2.0","id":1,"method":"plugin/ping","params":null})");
  REQUIRE(nul);
  REQUIRE(nul->hasParams());
  CHECK(nul->params->IsNull());
  auto arr = decodeMessage(R"({"jsonrpc":"2.0","method":"n","params":[1,2]})");
  REQUIRE(arr);
  CHECK(arr->params->IsArray());
}

TEST_CASE("RPC-08 string and integer ids keep their JSON type", "[rpc]") {
  auto a = decodeMessage(R"({"jsonrpc":"2.0","id":"1","result":{}})");
  auto b = decodeMessage(R"({"jsonrpc":"2.0","id":1,"result":{}})");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->id.isString());
  CHECK(b->id.isInteger());
  CHECK_FALSE(a->id == b->id);
  CHECK(a->id.render() == "\"1\"");
  CHECK(b->id.render() == "1");
  REQUIRE(a->id_value);
  CHECK(a->id_value->IsString());
}

TEST_CASE("FRAME-11 arrays and scalars are not messages (no batches)", "[rpc][frame]") {
  CHECK(transcript({"[]", R"([{"jsonrpc":"2.0","method":"m"}])", "42", "\"s\"", "null", "true"}) ==
        "ERR FRAME-11 not-object: frame is an array (JSON-RPC batches are not supported), not an object\n"
        "ERR FRAME-11 not-object: frame is an array (JSON-RPC batches are not supported), not an object\n"
        "ERR FRAME-11 not-object: frame is a integer, not an object\n"
        "ERR FRAME-11 not-object: frame is a string, not an object\n"
        "ERR FRAME-11 not-object: frame is a null, not an object\n"
        "ERR FRAME-11 not-object: frame is a boolean, not an object\n");
}

TEST_CASE("FRAME-13 unparseable JSON is reported with its offset", "[rpc][frame]") {
  for (std::string bad : {"{bad", "{}{}", "{\"jsonrpc\":\"2.0\",}", "{} x", "{\"a\":1", "\x01"}) {
    auto r = decodeMessage(bad);
    INFO(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == EnvelopeErrorKind::MalformedJson);
    CHECK(std::string(r.error().rule) == "FRAME-13");
    CHECK(r.error().message.rfind("malformed JSON: ", 0) == 0);
  }
  auto r = decodeMessage("{bad");
  REQUIRE_FALSE(r);
  CHECK(r.error().offset == 1);
}

TEST_CASE("FRAME-13 numbers beyond double range and excessive nesting are refused", "[rpc][frame]") {
  auto inf = decodeMessage(R"({"jsonrpc":"2.0","id":1,"result":1e400})");
  REQUIRE_FALSE(inf);
  CHECK(inf.error().kind == EnvelopeErrorKind::NonFinite);
  CHECK(std::string(inf.error().rule) == "FRAME-13");

  std::string deep = R"({"jsonrpc":"2.0","id":1,"result":)" + std::string(100'000, '[') +
                     std::string(100'000, ']') + "}";
  auto d = decodeMessage(deep);
  REQUIRE_FALSE(d);
  CHECK(d.error().kind == EnvelopeErrorKind::TooDeep);
  CHECK(std::string(d.error().rule) == "FRAME-13");

  DecodeOptions shallow;
  shallow.parse.max_depth = 3;
  CHECK_FALSE(decodeMessage(R"({"jsonrpc":"2.0","id":1,"result":[[[1]]]})", shallow));
  CHECK(decodeMessage(R"({"jsonrpc":"2.0","id":1,"result":[1]})", shallow));
}

TEST_CASE("FRAME-10 an empty frame is malformed JSON", "[rpc][frame]") {
  CHECK(decode("") == "ERR FRAME-10 malformed-json: empty frame (an empty line is malformed JSON)");
}

TEST_CASE("FRAME-14 a UTF-8 BOM makes the frame unparseable", "[rpc][frame]") {
  auto r = decodeMessage("\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{}}");
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == EnvelopeErrorKind::MalformedJson);
  CHECK(std::string(r.error().rule) == "FRAME-14");
  // The same frame without the BOM is fine.
  CHECK(decodeMessage("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{}}"));
}

TEST_CASE("FRAME-04 invalid UTF-8 is its own error — FRAME-05 for engine frames", "[rpc][frame]") {
  const std::string in_string = "{\"jsonrpc\":\"2.0\",\"method\":\"m\xff\"}";
  const std::string outside = "\xff{}";
  for (const auto& f : {in_string, outside}) {
    auto p = decodeMessage(f);
    REQUIRE_FALSE(p);
    CHECK(p.error().kind == EnvelopeErrorKind::InvalidUtf8);
    CHECK(std::string(p.error().rule) == "FRAME-04");
    DecodeOptions e2p;
    e2p.direction = Direction::EngineToPlugin;
    auto e = decodeMessage(f, e2p);
    REQUIRE_FALSE(e);
    CHECK(std::string(e.error().rule) == "FRAME-05");
  }
  // A surrogate encoded in UTF-8 inside a string is invalid too (RFC 3629).
  auto s = decodeMessage("{\"jsonrpc\":\"2.0\",\"method\":\"\xed\xa0\x80\"}");
  REQUIRE_FALSE(s);
  CHECK(s.error().kind == EnvelopeErrorKind::InvalidUtf8);
}

TEST_CASE("FRAME-19 duplicate members are reported, not fatal — the last one wins", "[rpc][frame]") {
  CHECK(transcript({
            R"({"jsonrpc":"2.0","id":1,"id":2,"result":{"a":1,"a":2}})",
            R"({"jsonrpc":"2.0","method":"a","method":"b","params":{}})",
            R"({"jsonrpc":"1.0","jsonrpc":"2.0","method":"m"})",
        }) ==
        "success id=2 result={\"a\":1,\"a\":2} dup=id dup=result.a\n"
        "notification method=b params={} dup=method\n"
        "notification method=m (no params) dup=jsonrpc\n");
  // Also kept when the envelope is bad.
  CHECK(decode(R"({"jsonrpc":"2.0","x":1,"x":2,"method":"m"})") ==
        "ERR RPC-03 unknown-member: member \"x\" is not allowed in a notification (closed envelope) "
        "[as notification] dup=x");
}

TEST_CASE("RPC-02 classifying an already-parsed value borrows it", "[rpc]") {
  auto parsed = json::parse(R"({"t":1,"frame":{"jsonrpc":"2.0","id":7,"method":"plugin/ping","params":{}}})");
  REQUIRE(parsed);
  const json::Value* frame = json::member(parsed->doc, "frame");
  REQUIRE(frame);
  auto m = decodeMessage(*frame);
  REQUIRE(m);
  CHECK(render(*m) == "request id=7 method=plugin/ping params={}");
  CHECK(&m->root() == frame);
  CHECK(m->document() == nullptr);
  CHECK(m->raw.empty());

  json::Document arr;
  arr.SetArray();
  auto bad = decodeMessage(static_cast<const json::Value&>(arr));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().kind == EnvelopeErrorKind::NotObject);
}

TEST_CASE("RPC-02 a decoded message survives moves and keeps its raw text", "[rpc]") {
  const std::string frame = R"({"jsonrpc":"2.0","id":"a-long-string-id-beyond-sso","method":"plugin/tools/call","params":{"name":"x"}})";
  std::vector<Message> v;
  for (int i = 0; i < 20; ++i) {
    auto m = decodeMessage(frame);
    REQUIRE(m);
    v.push_back(std::move(*m));  // reallocations move earlier messages
  }
  for (const auto& m : v) {
    CHECK(m.method == "plugin/tools/call");
    CHECK(m.raw == frame);
    CHECK(json::compact(*m.params) == R"({"name":"x"})");
    CHECK(m.id.string() == "a-long-string-id-beyond-sso");
  }
  DecodeOptions no_raw;
  no_raw.keep_raw = false;
  auto m = decodeMessage(frame, no_raw);
  REQUIRE(m);
  CHECK(m->raw.empty());
}

TEST_CASE("RPC-02 decodeMessageInto a reused Message decodes exactly as decodeMessage", "[rpc]") {
  // Every kind, string and integer ids, error data, bad envelopes in between: a field the reset
  // forgot would carry over from the frame before and show here.
  const std::vector<std::string> frames = {
      R"({"jsonrpc":"2.0","id":"r-1","method":"plugin/ping","params":{}})",
      R"({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":{"x":1}}})",
      R"({"jsonrpc":"2.0","method":"plugin/event","params":{"a":[1,2]}})",
      R"({"jsonrpc":"2.0","id":"r-1","result":{"ok":true}})",
      R"({"jsonrpc":"1.0","id":1,"method":"m"})",
      R"({"jsonrpc":"2.0","id":null,"result":{}})",
      R"([1,2])",
      R"({"jsonrpc":"2.0","method":"plugin/shutdown"})",
      R"({"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}})",
      R"({"jsonrpc":"2.0","id":9,"method":"plugin/tools/call","params":{"tool":"t"}})",
  };
  Message reused;
  for (const std::string& f : frames) {
    INFO(f);
    auto parsed = json::parse(f);
    REQUIRE(parsed.has_value());
    auto fresh = decodeMessage(parsed->doc, {});
    auto err = decodeMessageInto(parsed->doc, reused);
    REQUIRE(fresh.has_value() == !err.has_value());
    if (fresh) {
      CHECK(render(reused) == render(*fresh));
      CHECK(reused.id_value == fresh->id_value);
      CHECK(reused.raw.empty());
      CHECK(reused.duplicates.empty());
      CHECK(reused.document() == nullptr);
    } else {
      CHECK(render(*err) == render(fresh.error()));
    }
  }
}
