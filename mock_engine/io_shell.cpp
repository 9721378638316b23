// mock_engine/io_shell — see io_shell.h.
#include "mock_engine/io_shell.h"

namespace conform::engine {

bool ProcessHost::spawn(ConnId conn, const PluginConfig& cfg, std::string& error) {
  wire::SpawnOptions o;
  o.program = cfg.command;
  o.args = cfg.args;
  o.env = cfg.env;  // LIFE-06: exactly the configured variables, nothing inherited
  o.cwd = cfg.cwd;
  o.capture_stderr = true;  // FRAME-02: forwarded to the engine's stderr, never parsed
  wire::SpawnError err;
  auto ch = wire::spawnProcess(reactor_, o, &err);
  if (!ch) {
    error = err.message;
    return false;
  }
  chans_[conn] = std::move(ch);
  return true;
}

void ProcessHost::write(ConnId conn, std::string_view bytes) {
  auto it = chans_.find(conn);
  if (it != chans_.end()) (void)it->second->write(bytes);
}

bool ProcessHost::writable(ConnId conn) {
  auto it = chans_.find(conn);
  return it != chans_.end() && it->second->pendingWriteBytes() < kChannelBacklogBytes;
}

void ProcessHost::closeStdin(ConnId conn) {
  auto it = chans_.find(conn);
  if (it != chans_.end()) it->second->closeWrite(false);
}

void ProcessHost::kill(ConnId conn) {
  auto it = chans_.find(conn);
  if (it == chans_.end()) return;
  // LIFE-09: the whole process group is killed and reaped (bounded inside Channel::close).
  it->second->close(false);
  auto st = it->second->exitStatus();
  if (st && !reported_[conn]) {
    reported_[conn] = true;
    exits_.emplace_back(conn, st->str());
  }
}

bool ProcessHost::dispatch() {
  bool any = false;
  while (!exits_.empty()) {
    auto [conn, st] = exits_.front();
    exits_.pop_front();
    engine_->onExited(conn, st);
    any = true;
  }
  for (auto& [conn, ch] : chans_) {
    while (auto ev = ch->poll()) {
      any = true;
      using K = wire::ChannelEvent::Kind;
      switch (ev->kind) {
        case K::Frame:
        case K::FrameError: engine_->onFrameEvent(conn, ev->frame); break;
        case K::Stderr:
          engine_->onStderr(conn, ev->text);
          std::fprintf(stderr, "[%s] %s\n", engine_->pluginOf(conn).c_str(), ev->text.c_str());
          break;
        case K::Eof: engine_->onStdoutEof(conn); break;
        case K::Exited:
          if (!reported_[conn]) {
            reported_[conn] = true;
            engine_->onExited(conn, ev->status.str());
          }
          break;
        case K::WriteFailed: break;  // the plugin closed stdin; EOF/exit will follow
      }
    }
    if (writable(conn)) engine_->onWritable(conn);
  }
  engine_->tick();
  return any;
}

void ProcessHost::runOnce(wire::SteadyTime deadline) {
  auto next = engine_->nextDeadline();
  if (!engine_->clock().isVirtual() && next.time_since_epoch() < deadline.time_since_epoch())
    deadline = wire::SteadyTime(std::chrono::duration_cast<wire::SteadyTime::duration>(next.time_since_epoch()));
  if (!dispatch()) reactor_.waitAny(deadline);
  dispatch();
}

std::size_t ProcessHost::liveProcesses() const {
  std::size_t n = 0;
  for (auto& [c, ch] : chans_) n += ch->running() ? 1 : 0;
  return n;
}

}  // namespace conform::engine
