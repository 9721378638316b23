// mock_plugin/fixture_producer.cpp — producer and recovery fixture tools (fixture.h).
#include "mock_plugin/fixture.h"

namespace conform::plugin {

void addProducerFixtures(PluginBuilder& /*b*/, const BehaviourOptions& /*o*/) {}

}  // namespace conform::plugin
