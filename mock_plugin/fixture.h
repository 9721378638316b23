// mock_plugin/fixture — `conform-plugin --fixture sdk`: the reference plugin plus fixture tools
// that make SDK behaviour observable on the wire (docs/sdk-fixture.md). The SDK rules of RULES.md
// (Binds S, Observe AE) concern what the SDK does for an author's handler — saturation, local grant
// expiry, producer handles, recovery callbacks — so a case can only see them through a plugin whose
// handlers do the thing on demand. Like the MCP "everything" server, the fixture is a contract: any
// SDK that wants its behaviour checked ships a plugin with these tool names; plugins without them get
// NOT-APPLICABLE (`needs tool NAME`), never FAIL.
//
// Fixture faults: each breaks one SDK rule on top of the fixture, so the case for that rule is
// proven to FAIL (`conform-plugin --fixture sdk --fault NAME`; `--list-faults` lists them after the
// gallery's own). A fixture fault acts through the builder it is given (an SDK knob or a fixture
// tool that misbehaves), never through the gallery's installFault.
#pragma once

#include <string_view>
#include <vector>

#include "mock_plugin/behaviour.h"
#include "mock_plugin/sdk.h"

namespace conform::plugin {

struct FixtureFault {
  const char* name;
  const char* rule;         // the rule its case FAILs on
  const char* description;  // one line for --list-faults
};

// Callback, emit and saturation fixtures (fixture_callbacks.cpp). `fault` is "" or one of
// callbackFixtureFaults()'s names.
const std::vector<FixtureFault>& callbackFixtureFaults();
void addCallbackFixtures(PluginBuilder& b, const BehaviourOptions& o, std::string_view fault);
// Producer and recovery fixtures (fixture_producer.cpp); `fault` as above.
const std::vector<FixtureFault>& producerFixtureFaults();
void addProducerFixtures(PluginBuilder& b, const BehaviourOptions& o, std::string_view fault);

}  // namespace conform::plugin
