// mock_plugin/fixture_producer.cpp — producer and recovery fixture tools (fixture.h).
#include "mock_plugin/fixture.h"

namespace conform::plugin {

const std::vector<FixtureFault>& producerFixtureFaults() {
  static const std::vector<FixtureFault> faults;
  return faults;
}

void addProducerFixtures(PluginBuilder& /*b*/, const BehaviourOptions& /*o*/, std::string_view /*fault*/) {}

}  // namespace conform::plugin
