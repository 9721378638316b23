// mock_engine/cognipeer/guest_client — see guest_client.h. Requests carry integer ids from 1 (the DSL's
// own `send request` ids start at 1,000,000, so its replies never collide with ours).
#include "mock_engine/cognipeer/guest_client.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/wire/framing.h"
#include "mock_engine/cognipeer/jsonx.h"

namespace conform::cognipeer {

std::string runnerDir(const std::string& explicit_dir) { return guest::runnerDir(explicit_dir, "cognipeer"); }

GuestClient::GuestClient(wire::Reactor& r, Tap tap)
    : proc_(r, "Cognipeer guest runner", std::move(tap), [this](json::Document& d) { onFrame(d); }) {}

GuestClient::~GuestClient() = default;

void GuestClient::onFrame(json::Document& d) {
  const json::Value* id = json::member(d, "id");
  auto method = json::stringMember(d, "method");
  if (!method) return;  // a reply to a foreign id (the DSL's own requests): the tap has it
  if (*method == "console" || *method == "log") {
    const json::Value& prm = d.HasMember("params") ? d["params"] : d;
    console_.push_back({jx::getStr(prm, "plugin"), *method == "log" ? "log" : jx::getStr(prm, "stream"), jx::getStr(prm, "text")});
  }
  if (id) {  // a runner request (h*): this runner has no host imports -> method not found
    json::Document r = jx::obj();
    jx::set(r, "jsonrpc", "2.0");
    jx::set(r, "id", *id);
    jx::set(r, "error", jx::lit(R"({"code":-32601,"message":"conform's Cognipeer host answers no runner requests"})"));
    proc_.sendRaw(wire::encodeFrame(json::compact(r)));
  }
}

Expected<json::Document, std::string> GuestClient::load(const std::string& path) {
  json::Document prm = jx::obj();
  jx::set(prm, "path", path);
  auto f = proc_.awaitFrame(proc_.request("load", prm), kLoadDeadline);
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
    ids.push_back(proc_.request("invoke", prm));
    longest = std::max(longest, budget);
    ++invokes_;
  }
  std::vector<InvokeResult> out(batch.size());
  auto deadline = std::chrono::milliseconds(longest) + kRunnerSlack;
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - (std::chrono::steady_clock::now() - t0));
    auto f = proc_.awaitFrame(ids[i], std::max(left, std::chrono::milliseconds(1)));
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

}  // namespace conform::cognipeer
