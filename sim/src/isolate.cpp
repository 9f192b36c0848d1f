// The many-simulations path (sim/README.md "Many simulations"): a pool of
// simulation workers, kept for the life of this process and grown up to the
// `jobs` asked for. A worker is the small splitsim-simworker executable when
// it is found (at $SPLITSIM_SIMWORKER, or beside this executable), else a
// forked copy of this process running the same loop; either way each
// simulation runs in a child the worker forks for it (worker.h). Requests go
// to idle workers in input order and the answers are read with poll(), so no
// worker blocks on a full socket; results come back in input order.
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "splitsim/costmodel/subprocess.h"
#include "splitsim/sim/simulator.h"
#include "worker.h"

namespace splitsim {
namespace {

using sim_internal::Want;

bool executable(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// The worker executable: $SPLITSIM_SIMWORKER (a path; "fork" for none),
// else splitsim-simworker beside this executable when it is there. "": none,
// forked copies of this process serve instead. Throws for a
// $SPLITSIM_SIMWORKER that is not an executable file.
std::string find_worker_executable() {
  if (const char* env = std::getenv("SPLITSIM_SIMWORKER"); env && *env) {
    if (std::string(env) == "fork") return "";
    if (!executable(env))
      throw std::runtime_error(std::string("$SPLITSIM_SIMWORKER is \"") + env +
                               "\", not an executable file (the path of splitsim-simworker, or "
                               "\"fork\")");
    return env;
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::string beside = (exe.parent_path() / "splitsim-simworker").string();
  return executable(beside) ? beside : "";
}

bool fork_asked() {
  const char* env = std::getenv("SPLITSIM_SIMWORKER");
  return env != nullptr && std::string(env) == "fork";
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;         // our end of the socket
  std::string in;      // bytes of the answer read so far
  size_t request = 0;  // index of the request it works on
  bool busy = false;
};

class WorkerPool {
 public:
  ~WorkerPool() {
    for (Worker& w : workers_) retire(&w);
  }

  // Runs every request; returns the responses in input order.
  std::vector<std::string> run(const std::vector<std::string>& requests, int jobs) {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      return run_locked(requests, static_cast<size_t>(jobs));
    } catch (...) {
      // Answers still on their way would be read as the next call's.
      for (Worker& w : workers_)
        if (w.busy) retire(&w);
      drop_retired();
      throw;
    }
  }

  // Forgets the workers without waiting for them: called in a forked child,
  // whose copies of the sockets are not its own to use.
  void forget_in_child() {
    for (Worker& w : workers_) ::close(w.fd);
    workers_.clear();
  }

 private:
  std::vector<std::string> run_locked(const std::vector<std::string>& requests, size_t jobs) {
    std::vector<std::string> out(requests.size());
    size_t next = 0, pending = 0;
    while (next < requests.size() || pending > 0) {
      for (Worker& w : workers_)
        if (!w.busy && next < requests.size() && pending < jobs)
          start(&w, requests, next++, &pending);
      while (next < requests.size() && pending < jobs) {
        workers_.push_back(spawn());
        start(&workers_.back(), requests, next++, &pending);
      }
      std::vector<pollfd> fds;
      std::vector<Worker*> polled;
      for (Worker& w : workers_)
        if (w.busy) {
          fds.push_back({w.fd, POLLIN, 0});
          polled.push_back(&w);
        }
      if (fds.empty()) continue;
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
        throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Worker* w = polled[i];
        const bool alive = drain(w);
        if (frame_complete(*w)) {
          out[w->request] = w->in.substr(sizeof(uint64_t));
          w->in.clear();
          w->busy = false;
          --pending;
        } else if (!alive) {  // the worker died: its request failed, the others go on
          out[w->request] = sim_internal::failure_response("the simulation worker died");
          w->busy = false;
          --pending;
        }
        if (!alive) retire(w);
      }
      drop_retired();
    }
    return out;
  }

  void drop_retired() {
    workers_.erase(
        std::remove_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.fd < 0; }),
        workers_.end());
  }

  void start(Worker* w, const std::vector<std::string>& requests, size_t i, size_t* pending) {
    w->request = i;
    w->busy = true;
    ++*pending;
    try {
      sim_internal::write_frame(w->fd, requests[i]);
    } catch (const std::exception&) {
      // A dead worker: drain() sees the end of its stream and reports it.
    }
  }

  // Reads what is there; false at end of stream.
  static bool drain(Worker* w) {
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::recv(w->fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n <= 0) return false;
      w->in.append(buf, static_cast<size_t>(n));
    }
  }

  static bool frame_complete(const Worker& w) {
    uint64_t size = 0;
    if (w.in.size() < sizeof size) return false;
    std::memcpy(&size, w.in.data(), sizeof size);
    return w.in.size() >= sizeof size + size;
  }

  static void retire(Worker* w) {
    if (w->fd >= 0) ::close(w->fd);  // the worker reads end of file and ends
    w->fd = -1;
    int status = 0;
    if (w->pid > 0)
      while (::waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
      }
    w->pid = -1;
  }

  Worker spawn() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    Worker w;
    w.fd = sv[0];
    const std::string exe = find_worker_executable();
    if (!exe.empty()) {
      // stdin is the socket, stdout /dev/null (SimGrid flushes stdio).
      LightSpawnOptions options;
      options.stdin_fd = sv[1];
      options.discard_stdout = true;
      // The worker binds every symbol of SimGrid when it starts: its
      // children then inherit them bound instead of each resolving the
      // hundreds a simulation calls (a tenth of a short simulation's cost).
      options.env = {"LD_BIND_NOW=1"};
      const int rc = spawn_light(exe, {"splitsim-simworker"}, options, &w.pid);
      ::close(sv[1]);
      if (rc != 0) {
        ::close(sv[0]);
        throw std::runtime_error("cannot start " + exe + ": " + std::strerror(rc));
      }
      return w;
    }
    // No worker executable: a forked copy of this process serves instead
    // (each simulation then costs a fork of this larger process).
    static bool told = false;
    if (!told && !fork_asked()) {
      std::cerr << "splitsim: no splitsim-simworker beside this executable; simulating in forked "
                   "copies of this process (slower; see $SPLITSIM_SIMWORKER)\n";
      told = true;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    ::malloc_trim(0);  // heap pages LibTorch freed need not be mapped into the copy
    w.pid = ::fork();
    if (w.pid < 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    if (w.pid == 0) {
      ::close(sv[0]);
      forget_in_child();
      const int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0) ::dup2(null, STDOUT_FILENO);
      sim_internal::serve_simulations(sv[1]);
      ::_exit(0);
    }
    ::close(sv[1]);
    return w;
  }

  std::mutex mu_;
  std::vector<Worker> workers_;
};

WorkerPool& pool() {
  static WorkerPool p;
  return p;
}

std::vector<std::string> run_requests(const std::vector<Plan>& plans, const SimOptions& options,
                                      int jobs, Want want) {
  if (jobs < 1) throw std::invalid_argument("simulate_many: jobs must be >= 1");
  for (const Plan& p : plans) check_simulatable(p);  // input errors before any work
  std::vector<std::string> requests;
  requests.reserve(plans.size());
  for (const Plan& p : plans) requests.push_back(sim_internal::encode_request(p, options, want));
  return pool().run(requests, jobs);
}

}  // namespace

Timeline simulate(const Plan& plan, const SimOptions& options) {
  return std::move(simulate_many({plan}, options, 1).front());
}

std::vector<Timeline> simulate_many(const std::vector<Plan>& plans, const SimOptions& options,
                                    int jobs) {
  const std::vector<std::string> responses = run_requests(plans, options, jobs, Want::kTimeline);
  std::vector<Timeline> out;
  out.reserve(plans.size());
  for (size_t i = 0; i < plans.size(); ++i)
    out.push_back(sim_internal::decode_timeline(responses[i], plans[i].variant));
  return out;
}

std::vector<Metrics> simulate_metrics(const std::vector<Plan>& plans, const SimOptions& options,
                                      int jobs) {
  const std::vector<std::string> responses = run_requests(plans, options, jobs, Want::kMetrics);
  std::vector<Metrics> out;
  out.reserve(plans.size());
  for (size_t i = 0; i < plans.size(); ++i)
    out.push_back(sim_internal::decode_metrics(responses[i], plans[i].variant));
  return out;
}

}  // namespace splitsim
