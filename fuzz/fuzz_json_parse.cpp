// fuzz_json_parse — core/json parse() on untrusted text, and the writers' round trips.
// Invariants:
//  * parse() never crashes, and an error offset lies inside the input (or at its end);
//  * reject_duplicates only adds the Duplicate error: a text parse() accepts without duplicates
//    it still accepts, one with duplicates it refuses as Duplicate, one parse() refuses it refuses;
//  * compact() and canonical() write text that parse() accepts again, to the same value (members
//    in written order, duplicates included, numbers bit for bit);
//  * canonical() text is a fixed point of parse + canonical;
//  * equal() holds for a copy (both ways) and for the compact and canonical round trips, and a copy
//    writes the same canonical text — duplicates included (equal() reads them last-wins).
#include "core/json/json.h"
#include "fuzz/fuzz_common.h"

namespace json = conform::json;
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

  // The canonical text is a fixed point: a second write gives the same text, the same value.
  const std::string canon2 = json::canonical(re_canon->doc);
  auto re_canon2 = json::parse(canon2);
  FUZZ_CHECK(re_canon2.has_value(), canon2);
  FUZZ_CHECK(canon2 == canon, "canonical() is not stable under re-parse: " + canon + " -> " + canon2);
  FUZZ_CHECK(sameValue(re_canon->doc, re_canon2->doc), canon2);

  // equal() reads a repeated member name last-wins, as decoders do, and canonical() keeps the
  // members of one name in document order: the checks hold with duplicates too.
  json::Document copy = json::copy(doc);
  FUZZ_CHECK(json::equal(doc, copy), "equal() is not reflexive: " + compact);
  FUZZ_CHECK(json::equal(copy, doc), "equal() is not symmetric: " + compact);
  FUZZ_CHECK(json::canonical(copy) == canon, "canonical() differs for a copy: " + compact);
  FUZZ_CHECK(json::equal(doc, re_compact->doc), "equal() refuses a compact round trip: " + compact);
  FUZZ_CHECK(json::equal(doc, re_canon->doc), "equal() refuses a canonical round trip: " + canon);
  return 0;
}
