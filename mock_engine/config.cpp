// mock_engine/config — parsing and validating the reference engine configuration (see config.h).
#include "mock_engine/config.h"

#include <fstream>
#include <set>
#include <sstream>

#include "core/json/json.h"

namespace conform::engine {

const char* toString(Decision d) {
  switch (d) {
    case Decision::Allow: return "allow";
    case Decision::Ask: return "ask";
    case Decision::Deny: return "deny";
  }
  return "deny";
}

std::vector<std::string> defaultBuiltinTools() {
  // TOOL-26: the simulated runtime's own tools. Any plugin declaring one of these fails.
  return {"bash", "read", "write", "edit", "glob", "grep", "list", "fetch", "task", "todo_write"};
}

bool globMatch(std::string_view p, std::string_view s) {
  // Iterative wildcard match with single backtrack point: O(|p|·|s|) worst case, no recursion.
  std::size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi, ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool controlFree(std::string_view s, std::size_t* chars) {
  std::size_t n = 0;
  bool ok = true;
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
    if (c < 0x20 || c == 0x7F) ok = false;
    // U+0080–U+009F encode as C2 80 – C2 9F.
    if (c == 0xC2 && i + 1 < s.size()) {
      auto c2 = static_cast<unsigned char>(s[i + 1]);
      if (c2 >= 0x80 && c2 <= 0x9F) ok = false;
    }
    i += len;
    ++n;
  }
  if (chars) *chars = n;
  return ok;
}

bool isSnakeCase(std::string_view s) {
  if (s.empty() || s[0] < 'a' || s[0] > 'z') return false;
  bool prev_us = false;
  for (char c : s) {
    if (c == '_') {
      if (prev_us) return false;
      prev_us = true;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      prev_us = false;
    } else {
      return false;
    }
  }
  return !prev_us;
}

namespace {

using json::ObjectMapper;
using json::Path;
using json::Value;

bool decodePlugin(const Value& v, PluginConfig& c, Path p) {
  ObjectMapper o(v, p);
  if (!o) return false;
  std::optional<std::string> cwd;
  if (!(o.map("command", c.command) && o.mapDefault("args", c.args) && o.mapDefault("env", c.env) &&
        o.mapOptional("cwd", cwd) && o.mapDefault("enabled", c.enabled) &&
        o.mapDefault("interception_timeout_ms", c.interception_timeout_ms) &&
        o.mapDefault("startup_timeout_ms", c.startup_timeout_ms) &&
        o.mapDefault("shutdown_grace_ms", c.shutdown_grace_ms) &&
        o.mapDefault("tool_timeout_ms", c.tool_timeout_ms) &&
        o.mapDefault("producer_messaging", c.producer_messaging) && o.closed()))
    return false;
  c.cwd = cwd;
  // LIFE-07: command non-empty, cwd non-empty when set, every timeout > 0.
  if (c.command.empty()) return p.field("command").report("must be a non-empty string");
  if (c.cwd && c.cwd->empty()) return p.field("cwd").report("must be non-empty when set");
  if (c.interception_timeout_ms == 0) return p.field("interception_timeout_ms").report("must be > 0");
  if (c.startup_timeout_ms == 0) return p.field("startup_timeout_ms").report("must be > 0");
  if (c.shutdown_grace_ms == 0) return p.field("shutdown_grace_ms").report("must be > 0");
  if (c.tool_timeout_ms == 0) return p.field("tool_timeout_ms").report("must be > 0");
  return true;
}

// Decodes a `plugins` object in member order (the order is the registration order, §1.6).
bool decodePluginList(const Value& v, std::vector<PluginConfig>& out, std::string_view source,
                      Path p) {
  if (!v.IsObject()) return p.report(std::string("expected object, found ") + json::typeName(v));
  for (auto& m : v.GetObject()) {
    std::string name(m.name.GetString(), m.name.GetStringLength());
    Path mp = p.field(name);
    std::size_t chars = 0;
    bool cf = controlFree(name, &chars);
    // LIFE-07: configured name 1–128 characters, control-free.
    if (chars == 0 || chars > kMaxPluginNameChars || !cf)
      return mp.report("plugin name must be 1-128 characters without control characters");
    PluginConfig c;
    c.name = name;
    c.source = std::string(source);
    if (!decodePlugin(m.value, c, mp)) return false;
    out.push_back(std::move(c));
  }
  return true;
}

bool decodeDecision(const Value& v, Decision& d, Path p) {
  std::string s;
  if (!json::fromJSON(v, s, p)) return false;
  if (s == "allow") d = Decision::Allow;
  else if (s == "ask") d = Decision::Ask;
  else if (s == "deny") d = Decision::Deny;
  else return p.report("expected \"allow\", \"ask\" or \"deny\", found \"" + s + "\"");
  return true;
}

bool decodePermissions(const Value& v, std::vector<PermissionRule>& out, Path p) {
  if (!v.IsObject()) return p.report(std::string("expected object, found ") + json::typeName(v));
  for (auto& action : v.GetObject()) {
    std::string a(action.name.GetString(), action.name.GetStringLength());
    Path ap = p.field(a);
    if (!action.value.IsObject())
      return ap.report(std::string("expected object of pattern -> decision, found ") +
                       json::typeName(action.value));
    for (auto& rule : action.value.GetObject()) {
      PermissionRule r;
      r.action = a;
      r.pattern.assign(rule.name.GetString(), rule.name.GetStringLength());
      if (!decodeDecision(rule.value, r.decision, ap.field(r.pattern))) return false;
      out.push_back(std::move(r));
    }
  }
  return true;
}

}  // namespace

Expected<EngineConfig, std::string> parseConfig(std::string_view text, std::string_view source) {
  auto parsed = json::parse(text, json::ParseOptions{json::kDefaultMaxDepth, true});
  if (!parsed)
    return unexpected(std::string(source) + ": not valid JSON: " + parsed.error().message);
  const Value& root_v = parsed->doc;
  EngineConfig cfg;
  cfg.builtin_tools = defaultBuiltinTools();
  Path::Root root;
  Path p(root);
  ObjectMapper o(root_v, p);
  std::optional<std::string> version, engine_version;
  const Value* user = nullptr;
  const Value* workspace = nullptr;
  const Value* perms = nullptr;
  std::uint64_t retained = 0;
  bool ok = o && o.mapOptional("protocol_version", version) &&
            o.mapOptional("engine_version", engine_version) &&
            o.mapDefault("approve_asks", cfg.approve_asks) &&
            o.mapDefault("builtin_tools", cfg.builtin_tools) &&
            o.mapDefault("mcp_tools", cfg.mcp_tools) &&
            o.mapDefault("producer_handler", cfg.producer_handler) &&
            o.mapDefault("max_retained_events", retained) &&
            o.mapOptional("journal_dir", cfg.journal_dir);  // issue 5: durability
  if (ok) {
    user = o.get("plugins");
    workspace = o.get("workspace_plugins");
    perms = o.get("permissions");
    ok = o.closed();
  }
  if (ok && version) {
    if (*version != "0.0.6" && *version != "0.0.4")
      ok = p.field("protocol_version").report("expected \"0.0.6\" or \"0.0.4\"");
    else cfg.protocol_version = *version;
  }
  if (ok && engine_version) cfg.engine_version = *engine_version;
  cfg.max_retained_events = static_cast<std::size_t>(retained);
  std::vector<PluginConfig> user_list, ws_list;
  if (ok && user) ok = decodePluginList(*user, user_list, "user", p.field("plugins"));
  if (ok && workspace)
    ok = decodePluginList(*workspace, ws_list, "workspace", p.field("workspace_plugins"));
  if (ok && perms) ok = decodePermissions(*perms, cfg.permissions, p.field("permissions"));
  if (!ok) return unexpected(std::string(source) + ": " + root.error().value_or("invalid"));
  // PROTOCOL §1.6: workspace replaces same-name user entries in place; new ones are appended.
  cfg.plugins = std::move(user_list);
  for (auto& w : ws_list) {
    bool replaced = false;
    for (auto& u : cfg.plugins)
      if (u.name == w.name) { u = w; replaced = true; break; }
    if (!replaced) cfg.plugins.push_back(std::move(w));
  }
  return cfg;
}

Expected<EngineConfig, std::string> loadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unexpected(path + ": cannot open configuration file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parseConfig(ss.str(), path);
}

}  // namespace conform::engine
