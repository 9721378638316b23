// mock_plugin/fixture_callbacks.cpp — callback, emit and saturation fixture tools (fixture.h).
#include "mock_plugin/fixture.h"

namespace conform::plugin {

void addCallbackFixtures(PluginBuilder& /*b*/, const BehaviourOptions& /*o*/) {}

}  // namespace conform::plugin
