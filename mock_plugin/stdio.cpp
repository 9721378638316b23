// See stdio.h. Every wait has a deadline: the loop never blocks longer than the next server
// timer or 200 ms, so timers (slow handlers, scripted delays) fire on time.
#include "mock_plugin/stdio.h"

#include <algorithm>

namespace conform::plugin {

namespace {
constexpr clock::Duration kMaxWait = std::chrono::milliseconds(200);  // loop granularity
}

int runOnChannel(PluginServer& server, wire::Channel& ch, const clock::Clock& clk, const RunOptions& opt) {
  const auto end_of_life = std::chrono::steady_clock::now() + opt.max_lifetime;
  bool stalled = false;
  while (true) {
    while (auto f = server.popOutbound()) ch.writeFrame(*f);
    if (server.state() != ServerState::Running) break;
    if (std::chrono::steady_clock::now() >= end_of_life) break;
    clock::Duration wait = std::clamp<clock::Duration>(server.nextTimer() - clk.now(), clock::Duration(0), kMaxWait);
    auto deadline = std::chrono::steady_clock::now() + wait;
    bool want = server.canAcceptFrame();
    if (want == stalled) {  // SDK-20: a full inbound queue stops the reader (back-pressure)
      ch.stallReading(!want);
      stalled = !want;
    }
    auto ev = ch.next(deadline);
    if (ev) {
      using K = wire::ChannelEvent::Kind;
      switch (ev->kind) {
        case K::Frame:
        case K::FrameError:
          server.receive(std::move(ev->frame));
          break;
        case K::Eof:
          server.receiveEof();
          break;
        case K::WriteFailed:
          // The engine closed our stdout: nobody can hear us any more (SDK-23 disconnect).
          server.disconnect();
          break;
        case K::Stderr:
        case K::Exited:
          break;
      }
    }
    server.process();
  }
  while (auto f = server.popOutbound()) ch.writeFrame(*f);
  ch.flush(std::chrono::steady_clock::now() + opt.final_flush);
  return server.state() == ServerState::Failed ? 1 : 0;
}

int runStdio(PluginServer& server, const clock::Clock& clk, const RunOptions& opt) {
  wire::ignoreSigpipe();
  wire::Reactor reactor;
  auto ch = wire::fdChannel(reactor, 0, 1);
  return runOnChannel(server, *ch, clk, opt);
}

}  // namespace conform::plugin
