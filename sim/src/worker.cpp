#include "worker.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

#include "plan_codec.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim::sim_internal {
namespace {

static_assert(std::is_trivially_copyable_v<TimelineEvent>, "events travel as raw bytes");

void append(std::string* out, const void* p, size_t n) {
  out->append(static_cast<const char*>(p), n);
}
void append_i64(std::string* out, int64_t v) { append(out, &v, sizeof v); }
void append_str(std::string* out, const std::string& s) {
  append_i64(out, static_cast<int64_t>(s.size()));
  out->append(s);
}

std::string encode_timeline(const Timeline& tl) {
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

std::string encode_metrics(const Metrics& m) {
  std::string out(1, kOk);
  const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(nlohmann::json(m));
  out.append(cbor.begin(), cbor.end());
  return out;
}

std::string input_error_response(const InputError& e) {
  std::string out(1, kInputError);
  append_str(&out, e.where());
  append_str(&out, e.message());
  return out;
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  void read(void* p, size_t n) {
    if (pos_ + n > s_.size()) throw std::runtime_error("simulation worker: truncated result");
    std::memcpy(p, s_.data() + pos_, n);
    pos_ += n;
  }
  int64_t i64() {
    int64_t v = 0;
    read(&v, sizeof v);
    return v;
  }
  size_t count(size_t item_bytes) {
    const int64_t n = i64();
    if (n < 0 || static_cast<uint64_t>(n) > (s_.size() - pos_) / item_bytes)
      throw std::runtime_error("simulation worker: truncated result");
    return static_cast<size_t>(n);
  }
  std::string str() {
    std::string v(count(1), '\0');
    read(v.data(), v.size());
    return v;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& s_;
  size_t pos_ = 1;  // after the status byte
};

// Throws what a non-kOk response reports.
void throw_unless_ok(const std::string& response, const std::string& variant) {
  if (response.empty()) throw std::runtime_error("simulation worker: empty result");
  if (response[0] == kOk) return;
  Reader r(response);
  if (response[0] == kInputError) {
    const std::string where = r.str();
    const std::string what = r.str();
    throw InputError(where, what);
  }
  throw std::runtime_error("simulation of \"" + variant + "\" failed: " + r.str());
}

// In the forked child: simulate, answer on `fd`, end without running the
// worker's atexit handlers.
[[noreturn]] void child_main(int fd, const Plan& plan, const SimOptions& options, Want want) {
  std::string out;
  try {
    out =
        want == Want::kTimeline
            ? encode_timeline(simulate_in_process(plan, options))
            : encode_metrics(compute_metrics(simulate_unsorted(plan, options), plan, plan.warmup));
  } catch (const InputError& e) {
    out = input_error_response(e);
  } catch (const std::exception& e) {
    out = failure_response(e.what());
  }
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::_exit(0);
}

// Runs one request in a forked child and returns its response.
std::string run_request(const std::string& request) {
  if (request.size() < 2) return failure_response("malformed request");
  const Want want = static_cast<Want>(request[0]);
  SimOptions options;
  options.server_order = static_cast<ServerOrder>(request[1]);
  Plan plan;
  try {
    plan = decode_plan(request.data() + 2, request.size() - 2);
  } catch (const std::exception& e) {
    return failure_response(e.what());
  }
  int fds[2];
  if (::pipe(fds) != 0) return failure_response(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return failure_response(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], plan, options, want);
  }
  ::close(fds[1]);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out.empty() || !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    return failure_response(WIFSIGNALED(status) ? "the simulation process died of signal " +
                                                      std::to_string(WTERMSIG(status))
                                                : "the simulation process ended without a result");
  return out;
}

}  // namespace

std::string encode_request(const Plan& plan, const SimOptions& options, Want want) {
  std::string out;
  out.push_back(static_cast<char>(want));
  out.push_back(static_cast<char>(options.server_order));
  out += encode_plan(plan);
  return out;
}

std::string failure_response(const std::string& message) {
  std::string out(1, kFailure);
  append_str(&out, message);
  return out;
}

Timeline decode_timeline(const std::string& response, const std::string& variant) {
  throw_unless_ok(response, variant);
  Reader r(response);
  Timeline tl;
  tl.clients = r.i64();
  tl.parties.resize(r.count(sizeof(int64_t)));
  for (auto& p : tl.parties) p = r.str();
  tl.client_parties.resize(r.count(sizeof(int32_t)));
  r.read(tl.client_parties.data(), tl.client_parties.size() * sizeof(int32_t));
  tl.events.resize(r.count(sizeof(TimelineEvent)));
  r.read(tl.events.data(), tl.events.size() * sizeof(TimelineEvent));
  return tl;
}

Metrics decode_metrics(const std::string& response, const std::string& variant) {
  throw_unless_ok(response, variant);
  return nlohmann::json::from_cbor(response.begin() + 1, response.end()).get<Metrics>();
}

bool read_frame(int fd, std::string* frame) {
  auto read_exact = [fd](char* p, size_t n, bool eof_ok) {
    size_t done = 0;
    while (done < n) {
      const ssize_t k = ::read(fd, p + done, n - done);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0)
        throw std::runtime_error(std::string("simulation worker: read: ") + std::strerror(errno));
      if (k == 0) {
        if (eof_ok && done == 0) return false;
        throw std::runtime_error("simulation worker: the stream ended inside a frame");
      }
      done += static_cast<size_t>(k);
    }
    return true;
  };
  uint64_t size = 0;
  if (!read_exact(reinterpret_cast<char*>(&size), sizeof size, true)) return false;
  if (size > (uint64_t{1} << 40)) throw std::runtime_error("simulation worker: frame too large");
  frame->resize(static_cast<size_t>(size));
  read_exact(frame->data(), frame->size(), false);
  return true;
}

void write_frame(int fd, const std::string& frame) {
  std::string out;
  const uint64_t size = frame.size();
  append(&out, &size, sizeof size);
  out += frame;
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::send(fd, out.data() + done, out.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw std::runtime_error(std::string("simulation worker: send: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

void serve_simulations(int fd) {
  std::string request;
  try {
    while (read_frame(fd, &request)) write_frame(fd, run_request(request));
  } catch (const std::exception&) {
    // The other end went away or broke the stream: nothing to answer.
  }
}

}  // namespace splitsim::sim_internal
