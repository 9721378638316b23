// mock_engine/nanopi/session — see session.h.
#include "mock_engine/nanopi/session.h"

#include <fmt/format.h>

namespace conform::nanopi {

HostSession::HostSession(wire::Reactor& r, const clock::Clock& clk, GuestClient::Tap tap)
    : clk_(clk),
      client_(r,
              [this](const std::string& name, const std::vector<std::string>& args) -> std::optional<std::string> {
                if (!host_) return std::string("error: no plugin loaded");
                return host_->onImport(name, args);
              },
              std::move(tap)) {}

HostSession::~HostSession() = default;

Expected<Ok, std::string> HostSession::start(const std::string& runner_dir) {
  runner_dir_ = runner_dir;
  return client_.start(runner_dir);
}

void HostSession::restartRunner(const std::string& why) {
  if (host_) host_->noteRunnerRestart(why);
  if (!client_.restart(runner_dir_)) return;
  json::Document p(rapidjson::kObjectType);
  p.AddMember("path", json::str(component_, p.GetAllocator()), p.GetAllocator());
  auto r = client_.await(client_.request("load", p), kLoadDeadline);
  if (host_ && !r) host_->noteRunnerRestart("the fresh runner could not load the component again: " + r.error(), false);
}

Expected<Ok, std::string> HostSession::load(ExtensionConfig cfg, HostOptions opts) {
  auto t0 = std::chrono::steady_clock::now();
  std::string path = cfg.path;
  component_ = path;
  host_ = std::make_unique<Host>(std::move(cfg), std::move(opts), clk_);
  json::Document p(rapidjson::kObjectType);
  p.AddMember("path", json::str(path, p.GetAllocator()), p.GetAllocator());
  std::int64_t id = client_.request("load", p);
  auto r = client_.await(id, kLoadDeadline);
  runner_load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r) {
    if (client_.ended()) return unexpected("the nanopi guest runner failed: " + r.error());
    host_->loadFailed(r.error());  // -32012 load failed [stage]: not a component, compile error, …
  } else {
    auto li = decodeLoadInfo(*r);
    if (!li) return unexpected("the runner's load result is malformed: " + li.error());
    host_->beginLoad(*li);
    runCalls();
  }
  load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (client_.ended()) return unexpected("the nanopi guest runner failed: " + client_.endReason());
  return Ok{};
}

void HostSession::issue() {
  if (pending_ || !host_) return;
  auto c = host_->takeCall();
  if (!c) return;
  json::Document p(rapidjson::kObjectType);
  auto& a = p.GetAllocator();
  p.AddMember("export", json::str(c->export_name, a), a);
  json::Value args(rapidjson::kArrayType);
  for (const auto& s : c->args) args.PushBack(json::str(s, a), a);
  p.AddMember("args", args, a);
  p.AddMember("budget_ms", json::Value(c->budget_ms), a);
  pending_ = Pending{client_.request("call", p), c->seq, c->budget_ms};
}

void HostSession::finishPending() {
  if (!pending_) return;
  Pending pd = *pending_;
  auto r = client_.await(pd.id, std::chrono::milliseconds(pd.budget_ms) + kRunnerSlack);
  pending_.reset();
  CallResult cr;
  if (!r) {
    cr.outcome = CallResult::Outcome::Failed;
    cr.message = r.error();
    if (!client_.ended()) restartRunner(r.error());
  } else if (auto d = decodeCallResult(*r)) {
    cr = std::move(*d);
  } else {
    cr.outcome = CallResult::Outcome::Failed;
    cr.message = "the runner's call result is malformed: " + d.error();
  }
  host_->onCallResult(pd.seq, cr);
}

void HostSession::runCalls() {
  while (true) {
    finishPending();
    issue();
    if (!pending_) return;
  }
}

Delivery::Status HostSession::deliver(const std::string& event, const std::string& payload) {
  if (!host_) return Delivery::Status::NotLoaded;
  auto st = host_->deliver(event, payload);
  if (st == Delivery::Status::Delivered && !pending_) runCalls();
  return st;
}

Delivery::Status HostSession::startDeliver(const std::string& event, const std::string& payload) {
  if (!host_) return Delivery::Status::NotLoaded;
  auto st = host_->deliver(event, payload);
  if (st == Delivery::Status::Delivered) issue();
  return st;
}

bool HostSession::callTool(const std::string& name, const std::string& args_json) {
  if (!startTool(name, args_json)) return false;
  runCalls();
  return true;
}

bool HostSession::startTool(const std::string& name, const std::string& args_json) {
  if (!host_ || pending_ || !host_->callTool(name, args_json)) return false;
  issue();
  return true;
}

}  // namespace conform::nanopi
