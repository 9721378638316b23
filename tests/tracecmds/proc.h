// tests/tracecmds/proc.h — runs the `conform` executable (and helpers) as a real child process with
// files for stdin/stdout/stderr, the way an engine would start `conform record`. Why not the core
// Channel: these tests check raw bytes and raw wait statuses (exit vs signal) of conform itself.
//
// Deadline without sleeping: the child arms alarm() before exec; the alarm survives exec, so a
// hung conform dies of SIGALRM and the test fails on the status instead of hanging.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace tracecmds {

// A fresh directory per test (removed at the end).
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> n{0};
    path = std::filesystem::temp_directory_path() /
           ("conform-tracecmds-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline std::string readFile(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
inline void writeFile(const std::string& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << data;
}

struct Result {
  int status = 0;  // raw wait status
  std::string out, err;
  bool exited() const { return WIFEXITED(status); }
  int code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  int signal() const { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }
};

// Watchdog for every child: far above any expected run time, far below a CI timeout.
inline constexpr unsigned kWatchdogSeconds = 60;

inline Result run(const std::vector<std::string>& argv, const std::string& input, const TempDir& dir) {
  static std::atomic<int> n{0};
  const std::string base = dir / ("run" + std::to_string(n++));
  writeFile(base + ".in", input);
  pid_t pid = ::fork();
  if (pid == 0) {
    int in = ::open((base + ".in").c_str(), O_RDONLY);
    int out = ::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::alarm(kWatchdogSeconds);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  Result r;
  ::waitpid(pid, &r.status, 0);
  r.out = readFile(base + ".out");
  r.err = readFile(base + ".err");
  return r;
}

inline std::string conformBin() { return std::string(CONFORM_BIN_DIR) + "/conform"; }
inline std::string helper(const std::string& name) { return std::string(CONFORM_HELPER_DIR) + "/" + name; }
inline std::string traceData(const std::string& name) {
  return std::string(CONFORM_SOURCE_DIR) + "/tests/data/traces/" + name;
}

}  // namespace tracecmds
