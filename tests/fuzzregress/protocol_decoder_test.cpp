// tests/fuzzregress/protocol_decoder_test.cpp — typed decoder vs profile schema disagreements found
// by fuzz_profile_0_0_6 / fuzz_profile_0_0_4 (both profiles share these shapes). In each case the
// typed decoder (core/protocol/hooks.cpp) accepts a value Profile::validate refuses, so conform's
// reference engine and plugin, which decode with the typed codecs, would take non-conforming
// traffic for conforming and write it back out (the fuzz invariant "toJSON(fromJSON(x)) validates"
// failed). Fixed in core/protocol/hooks.cpp: decodePart() checks each part against its variant
// (member presence, closedness and member shapes), checkSelection() applies the schema's `model` and
// `variant` patterns and ResolvedModelRef the `provider_id` pattern. Each case pins both halves:
// the schema refuses, and the typed decoder refuses at the same path.
#include <catch2/catch.hpp>

#include <string>

#include "core/json/json.h"
#include "core/json/schema_rewrite.h"
#include "core/protocol/hooks.h"
#include "core/protocol/profile.h"

namespace cp = conform::protocol;
namespace json = conform::json;

namespace {

#define SID "0192aaaa-1111-7222-8333-444455556666"
#define HEAD "\"session_id\":\"" SID "\",\"context_id\":\"turn-3\""

json::Document parsed(const std::string& text) {
  auto p = json::parse(text);
  REQUIRE(p.has_value());
  return std::move(p->doc);
}

// Minimised fuzz inputs.
const std::string kPartWithUnknownMember =
    R"({"action":"replace","content":[{"type":"reasoning","%ext":"why","metadata":{"k":1}}]})";
const std::string kPartsInParams = R"({)" HEAD
    R"(,"attempt_id":"0192aaaa-1111-7222-8333-4444555566ff","role":"assistant","content":[{"type":"text"}]})";
const std::string kBracketInModel = R"({)" HEAD R"(,"from":{"model":"ve[ndor/model-b"},"to":{"model":"vendor/model-a"},"source":"user"})";
const std::string kQuoteInProvider = R"({)" HEAD R"(,"to":{"model":"ven'dor/model-b"},"source":"user"})";
const std::string kUpperCaseVariant = R"({)" HEAD R"(,"to":{"model":"vendor/model-a","variant":"Llong"},"source":"user"})";

}  // namespace

TEST_CASE("HOOK-13 HOOK-48 message_end content parts the schema refuses", "[protocol][fuzzregress]") {
  for (const cp::Profile* prof : cp::allProfiles()) {
    INFO(prof->version());
    auto r = prof->validate(cp::method::kMessageEnd, cp::Part::Result, parsed(kPartWithUnknownMember));
    REQUIRE(r.has_value());
    CHECK(r->path.rfind("content[0]", 0) == 0);
    auto p = prof->validate(cp::method::kMessageEnd, cp::Part::Params, parsed(kPartsInParams));
    REQUIRE(p.has_value());
    CHECK(p->path.rfind("content[0]", 0) == 0);
  }
}

TEST_CASE("HOOK-13 HOOK-48 the message_end decoder refuses the same content parts", "[protocol][fuzzregress]") {
  auto r = cp::Profile::decode<cp::MessageEndResult>(parsed(kPartWithUnknownMember));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().path.rfind("content[0]", 0) == 0);
  auto p = cp::Profile::decode<cp::MessageEndParams>(parsed(kPartsInParams));
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().path.rfind("content[0]", 0) == 0);
}

TEST_CASE("HOOK-13 HOOK-48 message_end parts: decoder and schema agree on member shapes", "[protocol][fuzzregress]") {
  struct Case {
    const char* part;
    bool valid;
  };
  const Case cases[] = {
      {R"({"type":"text","text":"hi","metadata":null})", true},
      {R"({"type":"text","text":"hi","metadata":{"k":1}})", true},
      {R"({"type":"text","text":1,"metadata":null})", false},
      {R"({"type":"text","text":"hi","metadata":[]})", false},
      {R"({"type":"reasoning","text":"hi"})", false},
      {R"({"type":"tool_call","id":"c1","provider_item_id":null,"name":"bash.run","input":{},"raw_input":null,"metadata":null})", true},
      {R"({"type":"tool_call","id":"","provider_item_id":null,"name":"bash","input":1,"raw_input":null,"metadata":null})", false},
      {R"({"type":"tool_call","id":"c1","provider_item_id":null,"name":"Bash","input":1,"raw_input":null,"metadata":null})", false},
      {R"({"type":"tool_call","id":"c1","provider_item_id":2,"name":"bash","input":1,"raw_input":null,"metadata":null})", false},
      {R"({"type":"tool_result","tool_call_id":"c1","content":{"type":"text","text":"ok"},"is_error":false,"metadata":null})", true},
      {R"({"type":"tool_result","tool_call_id":"c1","content":{"text":"ok"},"is_error":false,"metadata":null})", false},
      {R"({"type":"tool_result","tool_call_id":"c1","content":{"type":"text"},"is_error":0,"metadata":null})", false},
      {R"({"type":"file","file":{}})", true},
      {R"({"type":"file","file":"x"})", false},
      {R"({"type":"source","id":null,"url":"u","title":null,"media_type":null,"excerpt":null,"metadata":null})", true},
      {R"({"type":"source","id":null,"url":1,"title":null,"media_type":null,"excerpt":null,"metadata":null})", false},
      {R"({"type":"tool_approval","tool_call_id":"c1","message":null,"metadata":null})", true},
      {R"({"type":"custom","kind":"x.y-z_1","data":null,"metadata":null})", true},
      {R"({"type":"custom","kind":"-x","data":null,"metadata":null})", false},
      {R"({"type":"hologram"})", false},
      {R"({"type":1})", false},
      {R"("text")", false},
  };
  for (const Case& c : cases) {
    INFO(c.part);
    const std::string result = std::string(R"({"action":"replace","content":[)") + c.part + "]}";
    for (const cp::Profile* prof : cp::allProfiles()) {
      INFO(prof->version());
      CHECK(prof->validate(cp::method::kMessageEnd, cp::Part::Result, parsed(result)).has_value() == !c.valid);
    }
    CHECK(cp::Profile::decode<cp::MessageEndResult>(parsed(result)).has_value() == c.valid);
    CHECK(cp::checkPersistedPart(parsed(c.part)).has_value() == !c.valid);
  }
}

TEST_CASE("HOOK-50 model references and variants the schema's pattern refuses", "[protocol][fuzzregress]") {
  for (const cp::Profile* prof : cp::allProfiles()) {
    INFO(prof->version());
    auto a = prof->validate(cp::method::kModelBeforeSelect, cp::Part::Params, parsed(kBracketInModel));
    REQUIRE(a.has_value());
    CHECK(a->path == "from.model");
    auto b = prof->validate(cp::method::kModelBeforeSelect, cp::Part::Params, parsed(kQuoteInProvider));
    REQUIRE(b.has_value());
    CHECK(b->path == "to.model");
    auto c = prof->validate(cp::method::kModelBeforeSelect, cp::Part::Params, parsed(kUpperCaseVariant));
    REQUIRE(c.has_value());
    CHECK(c->path == "to.variant");
  }
}

TEST_CASE("HOOK-50 the model_before_select decoder refuses the same model references", "[protocol][fuzzregress]") {
  auto a = cp::Profile::decode<cp::ModelBeforeSelectParams>(parsed(kBracketInModel));
  REQUIRE_FALSE(a.has_value());
  CHECK(a.error().path == "from.model");
  auto b = cp::Profile::decode<cp::ModelBeforeSelectParams>(parsed(kQuoteInProvider));
  REQUIRE_FALSE(b.has_value());
  CHECK(b.error().path == "to.model");
  auto c = cp::Profile::decode<cp::ModelBeforeSelectParams>(parsed(kUpperCaseVariant));
  REQUIRE_FALSE(c.has_value());
  CHECK(c.error().path == "to.variant");
}

TEST_CASE("HOOK-50 model references and variants: decoder and schema agree", "[protocol][fuzzregress]") {
  struct Case {
    const char* to;
    bool valid;
  };
  const Case cases[] = {
      {R"({"model":"vendor/model-a"})", true},
      {R"({"model":"v/m"})", true},
      {R"({"model":"vendor/a//b/"})", true},  // the segment class admits '/'
      {R"({"model":"vendor/mod\u00e9l/\u4e2d"})", true},
      {R"({"model":"vendor/"})", false},
      {R"({"model":"/model"})", false},
      {R"({"model":"Vendor/model"})", false},
      {R"({"model":"_vendor/model"})", false},
      {R"({"model":"vendor/mo del"})", false},
      {R"({"model":"vendor/mo\tdel"})", false},
      {R"({"model":"vendor/mo\u00a0del"})", false},
      {R"({"model":"vendor/mo\u2028del"})", false},
      {R"({"model":"vendor/mo\u0085del"})", false},
      {R"({"model":"vendor/mo]del"})", false},
      {R"({"model":"vendor/model","variant":"long-1.5_x"})", true},
      {R"({"model":"vendor/model","variant":"base"})", false},
      {R"({"model":"vendor/model","variant":"basex"})", true},
      {R"({"model":"vendor/model","variant":"-x"})", false},
      {R"({"model":"vendor/model","variant":""})", false},
  };
  for (const Case& c : cases) {
    INFO(c.to);
    const std::string params = std::string(R"({)" HEAD R"(,"to":)") + c.to + R"(,"source":"user"})";
    for (const cp::Profile* prof : cp::allProfiles()) {
      INFO(prof->version());
      CHECK(prof->validate(cp::method::kModelBeforeSelect, cp::Part::Params, parsed(params)).has_value() == !c.valid);
    }
    CHECK(cp::Profile::decode<cp::ModelBeforeSelectParams>(parsed(params)).has_value() == c.valid);
  }
}

TEST_CASE("HOOK-50 model reference segments: the decoder's character class is PCRE2's, code point by code point", "[protocol][fuzzregress]") {
  // The schema's ModelRef pattern (core/protocol/schemas/common/defs.json), as Profile::validate
  // runs it (PCRE2_UTF|PCRE2_UCP). The decoder tests `[^\s\p{Cc}\[\]]` by hand; compare the two on
  // every code point up to U+30FF (every whitespace and control character lies below U+3001) and a
  // stride through the rest (surrogates cannot occur in parsed text). All 1.1M take ~15 s in Debug.
  auto re = conform::json::schema_detail::Regex::compile(
      "^[a-z0-9][a-z0-9._-]{0,127}/[^\\s\\p{Cc}\\[\\]]+(/[^\\s\\p{Cc}\\[\\]]+)*$");
  REQUIRE(re.has_value());
  json::Document selection;
  selection.Parse(R"({"model":"v/m"})");
  REQUIRE(selection.IsObject());
  std::size_t disagreements = 0;
  for (char32_t c = 0; c <= 0x10FFFF; c += (c < 0x3100 || c >= 0x10FFF0 ? 1 : 61)) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    std::string model = "v/m";
    if (c < 0x80) {
      model += static_cast<char>(c);
    } else if (c < 0x800) {
      model += static_cast<char>(0xC0 | (c >> 6));
      model += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      model += static_cast<char>(0xE0 | (c >> 12));
      model += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      model += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      model += static_cast<char>(0xF0 | (c >> 18));
      model += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      model += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      model += static_cast<char>(0x80 | (c & 0x3F));
    }
    selection["model"].SetString(model.data(), static_cast<rapidjson::SizeType>(model.size()), selection.GetAllocator());
    const bool schema = (*re)->search(model);
    const bool decoder = cp::Profile::decode<cp::ModelSelection>(selection).has_value();
    if (schema != decoder && ++disagreements <= 5) FAIL_CHECK("U+" << std::hex << static_cast<std::uint32_t>(c));
  }
  CHECK(disagreements == 0);
}

TEST_CASE("ResolvedModelRef provider_id: decoder and schema agree on its pattern", "[protocol][fuzzregress]") {
  const std::string ok = R"({"selection":{"model":"vendor/model-a","variant":null},"provider_id":"vendor","model_id":"model-a","adapter_id":"anthropic","selection_fingerprint":")" +
                         std::string(64, 'a') + R"("})";
  CHECK(cp::Profile::decode<cp::ResolvedModelRef>(parsed(ok)).has_value());
  std::string bad = ok;
  bad.replace(bad.find(R"("vendor")"), 8, R"("Vendor")");
  auto r = cp::Profile::decode<cp::ResolvedModelRef>(parsed(bad));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().path == "provider_id");
}
