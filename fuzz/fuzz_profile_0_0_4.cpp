// fuzz_profile_0_0_4 — Profile 0.0.4: typed decoders against Profile::validate (fuzz/profile_target.h).
#include "fuzz/profile_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return conform::fuzz::runProfileTarget(conform::protocol::profileV004(), data, size);
}
