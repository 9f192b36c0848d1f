#pragma once
// Child processes without a shell: fork + execvp (or posix_spawn) of an
// argument vector, so no argument is ever interpreted by /bin/sh (no
// injection, no quoting). The one home of splitsim's child processes: used
// by NetnsLink (ip, tc) and `splitsim validate` (the exec pair), by the
// simulator's worker pool and by `splitsim bench` (spawn_light).
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace splitsim {

struct CommandResult {
  int exit_code = -1;    // WEXITSTATUS, or 128 + signal when killed
  std::string out, err;  // captured stdout and stderr
};

// Runs argv (argv[0] looked up on PATH), waits at most `timeout_s` (then
// kills it: exit_code 137) and returns its exit code and output.
// Throws std::runtime_error when the process cannot be started.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s = 30);

// Runs argv and throws std::runtime_error naming the command, its exit code
// and its stderr unless it exits 0.
void run_checked(const std::vector<std::string>& argv, double timeout_s = 30);

// "ip -n ns link set lo up" (arguments with spaces are quoted for display only).
std::string command_line(const std::vector<std::string>& argv);

struct SpawnOptions {
  std::vector<int> cpus;    // sched_setaffinity in the child before exec (empty: inherit)
  std::string stdout_file;  // redirect targets (empty: inherit)
  std::string stderr_file;
};

// Starts argv in its own process group (setpgid) and returns its pid. The
// child is killed (PR_SET_PDEATHSIG) when the thread that spawned it ends,
// so spawn from a thread that outlives the child (validate: the main one).
// Throws std::runtime_error when fork fails or argv[0] cannot be executed
// (reported back through a close-on-exec pipe, so the error is immediate).
pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options);

// Kills the process group of `pid` (SIGTERM, then SIGKILL after `grace_s`)
// and reaps it. Safe to call for a process that already exited but was not reaped.
void kill_group(pid_t pid, double grace_s = 1.0);

// Waits for every pid until all have exited or `timeout_s` passed. As soon
// as one exits non-zero (and `stop_on_failure`), or at the deadline, the
// others are killed (kill_group). Returns the exit codes in input order:
// WEXITSTATUS, 128 + signal, or 124 for a process killed at the deadline,
// 143 for one killed because another failed.
std::vector<int> wait_all(const std::vector<pid_t>& pids, double timeout_s,
                          bool stop_on_failure = true);

// What spawn_light sets up in the child.
struct LightSpawnOptions {
  int stdin_fd = -1;             // made the child's stdin (-1: inherit)
  int stdout_fd = -1;            // made the child's stdout (-1: inherit)
  bool discard_stdout = false;   // stdout to /dev/null (instead of stdout_fd)
  bool discard_stderr = false;   // stderr to /dev/null
  std::vector<std::string> env;  // "NAME=VALUE": set in the child (any NAME= inherited dropped)
};

// Starts the executable `exe` with `argv` (argv[0]: the name it sees) and
// this process's environment changed by options.env, and returns its pid.
// posix_spawn: the child never copies this process's memory, so a large
// parent starts it quickly and its peak RSS is its own. No process group,
// no PDEATHSIG (unlike spawn). Returns 0 and sets *pid, or the error number
// (errno) when it cannot start.
int spawn_light(const std::string& exe, const std::vector<std::string>& argv,
                const LightSpawnOptions& options, pid_t* pid);

// Waits for `pid` (retrying on EINTR) and returns its exit code: WEXITSTATUS,
// 128 + signal, -1 when it cannot be waited for. With `peak_rss_bytes`, also
// the child's peak resident set size (getrusage's ru_maxrss) in bytes.
int wait_exit_code(pid_t pid, int64_t* peak_rss_bytes = nullptr);

// Runs argv (argv[0] a path) with this process's stdin, stderr and process
// group (a Ctrl-C reaches it too) through spawn_light, and returns its exit
// code as wait_exit_code (-1 when it could not start) with its stdout
// appended to *out.
int run_capturing_stdout(const std::vector<std::string>& argv, std::string* out);

// The last `max_chars` characters of a text file ("" when unreadable).
std::string file_tail(const std::string& path, size_t max_chars = 2000);

}  // namespace splitsim
