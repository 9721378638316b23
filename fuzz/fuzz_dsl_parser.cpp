// fuzz_dsl_parser — harness/dsl scenario parser over arbitrary .scn text.
// Invariants: never crashes; errors are at most kMaxErrors and name a line of the input; a plan
// that parsed can be dumped (--dump-plan) without crashing.
#include <algorithm>

#include "fuzz/fuzz_common.h"
#include "harness/dsl/plan.h"

namespace dsl = conform::dsl;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = conform::fuzz::asText(data, size);
  const auto lines = static_cast<std::uint32_t>(std::count(text.begin(), text.end(), '\n') + 1);
  auto plan = dsl::parse(text, "fuzz.scn");
  if (!plan) {
    FUZZ_CHECK(!plan.error().empty() && plan.error().size() <= dsl::kMaxErrors, "error count");
    for (const auto& e : plan.error()) {
      FUZZ_CHECK(e.loc.line <= lines, e.str());
      (void)e.str();
    }
    return 0;
  }
  (void)dsl::dump(*plan);
  return 0;
}
