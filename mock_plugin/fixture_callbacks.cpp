// mock_plugin/fixture_callbacks.cpp — callback, emit and saturation fixture tools (fixture.h).
#include "mock_plugin/fixture.h"

namespace conform::plugin {

const std::vector<FixtureFault>& callbackFixtureFaults() {
  static const std::vector<FixtureFault> faults;
  return faults;
}

void addCallbackFixtures(PluginBuilder& /*b*/, const BehaviourOptions& /*o*/, std::string_view /*fault*/) {}

}  // namespace conform::plugin
