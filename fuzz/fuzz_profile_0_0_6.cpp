// fuzz_profile_0_0_6 — Profile 0.0.6: typed decoders against Profile::validate (fuzz/profile_target.h).
#include "fuzz/profile_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return conform::fuzz::runProfileTarget(conform::protocol::profileV006(), data, size);
}
