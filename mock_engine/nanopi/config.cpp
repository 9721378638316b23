// mock_engine/nanopi/config — [[extensions]] entry decoding and the events grant (config.h).
#include "mock_engine/nanopi/config.h"

#include <algorithm>

#include <fmt/format.h>

#include "mock_engine/nanopi/events.h"

namespace conform::nanopi {

const char* toString(Diagnostic::Level l) {
  switch (l) {
    case Diagnostic::Level::Info: return "info";
    case Diagnostic::Level::Warn: return "warning";
    case Diagnostic::Level::Error: return "error";
  }
  return "?";
}

const std::vector<std::string>& extensionKeys() {
  static const std::vector<std::string> k = {"path",     "events",        "allow_network", "url_allowlist",
                                             "allow_fs", "allow_store",   "allow_context", "allow_tools",
                                             "allow_send_message"};
  return k;
}

namespace {

// Levenshtein distance, small strings only (config keys).
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

bool fromJSON(const json::Value& v, ExtensionConfig& c, json::Path p) {
  json::ObjectMapper o(v, p);
  return o && o.mapDefault("path", c.path) && o.mapOptional("events", c.events) &&
         o.mapDefault("allow_network", c.allow_network) && o.mapDefault("url_allowlist", c.url_allowlist) &&
         o.mapDefault("allow_fs", c.allow_fs) && o.mapDefault("allow_store", c.allow_store) &&
         o.mapDefault("allow_context", c.allow_context) && o.mapDefault("allow_tools", c.allow_tools) &&
         o.mapDefault("allow_send_message", c.allow_send_message);
}

Expected<ExtensionConfig, std::string> parseExtensionConfig(const json::Value& entry) {
  if (!entry.IsObject()) return unexpected(fmt::format("[[extensions]] entry: expected a table, found {}", json::typeName(entry)));
  for (auto& m : entry.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    const auto& keys = extensionKeys();
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    std::string best;
    std::size_t bd = 3;  // a suggestion only for a near miss (at most two edits)
    for (const auto& k : keys)
      if (auto d = distance(key, k); d < bd) bd = d, best = k;
    std::string list;
    for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
    return unexpected(fmt::format("[[extensions]]: unknown key `{}`{} — a misspelled grant key is a configuration error "
                                  "(NP-15); valid keys: {}",
                                  key, best.empty() ? "" : fmt::format(" (did you mean `{}`?)", best), list));
  }
  auto c = json::decode<ExtensionConfig>(entry, "extensions");
  if (!c) return unexpected("[[extensions]]: " + c.error());
  return c;
}

EventGrants parseEventGrants(const std::vector<std::string>& events) {
  EventGrants g;
  for (const std::string& e : events) {
    if (isEventName(e)) {
      if (std::find(g.deliverable.begin(), g.deliverable.end(), e) == g.deliverable.end()) g.deliverable.push_back(e);
    } else if (isNeverDeliverable(e)) {
      g.diagnostics.push_back({Diagnostic::Level::Warn, "NP-14",
                               fmt::format("event \"{}\" fires per streaming delta and is never delivered to plugins, "
                                           "whatever the grant",
                                           e)});
    } else if (auto r = retiredRewrite(e)) {
      g.diagnostics.push_back({Diagnostic::Level::Warn, "NP-13",
                               fmt::format("unknown event \"{}\" — did you mean \"{}\"? (see docs/v0.12-events.md §2.1)", e, *r)});
    } else {
      g.diagnostics.push_back({Diagnostic::Level::Warn, "NP-12",
                               fmt::format("unknown event \"{}\" in `events` — valid names: {}", e, validNamesList())});
    }
  }
  return g;
}

std::string pluginStem(const std::string& path) {
  std::string s = path;
  if (auto slash = s.find_last_of('/'); slash != std::string::npos) s = s.substr(slash + 1);
  if (auto dot = s.rfind(".wasm"); dot != std::string::npos && dot + 5 == s.size()) s.resize(dot);
  return s.empty() ? "plugin" : s;
}

}  // namespace conform::nanopi
