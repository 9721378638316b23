// mock_engine/nanopi/host_imports — the nine root imports and their grants (NANOPI-HOST.md §1,
// host.h). Every refusal is an in-band "error: …" string, never a trap. host-http-get is answered
// from HostOptions::http_fixtures: conform never reaches the network on a plugin's behalf.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "mock_engine/nanopi/host.h"

namespace conform::nanopi {

namespace fs = std::filesystem;

namespace {

std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// url_allowlist: an entry matches the URL's host exactly, or is a prefix of the URL when it has a
// scheme, or is "*" (nanopi warns about "*"). conform's reading of the facts, documented.
bool allowed(const std::vector<std::string>& allow, const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return false;
  std::string rest = url.substr(scheme + 3);
  std::string host = rest.substr(0, rest.find_first_of("/:?#"));
  for (const auto& a : allow) {
    if (a == "*" || a == host) return true;
    if (a.find("://") != std::string::npos && url.rfind(a, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::string Host::refuse(const std::string& name, const std::string& why) {
  log_.push_back(fmt::format("nanopi: [{}] {} refused: {}", stem_, name, why));
  return "error: " + why;
}

std::string Host::fsRead(const std::string& path) {
  if (!cfg_.allow_fs) return refuse("host-fs-read", "host-fs-read is not granted (allow_fs = false)");
  std::error_code ec;
  fs::path root = opts_.cwd.empty() ? fs::current_path(ec) : fs::path(opts_.cwd);
  root = fs::weakly_canonical(root, ec);
  fs::path target = fs::weakly_canonical(fs::path(path).is_absolute() ? fs::path(path) : root / path, ec);
  if (ec) return refuse("host-fs-read", fmt::format("cannot resolve `{}`", path));
  // cwd-confined: the resolved path (symlinks followed) must stay under the working directory.
  auto rel = target.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") return refuse("host-fs-read", fmt::format("`{}` is outside the working directory", path));
  std::ifstream in(target, std::ios::binary);
  if (!in) return refuse("host-fs-read", fmt::format("cannot read `{}`", path));
  std::string data(kFsReadMaxBytes + 1, '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<std::size_t>(in.gcount()));
  if (data.size() > kFsReadMaxBytes) return refuse("host-fs-read", fmt::format("`{}` is larger than {} bytes", path, kFsReadMaxBytes));
  return data;
}

std::string Host::httpGet(const std::string& url) {
  if (!cfg_.allow_network) return refuse("host-http-get", "host-http-get is not granted (allow_network = false)");
  if (!allowed(cfg_.url_allowlist, url)) return refuse("host-http-get", fmt::format("`{}` is not in url_allowlist", url));
  auto it = opts_.http_fixtures.find(url);
  if (it == opts_.http_fixtures.end())
    return refuse("host-http-get", fmt::format("no fixture for `{}` (conform answers host-http-get locally, never from the network)", url));
  return it->second;
}

std::optional<std::string> Host::onImport(const std::string& name, const std::vector<std::string>& args) {
  ImportCall rec{name, args, std::nullopt, in_flight_ ? in_flight_->export_name : std::string()};
  const bool in_handler = in_flight_ && in_flight_->purpose == GuestCall::Purpose::HandleEvent;
  auto arg = [&](std::size_t i) { return i < args.size() ? args[i] : std::string(); };
  std::optional<std::string> answer;
  if (name == "host-log") {
    log_.push_back(fmt::format("[{}] {}", stem_, oneLine(arg(1))));
  } else if (name == "host-notify") {
    // NP-38: not gated, at most 10 lines per plugin per turn; flattened, prefixed, 64 KiB cap.
    if (notify_this_turn_ >= kNotifyPerTurn) {
      ++suppressed_this_turn_;
      if (suppressed_this_turn_ == 1)
        fault("NP-38", fmt::format("the plugin called host-notify more than {} times in one turn", kNotifyPerTurn),
              fmt::format("at most {} notifications per turn", kNotifyPerTurn), "the 11th was suppressed");
      answer = fmt::format("error: notify suppressed — at most {} lines per plugin per turn", kNotifyPerTurn);
    } else {
      ++notify_this_turn_;
      std::string text = oneLine(arg(0));
      bool cut = text.size() > kNotifyMaxBytes;
      if (cut) text.resize(kNotifyMaxBytes);
      notices_.push_back(fmt::format("[{}] {}", stem_, text));
      answer = cut ? fmt::format("error: notification truncated to {} bytes", kNotifyMaxBytes) : std::string();
    }
  } else if (name == "host-fs-read") {
    answer = fsRead(arg(0));
  } else if (name == "host-http-get") {
    if (in_handler)
      fault("NP-28", "handle-event called host-http-get: event handlers should not fetch from the network",
            "record in the store and act where a user is waiting", "host-http-get " + arg(0));
    answer = httpGet(arg(0));
  } else if (name == "host-store-get") {
    if (!cfg_.allow_store) answer = refuse(name, "host-store-get is not granted (allow_store = false)");
    else {
      auto it = store_.find(arg(0));
      answer = it == store_.end() ? std::string() : it->second;
    }
  } else if (name == "host-store-set") {
    if (!cfg_.allow_store) answer = refuse(name, "host-store-set is not granted (allow_store = false)");
    else {
      std::size_t old = store_.count(arg(0)) ? arg(0).size() + store_[arg(0)].size() : 0;
      std::size_t next = store_bytes_ - old + arg(0).size() + arg(1).size();
      if (next > kStoreMaxBytes) answer = refuse(name, fmt::format("the store is limited to {} bytes per plugin", kStoreMaxBytes));
      else {
        store_[arg(0)] = arg(1);
        store_bytes_ = next;
        answer = std::string();
      }
    }
  } else if (name == "host-set-context") {
    if (!cfg_.allow_context) answer = refuse(name, "host-set-context is not granted (allow_context = false)");
    else if (arg(0).size() > kContextMaxBytes) answer = refuse(name, fmt::format("context is limited to {} bytes", kContextMaxBytes));
    else {
      context_ = arg(0);
      answer = std::string();
    }
  } else if (name == "host-call-tool") {
    if (std::find(cfg_.allow_tools.begin(), cfg_.allow_tools.end(), arg(0)) == cfg_.allow_tools.end()) {
      if (in_handler)
        fault("NP-39", fmt::format("handle-event tried to call tool `{}` without an allow_tools grant", arg(0)),
              "acting on events needs allow_tools", "host-call-tool " + arg(0));
      answer = refuse(name, fmt::format("tool `{}` is not in allow_tools", arg(0)));
    } else {
      auto it = opts_.tool_fixtures.find(arg(0));
      answer = it != opts_.tool_fixtures.end() ? it->second
                                               : fmt::format("{{\"content\":\"conform fixture result of {}\",\"is_error\":false}}", arg(0));
    }
  } else if (name == "host-send-user-message") {
    if (!cfg_.allow_send_message) {
      if (in_handler)
        fault("NP-39", "handle-event tried to send a user message without allow_send_message", "acting on events needs allow_send_message",
              "host-send-user-message");
      answer = refuse(name, "host-send-user-message is not granted (allow_send_message = false)");
    } else if (sent_this_turn_ >= kSendMessagesPerTurn) {
      answer = refuse(name, fmt::format("loop guard: at most {} message per plugin per turn", kSendMessagesPerTurn));
    } else {
      ++sent_this_turn_;
      user_messages_.push_back(arg(0));
      answer = std::string();
    }
  } else {
    answer = refuse(name, fmt::format("`{}` is not a nanopi host import", name));
  }
  rec.answer = answer;
  imports_.push_back(std::move(rec));
  return answer;
}

}  // namespace conform::nanopi
