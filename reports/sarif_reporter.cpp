// reports/sarif_reporter — SARIF 2.1.0 for code-scanning UIs. ruleId is the rule ID; FAIL maps to
// level "error", NON-STRICT to "warning" (a finding --strict made a FAIL is "error" with property
// strict_only; the run's properties say strict true/false), harness errors to a toolExecutionNotification. Each
// evidence line becomes a location in the case's trace file (artifact = trace_path or "trace").
#include <ostream>
#include <set>

#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/prettywriter.h>

#include "reports/writers.h"

namespace conform::reports {
namespace {

using W = rapidjson::PrettyWriter<rapidjson::OStreamWrapper>;
void str(W& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }

class SarifReporter : public CollectingReporter {
 public:
  explicit SarifReporter(std::ostream& out) : out_(out) {}
  void render(const RunResult& run) override {
    rapidjson::OStreamWrapper os(out_);
    W w(os);
    w.SetIndent(' ', 2);
    std::set<std::string> used;
    for (const CaseResult& c : run.cases)
      for (const Finding& f : c.findings)
        if (findRule(f.rule_id)) used.insert(f.rule_id);
    w.StartObject();
    w.Key("version"); str(w, "2.1.0");
    w.Key("$schema"); str(w, "https://json.schemastore.org/sarif-2.1.0.json");
    w.Key("runs"); w.StartArray(); w.StartObject();
    w.Key("tool"); w.StartObject(); w.Key("driver"); w.StartObject();
    w.Key("name"); str(w, run.tool);
    w.Key("version"); str(w, run.tool_version);
    w.Key("rules"); w.StartArray();
    for (const std::string& id : used) {
      const RuleInfo* r = findRule(id);
      w.StartObject();
      w.Key("id"); str(w, id);
      w.Key("shortDescription"); w.StartObject(); w.Key("text"); str(w, r->text); w.EndObject();
      w.Key("properties"); w.StartObject();
      w.Key("level"); str(w, toString(r->level));
      w.Key("binds"); str(w, bindsText(r->binds));
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject(); w.EndObject();  // driver, tool
    w.Key("invocations"); w.StartArray(); w.StartObject();
    w.Key("executionSuccessful"); w.Bool(exitCode(run) != 2);
    w.Key("toolExecutionNotifications"); w.StartArray();
    for (const CaseResult& c : run.cases) {
      if (c.error.empty()) continue;
      w.StartObject();
      w.Key("level"); str(w, "error");
      w.Key("message"); w.StartObject(); w.Key("text"); str(w, c.id + ": " + c.error); w.EndObject();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject(); w.EndArray();
    w.Key("results"); w.StartArray();
    for (const CaseResult& c : run.cases) {
      for (const Finding& f : c.findings) {
        if (f.verdict != Verdict::Fail && f.verdict != Verdict::NonStrict) continue;
        w.StartObject();
        w.Key("ruleId"); str(w, f.rule_id);
        w.Key("level"); str(w, f.verdict == Verdict::Fail ? "error" : "warning");
        w.Key("message"); w.StartObject(); w.Key("text");
        str(w, f.message + " Expected: " + f.expected + ". Actual: " + f.actual + ".");
        w.EndObject();
        w.Key("locations"); w.StartArray();
        for (const Evidence& e : f.evidence) {
          if (!e.line) continue;
          w.StartObject(); w.Key("physicalLocation"); w.StartObject();
          w.Key("artifactLocation"); w.StartObject(); w.Key("uri");
          str(w, c.trace_path.empty() ? "trace" : c.trace_path);
          w.EndObject();
          w.Key("region"); w.StartObject(); w.Key("startLine"); w.Uint64(e.line); w.EndObject();
          w.EndObject(); w.EndObject();
        }
        w.EndArray();
        w.Key("properties"); w.StartObject();
        w.Key("case"); str(w, c.id);
        w.Key("verdict"); str(w, toString(f.verdict));
        if (f.strict_only) { w.Key("strict_only"); w.Bool(true); }
        w.EndObject();
        w.EndObject();
      }
    }
    w.EndArray();
    w.Key("properties"); w.StartObject();
    w.Key("strict"); w.Bool(run.strict);
    w.EndObject();
    w.EndObject(); w.EndArray();  // run, runs
    w.EndObject();
    out_ << "\n";
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> makeSarifReporter(std::ostream& out) {
  return std::make_unique<SarifReporter>(out);
}

}  // namespace conform::reports
