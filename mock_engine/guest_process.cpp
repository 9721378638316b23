// mock_engine/guest_process — see guest_process.h.
#include "mock_engine/guest_process.h"

#include <cstdlib>

#include <fmt/format.h>

#include "core/wire/framing.h"

#ifndef CONFORM_GUEST_DIR
#define CONFORM_GUEST_DIR "guest"
#endif

namespace conform::guest {

std::string runnerDir(const std::string& explicit_guest_dir, std::string_view model) {
  std::string base = explicit_guest_dir;
  if (base.empty())
    if (const char* e = std::getenv("CONFORM_GUEST_DIR"); e && *e) base = e;
  if (base.empty()) base = CONFORM_GUEST_DIR;
  return fmt::format("{}/{}", base, model);
}

GuestProcess::~GuestProcess() {
  if (ch_) ch_->close(false);  // SIGKILL the process group and reap, bounded (core/wire)
}

Expected<Ok, std::string> GuestProcess::start(const std::string& runner_dir, const std::string& cwd) {
  wire::SpawnOptions o;
  o.program = "node";
  o.args = {runner_dir + "/runner.mjs"};
  if (!cwd.empty()) o.cwd = cwd;
  wire::SpawnError err;
  ch_ = wire::spawnProcess(reactor_, o, &err);
  if (!ch_) return unexpected(fmt::format("cannot start the {} `node {}/runner.mjs`: {}", what_, runner_dir, err.message));
  return Ok{};
}

Expected<Ok, std::string> GuestProcess::restart(const std::string& runner_dir, const std::string& cwd) {
  if (ch_) {
    ch_->close(false);
    dispatch();
  }
  ch_.reset();
  replies_.clear();
  ended_.clear();
  return start(runner_dir, cwd);
}

void GuestProcess::sendRaw(std::string_view bytes) {
  if (tap_.out) tap_.out(bytes);
  if (ch_) (void)ch_->write(bytes);
}

std::int64_t GuestProcess::request(std::string_view method, const json::Value& params) {
  std::int64_t id = next_id_++;
  json::Document f(rapidjson::kObjectType);
  auto& a = f.GetAllocator();
  f.AddMember("jsonrpc", "2.0", a);
  f.AddMember("id", json::Value(id), a);
  f.AddMember("method", json::str(method, a), a);
  json::Value p;
  json::deepCopy(p, params, a);
  f.AddMember("params", p, a);
  sendRaw(wire::encodeFrame(json::compact(f)));
  return id;
}

void GuestProcess::dispatch() {
  if (!ch_) return;
  while (auto ev = ch_->poll()) {
    if (tap_.in) tap_.in(*ev);
    using K = wire::ChannelEvent::Kind;
    if (ev->kind == K::Eof && ended_.empty()) ended_ = "the runner closed its stdout";
    if (ev->kind == K::Exited) ended_ = "the runner exited: " + ev->status.str();
    if (ev->kind != K::Frame || ev->frame.kind != wire::FrameEvent::Kind::Frame) continue;
    auto p = json::parse(ev->frame.bytes);
    if (!p || !p->doc.IsObject()) continue;  // traced through the tap; the runners never send that
    const json::Value* id = json::member(p->doc, "id");
    const bool ours = !json::member(p->doc, "method") && id && id->IsInt64() && id->GetInt64() > 0 &&
                      id->GetInt64() < next_id_ && id->GetInt64() < kFirstForeignId;
    if (ours) replies_[id->GetInt64()] = std::move(p->doc);
    else if (on_frame_) on_frame_(p->doc);
  }
}

bool GuestProcess::pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) {
  while (true) {
    dispatch();
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    reactor_.waitAny(deadline);
  }
}

std::optional<json::Document> GuestProcess::takeReply(std::int64_t id) {
  dispatch();
  auto it = replies_.find(id);
  if (it == replies_.end()) return std::nullopt;
  json::Document d = std::move(it->second);
  replies_.erase(it);
  return d;
}

Expected<json::Document, std::string> GuestProcess::awaitFrame(std::int64_t id, std::chrono::milliseconds d) {
  pumpUntil(wire::deadlineIn(d), [&] { return replies_.count(id) > 0 || !ended_.empty(); });
  if (auto reply = takeReply(id)) return std::move(*reply);
  if (!ended_.empty()) return unexpected(fmt::format("no answer to request {}: {}", id, ended_));
  return unexpected(fmt::format("the runner did not answer request {} within {} ms", id, d.count()));
}

void GuestProcess::shutdown(std::chrono::milliseconds d) {
  if (!ch_) return;
  if (ended_.empty() && ch_->running()) {
    json::Document p(rapidjson::kObjectType);
    (void)awaitFrame(request("shutdown", p), d);
    ch_->closeWrite(false);
    pumpUntil(wire::deadlineIn(d), [&] { return !ch_->running() || ended_.rfind("the runner exited", 0) == 0; });
  }
  ch_->close(false);
  dispatch();
}

}  // namespace conform::guest
