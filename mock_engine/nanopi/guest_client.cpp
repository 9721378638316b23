// mock_engine/nanopi/guest_client — see guest_client.h. The process plumbing is guest::GuestProcess;
// this file answers the runner's `h*` import requests and keeps its console lines.
#include "mock_engine/nanopi/guest_client.h"

#include <fmt/format.h>

#include "core/wire/framing.h"

namespace conform::nanopi {

std::string runnerDir(const std::string& explicit_guest_dir) { return guest::runnerDir(explicit_guest_dir, "nanopi"); }

GuestClient::GuestClient(wire::Reactor& r, ImportHandler h, Tap tap)
    : handler_(std::move(h)), proc_(r, "nanopi guest runner", std::move(tap), [this](json::Document& d) { onFrame(d); }) {}

void GuestClient::onFrame(json::Document& d) {
  const json::Value* id = json::member(d, "id");
  auto method = json::stringMember(d, "method");
  if (method && id && id->IsString()) {
    // An `h*` request: answered now, whatever call is running (it is what unblocks the guest,
    // NANOPI-HOST.md §5.5).
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
    proc_.sendRaw(wire::encodeFrame(json::compact(r)));
    return;
  }
  if (method && !id && *method == "console")
    if (const json::Value* params = json::member(d, "params"))
      if (auto t = json::stringMember(*params, "text")) console_.emplace_back(*t);
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
  auto reply = proc_.awaitFrame(id, d);
  if (!reply) return unexpected(reply.error());
  if (auto e = replyError(*reply)) return unexpected(*e);
  const json::Value* r = json::member(*reply, "result");
  return r ? json::copy(*r) : json::Document();
}

}  // namespace conform::nanopi
