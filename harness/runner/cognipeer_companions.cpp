// harness/runner/cognipeer_companions — see cognipeer_companions.h.
#include "harness/runner/cognipeer_companions.h"

#include <fmt/format.h>

namespace conform::runner {

namespace cg = conform::cognipeer;

Expected<std::vector<Companion>, std::string> parseCompanions(const json::Value& list) {
  std::vector<Companion> out;
  if (list.IsNull()) return out;
  if (!list.IsArray()) return unexpected(std::string("companions: expected an array"));
  int i = 0;
  for (const auto& c : list.GetArray()) {
    std::string at = fmt::format("companions[{}]", i);
    if (!c.IsObject()) return unexpected(at + ": expected an object");
    Companion k;
    k.shape.index = kCompanionBase + i;
    k.shape.name = std::string(json::stringMember(c, "name").value_or(""));
    if (const json::Value* p = json::member(c, "priority"); p && p->IsNumber()) k.shape.priority = static_cast<std::int64_t>(p->GetDouble());
    k.shape.closed = json::stringMember(c, "failureMode").value_or("open") == "closed";
    if (const json::Value* h = json::member(c, "hooks"); h && h->IsObject()) {
      k.replies = json::copy(*h);
      for (const auto& m : h->GetObject()) k.shape.hooks.emplace_back(m.name.GetString(), m.name.GetStringLength());
    }
    if (const json::Value* p = json::member(c, "provides"); p && p->IsArray())
      for (const auto& s : p->GetArray())
        if (s.IsString()) k.shape.provides.emplace_back(s.GetString(), s.GetStringLength());
    if (const json::Value* t = json::member(c, "tools"); t && t->IsArray()) k.shape.tools = json::copy(*t);
    if (const json::Value* v = json::member(c, "inheritToSubagents"); v && v->IsBool()) k.shape.inherit_to_subagents = v->GetBool();
    out.push_back(std::move(k));
    ++i;
  }
  return out;
}

std::vector<cg::InvokeResult> CompanionGuest::invokeAll(std::vector<cg::InvokeRequest> batch) {
  std::vector<cg::InvokeResult> out(batch.size());
  std::vector<cg::InvokeRequest> remote;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].plugin < kCompanionBase) {
      where.push_back(i);
      remote.push_back(std::move(batch[i]));
      continue;
    }
    cg::InvokeResult& r = out[i];
    std::size_t k = static_cast<std::size_t>(batch[i].plugin - kCompanionBase);
    const json::Value* reply = k < companions.size() ? json::member(companions[k].replies, batch[i].name) : nullptr;
    if (!reply || reply->IsNull()) {
      r.value.SetObject();
      r.value.AddMember("$type", "undefined", r.value.GetAllocator());
    } else if (auto t = json::stringMember(*reply, "$throw")) {
      r.outcome = cg::InvokeResult::Outcome::Threw;
      r.error_name = "Error";
      r.error_message = std::string(*t);
    } else {
      r.value = json::copy(*reply);
    }
  }
  if (!remote.empty()) {
    auto res = client_.invokeAll(std::move(remote));
    for (std::size_t j = 0; j < res.size() && j < where.size(); ++j) out[where[j]] = std::move(res[j]);
  }
  return out;
}

}  // namespace conform::runner
