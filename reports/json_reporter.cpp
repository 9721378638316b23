// reports/json_reporter — the whole run as one JSON document with a STABLE key order (documented
// below; tools diff these files), written with RapidJSON's writer (escaping is its job, not ours).
//
// Shape: {"tool","tool_version","command","target","profile","strict","started_at","duration_ms",
//         "exit_code","summary":{verdict→count},"cases":[{"id","title","verdict","rules",
//         "duration_ms","error"?,"skip_reason"?,"trace"?,"findings":[{"rule_id","level","kind",
//         "verdict","strict_only"?,"binds","requirement","message","expected",
//         "actual","evidence":[{"line","text"}]}]}],"coverage":{rule→verdict} (covered rules only)}
#include <ostream>

#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/prettywriter.h>

#include "reports/writers.h"

namespace conform::reports {
namespace {

using W = rapidjson::PrettyWriter<rapidjson::OStreamWrapper>;

void kv(W& w, const char* k, std::string_view v) {
  w.Key(k);
  w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
}

class JsonReporter : public CollectingReporter {
 public:
  explicit JsonReporter(std::ostream& out) : out_(out) {}
  void render(const RunResult& run) override {
    rapidjson::OStreamWrapper os(out_);
    W w(os);
    w.SetIndent(' ', 2);
    w.StartObject();
    kv(w, "tool", run.tool);
    kv(w, "tool_version", run.tool_version);
    kv(w, "command", run.command);
    kv(w, "target", run.target);
    kv(w, "profile", run.profile);
    w.Key("strict");  // --strict: Lvl I/C rules binding (docs/check.md)
    w.Bool(run.strict);
    kv(w, "started_at", run.started_at);
    w.Key("duration_ms");
    w.Double(run.duration_ms);
    w.Key("exit_code");
    w.Int(exitCode(run));
    Counts n = countCases(run);
    w.Key("summary");
    w.StartObject();
    w.Key("PASS"); w.Uint64(n.pass);
    w.Key("FAIL"); w.Uint64(n.fail);
    w.Key("NON-STRICT"); w.Uint64(n.non_strict);
    w.Key("NOT-APPLICABLE"); w.Uint64(n.not_applicable);
    w.Key("UNTESTED"); w.Uint64(n.untested);
    w.Key("ERROR"); w.Uint64(n.error);
    w.EndObject();
    w.Key("cases");
    w.StartArray();
    for (const CaseResult& c : run.cases) {
      w.StartObject();
      kv(w, "id", c.id);
      kv(w, "title", c.title);
      kv(w, "verdict", toString(c.verdict));
      w.Key("rules");
      w.StartArray();
      for (const std::string& r : c.rules) w.String(r.data(), static_cast<rapidjson::SizeType>(r.size()));
      w.EndArray();
      w.Key("duration_ms");
      w.Double(c.duration_ms);
      if (!c.error.empty()) kv(w, "error", c.error);
      if (!c.skip_reason.empty()) kv(w, "skip_reason", c.skip_reason);
      if (!c.trace_path.empty()) kv(w, "trace", c.trace_path);
      w.Key("findings");
      w.StartArray();
      for (const Finding& f : c.findings) {
        w.StartObject();
        kv(w, "rule_id", f.rule_id);
        kv(w, "level", toString(f.level));
        kv(w, "kind", toString(f.kind));
        kv(w, "verdict", toString(f.verdict));
        if (f.strict_only) {
          w.Key("strict_only");  // FAIL only because of --strict
          w.Bool(true);
        }
        kv(w, "binds", bindsText(f.binds));
        kv(w, "requirement", f.requirement());
        kv(w, "message", f.message);
        kv(w, "expected", f.expected);
        kv(w, "actual", f.actual);
        w.Key("evidence");
        w.StartArray();
        for (const Evidence& e : f.evidence) {
          w.StartObject();
          w.Key("line");
          w.Uint64(e.line);
          kv(w, "text", e.text);
          w.EndObject();
        }
        w.EndArray();
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.Key("coverage");
    w.StartObject();
    for (const RuleCoverage& rc : coverage(run)) {
      if (rc.verdict == Verdict::Untested) continue;
      w.Key(rc.rule_id.data(), static_cast<rapidjson::SizeType>(rc.rule_id.size()));
      w.String(toString(rc.verdict));
    }
    w.EndObject();
    w.EndObject();
    out_ << "\n";
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<Reporter> makeJsonReporter(std::ostream& out) {
  return std::make_unique<JsonReporter>(out);
}

}  // namespace conform::reports
