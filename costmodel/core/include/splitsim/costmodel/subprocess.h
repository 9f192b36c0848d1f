#pragma once
// Child processes without a shell: fork + execvp of an argument vector, so
// no argument is ever interpreted by /bin/sh (no injection, no quoting).
// Used by NetnsLink (ip, tc) and by `splitsim validate` (the exec pair).
#include <sys/types.h>

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

// The last `max_chars` characters of a text file ("" when unreadable).
std::string file_tail(const std::string& path, size_t max_chars = 2000);

}  // namespace splitsim
