// The many-simulations path: each simulation in a forked child process
// (SimGrid allows one Engine per process). The child runs
// simulate_in_process and writes its Timeline to a pipe as a status byte
// then raw bytes; the parent reads every child's pipe with poll() so no
// child blocks on a full pipe. See sim/README.md "Many simulations".
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "splitsim/costmodel/errors.h"
#include "splitsim/sim/simulator.h"

namespace splitsim {
namespace {

static_assert(std::is_trivially_copyable_v<TimelineEvent>, "events travel as raw bytes");

enum Status : char { kOk = 0, kInputError = 1, kFailure = 2 };

void append(std::string* out, const void* p, size_t n) {
  out->append(static_cast<const char*>(p), n);
}
void append_i64(std::string* out, int64_t v) { append(out, &v, sizeof v); }
void append_str(std::string* out, const std::string& s) {
  append_i64(out, static_cast<int64_t>(s.size()));
  out->append(s);
}

std::string encode(const Timeline& tl) {
  std::string out(1, kOk);
  append_i64(&out, tl.clients);
  append_i64(&out, static_cast<int64_t>(tl.parties.size()));
  for (const auto& p : tl.parties) append_str(&out, p);
  append_i64(&out, static_cast<int64_t>(tl.client_parties.size()));
  append(&out, tl.client_parties.data(), tl.client_parties.size() * sizeof(int32_t));
  append_i64(&out, static_cast<int64_t>(tl.events.size()));
  append(&out, tl.events.data(), tl.events.size() * sizeof(TimelineEvent));
  return out;
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  void read(void* p, size_t n) {
    if (pos_ + n > s_.size()) throw std::runtime_error("simulation child: truncated result");
    std::memcpy(p, s_.data() + pos_, n);
    pos_ += n;
  }
  int64_t i64() {
    int64_t v = 0;
    read(&v, sizeof v);
    return v;
  }
  std::string str() {
    std::string v(static_cast<size_t>(i64()), '\0');
    read(v.data(), v.size());
    return v;
  }

 private:
  const std::string& s_;
  size_t pos_ = 1;  // after the status byte
};

// Returns the timeline, or throws what the child reported.
Timeline decode(const std::string& bytes, const std::string& variant) {
  Reader r(bytes);
  if (bytes[0] == kInputError) {
    const std::string where = r.str();
    const std::string what = r.str();
    throw InputError(where, what);
  }
  if (bytes[0] != kOk)
    throw std::runtime_error("simulation of \"" + variant + "\" failed: " + r.str());
  Timeline tl;
  tl.clients = r.i64();
  tl.parties.resize(static_cast<size_t>(r.i64()));
  for (auto& p : tl.parties) p = r.str();
  tl.client_parties.resize(static_cast<size_t>(r.i64()));
  r.read(tl.client_parties.data(), tl.client_parties.size() * sizeof(int32_t));
  tl.events.resize(static_cast<size_t>(r.i64()));
  r.read(tl.events.data(), tl.events.size() * sizeof(TimelineEvent));
  return tl;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent went away: nothing to tell
    done += static_cast<size_t>(n);
  }
}

// In the child: simulate, write, exit without running the parent's atexit
// handlers or flushing its stdio buffers.
[[noreturn]] void child_main(int fd, const Plan& plan, const SimOptions& options) {
  std::string out;
  try {
    out = encode(simulate_in_process(plan, options));
  } catch (const InputError& e) {
    out.assign(1, kInputError);
    append_str(&out, e.where());
    append_str(&out, e.message());
  } catch (const std::exception& e) {
    out.assign(1, kFailure);
    append_str(&out, e.what());
  }
  write_all(fd, out);
  ::close(fd);
  ::_exit(0);
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string bytes;
};

Child spawn(const Plan& plan, const SimOptions& options, size_t index) {
  // Unwritten output would be written again by the child.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // SimGrid flushes stdio: keep the child off the parent's stdout.
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDOUT_FILENO);
    child_main(fds[1], plan, options);
  }
  ::close(fds[1]);
  return {pid, fds[0], index, {}};
}

// Reads what is available; returns true at end of file (child done
// writing). A child that wrote its result is reaped later (its address space
// takes milliseconds to tear down); one that wrote nothing is waited for now,
// to report how it ended.
bool drain(Child* c, std::vector<pid_t>* to_reap) {
  char buf[1 << 16];
  const ssize_t n = ::read(c->fd, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return false;
  if (n > 0) {
    c->bytes.append(buf, static_cast<size_t>(n));
    return false;
  }
  ::close(c->fd);
  if (!c->bytes.empty()) {
    to_reap->push_back(c->pid);
    return true;
  }
  int status = 0;
  while (::waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
  }
  c->bytes.assign(1, kFailure);
  append_str(&c->bytes, WIFSIGNALED(status)
                            ? "the child process died of signal " + std::to_string(WTERMSIG(status))
                            : "the child process exited without a result");
  return true;
}

void reap(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace

Timeline simulate(const Plan& plan, const SimOptions& options) {
  return std::move(simulate_many({plan}, options, 1).front());
}

std::vector<Timeline> simulate_many(const std::vector<Plan>& plans, const SimOptions& options,
                                    int jobs) {
  if (jobs < 1) throw std::invalid_argument("simulate_many: jobs must be >= 1");
  for (const Plan& p : plans) check_simulatable(p);  // input errors before any fork
  // Freed heap pages (LibTorch's, after measuring) need not be mapped into
  // every child: give them back first.
  ::malloc_trim(0);
  std::vector<std::string> results(plans.size());
  std::vector<Child> running;
  std::vector<pid_t> to_reap;
  // On every way out (errors included) no child is left behind.
  struct Cleanup {
    std::vector<Child>* running;
    std::vector<pid_t>* to_reap;
    ~Cleanup() {
      for (Child& c : *running) {
        ::close(c.fd);  // the child gets EPIPE and ends
        to_reap->push_back(c.pid);
      }
      reap(*to_reap);
    }
  } cleanup{&running, &to_reap};
  size_t next = 0;
  while (next < plans.size() || !running.empty()) {
    while (next < plans.size() && running.size() < static_cast<size_t>(jobs)) {
      running.push_back(spawn(plans[next], options, next));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Child& c : running) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    for (size_t i = running.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!drain(&running[i], &to_reap)) continue;
      results[running[i].index] = std::move(running[i].bytes);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  std::vector<Timeline> out;
  out.reserve(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) out.push_back(decode(results[i], plans[i].variant));
  return out;
}

}  // namespace splitsim
