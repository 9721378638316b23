// mock_engine/io_shell — binds the sans-IO Engine to real plugin processes through
// conform::wire::Reactor / spawnProcess (core/wire/channel.h): the Host actions become process
// spawns, pipe writes, stdin closes and process-group kills; channel events become Engine inputs.
// Deliveries are handed to a channel only while its write buffer is small, so a plugin that stops
// reading builds its backlog in the engine's 1024-record queue (eviction by class, EVT-12/14),
// never in an unbounded pipe buffer.
#pragma once

#include <deque>
#include <map>
#include <memory>

#include "core/wire/channel.h"
#include "mock_engine/engine.h"

namespace conform::engine {

// Bytes a connection may have queued in its channel before deliveries wait in the engine queue.
inline constexpr std::size_t kChannelBacklogBytes = 256 * 1024;

class ProcessHost final : public Host {
 public:
  explicit ProcessHost(wire::Reactor& reactor) : reactor_(reactor) {}
  void attach(Engine& e) { engine_ = &e; }

  bool spawn(ConnId conn, const PluginConfig& cfg, std::string& error) override;
  void write(ConnId conn, std::string_view bytes) override;
  bool writable(ConnId conn) override;
  void closeStdin(ConnId conn) override;
  void kill(ConnId conn) override;

  // Moves every queued channel event into the engine, then reports writability and runs due
  // timers. Returns true when something happened.
  bool dispatch();
  // Waits for I/O until `deadline` (bounded by the engine's next timer), then dispatch().
  void runOnce(wire::SteadyTime deadline);
  std::size_t liveProcesses() const;

 private:
  wire::Reactor& reactor_;
  Engine* engine_ = nullptr;
  std::map<ConnId, std::unique_ptr<wire::Channel>> chans_;
  std::deque<std::pair<ConnId, std::string>> exits_;  // reaped by kill(), reported by dispatch()
  std::map<ConnId, bool> reported_;
};

}  // namespace conform::engine
