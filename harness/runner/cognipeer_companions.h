// harness/runner/cognipeer_companions — companion plugins for cognipeer-0.10 cases: plugins the case
// registers beside the module under test, answered natively in C++ with fixed replies, so a case can
// put a known plugin before or after the one under test (chain order, deny precedence, slot
// conflicts) without a second JS module. `drive load {"companions": [ … ]}` (docs/cognipeer.md).
#pragma once

#include <string>
#include <vector>

#include "core/json/json.h"
#include "core/util/expected.h"
#include "mock_engine/cognipeer/guest_client.h"
#include "mock_engine/cognipeer/host.h"

namespace conform::runner {

// Companions' plugin indices start here, far from any module's declaration indices.
inline constexpr int kCompanionBase = 1000;
// The rule a plugin writing to the runner's stdout is reported against (docs/cognipeer.md: an
// in-process plugin has no stdout of its own; output meant for the host goes through ctx.logger).
inline constexpr const char* kStdoutRule = "CG-01";

struct Companion {
  cognipeer::PluginShape shape;
  json::Document replies{rapidjson::kObjectType};  // hook name -> returned value; {"$throw": "msg"} throws
  cognipeer::PluginShape shapeCopy() const { return shape.clone(); }
};

// [{name, priority?, failureMode?, hooks: {hook: reply}, provides?: [slot…], tools?: […]}]
Expected<std::vector<Companion>, std::string> parseCompanions(const json::Value& list);

// The module's plugins go to the runner; companions answer from their replies.
class CompanionGuest final : public cognipeer::Guest {
 public:
  explicit CompanionGuest(cognipeer::GuestClient& c) : client_(c) {}
  std::vector<Companion> companions;
  std::vector<cognipeer::InvokeResult> invokeAll(std::vector<cognipeer::InvokeRequest> batch) override;

 private:
  cognipeer::GuestClient& client_;
};

}  // namespace conform::runner
