// conform-plugin — the reference plugin executable (docs/reference-plugin.md). Arguments are
// parsed by hand (CLI11 is reserved for `conform`: it is slow to compile). stdout carries frames
// only; every message goes to stderr (FRAME-02).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "mock_plugin/behaviour.h"
#include "mock_plugin/faults.h"
#include "mock_plugin/fixture.h"
#include "mock_plugin/stdio.h"

namespace {
constexpr const char* kUsage =
    "usage: conform-plugin [--name NAME] [--profile 0.0.6|0.0.4] [--fault NAME] [--list-faults] [--list-stimuli]\n"
    "                      [--behaviour FILE | --example producer | --fixture sdk]\n";
}

int main(int argc, char** argv) {
  using namespace conform::plugin;
  BehaviourOptions opt;
  const Fault* fault = nullptr;
  std::optional<std::string> fault_name;
  std::optional<std::string> behaviour_file, example, fixture;
  bool name_given = false, profile_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::cerr << "conform-plugin: " << a << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--name") {
      opt.name = value();
      name_given = true;
    } else if (a == "--profile") {
      std::string v = value();
      auto p = parseProfile(v);
      if (!p) { std::cerr << "conform-plugin: unknown profile `" << v << "` (use 0.0.6 or 0.0.4)\n"; return 2; }
      opt.profile = *p;
      profile_given = true;
    } else if (a == "--fault") {
      fault_name = value();
    } else if (a == "--list-faults") {
      for (const auto& f : faultTable()) std::printf("%-28s %-9s %s\n", f.name, f.rule, f.description);
      // The SDK fixture's faults (fixture.h) after the gallery's; they need --fixture sdk.
      for (const auto* table : {&callbackFixtureFaults(), &producerFixtureFaults()})
        for (const auto& f : *table) std::printf("%-28s %-9s [--fixture sdk] %s\n", f.name, f.rule, f.description);
      return 0;
    } else if (a == "--list-stimuli") {
      // Engine stimuli (faults.h): plugin behaviour that breaks no plugin-binding rule.
      for (const auto& f : stimulusTable()) std::printf("%-28s %-9s %s\n", f.name, f.rule, f.description);
      return 0;
    } else if (a == "--behaviour") {
      behaviour_file = value();
    } else if (a == "--example") {
      example = value();
      if (*example != "producer") {
        std::cerr << "conform-plugin: unknown example `" << *example << "` (available: producer)\n";
        return 2;
      }
    } else if (a == "--fixture") {
      fixture = value();
      if (*fixture != "sdk") {
        std::cerr << "conform-plugin: unknown fixture `" << *fixture << "` (available: sdk)\n";
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "conform-plugin: unknown argument `" << a << "`\n" << kUsage;
      return 2;
    }
  }
  // --fault NAME: a gallery fault, or a fixture fault of the SDK fixture (which needs --fixture sdk).
  std::string fixture_fault;
  if (fault_name) {
    fault = findFault(*fault_name);
    if (!fault) {
      bool is_fixture = false;
      for (const auto* table : {&callbackFixtureFaults(), &producerFixtureFaults()})
        for (const auto& f : *table) is_fixture = is_fixture || *fault_name == f.name;
      if (!is_fixture) {
        std::cerr << "conform-plugin: unknown fault `" << *fault_name << "`; see --list-faults\n";
        return 2;
      }
      if (!fixture) {
        std::cerr << "conform-plugin: fault `" << *fault_name << "` is a fault of the SDK fixture: it needs --fixture sdk\n";
        return 2;
      }
      fixture_fault = *fault_name;
    }
  }
  if (behaviour_file && (example || fault)) {
    std::cerr << "conform-plugin: --behaviour cannot be combined with --example or --fault\n" << kUsage;
    return 2;
  }
  if (fixture && (behaviour_file || example)) {
    std::cerr << "conform-plugin: --fixture cannot be combined with --behaviour or --example\n" << kUsage;
    return 2;
  }
  if (example && fault) {
    std::cerr << "conform-plugin: --example cannot be combined with --fault\n" << kUsage;
    return 2;
  }
  std::optional<PluginBuilder> builder;
  if (behaviour_file) {
    std::ifstream in(*behaviour_file, std::ios::binary);
    if (!in) {
      std::cerr << "conform-plugin: cannot read behaviour file `" << *behaviour_file << "`\n";
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto spec = parseBehaviour(text.str());
    if (!spec) {
      std::cerr << "conform-plugin: " << *behaviour_file << ": " << spec.error() << "\n";
      return 2;
    }
    if (name_given) spec->name = opt.name;  // the configured name wins (INIT-13)
    if (profile_given) spec->profile = protocolVersion(opt.profile);  // so does the command line
    opt.profile = parseProfile(spec->profile).value_or(Profile::V006);
    builder.emplace(behaviourBuilder(*spec));
  } else if (example) {
    builder.emplace(producerExample(ProducerExampleEnv::fromProcess(), opt));
  } else {
    builder.emplace(builtinBehaviour(opt));
    if (fixture) {  // the SDK fixture tools on top of the built-in behaviour (docs/sdk-fixture.md)
      // Each table's adder acts only on its own fault names (fixture.h).
      addCallbackFixtures(*builder, opt, fixture_fault);
      addProducerFixtures(*builder, opt, fixture_fault);
    }
  }
  auto& clk = conform::clock::RealClock::instance();
  auto built = builder->build(clk);
  if (!built) {
    std::cerr << "conform-plugin: invalid behaviour: " << built.error() << "\n";
    return 2;
  }
  PluginServer& server = *built.value();
  RunOptions ro;
  if (fault) installFault(*fault, server, opt.profile);
  if (fault || !fixture_fault.empty())
    ro.max_lifetime = std::chrono::seconds(60);  // a fault process never outlives a test run
  int rc = runStdio(server, clk, ro);
  if (fault && fault->linger_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(fault->linger_ms));
  if (rc != 0) std::cerr << "conform-plugin: " << server.failure() << "\n";
  return rc;
}
