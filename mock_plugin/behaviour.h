// mock_plugin/behaviour — what the conform-plugin executable does (docs/reference-plugin.md).
// The built-in behaviour declares every capability, every hook and a few tools and answers
// everything correctly; faults (faults.h) then break exactly one rule on top of it.
#pragma once

#include <string>

#include "mock_plugin/sdk.h"

namespace conform::plugin {

struct BehaviourOptions {
  std::string name = "conform-plugin";  // the configured name it must report (INIT-13)
  std::string version = "0.1.0";
  Profile profile = Profile::V006;
};

// Tools of the built-in behaviour:
//   echo        {text}          single output: the text
//   report      {path}          named output (results, errors); primary resource `path`
//   publish     {name, payload} emits on the bus with the call's own grant, then answers
PluginBuilder builtinBehaviour(const BehaviourOptions& o);

}  // namespace conform::plugin
