// mock_plugin/fixture — `conform-plugin --fixture sdk`: the reference plugin plus fixture tools
// that make SDK behaviour observable on the wire (docs/sdk-fixture.md). The SDK rules of RULES.md
// (Binds S, Observe AE) concern what the SDK does for an author's handler — saturation, local grant
// expiry, producer handles, recovery callbacks — so a case can only see them through a plugin whose
// handlers do the thing on demand. Like the MCP "everything" server, the fixture is a contract: any
// SDK that wants its behaviour checked ships a plugin with these tool names; plugins without them get
// NOT-APPLICABLE (`needs tool NAME`), never FAIL.
#pragma once

#include "mock_plugin/behaviour.h"
#include "mock_plugin/sdk.h"

namespace conform::plugin {

// Callback, emit and saturation fixtures (fixture_callbacks.cpp).
void addCallbackFixtures(PluginBuilder& b, const BehaviourOptions& o);
// Producer and recovery fixtures (fixture_producer.cpp).
void addProducerFixtures(PluginBuilder& b, const BehaviourOptions& o);

}  // namespace conform::plugin
