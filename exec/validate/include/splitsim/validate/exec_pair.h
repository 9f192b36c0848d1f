#pragma once
// Runs one scenario variant for real: `splitsim exec` as server and as
// client, each pinned to its own CPUs, optionally inside a network
// namespace (`ip netns exec NS ...`), bounded by a timeout. The server's
// stdout is the measured metrics JSON ("splitsim.metrics/1", source "exec").
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace splitsim {

// exec's own --timeout-s (connect and each transfer): the whole-run
// timeout, at most this.
constexpr double kExecOperationTimeoutS = 60;

struct ExecPairOptions {
  std::string exec_bin;    // binary whose `exec` subcommand runs (normally splitsim itself)
  std::string scenario;    // scenario file (made absolute)
  std::string variant;     // passed as --variant when non-empty
  int threads = 1;         // --threads of each process
  int64_t iterations = 0;  // --iterations of both when > 0
  double timeout_s = 300;  // whole run
};

struct ExecEndpoints {
  std::string server_netns, client_netns;  // empty: this namespace
  std::string server_address;              // the server listens here; the client connects here
  int port = 29500;
  std::vector<int> server_cpus, client_cpus;  // empty: not pinned
  // Both processes set it on their connections (--tcp-congestion-control);
  // empty: the namespace's default.
  std::string congestion_control;
};

// The two argument vectors (for display and tests).
std::vector<std::string> exec_server_argv(const ExecPairOptions& o, const ExecEndpoints& e);
std::vector<std::string> exec_client_argv(const ExecPairOptions& o, const ExecEndpoints& e);

// Starts the server, then the client, and waits for both. When either
// exits non-zero, the other is killed; at the deadline both are. Returns
// the server's stdout parsed as JSON. Throws std::runtime_error with both
// exit codes and the tails of both stderr streams otherwise, or when the
// server's stdout is not JSON. `progress` gets the command lines.
nlohmann::json run_exec_pair(const ExecPairOptions& options, const ExecEndpoints& endpoints,
                             const std::function<void(const std::string&)>& progress);

// The same for any pair of processes: starts `server_argv` (pinned to
// endpoints.server_cpus), then `client_argv` (client_cpus), and returns the
// server's stdout parsed as JSON; throws as run_exec_pair.
nlohmann::json run_process_pair(const std::vector<std::string>& server_argv,
                                const std::vector<std::string>& client_argv,
                                const ExecEndpoints& endpoints, double timeout_s,
                                const std::function<void(const std::string&)>& progress);

// The same for a server and several clients: starts `server_argv` (pinned
// to `server_cpus`), then each client (to `client_cpus`; empty: not
// pinned); when one exits non-zero the others are killed. Returns the
// server's stdout parsed as JSON; throws with every exit code and the
// stderr tails of the server and of the clients that failed.
nlohmann::json run_process_group(const std::vector<std::string>& server_argv,
                                 const std::vector<std::vector<std::string>>& client_argvs,
                                 const std::vector<int>& server_cpus,
                                 const std::vector<int>& client_cpus, double timeout_s,
                                 const std::function<void(const std::string&)>& progress);

// `BIN link-probe` for one side: `megabytes` each way, single messages up
// to `single_max_kib`, rank 0 (server) printing the JSON report
// (splitsim.link_probe/5); `extra`: more of its options.
std::vector<std::string> link_probe_argv(const std::string& exec_bin, const ExecEndpoints& e,
                                         bool server, double megabytes, double single_max_kib,
                                         double timeout_s,
                                         const std::vector<std::string>& extra = {});

// A TCP port that was free on 127.0.0.1 a moment ago (loopback runs).
int free_loopback_port();

}  // namespace splitsim
