// mock_engine/nanopi/config — one `[[extensions]]` entry of a nanopi configuration, and the
// parsing of its `events` grant (nanopi's `parse_event_grants`).
//
// conform writes the entry as a JSON object (the TOML table's keys and values, one to one), so the
// DSL's `drive load {…}` and tests can give it inline. NP-15: a misspelled grant KEY is a hard
// configuration error; an unknown event NAME inside `events` is only a warning (NP-12), because the
// whole section must stay skippable in builds without wasm support.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::nanopi {

struct Diagnostic {
  enum class Level { Info, Warn, Error };
  Level level = Level::Info;
  std::string rule;  // the NP rule the diagnostic shows ("NP-09")
  std::string text;
};
const char* toString(Diagnostic::Level);

struct ExtensionConfig {
  std::string path;                          // the component file (also the plugin name's stem)
  std::optional<std::vector<std::string>> events;  // NP-10: absent or empty grants nothing
  bool allow_network = false;
  std::vector<std::string> url_allowlist;    // deny by default (NP §Two lists must agree)
  bool allow_fs = false;
  bool allow_store = false;
  bool allow_context = false;
  std::vector<std::string> allow_tools;      // per tool; deny by default (NP-39)
  bool allow_send_message = false;           // NP-39
};

// The keys an [[extensions]] entry accepts (NP-15 names them in the error).
const std::vector<std::string>& extensionKeys();

// Decodes one entry. A key that is not one of extensionKeys() is a hard error naming it, with a
// "did you mean" when one key is close (`evnets` -> `events`), citing NP-15. Wrong value types are
// errors naming the path.
Expected<ExtensionConfig, std::string> parseExtensionConfig(const json::Value& entry);

// parse_event_grants: the granted names that can be delivered, in the config's order, and the
// startup diagnostics for the rest: unknown names (NP-12, listing the eleven), retired names (NP-13,
// "did you mean"), message_update / tool_execution_update (NP-14, their own message).
struct EventGrants {
  std::vector<std::string> deliverable;
  std::vector<Diagnostic> diagnostics;
};
EventGrants parseEventGrants(const std::vector<std::string>& events);

// The plugin name nanopi uses: the file stem of the component path.
std::string pluginStem(const std::string& path);

}  // namespace conform::nanopi
