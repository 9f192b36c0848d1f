#include "splitsim/costmodel/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern "C" char** environ;

namespace splitsim {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child after fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(char* const* argv, int error_fd) {
  execvp(argv[0], argv);
  const int e = errno;
  (void)!write(error_fd, &e, sizeof e);
  _exit(127);
}

// Forks and execs; `setup` runs in the child first. Returns the pid, or
// throws naming argv[0] when exec failed (errno read from a CLOEXEC pipe).
template <typename Setup>
pid_t fork_exec(const std::vector<std::string>& argv, Setup setup) {
  if (argv.empty()) throw std::invalid_argument("fork_exec: empty argv");
  auto args = c_argv(argv);
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(err_pipe[0]);
    close(err_pipe[1]);
    throw std::runtime_error("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    close(err_pipe[0]);
    // Die with the parent (a validate killed with SIGKILL must not leave its
    // exec children training). PDEATHSIG survives exec; the getppid check
    // covers a parent that died before prctl.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    setup();
    exec_child(args.data(), err_pipe[1]);
  }
  close(err_pipe[1]);
  int child_errno = 0;
  ssize_t n;
  do n = read(err_pipe[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n == sizeof child_errno) {
    waitpid(pid, nullptr, 0);
    throw std::runtime_error("cannot run \"" + argv[0] + "\": " + strerror(child_errno));
  }
  return pid;
}

}  // namespace

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a.find(' ') == std::string::npos ? a : "\"" + a + "\"";
  }
  return out;
}

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  pid_t pid;
  try {
    pid = fork_exec(argv, [&] {
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
    });
  } catch (...) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    throw;
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  const auto t0 = Clock::now();
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    const double left = timeout_s - seconds_since(t0);
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left * 1000) + 1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, n);
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = killed ? 137 : decode_status(status);
  return result;
}

void run_checked(const std::vector<std::string>& argv, double timeout_s) {
  const CommandResult r = run_command(argv, timeout_s);
  if (r.exit_code != 0)
    throw std::runtime_error(
        "\"" + command_line(argv) + "\" failed with exit code " + std::to_string(r.exit_code) +
        (r.err.empty() ? "" : ": " + r.err.substr(0, r.err.find_last_not_of("\n") + 1)));
}

pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  return fork_exec(argv, [&] {
    setpgid(0, 0);
    if (!options.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : options.cpus) CPU_SET(c, &set);
      sched_setaffinity(0, sizeof set, &set);
    }
    const std::pair<const std::string*, int> redirects[] = {{&options.stdout_file, STDOUT_FILENO},
                                                            {&options.stderr_file, STDERR_FILENO}};
    for (const auto& [file, target] : redirects) {
      if (file->empty()) continue;
      const int fd = open(file->c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(126);
      dup2(fd, target);
      close(fd);
    }
  });
}

void kill_group(pid_t pid, double grace_s) {
  ::kill(-pid, SIGTERM);
  ::kill(pid, SIGTERM);
  const auto t0 = Clock::now();
  while (seconds_since(t0) < grace_s) {
    if (waitpid(pid, nullptr, WNOHANG) != 0) {
      ::kill(-pid, SIGKILL);  // leftovers of the group, if any
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

std::vector<int> wait_all(const std::vector<pid_t>& pids, double timeout_s, bool stop_on_failure) {
  std::vector<int> codes(pids.size(), -1);
  std::vector<bool> done(pids.size(), false);
  size_t left = pids.size();
  const auto t0 = Clock::now();
  auto kill_rest = [&](int code) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      kill_group(pids[i]);
      codes[i] = code;
      done[i] = true;
    }
    left = 0;
  };
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      const pid_t r = waitpid(pids[i], &status, WNOHANG);
      if (r == 0) continue;
      done[i] = true;
      --left;
      codes[i] = r < 0 ? -1 : decode_status(status);
      if (codes[i] != 0 && stop_on_failure) kill_rest(143);
    }
    if (left == 0) break;
    if (seconds_since(t0) >= timeout_s) {
      kill_rest(124);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return codes;
}

int spawn_light(const std::string& exe, const std::vector<std::string>& argv,
                const LightSpawnOptions& options, pid_t* pid) {
  auto args = c_argv(argv);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    bool replaced = false;
    for (const std::string& set : options.env)
      replaced |= var.substr(0, var.find('=') + 1) == set.substr(0, set.find('=') + 1);
    if (!replaced) env.push_back(*e);
  }
  for (const std::string& set : options.env) env.push_back(const_cast<char*>(set.c_str()));
  env.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (options.stdin_fd >= 0) posix_spawn_file_actions_adddup2(&fa, options.stdin_fd, STDIN_FILENO);
  if (options.stdout_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, options.stdout_fd, STDOUT_FILENO);
  if (options.discard_stdout)
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (options.discard_stderr)
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const int rc = ::posix_spawn(pid, exe.c_str(), &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc;
}

int wait_exit_code(pid_t pid, int64_t* peak_rss_bytes) {
  int status = 0;
  rusage usage{};
  pid_t r;
  while ((r = ::wait4(pid, &status, 0, &usage)) < 0 && errno == EINTR) {
  }
  if (peak_rss_bytes != nullptr) *peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  return r < 0 ? -1 : decode_status(status);
}

int run_capturing_stdout(const std::vector<std::string>& argv, std::string* out) {
  int fds[2];
  if (argv.empty() || pipe2(fds, O_CLOEXEC) != 0) return -1;
  LightSpawnOptions options;
  options.stdout_fd = fds[1];
  std::fflush(nullptr);
  pid_t pid = -1;
  const int rc = spawn_light(argv[0], argv, options, &pid);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return -1;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  return wait_exit_code(pid);
}

std::string file_tail(const std::string& path, size_t max_chars) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max_chars ? "..." + s.substr(s.size() - max_chars) : s;
}

}  // namespace splitsim
