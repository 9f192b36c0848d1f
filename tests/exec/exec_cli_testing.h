#pragma once
// What the `splitsim exec`/`train` end-to-end tests share
// (exec_cli_test.cpp, train_cli_test.cpp): a child process of splitsim's
// with its output in files, and the fixture that writes their scenarios.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exec_test_util.h"

namespace splitsim::testing {

using Clock = std::chrono::steady_clock;

inline std::string slurp(const std::string& file) {
  std::ifstream f(file);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A child process running `args` (splitsim's), stdout/stderr to files.
class Child {
 public:
  Child(const std::string& dir, const std::string& name, const std::vector<std::string>& args)
      : out_(dir + "/" + name + ".out"), err_(dir + "/" + name + ".err") {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      std::vector<char*> argv;
      std::vector<std::string> all = {"timeout", "-s", "KILL", "120", SPLITSIM_BIN};
      all.insert(all.end(), args.begin(), args.end());
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("timeout", argv.data());
      ::_exit(127);
    }
  }
  ~Child() { kill(); }
  // Exit status, or -1 when still running after `limit_s`.
  int wait(double limit_s) {
    const auto t0 = Clock::now();
    while (pid_ > 0) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return code_;
  }
  // SIGKILL to the `timeout` wrapper's child too: the whole process group.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);  // timeout forwards it to splitsim
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }
  // SIGKILL to splitsim itself (the `timeout` wrapper's child), as a crash
  // or kill -9 would end it; false when it was not running.
  bool kill_program() {
    if (pid_ <= 0) return false;
    std::ifstream children("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) +
                           "/children");
    pid_t program = 0;
    if (!(children >> program) || program <= 0) return false;
    return ::kill(program, SIGKILL) == 0;
  }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  int code_ = -1;
};

struct ExecCliTest : ::testing::Test {
  void SetUp() override {
    dir = (std::filesystem::temp_directory_path() /
           ("splitsim_exec_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name()))
              .string();
    std::filesystem::create_directories(dir);
    nlohmann::json s = {{"schema", "splitsim.scenario/1"},
                        {"name", "exec_cli"},
                        {"model", {{"name", "resnet20"}}},
                        {"batch_size", 4},
                        {"partition",
                         {{{"party", "client"}, {"from", "conv1"}, {"to", "layer1.2"}},
                          {{"party", "server"}, {"from", "layer2.0"}, {"to", "head"}}}},
                        {"optimizer", {{"name", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}}},
                        {"devices", {{"client", "xeon_40core"}, {"server", "v100"}}},
                        {"iterations", 3},
                        {"warmup", 1},
                        {"seed", 3}};
    scenario = dir + "/s.json";
    std::ofstream(scenario) << s.dump(2);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::vector<std::string> server_args(int port, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"exec",   scenario,   "--role",
                                  "server", "--listen", "127.0.0.1:" + std::to_string(port),
                                  "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::vector<std::string> client_args(int port, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"exec",   scenario,    "--role",
                                  "client", "--connect", "127.0.0.1:" + std::to_string(port)};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string dir, scenario;
};

}  // namespace splitsim::testing
