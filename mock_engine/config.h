// mock_engine/config — the reference engine's configuration file (JSON; documented in
// docs/reference-engine.md). It mirrors the engine configuration of PROTOCOL §1.6 (plugins.<name>
// entries with command, args, env, cwd, enabled, the four timeouts and producer_messaging) plus the
// agent policy that decides plugin tool visibility and permission (PROTOCOL §8.5), the reserved
// built-in tool names (§8.6) and MCP claims (§8.6, for TOOL-27).
//
// User and workspace plugin lists are merged as §1.6 says: workspace entries replace same-name user
// entries in place, new workspace entries are appended after the user entries in workspace order;
// the result is the registration order (hooks, eager start).
//
// A bad configuration is an error value that names the key: `plugins.echo.tool_timeout_ms: must
// be > 0` (LIFE-07). Nothing here throws.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/expected.h"

namespace conform::engine {

// PROTOCOL §1.6 defaults (LIFE-07): interception 2000 ms, startup 10000 ms, grace 3000 ms,
// tool 30000 ms. Every value must be > 0.
inline constexpr std::uint64_t kDefaultInterceptionTimeoutMs = 2000;
inline constexpr std::uint64_t kDefaultStartupTimeoutMs = 10000;
inline constexpr std::uint64_t kDefaultShutdownGraceMs = 3000;
inline constexpr std::uint64_t kDefaultToolTimeoutMs = 30000;
// LIFE-07 / PROTOCOL §1.6: the configured name is 1–128 characters, control-free.
inline constexpr std::size_t kMaxPluginNameChars = 128;

struct PluginConfig {
  std::string name;  // the configured name (key of plugins.<name>)
  std::string command;
  std::vector<std::string> args;
  // LIFE-06: the child's environment is exactly this map (nothing inherited, not even PATH).
  std::map<std::string, std::string> env;
  std::optional<std::string> cwd;
  bool enabled = true;
  std::uint64_t interception_timeout_ms = kDefaultInterceptionTimeoutMs;
  std::uint64_t startup_timeout_ms = kDefaultStartupTimeoutMs;
  std::uint64_t shutdown_grace_ms = kDefaultShutdownGraceMs;
  std::uint64_t tool_timeout_ms = kDefaultToolTimeoutMs;
  bool producer_messaging = false;  // LIFE-08 (0.0.6)
  std::string source = "user";      // "user" or "workspace": where the entry came from
};

enum class Decision { Allow, Ask, Deny };
const char* toString(Decision);

// One permission rule for an agent action. Only the action `plugin` is used by this engine
// (PROTOCOL §8.5). `pattern` is matched against the permission resource string
// (`permission_name` or `permission_name + " " + resource`, TOOL-23) with `*` matching any run of
// characters (including none) and `?` one character.
struct PermissionRule {
  std::string action = "plugin";
  std::string pattern;
  Decision decision = Decision::Deny;
};

// Glob match used for permission rules (`*`, `?`); linear-time, no regex on untrusted text.
bool globMatch(std::string_view pattern, std::string_view subject);

struct EngineConfig {
  // Protocol profile: "0.0.6" (default) or "0.0.4" (DELTA-0.0.4.md).
  std::string protocol_version = "0.0.6";
  std::string engine_version = "0.1.0-conform";
  // Plugins in registration order (user then workspace, merged per §1.6).
  std::vector<PluginConfig> plugins;
  // Agent policy rules, in order; the last matching rule decides (docs/reference-engine.md).
  std::vector<PermissionRule> permissions;
  // How `ask` decisions are answered by the simulated user: true = approve.
  bool approve_asks = true;
  // TOOL-26: names reserved by built-in tools.
  std::vector<std::string> builtin_tools;
  // TOOL-27: names claimed by MCP servers before plugins start.
  std::vector<std::string> mcp_tools;
  // Whether the runtime installs the producer handler (INIT-05). Issue 5 implements producers;
  // until then the engine advertises producer_messaging only when this is true AND the plugin
  // entry opts in.
  bool producer_handler = false;
  // Simulated runtime: keep at most this many events per session in memory (0 = unbounded). The
  // benchmarks push millions of events; the durable journal (issue 5) is the real store.
  std::size_t max_retained_events = 0;
  // Issue 5: the journal directory (mock_engine/journal.h). When set, accepted producer messages,
  // their states, idempotency records and sessions survive an engine restart; unset = in memory.
  std::optional<std::string> journal_dir;
};

// The built-in tool names reserved when the config does not list its own.
std::vector<std::string> defaultBuiltinTools();

// Parses a configuration document. `source` names the file in error messages. On error the text
// is "<source>: <json path>: <problem>".
Expected<EngineConfig, std::string> parseConfig(std::string_view text, std::string_view source);
// Reads and parses a file.
Expected<EngineConfig, std::string> loadConfig(const std::string& path);

// Control-free per PROTOCOL §0.3: no code point of category Cc (U+0000–U+001F, U+007F–U+009F).
// `s` must be valid UTF-8. Also returns the number of characters (scalar values) in *chars.
bool controlFree(std::string_view s, std::size_t* chars = nullptr);
// snake_case per PROTOCOL §0.3: ^[a-z][a-z0-9]*(_[a-z0-9]+)*$
bool isSnakeCase(std::string_view s);

}  // namespace conform::engine
