// run_isolated (isolated.h): fork, limits in the child, one pipe back.
#include "models/isolated.h"

#include <ATen/Parallel.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace models {
namespace {

// Messages from the child: a kind byte, a 4-byte length, the text.
enum Record : char { kStepRecord = 's', kOkRecord = 'o', kInputRecord = 'i',
                     kErrorRecord = 'e', kMemoryRecord = 'm' };
constexpr size_t kMaxReport = 1 << 20;

void send(int fd, Record kind, const std::string& text) {
  std::string r(1, kind);
  const auto n = static_cast<uint32_t>(std::min<size_t>(text.size(), 1 << 16));
  r.append(reinterpret_cast<const char*>(&n), 4);
  r.append(text, 0, n);
  for (size_t done = 0; done < r.size();) {
    const ssize_t k = ::write(fd, r.data() + done, r.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    done += static_cast<size_t>(k);
  }
}

int64_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  statm >> pages;
  return pages * ::sysconf(_SC_PAGESIZE);
}

bool out_of_memory_text(const std::string& what) {
  return what.find("can't allocate memory") != std::string::npos ||
         what.find("std::bad_alloc") != std::string::npos;
}

[[noreturn]] void child(int fd, const std::function<void(const ReportStep&)>& work,
                        const IsolationLimits& limits) {
  at::set_num_threads(1);
  const rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);
  const auto cap = static_cast<rlim_t>(address_space_bytes() + limits.memory_bytes);
  const rlimit as{cap, cap};
  ::setrlimit(RLIMIT_AS, &as);
  try {
    work([fd](const std::string& step) { send(fd, kStepRecord, step); });
    send(fd, kOkRecord, "");
  } catch (const InputError& e) {
    send(fd, kInputRecord, e.where() + '\n' + e.message());
  } catch (const std::bad_alloc&) {
    send(fd, kMemoryRecord, "");
  } catch (const std::exception& e) {
    send(fd, out_of_memory_text(e.what()) ? kMemoryRecord : kErrorRecord, e.what());
  } catch (...) {
    send(fd, kErrorRecord, "an exception that is not a std::exception");
  }
  ::_exit(0);
}

// The child's records, up to EOF or the deadline (false then).
bool read_report(int fd, std::chrono::steady_clock::time_point deadline, std::string& report) {
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (report.size() < kMaxReport) report.append(buf, static_cast<size_t>(n));
  }
}

IsolatedOutcome parse_report(const std::string& report) {
  IsolatedOutcome out;
  out.kind = IsolatedOutcome::kSignal;  // no final record: the child died
  for (size_t at = 0; at + 5 <= report.size();) {
    uint32_t n = 0;
    std::memcpy(&n, report.data() + at + 1, 4);
    if (at + 5 + n > report.size()) break;
    const std::string text = report.substr(at + 5, n);
    switch (report[at]) {
      case kStepRecord: out.step = text; break;
      case kOkRecord: out.kind = IsolatedOutcome::kOk; break;
      case kInputRecord: {
        out.kind = IsolatedOutcome::kInputError;
        const size_t nl = text.find('\n');
        out.where = text.substr(0, nl);
        out.message = nl == std::string::npos ? "" : text.substr(nl + 1);
        break;
      }
      case kMemoryRecord: out.kind = IsolatedOutcome::kOutOfMemory; break;
      default: out.kind = IsolatedOutcome::kError; out.message = text;
    }
    at += 5 + n;
  }
  return out;
}

double positive_env(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !std::isfinite(x) || x <= 0 || x > 1e9)
    throw InputError(name, std::string("\"") + v +
                               "\" is not a positive number (the environment variable)");
  return x;
}

}  // namespace

IsolationLimits isolation_limits() {
  IsolationLimits l;
  l.seconds = positive_env("SPLITSIM_MODEL_CHECK_S", l.seconds);
  l.memory_bytes = static_cast<int64_t>(
      positive_env("SPLITSIM_MODEL_CHECK_MIB", static_cast<double>(l.memory_bytes >> 20)) *
      (1 << 20));
  return l;
}

IsolatedOutcome run_isolated(const std::function<void(const ReportStep&)>& work,
                             const IsolationLimits& limits) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]);
    throw std::runtime_error(std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], work, limits);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(limits.seconds));
  std::string report;
  const bool finished = read_report(fds[0], deadline, report);
  ::close(fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  IsolatedOutcome out = parse_report(report);
  if (!finished) {
    out.kind = IsolatedOutcome::kTimeout;
  } else if (WIFSIGNALED(status) && out.kind == IsolatedOutcome::kSignal) {
    out.signal = WTERMSIG(status);
  } else if (out.kind == IsolatedOutcome::kSignal) {
    out.kind = IsolatedOutcome::kError;  // exited without a word
    out.message = "the checking process exited with status " +
                  std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return out;
}

}  // namespace models
}  // namespace splitsim
