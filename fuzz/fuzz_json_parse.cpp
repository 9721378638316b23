// fuzz_json_parse — core/json parse() on untrusted text, and the writers' round trips.
// Invariants:
//  * parse() never crashes, and an error offset lies inside the input (or at its end);
//  * reject_duplicates only adds the Duplicate error: a text parse() accepts without duplicates
//    it still accepts, one with duplicates it refuses as Duplicate, one parse() refuses it refuses;
//  * compact() and canonical() write text that parse() accepts again, to the same value (members
//    in written order, duplicates included, numbers within RapidJSON's few-ulp drift);
//  * for a duplicate-free value: equal() holds for its copy and for its canonical round trip once
//    the text has settled, and a copy writes the same canonical text.
#include "core/json/json.h"
#include "fuzz/fuzz_common.h"

namespace json = conform::json;
using conform::fuzz::hasInvalidUtf8;
using conform::fuzz::Members;
using conform::fuzz::sameValue;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = conform::fuzz::asText(data, size);
  auto parsed = json::parse(text);
  json::ParseOptions strict;
  strict.reject_duplicates = true;
  auto strict_parsed = json::parse(text, strict);

  if (!parsed) {
    FUZZ_CHECK(parsed.error().offset <= size, parsed.error().message);
    FUZZ_CHECK(!strict_parsed, "reject_duplicates accepted what the default parse refused");
    return 0;
  }
  const json::Document& doc = parsed->doc;
  if (parsed->duplicates.empty()) {
    FUZZ_CHECK(strict_parsed.has_value(), strict_parsed.error().message);
  } else {
    FUZZ_CHECK(!strict_parsed && strict_parsed.error().kind == json::ParseErrorKind::Duplicate,
               "duplicates reported but reject_duplicates did not refuse them");
  }

  if (hasInvalidUtf8(doc) && !conform::fuzz::strictMode()) return 0;  // known finding, see fuzz_common.h

  const std::string compact = json::compact(doc);
  auto re_compact = json::parse(compact);
  FUZZ_CHECK(re_compact.has_value(), "compact() wrote text parse() refuses: " + compact);
  FUZZ_CHECK(sameValue(doc, re_compact->doc), "compact() round trip changed the value: " + compact);
  FUZZ_CHECK(re_compact->duplicates.size() == parsed->duplicates.size(), compact);

  const std::string canon = json::canonical(doc);
  auto re_canon = json::parse(canon);
  FUZZ_CHECK(re_canon.has_value(), "canonical() wrote text parse() refuses: " + canon);
  FUZZ_CHECK(sameValue(doc, re_canon->doc, Members::SortLeft),
             "canonical() round trip changed the value: " + canon);

  // A second write + re-read stays within the drift too (it must not accumulate).
  const std::string canon2 = json::canonical(re_canon->doc);
  auto re_canon2 = json::parse(canon2);
  FUZZ_CHECK(re_canon2.has_value(), canon2);
  FUZZ_CHECK(sameValue(re_canon->doc, re_canon2->doc), canon2);

  if (parsed->duplicates.empty()) {
    // equal() is only defined member-by-name; with repeated names it cannot be (see sameValue).
    json::Document copy = json::copy(doc);
    FUZZ_CHECK(json::equal(doc, copy), "equal() is not reflexive: " + compact);
    FUZZ_CHECK(json::canonical(copy) == canon, "canonical() differs for a copy: " + compact);
    // Identical text twice means no double moved (the writer's shortest form reads back exactly
    // when the reader is exact), so the values must be equal() without any tolerance.
    if (canon == canon2)
      FUZZ_CHECK(json::equal(doc, re_canon->doc), "equal() refuses a settled canonical round trip: " + canon);
  }
  return 0;
}
