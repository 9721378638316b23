// harness/runner/fuzz — `conform fuzz [options] -- CMD…`: a live, protocol-aware fuzzer for plugins.
//
// Why a fuzzer next to check: the catalogue proves the rules one scripted conversation at a time;
// a plugin's bugs hide in long conversations (state that leaks across calls, the Nth call, a hook
// that arrives while a tool runs) and in what a catalogue never sends (mutated envelopes, split
// and coalesced writes, stalls, huge lines). ARCHITECTURE.md: the mutator is one more stimulus
// source feeding the same runner, channel, trace and monitors — a finding here is judged by the
// very monitors `check` and `lint` use, and its reproducer is an ordinary trace that `conform
// replay` plays back.
//
// main.cpp only parses options into FuzzOptions; docs/fuzzing-live.md is the user documentation.
// Exit codes (ARCHITECTURE.md "Verdicts"): 0 no finding, 1 at least one finding, 2 usage or harness
// error (cannot start CMD, the handshake never completes, --out not writable). Never a count.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace conform::runner {

struct FuzzOptions {
  std::vector<std::string> command;     // CMD and its arguments (required)
  std::uint32_t seconds = 60;           // wall-clock budget of the fuzzing loop (minimisation extra)
  std::uint64_t runs = 0;               // stop after this many input sequences (0: no limit)
  std::optional<std::uint64_t> seed;    // unset: a random seed, printed at the start
  std::string corpus;                   // folder of traces whose engine frames seed the sequences
  std::string out = "fuzz-out";         // findings, reproducers, summary.json and reports go here
  std::string role = "engine";          // "engine": we play the engine against a plugin; "plugin":
                                        // we play the plugin against an engine (fuzz_engine.cpp)
  std::string probe;                    // role plugin: the conform executable the engine spawns as its
                                        // plugin (`conform probe`); empty = this executable
  std::string profile = "0.0.6";        // 0.0.6 or 0.0.4
  std::uint32_t deadline_ms = 2000;     // answer deadline per request (HOOK-06, PING default 2 s)
  std::uint32_t minimize_seconds = 60;  // budget of delta debugging per finding
  std::uint32_t max_findings = 0;       // stop fuzzing after this many distinct findings (0: budget)
  bool verify = true;                   // run `conform replay` on each reproducer and say whether it matches
  bool quiet = false;                   // no progress lines
};

int runFuzz(const FuzzOptions&, std::ostream& out, std::ostream& err);

}  // namespace conform::runner
