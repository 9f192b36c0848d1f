#include "splitsim/validate/exec_pair.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "splitsim/validate/netns_link.h"
#include "splitsim/costmodel/subprocess.h"

namespace splitsim {
namespace {

std::vector<std::string> in_netns(const std::string& ns, std::vector<std::string> argv) {
  if (ns.empty()) return argv;
  argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
  return argv;
}

std::vector<std::string> common(const ExecPairOptions& o, const char* role) {
  std::vector<std::string> argv = {o.exec_bin, "exec",
                                   std::filesystem::absolute(o.scenario).string(), "--role", role};
  return argv;
}

// Both sides get the same --variant and --iterations (exec's handshake
// compares them). exec's --timeout-s bounds its connect and each transfer.
void add_congestion_control(std::vector<std::string>& argv, const ExecEndpoints& e) {
  if (!e.congestion_control.empty())
    argv.insert(argv.end(), {"--tcp-congestion-control", e.congestion_control});
}

void add_common_flags(std::vector<std::string>& argv, const ExecPairOptions& o,
                      const ExecEndpoints& e) {
  if (!o.variant.empty()) argv.insert(argv.end(), {"--variant", o.variant});
  const double per_op_timeout_s = std::min(o.timeout_s, kExecOperationTimeoutS);
  argv.insert(argv.end(), {"--threads", std::to_string(o.threads), "--timeout-s",
                           std::to_string(static_cast<long long>(std::ceil(per_op_timeout_s)))});
  if (o.iterations > 0) argv.insert(argv.end(), {"--iterations", std::to_string(o.iterations)});
  add_congestion_control(argv, e);
}

constexpr const char* kWorkDirPrefix = "splitsim-validate-";

// Removes work directories left by validate processes that no longer exist
// (killed with SIGKILL, which no handler sees): "splitsim-validate-PID-XXXXXX"
// owned by this user whose PID is gone.
void remove_stale_work_dirs(const std::filesystem::path& tmp) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kWorkDirPrefix, 0) != 0) continue;
    const std::string rest = name.substr(std::strlen(kWorkDirPrefix));
    const size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(rest.substr(0, dash).c_str()));
    struct stat st {};
    if (pid <= 0 || lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid())
      continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code remove_ec;
    fs::remove_all(entry.path(), remove_ec);
  }
}

// A fresh directory for the two processes' output files, named after this
// process so that a later run can tell a leftover.
std::string make_work_dir() {
  const auto tmp = std::filesystem::temp_directory_path();
  remove_stale_work_dirs(tmp);
  std::string tmpl = (tmp / (kWorkDirPrefix + std::to_string(getpid()) + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
  return tmpl;
}

}  // namespace

std::vector<std::string> exec_server_argv(const ExecPairOptions& o, const ExecEndpoints& e) {
  auto argv = common(o, "server");
  argv.insert(argv.end(), {"--listen", e.server_address + ":" + std::to_string(e.port), "--json"});
  add_common_flags(argv, o, e);
  return in_netns(e.server_netns, argv);
}

std::vector<std::string> exec_client_argv(const ExecPairOptions& o, const ExecEndpoints& e) {
  auto argv = common(o, "client");
  argv.insert(argv.end(), {"--connect", e.server_address + ":" + std::to_string(e.port)});
  add_common_flags(argv, o, e);
  return in_netns(e.client_netns, argv);
}

std::vector<std::string> link_probe_argv(const std::string& exec_bin, const ExecEndpoints& e,
                                         bool server, double megabytes, double single_max_kib,
                                         double timeout_s, const std::vector<std::string>& extra) {
  const std::string address = e.server_address + ":" + std::to_string(e.port);
  std::vector<std::string> argv = {exec_bin,
                                   "link-probe",
                                   "--role",
                                   server ? "server" : "client",
                                   server ? "--listen" : "--connect",
                                   address,
                                   "--megabytes",
                                   std::to_string(megabytes),
                                   "--single-max-kib",
                                   std::to_string(single_max_kib),
                                   "--timeout-s",
                                   std::to_string(static_cast<long long>(std::ceil(timeout_s)))};
  if (server) argv.push_back("--json");
  argv.insert(argv.end(), extra.begin(), extra.end());
  add_congestion_control(argv, e);
  return in_netns(server ? e.server_netns : e.client_netns, argv);
}

nlohmann::json run_exec_pair(const ExecPairOptions& options, const ExecEndpoints& endpoints,
                             const std::function<void(const std::string&)>& progress) {
  return run_process_pair(exec_server_argv(options, endpoints),
                          exec_client_argv(options, endpoints), endpoints, options.timeout_s,
                          progress);
}

nlohmann::json run_process_pair(const std::vector<std::string>& server_argv,
                                const std::vector<std::string>& client_argv,
                                const ExecEndpoints& endpoints, double timeout_s,
                                const std::function<void(const std::string&)>& progress) {
  return run_process_group(server_argv, {client_argv}, endpoints.server_cpus, endpoints.client_cpus,
                           timeout_s, progress);
}

nlohmann::json run_process_group(const std::vector<std::string>& server_argv,
                                 const std::vector<std::vector<std::string>>& client_argvs,
                                 const std::vector<int>& server_cpus,
                                 const std::vector<int>& client_cpus, double timeout_s,
                                 const std::function<void(const std::string&)>& progress) {
  const size_t n = client_argvs.size();
  // Client i writes client<i>.out/.err ("client" alone when it is the only one).
  auto client_name = [n](size_t i) { return "client" + (n == 1 ? "" : std::to_string(i)); };
  std::vector<std::string> files = {"server.out", "server.err"};
  for (size_t i = 0; i < n; ++i)
    files.insert(files.end(), {client_name(i) + ".out", client_name(i) + ".err"});
  const std::string dir = make_work_dir();
  // Removed on return, on an exception, and by the signal handler on
  // SIGINT, SIGTERM and SIGHUP; after SIGKILL by the next run.
  NetnsLink::register_work_dir(dir, files);
  std::vector<pid_t> pids;
  struct Cleanup {
    std::string dir;
    std::vector<pid_t>* pids;
    ~Cleanup() {
      for (pid_t p : *pids) NetnsLink::unregister_child(p);
      NetnsLink::unregister_work_dir();
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir, &pids};

  progress("server: " + command_line(server_argv));
  pids.push_back(spawn(server_argv, {server_cpus, dir + "/server.out", dir + "/server.err"}));
  NetnsLink::register_child(pids.back());
  // Give the server a moment to listen; the clients retry until their timeout anyway.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (size_t i = 0; i < n; ++i) {
    progress(client_name(i) + ": " + command_line(client_argvs[i]));
    try {
      pids.push_back(spawn(client_argvs[i], {client_cpus, dir + "/" + client_name(i) + ".out",
                                             dir + "/" + client_name(i) + ".err"}));
    } catch (...) {
      for (pid_t p : pids) kill_group(p);
      throw;
    }
    NetnsLink::register_child(pids.back());
  }
  const std::vector<int> codes = wait_all(pids, timeout_s);

  auto describe = [](int code) {
    if (code == 124) return std::string("killed at the --timeout-s deadline");
    if (code == 143) return std::string("killed because another process failed");
    return "exit code " + std::to_string(code);
  };
  if (std::any_of(codes.begin(), codes.end(), [](int c) { return c != 0; })) {
    std::ostringstream msg;
    msg << "the real run failed: server " << describe(codes[0]);
    for (size_t i = 0; i < n; ++i) msg << ", " << client_name(i) << " " << describe(codes[i + 1]);
    msg << "\n--- server stderr (tail) ---\n" << file_tail(dir + "/server.err");
    // The clients that failed first (not killed for another's failure), else all.
    for (size_t i = 0; i < n; ++i)
      if (n == 1 || (codes[i + 1] != 0 && codes[i + 1] != 143))
        msg << "\n--- " << client_name(i) << " stderr (tail) ---\n"
            << file_tail(dir + "/" + client_name(i) + ".err");
    throw std::runtime_error(msg.str());
  }
  std::ifstream in(dir + "/server.out");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("the server's stdout is not JSON (" + std::string(e.what()) +
                             "); it began with: " + text.str().substr(0, 300));
  }
}

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace splitsim
