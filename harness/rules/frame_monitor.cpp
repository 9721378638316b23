// harness/rules/frame_monitor — FRAME-*: what each WRITER put on the wire (non-JSON, invalid UTF-8,
// oversized, CR, empty line, non-object, duplicate members, unterminated last frame) and, after a
// fatal frame, whether the RECEIVER kept processing (it must stop: FRAME-04/05/11/13, §2 F8).
//
// Not judged here: envelope faults (rpc_monitor), stderr content (FRAME-02: never parsed, nothing
// to judge on the wire), flushing (FRAME-03 timing is not visible in a trace), single-writer
// interleaving (FRAME-15: an interleaved frame shows up as non-JSON and is reported as FRAME-01).
// "Kept processing" is only claimed from a response to a request written AFTER the fatal frame: a
// frame written concurrently with the fatal one proves nothing.
#include <fmt/format.h>

#include "core/protocol/limits.h"
#include "harness/rules/monitor.h"

namespace conform::rules {
namespace {

std::uint8_t writer(const Observation& o) {
  return o.fromPlugin() ? reports::kBindsPlugin : reports::kBindsEngine;
}
const char* who(const Observation& o) { return o.fromPlugin() ? "the plugin" : "the engine"; }

class FrameMonitor : public Monitor {
 public:
  std::string_view name() const override { return "FRAME"; }

  void observe(const Observation& o, const ConnectionState& s, FindingSink& out) override {
    if (!o.is_frame) return;
    const trace::TraceEvent& ev = *o.ev;
    checkAfterFatal(o, s, out);
    switch (ev.kind) {
      case trace::Kind::Binary:
        out.report("FRAME-01", writer(o), fmt::format("{} wrote a frame that is not valid UTF-8", who(o)),
                   "one UTF-8 JSON object per line", "invalid UTF-8 bytes", {o.evidence()});
        noteFatal(o, o.fromPlugin() ? "FRAME-04" : "FRAME-05");
        break;
      case trace::Kind::Oversized:
        out.report(o.fromPlugin() ? "FRAME-06" : "FRAME-07", writer(o),
                   fmt::format("{} wrote a frame longer than the limit", who(o)),
                   fmt::format("at most {} bytes before the LF", protocol::limits::kMaxFrameBytes),
                   fmt::format("more than {} bytes ({} seen)", protocol::limits::kMaxFrameBytes, ev.oversized_bytes),
                   {o.evidence()});
        noteFatal(o, o.fromPlugin() ? "FRAME-06" : "FRAME-07");
        break;
      case trace::Kind::Text:
        if (ev.raw.empty()) {
          out.report("FRAME-10", writer(o), fmt::format("{} wrote an empty line", who(o)),
                     "no empty lines", "an empty line", {o.evidence()});
          // FRAME-01 (M): every line is one JSON object; PROTOCOL F6: writers MUST NOT emit empty lines.
          out.report("FRAME-01", writer(o), fmt::format("{} wrote an empty line", who(o)),
                     "one JSON object per line", "an empty line", {o.evidence()});
        } else if (ev.raw.substr(0, 3) == "\xEF\xBB\xBF") {
          out.report("FRAME-14", writer(o), fmt::format("{} started a frame with a UTF-8 byte-order mark", who(o)),
                     "a frame starting with the JSON value", "EF BB BF prefix", {o.evidence()});
        } else {
          out.report("FRAME-01", writer(o), fmt::format("{} wrote a frame that is not one JSON value", who(o)),
                     "one JSON object per line", "unparseable text", {o.evidence()});
        }
        noteFatal(o, "FRAME-13");
        break;
      case trace::Kind::Frame:
        if (o.envelope_error && o.envelope_error->kind == wire::EnvelopeErrorKind::NotObject) {
          out.report("FRAME-11", writer(o),
                     fmt::format("{} wrote a JSON value that is not an object (batches are not supported)", who(o)),
                     "one JSON object", std::string(json::typeName(*ev.frame)), {o.evidence()});
          if (o.fromPlugin()) noteFatal(o, "FRAME-11");
        } else if (o.envelope_error) {
          noteFatal(o, o.envelope_error->rule);
        }
        if (ev.duplicates && !ev.duplicates->empty())
          out.report("FRAME-19", writer(o), fmt::format("{} repeated a member name", who(o)),
                     "unique member names", fmt::format("duplicate member at {}", ev.duplicates->front()),
                     {o.evidence()});
        break;
      default:
        break;
    }
    if (ev.had_cr)
      out.report("FRAME-08", writer(o), fmt::format("{} ended a frame with CR LF", who(o)),
                 "frames end with LF only (writers should not send CR)", "CR LF", {o.evidence()},
                 /*advisory=*/true);
    if (ev.unterminated)
      out.report("FRAME-03", writer(o), fmt::format("{} left its last frame without a LF", who(o)),
                 "every frame ends with one LF", "the stream ended inside the frame", {o.evidence()},
                 /*advisory=*/true);  // the process may have been killed mid-write
  }

 private:
  struct Fatal {
    std::uint64_t line = 0;
    std::string rule;
    bool reported = false;
  };
  Fatal fatal_[2];  // [0]: fatal e2p frame (judges the plugin), [1]: fatal p2e (judges the engine)

  void noteFatal(const Observation& o, std::string_view rule) {
    Fatal& f = fatal_[o.fromPlugin() ? 1 : 0];
    if (!f.line) {
      f.line = o.line();
      f.rule = std::string(rule);
    }
  }

  // A response to a request that was written after the peer's fatal frame proves the receiver
  // kept reading past it.
  void checkAfterFatal(const Observation& o, const ConnectionState&, FindingSink& out) {
    if (!o.decoded || o.match != Match::Matched) return;
    // The responder received the fatal frame: a p2e response answers e2p requests.
    Fatal& f = fatal_[o.fromPlugin() ? 0 : 1];
    if (!f.line || f.reported || o.request->line <= f.line) return;
    f.reported = true;
    bool engine = o.fromEngine();
    std::string rule = f.rule;
    if (rule.rfind("FRAME-", 0) != 0) rule = "FRAME-13";  // envelope faults are fatal like bad JSON
    out.report(rule, engine ? reports::kBindsEngine : reports::kBindsSdk,
               fmt::format("{} kept processing frames after a fatal frame at line {}",
                           engine ? "the engine" : "the plugin", f.line),
               "the connection ends at the fatal frame; later requests are never answered",
               fmt::format("request at line {} was answered", o.request->line),
               {{f.line, "fatal frame"}, {o.request->line, "later request"}, o.evidence()});
  }
};

}  // namespace

std::unique_ptr<Monitor> makeFrameMonitor() { return std::make_unique<FrameMonitor>(); }

}  // namespace conform::rules
