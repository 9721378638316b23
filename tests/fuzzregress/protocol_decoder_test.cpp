// tests/fuzzregress/protocol_decoder_test.cpp — typed decoder vs profile schema disagreements found
// by fuzz_profile_0_0_6 / fuzz_profile_0_0_4 (both profiles share these shapes). In each case the
// typed decoder (core/protocol/hooks.cpp) accepts a value Profile::validate refuses, so conform's
// reference engine and plugin, which decode with the typed codecs, would take non-conforming
// traffic for conforming and write it back out (the fuzz invariant "toJSON(fromJSON(x)) validates"
// failed). Fixes belong to core/protocol (see fuzz/profile_target.h kKnownFindings).
//
// The schema half of each pair holds today and must keep holding. The decoder half is tagged
// [!shouldfail]: it passes while the bug exists and fails once it is fixed — then remove the tag
// and the matching kKnownFindings entry.
#include <catch2/catch.hpp>

#include <string>

#include "core/json/json.h"
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

TEST_CASE("HOOK-13 HOOK-48 the message_end decoder refuses the same content parts", "[protocol][fuzzregress][!shouldfail]") {
  // Fix: decodePart() in core/protocol/hooks.cpp should call checkPersistedPart() and report its
  // message at the part's path.
  CHECK_FALSE(cp::Profile::decode<cp::MessageEndResult>(parsed(kPartWithUnknownMember)).has_value());
  CHECK_FALSE(cp::Profile::decode<cp::MessageEndParams>(parsed(kPartsInParams)).has_value());
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

TEST_CASE("HOOK-50 the model_before_select decoder refuses the same model references", "[protocol][fuzzregress][!shouldfail]") {
  // Fix: checkSelection() in core/protocol/hooks.cpp should apply the schema's model reference
  // pattern (provider `[a-z0-9][a-z0-9._-]{0,127}`, then `/` segments without whitespace, control
  // characters or brackets), not only the length and a '/', and the variant pattern
  // `(?!base$)[a-z0-9][a-z0-9._-]{0,63}`, not only 1–64 characters other than "base".
  CHECK_FALSE(cp::Profile::decode<cp::ModelBeforeSelectParams>(parsed(kBracketInModel)).has_value());
  CHECK_FALSE(cp::Profile::decode<cp::ModelBeforeSelectParams>(parsed(kQuoteInProvider)).has_value());
  CHECK_FALSE(cp::Profile::decode<cp::ModelBeforeSelectParams>(parsed(kUpperCaseVariant)).has_value());
}
