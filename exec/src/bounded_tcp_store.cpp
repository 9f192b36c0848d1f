#include "splitsim/exec/bounded_tcp_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "store_server.h"

namespace splitsim {
namespace {

using StoreClock = std::chrono::steady_clock;

std::string store_seconds_text(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(t.count()) / 1000.0);
  return buf;
}

int store_remaining_ms(StoreClock::time_point deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - StoreClock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// Waits for `events` on `fd` until `deadline`; false (and `error`) otherwise.
bool poll_until(int fd, short events, StoreClock::time_point deadline, std::string* error) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, store_remaining_ms(deadline));
    if (n > 0) return true;
    if (n < 0 && errno == EINTR) continue;
    *error = n == 0 ? "no answer in time" : std::strerror(errno);
    return false;
  }
}

// A connected non-blocking TCP socket to host:port, or -1 and `error`.
int open_store_connection(const std::string& host, int port, StoreClock::time_point deadline,
                          std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found)) {
    *error = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS && poll_until(fd, POLLOUT, deadline, error)) {
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err != 0) {
      if (err != EINPROGRESS) *error = std::strerror(err);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

bool send_all_until(int fd, const std::string& data, StoreClock::time_point deadline,
                    std::string* error) {
  size_t at = 0;
  while (at < data.size()) {
    const ssize_t n = ::send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL);
    if (n > 0) {
      at += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!poll_until(fd, POLLOUT, deadline, error)) return false;
    } else {
      *error = std::strerror(errno);
      return false;
    }
  }
  return true;
}

bool recv_exact_until(int fd, size_t size, StoreClock::time_point deadline, std::string* out,
                      std::string* error) {
  out->resize(size);
  size_t at = 0;
  while (at < size) {
    const ssize_t n = ::recv(fd, &(*out)[at], size - at, 0);
    if (n > 0) {
      at += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!poll_until(fd, POLLIN, deadline, error)) return false;
    } else {
      *error = n == 0 ? "the connection was closed" : std::strerror(errno);
      return false;
    }
  }
  return true;
}

// One reply; its body bounded by the limits (a server is a peer too).
bool read_store_reply(int fd, StoreClock::time_point deadline, const store::StoreLimits& limits,
                      store::Status* status, std::string* body, std::string* error) {
  std::string head;
  if (!recv_exact_until(fd, 5, deadline, &head, error)) return false;
  const uint32_t len = store::get_u32(head.data() + 1);
  if (len > std::max<size_t>(limits.value_bytes, 4096)) {
    *error = "a reply of " + std::to_string(len) + " bytes";
    return false;
  }
  *status = static_cast<store::Status>(static_cast<uint8_t>(head[0]));
  return recv_exact_until(fd, len, deadline, body, error);
}

std::string quoted_store_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < 4; ++i) out += (i ? ", \"" : "\"") + keys[i] + "\"";
  if (keys.size() > 4) out += " and " + std::to_string(keys.size() - 4) + " more";
  return out;
}

std::vector<uint8_t> as_bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string as_text(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

int64_t integer_store_reply(const std::string& body) {
  if (body.size() != 8)
    throw std::runtime_error("the rendezvous store answered " + std::to_string(body.size()) +
                             " bytes for an integer (8 expected)");
  return store::i64_of(body);
}

}  // namespace

BoundedTcpStore::BoundedTcpStore(std::chrono::milliseconds timeout, store::StoreLimits limits)
    : c10d::Store(timeout), limits_(limits) {}

BoundedTcpStore::~BoundedTcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

c10::intrusive_ptr<BoundedTcpStore> BoundedTcpStore::serve(const std::string& host, int port,
                                                           const std::string& token,
                                                           const store::StoreLimits& limits,
                                                           std::chrono::milliseconds timeout) {
  auto s = c10::intrusive_ptr<BoundedTcpStore>::unsafe_steal_from_new(
      new BoundedTcpStore(timeout, limits));
  s->server_ = std::make_unique<store::StoreServer>(host, port, token, limits);
  s->port_ = s->server_->port();
  s->where_ = host + ":" + std::to_string(s->port_);
  return s;
}

c10::intrusive_ptr<BoundedTcpStore> BoundedTcpStore::connect(const std::string& host, int port,
                                                             const std::string& token,
                                                             const store::StoreLimits& limits,
                                                             std::chrono::milliseconds timeout) {
  auto s = c10::intrusive_ptr<BoundedTcpStore>::unsafe_steal_from_new(
      new BoundedTcpStore(timeout, limits));
  s->port_ = port;
  s->where_ = host + ":" + std::to_string(port);
  const auto deadline = StoreClock::now() + timeout;
  std::string error = "no attempt";
  for (;;) {
    const int fd = open_store_connection(host, port, deadline, &error);
    if (fd >= 0) {
      store::Status status = store::Status::kRefused;
      std::string body;
      if (send_all_until(fd, store::encode_request(store::Op::kAuth, {token}), deadline, &error) &&
          read_store_reply(fd, deadline, limits, &status, &body, &error)) {
        if (status == store::Status::kOk) {
          s->fd_ = fd;
          return s;
        }
        ::close(fd);
        throw StoreRefused("the rendezvous store at " + s->where_ + " refused this process (" +
                           body + "); give both sides the same --token or SPLITSIM_TOKEN");
      }
      ::close(fd);  // closed before the answer (e.g. evicted): try again
    }
    if (StoreClock::now() >= deadline)
      throw std::runtime_error("no rendezvous store accepted a connection at " + s->where_ +
                               " within " + store_seconds_text(timeout) + ": " + error);
    std::this_thread::sleep_for(std::min<StoreClock::duration>(std::chrono::milliseconds(100),
                                                               deadline - StoreClock::now()));
  }
}

store::StoreStats BoundedTcpStore::server_stats() const {
  return server_ ? server_->stats() : store::StoreStats{};
}

std::chrono::milliseconds BoundedTcpStore::bounded(std::chrono::milliseconds t) const {
  return t <= std::chrono::milliseconds::zero() || t > timeout_ ? timeout_ : t;
}

std::string BoundedTcpStore::call(store::Op op, const std::vector<std::string>& args,
                                  std::chrono::milliseconds wait_for, store::Status* status) {
  std::lock_guard<std::mutex> lk(mu_);
  if (fd_ < 0) throw std::runtime_error("the connection to the rendezvous store is closed");
  const auto deadline = StoreClock::now() + wait_for + std::chrono::seconds(2);
  std::string error, body;
  store::Status got = store::Status::kRefused;
  if (!send_all_until(fd_, store::encode_request(op, args), deadline, &error) ||
      !read_store_reply(fd_, deadline, limits_, &got, &body, &error)) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("the rendezvous store at " + where_ + " did not answer: " + error);
  }
  if (got == store::Status::kRefused)
    throw std::runtime_error("the rendezvous store at " + where_ + " " + body);
  if (status != nullptr) *status = got;
  return body;
}

void BoundedTcpStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::string reason;
  if (!server_) {
    call(store::Op::kSet, {key, as_text(value)}, timeout_);
  } else if (server_->map().set(key, as_text(value), &reason) != store::Status::kOk) {
    throw std::runtime_error("the rendezvous store refused key \"" + key + "\": " + reason);
  }
}

std::vector<uint8_t> BoundedTcpStore::compareSet(const std::string& key,
                                                 const std::vector<uint8_t>& expected,
                                                 const std::vector<uint8_t>& desired) {
  if (!server_)
    return as_bytes(
        call(store::Op::kCompareSet, {key, as_text(expected), as_text(desired)}, timeout_));
  std::string now, reason;
  if (server_->map().compare_set(key, as_text(expected), as_text(desired), &now, &reason) !=
      store::Status::kOk)
    throw std::runtime_error("the rendezvous store refused key \"" + key + "\": " + reason);
  return as_bytes(now);
}

std::vector<uint8_t> BoundedTcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  if (!server_) return as_bytes(call(store::Op::kGet, {key}, timeout_));
  std::string value;
  server_->map().get(key, &value);
  return as_bytes(value);
}

int64_t BoundedTcpStore::add(const std::string& key, int64_t value) {
  if (!server_)
    return integer_store_reply(call(store::Op::kAdd, {key, store::i64_bytes(value)}, timeout_));
  int64_t sum = 0;
  std::string reason;
  if (server_->map().add(key, value, &sum, &reason) != store::Status::kOk)
    throw std::runtime_error("the rendezvous store refused key \"" + key + "\": " + reason);
  return sum;
}

bool BoundedTcpStore::deleteKey(const std::string& key) {
  if (!server_) return call(store::Op::kDelete, {key}, timeout_) == "1";
  return server_->map().erase(key);
}

bool BoundedTcpStore::check(const std::vector<std::string>& keys) {
  if (!server_) return call(store::Op::kCheck, keys, timeout_) == "1";
  return server_->map().check(keys);
}

int64_t BoundedTcpStore::getNumKeys() {
  if (!server_) return integer_store_reply(call(store::Op::kNumKeys, {}, timeout_));
  return server_->map().num_keys();
}

void BoundedTcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void BoundedTcpStore::wait(const std::vector<std::string>& keys,
                           const std::chrono::milliseconds& timeout) {
  const auto wait_for = bounded(timeout);
  bool done = false;
  if (server_) {
    done = server_->map().wait(keys, StoreClock::now() + wait_for);
  } else {
    std::vector<std::string> args{store::i64_bytes(wait_for.count())};
    args.insert(args.end(), keys.begin(), keys.end());
    store::Status status = store::Status::kTimeout;
    call(store::Op::kWait, args, wait_for, &status);
    done = status == store::Status::kOk;
  }
  if (!done)
    throw std::runtime_error("waited " + store_seconds_text(wait_for) + " for key(s) " +
                             quoted_store_keys(keys) + " of the rendezvous store at " + where_ +
                             "; no peer set them");
}

}  // namespace splitsim
