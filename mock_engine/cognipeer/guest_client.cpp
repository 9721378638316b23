// mock_engine/cognipeer/guest_client — see guest_client.h. Requests carry integer ids from 1 (the DSL's
// own `send request` ids start at 1,000,000, so its replies never collide with ours).
#include "mock_engine/cognipeer/guest_client.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/wire/framing.h"
#include "mock_engine/cognipeer/jsonx.h"

#ifndef CONFORM_GUEST_DIR
#define CONFORM_GUEST_DIR "guest"
#endif

namespace conform::cognipeer {

std::string runnerDir(const std::string& explicit_dir) {
  std::string base = explicit_dir;
  if (base.empty())
    if (const char* e = std::getenv("CONFORM_GUEST_DIR"); e && *e) base = e;
  if (base.empty()) base = CONFORM_GUEST_DIR;
  return base + "/cognipeer";
}

GuestClient::~GuestClient() {
  if (ch_) ch_->close(false);  // SIGKILL the process group and reap, bounded (core/wire)
}

Expected<Ok, std::string> GuestClient::start(const std::string& dir, const std::string& cwd) {
  wire::SpawnOptions o;
  o.program = "node";
  o.args = {dir + "/runner.mjs"};
  if (!cwd.empty()) o.cwd = cwd;
  wire::SpawnError err;
  ch_ = wire::spawnProcess(reactor_, o, &err);
  if (!ch_) return unexpected(fmt::format("cannot start the Cognipeer guest runner (node {}/runner.mjs): {}", dir, err.message));
  return Ok{};
}

void GuestClient::sendRaw(std::string_view bytes) {
  if (tap_.out) tap_.out(bytes);
  if (ch_) (void)ch_->write(bytes);
}

std::int64_t GuestClient::request(std::string_view method, const json::Value& params) {
  std::int64_t id = next_id_++;
  json::Document f = jx::obj();
  jx::set(f, "jsonrpc", "2.0");
  jx::set(f, "id", id);
  jx::set(f, "method", method);
  jx::set(f, "params", params);
  sendRaw(wire::encodeFrame(json::compact(f)));
  return id;
}

void GuestClient::dispatch() {
  if (!ch_) return;
  while (auto ev = ch_->poll()) {
    if (tap_.in) tap_.in(*ev);
    using K = wire::ChannelEvent::Kind;
    if (ev->kind == K::Eof) ended_ = "the runner's stdout ended";
    if (ev->kind == K::Exited) ended_ = "the runner exited (" + ev->status.str() + ")";
    if (ev->kind != K::Frame || ev->frame.kind != wire::FrameEvent::Kind::Frame) continue;
    auto p = json::parse(ev->frame.bytes);
    if (!p || !p->doc.IsObject()) continue;
    const json::Value* id = json::member(p->doc, "id");
    auto method = json::stringMember(p->doc, "method");
    if (method) {
      if (*method == "console" || *method == "log") {
        const json::Value& prm = p->doc.HasMember("params") ? p->doc["params"] : p->doc;
        console_.push_back({jx::getStr(prm, "plugin"), *method == "log" ? "log" : jx::getStr(prm, "stream"), jx::getStr(prm, "text")});
      }
      if (id) {  // a runner request (h*): this runner has no host imports -> method not found
        json::Document r = jx::obj();
        jx::set(r, "jsonrpc", "2.0");
        jx::set(r, "id", *id);
        jx::set(r, "error", jx::lit(R"({"code":-32601,"message":"conform's Cognipeer host answers no runner requests"})"));
        sendRaw(wire::encodeFrame(json::compact(r)));
      }
      continue;
    }
    if (id && id->IsInt64() && id->GetInt64() < next_id_ && id->GetInt64() > 0 && id->GetInt64() < 1'000'000)
      replies_[id->GetInt64()] = std::move(p->doc);
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

Expected<json::Document, std::string> GuestClient::await(std::int64_t id, std::chrono::milliseconds d) {
  bool got = pumpUntil(wire::deadlineIn(d), [&] { return replies_.count(id) > 0 || !ended_.empty(); });
  if (!got || !replies_.count(id)) {
    dispatch();
    if (!replies_.count(id))
      return unexpected(ended_.empty() ? fmt::format("the runner did not answer request {} within {} ms", id, d.count())
                                       : fmt::format("no answer to request {}: {}", id, ended_));
  }
  json::Document f = std::move(replies_[id]);
  replies_.erase(id);
  return f;
}

Expected<json::Document, std::string> GuestClient::load(const std::string& path) {
  json::Document prm = jx::obj();
  jx::set(prm, "path", path);
  auto f = await(request("load", prm), kLoadDeadline);
  if (!f) return unexpected(f.error());
  if (const json::Value* e = json::member(*f, "error"))
    return unexpected(fmt::format("load failed: {}", json::compact(*e)));
  const json::Value* r = json::member(*f, "result");
  if (!r) return unexpected(std::string("load: a response without result"));
  return json::copy(*r);
}

std::vector<InvokeResult> GuestClient::invokeAll(std::vector<InvokeRequest> batch) {
  std::vector<std::int64_t> ids;
  std::uint64_t longest = 0;
  for (InvokeRequest& rq : batch) {  // every request is written before any reply is awaited (R7)
    json::Document prm = jx::obj();
    jx::set(prm, "plugin", static_cast<std::int64_t>(rq.plugin));
    jx::set(prm, "target", rq.target);
    if (!rq.name.empty()) jx::set(prm, "name", rq.name);
    jx::set(prm, "input", rq.input);
    jx::set(prm, "ctx", rq.ctx);
    const std::uint64_t budget = std::min(rq.timeout_ms, kMaxInvokeMs);
    jx::set(prm, "timeout_ms", static_cast<std::int64_t>(budget));
    ids.push_back(request("invoke", prm));
    longest = std::max(longest, budget);
    ++invokes_;
  }
  std::vector<InvokeResult> out(batch.size());
  auto deadline = std::chrono::milliseconds(longest) + kRunnerSlack;
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - (std::chrono::steady_clock::now() - t0));
    auto f = await(ids[i], std::max(left, std::chrono::milliseconds(1)));
    InvokeResult& r = out[i];
    if (!f) {
      r.outcome = InvokeResult::Outcome::Failed;
      r.error_message = f.error();
      continue;
    }
    if (const json::Value* e = json::member(*f, "error")) {
      r.outcome = InvokeResult::Outcome::Failed;
      r.error_message = "runner error " + json::compact(*e);
      continue;
    }
    const json::Value* res = json::member(*f, "result");
    if (!res || !res->IsObject()) {
      r.outcome = InvokeResult::Outcome::Failed;
      r.error_message = "invoke: a response without a result object";
      continue;
    }
    std::string oc = jx::getStr(*res, "outcome");
    if (const json::Value* el = json::member(*res, "elapsed_ms"); el && el->IsNumber()) r.elapsed_ms = el->GetDouble();
    if (const json::Value* mi = json::member(*res, "mutated_input")) r.mutated_input = json::copy(*mi);
    if (oc == "returned") {
      r.outcome = InvokeResult::Outcome::Returned;
      const json::Value* v = json::member(*res, "value");
      r.value = v ? json::copy(*v) : jx::lit(R"({"$type":"undefined"})");
    } else if (oc == "threw") {
      r.outcome = InvokeResult::Outcome::Threw;
      const json::Value& e = res->HasMember("error") ? (*res)["error"] : *res;
      r.error_name = jx::getStr(e, "name", "Error");
      r.error_message = jx::getStr(e, "message");
    } else if (oc == "timeout") {
      r.outcome = InvokeResult::Outcome::Timeout;
    } else {
      r.outcome = InvokeResult::Outcome::Failed;
      r.error_message = "invoke: unknown outcome " + json::compact(*res);
    }
  }
  return out;
}

void GuestClient::shutdown() {
  if (!ch_) return;
  if (ended_.empty()) {
    auto id = request("shutdown", jx::obj());
    (void)await(id, kShutdownDeadline);
    ch_->closeWrite(false);
    pumpUntil(wire::deadlineIn(kShutdownDeadline), [&] { return !ch_->running(); });
  }
  ch_->close(false);
  dispatch();
}

}  // namespace conform::cognipeer
