// harness/rules/nanopi_monitor — see nanopi_monitor.h.
#include "harness/rules/nanopi_monitor.h"

#include <fmt/format.h>

#include "core/trace/trace.h"
#include "reports/rule_catalog.h"

namespace conform::rules {

namespace {
// NP-26 / NANOPI-HOST.md §2: EVENT_EPOCH_BUDGET_TICKS = 2, EPOCH_BUDGET_TICKS = 30.
constexpr std::int64_t kEventBudgetMs = 2000;
constexpr std::int64_t kCallBudgetMs = 30000;
}  // namespace

std::vector<reports::Finding> judgeNanopiWire(const std::string& trace_text) {
  std::vector<reports::Finding> out;
  auto reader = trace::TraceReader::fromString(trace_text);
  int list_events = 0;
  bool probe_next = false;
  while (true) {
    auto ev = reader->next();
    if (!ev || !*ev) break;
    const trace::TraceEvent& e = **ev;
    if (e.kind == trace::Kind::Note && e.text.find("harness probe") != std::string_view::npos) probe_next = true;
    if (e.kind != trace::Kind::Frame || e.dir != trace::Dir::EngineToPlugin || !e.frame) continue;
    if (json::stringMember(*e.frame, "method").value_or("") != "call") continue;
    const json::Value* params = json::member(*e.frame, "params");
    if (!params) continue;
    std::string exp(json::stringMember(*params, "export").value_or(""));
    const json::Value* budget = json::member(*params, "budget_ms");
    std::int64_t want = exp == "handle-event" ? kEventBudgetMs : kCallBudgetMs;
    bool probe = probe_next;
    probe_next = false;
    if (exp == "list-events" && !probe && ++list_events == 2)
      out.push_back(reports::makeFinding("NP-07", reports::kBindsEngine, "the host called list-events a second time",
                                         "list-events called once, at load", "a second call", {{e.line, "call list-events"}}));
    if (!budget || !budget->IsInt64() || budget->GetInt64() != want)
      out.push_back(reports::makeFinding("NP-26", reports::kBindsEngine,
                                         fmt::format("the host called {} with the wrong budget", exp),
                                         fmt::format("budget_ms {}", want), budget ? json::compact(*budget) : "(absent)",
                                         {{e.line, "call " + exp}}));
  }
  return out;
}

}  // namespace conform::rules
