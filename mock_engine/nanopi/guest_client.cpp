// mock_engine/nanopi/guest_client — see guest_client.h.
#include "mock_engine/nanopi/guest_client.h"

#include <cstdlib>

#include <fmt/format.h>

#include "core/wire/framing.h"

#ifndef CONFORM_GUEST_DIR
#define CONFORM_GUEST_DIR "guest"
#endif

namespace conform::nanopi {

std::string runnerDir(const std::string& explicit_guest_dir) {
  std::string base = explicit_guest_dir;
  if (base.empty())
    if (const char* e = std::getenv("CONFORM_GUEST_DIR"); e && *e) base = e;
  if (base.empty()) base = CONFORM_GUEST_DIR;
  return base + "/nanopi";
}

GuestClient::~GuestClient() {
  if (ch_) ch_->close(false);  // kill and reap, bounded (core/wire)
}

Expected<Ok, std::string> GuestClient::start(const std::string& runner_dir) {
  wire::SpawnOptions o;
  o.program = "node";
  o.args = {runner_dir + "/runner.mjs"};
  wire::SpawnError err;
  ch_ = wire::spawnProcess(reactor_, o, &err);
  if (!ch_) return unexpected(fmt::format("cannot start the nanopi guest runner `node {}/runner.mjs`: {}", runner_dir, err.message));
  return Ok{};
}

Expected<Ok, std::string> GuestClient::restart(const std::string& runner_dir) {
  if (ch_) {
    ch_->close(false);
    dispatch();
  }
  ch_.reset();
  replies_.clear();
  ended_.clear();
  return start(runner_dir);
}

void GuestClient::sendRaw(std::string_view bytes) {
  if (tap_.out) tap_.out(bytes);
  if (ch_) (void)ch_->write(bytes);
}

std::int64_t GuestClient::request(std::string_view method, const json::Value& params) {
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

void GuestClient::onFrame(const std::string& bytes) {
  auto p = json::parse(bytes);
  if (!p || !p->doc.IsObject()) return;  // traced; the runner never sends that (its own tests say so)
  json::Document& d = p->doc;
  const json::Value* id = json::member(d, "id");
  auto method = json::stringMember(d, "method");
  if (method && id && id->IsString()) {
    // An `h*` request: answered now, whatever call is running (it is what unblocks the guest).
    std::string name;
    std::vector<std::string> args;
    if (const json::Value* params = json::member(d, "params")) {
      if (auto n = json::stringMember(*params, "name")) name = std::string(*n);
      if (const json::Value* as = json::member(*params, "args"); as && as->IsArray())
        for (const auto& v : as->GetArray()) {
          if (v.IsString()) args.emplace_back(v.GetString(), v.GetStringLength());
          else args.push_back(json::compact(v));  // host-log's level (u8) arrives as a number
        }
    }
    std::optional<std::string> answer = handler_ ? handler_(name, args) : std::optional<std::string>("error: no host");
    json::Document r(rapidjson::kObjectType);
    auto& a = r.GetAllocator();
    r.AddMember("jsonrpc", "2.0", a);
    json::Value idv;
    json::deepCopy(idv, *id, a);
    r.AddMember("id", idv, a);
    json::Value res(rapidjson::kObjectType);
    if (answer) res.AddMember("value", json::str(*answer, a), a);
    else res.AddMember("value", json::Value(), a);
    r.AddMember("result", res, a);
    sendRaw(wire::encodeFrame(json::compact(r)));
    return;
  }
  if (method && !id) {
    if (*method == "console")
      if (const json::Value* params = json::member(d, "params"))
        if (auto t = json::stringMember(*params, "text")) console_.emplace_back(*t);
    return;
  }
  if (!method && id && id->IsInt64()) replies_[id->GetInt64()] = std::move(d);
}

void GuestClient::dispatch() {
  if (!ch_) return;
  while (auto ev = ch_->poll()) {
    if (tap_.in) tap_.in(*ev);
    using K = wire::ChannelEvent::Kind;
    switch (ev->kind) {
      case K::Frame:
        if (ev->frame.kind == wire::FrameEvent::Kind::Frame) onFrame(ev->frame.bytes);
        break;
      case K::Eof:
        if (ended_.empty()) ended_ = "the runner closed its stdout";
        break;
      case K::Exited: ended_ = "the runner exited: " + ev->status.str(); break;
      default: break;
    }
  }
}

bool GuestClient::pumpUntil(wire::SteadyTime deadline, const std::function<bool()>& pred) {
  while (true) {
    dispatch();
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    reactor_.waitAny(deadline);
  }
}

std::optional<json::Document> GuestClient::takeReply(std::int64_t id) {
  dispatch();
  auto it = replies_.find(id);
  if (it == replies_.end()) return std::nullopt;
  json::Document d = std::move(it->second);
  replies_.erase(it);
  return d;
}

std::optional<std::string> GuestClient::replyError(const json::Value& frame) {
  const json::Value* e = json::member(frame, "error");
  if (!e) return std::nullopt;
  std::string code = json::member(*e, "code") ? json::compact(*json::member(*e, "code")) : "?";
  std::string msg = std::string(json::stringMember(*e, "message").value_or("(no message)"));
  std::string stage;
  if (const json::Value* data = json::member(*e, "data"))
    if (auto s = json::stringMember(*data, "stage")) stage = fmt::format(" [{}]", *s);
  return fmt::format("{}{}: {}", code, stage, msg);
}

Expected<json::Document, std::string> GuestClient::await(std::int64_t id, std::chrono::milliseconds d) {
  auto deadline = wire::deadlineIn(d);
  std::optional<json::Document> reply;
  pumpUntil(deadline, [&] {
    auto it = replies_.find(id);
    if (it != replies_.end()) {
      reply = std::move(it->second);
      replies_.erase(it);
      return true;
    }
    return !ended_.empty();
  });
  if (!reply) {
    if (!ended_.empty()) return unexpected(ended_);
    return unexpected(fmt::format("the runner did not answer request {} within {} ms", id, d.count()));
  }
  if (auto e = replyError(*reply)) return unexpected(*e);
  const json::Value* r = json::member(*reply, "result");
  return r ? json::copy(*r) : json::Document();
}

void GuestClient::shutdown() {
  if (!ch_) return;
  if (ended_.empty() && ch_->running()) {
    json::Document p(rapidjson::kObjectType);
    std::int64_t id = request("shutdown", p);
    (void)await(id, kShutdownDeadline);
    ch_->closeWrite(false);
    pumpUntil(wire::deadlineIn(kShutdownDeadline), [&] { return !ch_->running() || ended_.rfind("the runner exited", 0) == 0; });
  }
  ch_->close(false);
  dispatch();
}

}  // namespace conform::nanopi
