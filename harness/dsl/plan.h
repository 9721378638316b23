// harness/dsl/plan — the compiled form of a scenario file (.scn): a list of cases, each a list of
// typed steps that keep their file:line:column.
//
// Why compile first (WABT spectest-interp style, STYLE.md): every syntax error of a whole catalogue
// is reported before any process starts, `--dump-plan` can show exactly what will run, and the
// interpreter is one switch over Step::Kind with one onX() per kind instead of re-parsing text.
//
// The grammar and every step are documented in docs/dsl.md. JSON literals are parsed by core/json
// (never a second JSON parser); bare `$name` tokens inside them are rewritten to "$name" strings
// first so json::matchSubset / json::substitute treat them as captures.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "core/util/expected.h"

namespace conform::dsl {

using Millis = std::chrono::milliseconds;

struct Loc {
  std::string file;
  std::uint32_t line = 0, column = 0;
  std::string str() const;  // "file.scn:12:5"
};

// A parse error: "file.scn:12:5: expected a JSON object after the method name, found `[`".
struct ParseError {
  Loc loc;
  std::string message;
  std::string str() const;
};

// A JSON literal of the script, parsed once; shared so plans copy cheaply.
using JsonPtr = std::shared_ptr<const json::Document>;

// What an `expect` step is about.
// Answer: a response or an error to a given request (`expect answer $r`), matched as a whole frame.
enum class MsgKind : std::uint8_t { Request, Notify, Response, Error, Frame, Answer };
const char* toString(MsgKind);

// `expect exit …` variants.
enum class ExitWant : std::uint8_t { Any, Zero, Nonzero, Code, Signal };

enum class FaultKind : std::uint8_t { CloseStdin, Kill, Restart, StallReading, DropReply, Disconnect };
const char* toString(FaultKind);

struct Step {
  enum class Kind : std::uint8_t {
    SendRequest,   // send request METHOD {params} [id JSON] [as $r]
    SendNotify,    // send notify METHOD {params}
    SendResponse,  // send response $r {result}
    SendError,     // send error $r CODE "message"
    SendRaw,       // send raw hex:… | text:"…"
    SendFrame,     // send frame {json}
    Expect,        // expect request|notify|response|error|frame|answer …
    ExpectNo,      // expect no request|notify|response|error|frame …
    ExpectExit,    // expect exit [code N|zero|nonzero|signal] [within D]
    ExpectEof,     // expect eof [within D]
    ExpectState,   // expect state NAME [reason "substring"] [within D]
    Repeat,        // repeat N { … }
    ForEachTool,   // for each tool as $t { … }
    ForEachHook,   // for each hook as $h { … }
    Advance,       // advance D
    Wait,          // wait D
    Fault,         // fault KIND [D]
    Drive,         // drive ACTION args… [as $x]
  };
  Kind kind = Kind::Wait;
  Loc loc;

  std::string method;     // Send*/Expect*: method name ("" = any)
  std::string ref;        // `$r` of send response/error, expect response/error; capture target of `as`
  std::string as;         // `as $x` (without '$'), "" when absent
  JsonPtr json;           // params / result / pattern / frame; null when absent
  JsonPtr id;             // send request: explicit id (null: the runner allocates one)
  bool exact = false;     // expect … exact {…}: equality instead of subset
  MsgKind msg = MsgKind::Frame;
  std::optional<std::int64_t> code;  // send error CODE, expect error CODE, expect exit code N
  bool not_code = false;  // expect answer $r not CODE: an error answer with this code FAILs
  std::string text;       // send error message, send raw bytes, expect state name, drive action
  std::string reason;     // expect state … reason "substring"
  ExitWant exit = ExitWant::Any;
  std::optional<Millis> within;  // deadline of expect*; null = the default
  Millis duration{0};     // advance / wait / fault stall-reading
  FaultKind fault = FaultKind::Kill;
  std::uint32_t count = 0;            // repeat N
  std::vector<std::string> args;      // drive: raw argument tokens (JSON args are in `json`)
  // send frame {json} size N: the compact frame is padded to exactly N bytes before its LF by
  // binding the capture `$pad` to a run of 'x' (FRAME-07's 4 MiB boundary frames without a 4 MiB
  // literal in the script). 0 = no padding.
  std::uint64_t size = 0;
  std::vector<Step> body;             // repeat / for each
  // Role plugin, `on NAME STEP`: the step (a whole block included) is addressed to the further
  // probe NAME declared with `plugin NAME` instead of the main probe; "" = the main probe.
  std::string plugin;
};
const char* toString(Step::Kind);

// A `needs` directive: the case is NOT-APPLICABLE when the handshake lacks it.
// `needs no …` negates it: the case applies only when the handshake LACKS the capability, hook or
// tool (rules conditional on a flag being off, e.g. EMIT-24, INIT-14).
struct Need {
  enum class Kind : std::uint8_t { Capability, Hook, Tool } kind = Kind::Capability;
  std::string name;  // capability, hook or tool name ("" for `needs tool`: any tool)
  Loc loc;
  bool negated = false;
};

// Role plugin: a further probe the engine configuration names besides the main probe
// (`plugin NAME [first] [workspace]`, docs/check-engine.md "Several plugins"): the rules about
// chains of plugins (HOOK-04/05 order, HOOK-11/24/29 what the next plugin sees) need two.
struct ExtraPlugin {
  std::string name;
  Loc loc;
  bool first = false;      // listed before the main probe in `plugins` (else after it)
  bool workspace = false;  // listed in `workspace_plugins` (after every user entry, §1.6)
  // first + workspace: a user entry NAME listed before the main probe (a command that cannot
  // connect) is replaced IN PLACE by the workspace entry NAME, the probe (§1.6, HOOK-05).
  std::vector<std::pair<std::string, std::string>> handshake;  // on NAME handshake key=value
  std::vector<std::pair<std::string, std::string>> config;     // on NAME config KEY VALUE
};

struct Case {
  std::string id;     // rule id, the case's stable slug ("FRAME-05")
  std::string title;
  Loc loc;
  std::string role = "engine";      // engine: conform plays the engine (tests a plugin); plugin
  std::string profile = "any";      // "0.0.6", "0.0.4" or "any"
  std::vector<std::string> rules;   // id plus any `rules` directive entries
  std::vector<Need> needs;
  std::vector<std::pair<std::string, std::string>> handshake;  // role plugin: key=value
  std::vector<std::pair<std::string, std::string>> config;     // config KEY VALUE
  std::vector<ExtraPlugin> plugins;  // role plugin: further probes, in declaration order
  std::vector<Step> steps;
  // True when a step judges the handshake itself (an `expect state` before any send/drive/fault):
  // the runner then runs the steps even when the handshake did not reach `connected`.
  bool judges_handshake = false;
  std::string area() const;  // "FRAME" of "FRAME-05"
};

struct Plan {
  std::string file;
  std::vector<Case> cases;
};

// Parses a whole scenario file. `file` names it in errors. Every error found is returned (parsing
// resumes at the next line), at most kMaxErrors.
inline constexpr std::size_t kMaxErrors = 50;
Expected<Plan, std::vector<ParseError>> parse(std::string_view text, std::string file);
// Reads and parses a file; a read error is one ParseError at line 0.
Expected<Plan, std::vector<ParseError>> parseFile(const std::string& path);

// Durations: "250ms", "2s", "1.5s", "1m". Exposed for tests.
std::optional<Millis> parseDuration(std::string_view);
std::string formatDuration(Millis);

// `--dump-plan`: one line per step, nested bodies indented, JSON in compact form:
//   FRAME-05 "…" role=engine profile=any rules=FRAME-05
//     3:3 send-raw hex:ff0a
//     4:3 expect-exit nonzero within=3000ms
std::string dump(const Plan& plan);

// Default deadlines (docs/dsl.md). Short, because a conforming plugin answers within
// milliseconds, but not flaky on a loaded 2-core CI machine.
inline constexpr Millis kDefaultExpectWithin{2000};
// `expect no …` without `within`: how long silence must last.
inline constexpr Millis kDefaultExpectNoWithin{300};
// `expect exit` / `expect eof` without `within`: exit follows EOF or shutdown promptly (SHUT-08
// allows up to the 3000 ms grace; the default stays below the grace of the reference engine).
inline constexpr Millis kDefaultExitWithin{3000};
// A literal `within` longer than this is refused: no case may hold the catalogue up for minutes.
inline constexpr Millis kMaxWithin{60000};
// `repeat N` bound: a typo like `repeat 1000000` must not hang the catalogue.
inline constexpr std::uint32_t kMaxRepeat = 10000;
// `send frame … size N` bound: twice the 4,194,304-byte frame limit of PROTOCOL §2 (FRAME-06/07)
// is enough for every boundary case; more would only burn memory in the trace.
inline constexpr std::uint64_t kMaxFrameSize = 8u * 1024 * 1024;
// The configured name of the main probe in role plugin (docs/check-engine.md); `plugin NAME`
// may not reuse it.
inline constexpr const char* kMainProbe = "conform-probe";
// `plugin NAME` bound: the chain rules need two plugins, order permutations (HOOK-04/05) three;
// each probe is one more process and socket per case.
inline constexpr std::size_t kMaxExtraPlugins = 3;
// The capture name `send frame … size N` binds to the padding (docs/dsl.md).
inline constexpr const char* kPadCapture = "pad";

}  // namespace conform::dsl
