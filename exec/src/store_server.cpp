#include "store_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace splitsim::store {
namespace {

using Clock = StoreServer::Clock;

// Compares in time independent of where the two differ (up to the longer).
bool same_store_token(const std::string& a, const std::string& b) {
  volatile unsigned diff = a.size() != b.size() ? 1u : 0u;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0u;
    const unsigned y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0u;
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

// A listening socket on host:port, non-blocking; throws std::runtime_error.
int listen_on_address(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found))
    throw std::runtime_error("cannot resolve " + where + ": " + ::gai_strerror(rc));
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) throw std::runtime_error("cannot listen on " + where + ": " + error);
  return fd;
}

int bound_port_of(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

}  // namespace

struct StoreServer::Connection {
  int fd = -1;
  bool authenticated = false;
  bool closing = false;  // close once `out` is sent
  bool dead = false;     // close now
  Clock::time_point opened, request_started, reply_queued;
  std::string in, out;
  // A kGet or kWait not yet answered.
  bool waiting = false, wait_is_get = false;
  std::vector<std::string> wait_keys;
  Clock::time_point wait_deadline;

  bool readable() const { return !closing && !dead && out.empty() && !waiting; }
};

namespace {

// Sends what the socket takes now; marks the connection dead on an error.
void flush_replies(StoreServer::Connection* c) {
  while (!c->out.empty()) {
    const ssize_t n = ::send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c->out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    c->dead = true;
    return;
  }
}

void queue_reply(StoreServer::Connection* c, Status s, const std::string& body) {
  if (c->out.empty()) c->reply_queued = Clock::now();
  c->out += encode_reply(s, body);
  flush_replies(c);
}

}  // namespace

StoreServer::StoreServer(const std::string& host, int port, std::string token, StoreLimits limits)
    : token_(std::move(token)), limits_(limits), map_(limits, [this] { wake(); }) {
  listen_fd_ = listen_on_address(host, port);
  port_ = bound_port_of(listen_fd_);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { serve(); });
}

StoreServer::~StoreServer() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake();
  thread_.join();
  ::close(wake_fd_);
  ::close(listen_fd_);
}

StoreStats StoreServer::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  StoreStats s = stats_;
  s.stored_bytes = map_.stored_bytes();
  return s;
}

void StoreServer::wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void StoreServer::count(int64_t StoreStats::*field) {
  std::lock_guard<std::mutex> lk(mu_);
  ++(stats_.*field);
}

void StoreServer::accept_all(Connections* conns) {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or EMFILE: the rest wait in the backlog
    count(&StoreStats::accepted);
    size_t live = 0;
    Connection* oldest = nullptr;
    for (auto& c : *conns) {
      if (c->dead) continue;
      ++live;
      if (!c->authenticated && (oldest == nullptr || c->opened < oldest->opened)) oldest = c.get();
    }
    if (live >= limits_.connections) {
      count(&StoreStats::evicted);
      if (oldest == nullptr) {  // every slot holds a peer with the token
        ::close(fd);
        continue;
      }
      oldest->dead = true;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->opened = Clock::now();
    conns->push_back(std::move(c));
  }
}

void StoreServer::read_from(Connection* c) {
  char buf[64 * 1024];
  const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {  // closed by the peer, or an error
    c->dead = true;
    return;
  }
  if (c->in.empty()) c->request_started = Clock::now();
  c->in.append(buf, static_cast<size_t>(n));
  serve_input(c);
}

void StoreServer::serve_input(Connection* c) {
  while (c->readable() && !c->in.empty()) {
    ParseResult p = parse_request(c->in.data(), c->in.size(), limits_);
    if (p.state == ParseResult::kNeedMore) return;
    if (p.state == ParseResult::kBad) {
      count(&StoreStats::malformed);
      queue_reply(c, Status::kRefused, "refused: " + p.reason);
      c->closing = true;
      return;
    }
    c->in.erase(0, p.consumed);
    if (!c->in.empty()) c->request_started = Clock::now();
    handle(c, p.request);
  }
}

void StoreServer::handle(Connection* c, const Request& r) {
  const auto& a = r.args;
  if (!c->authenticated) {
    if (r.op == Op::kAuth && same_store_token(a[0], token_)) {
      c->authenticated = true;
      count(&StoreStats::authenticated);
      queue_reply(c, Status::kOk, "");
      return;
    }
    count(r.op == Op::kAuth ? &StoreStats::refused_tokens : &StoreStats::malformed);
    queue_reply(
        c, Status::kRefused,
        r.op == Op::kAuth ? "wrong or missing token" : "the first request must carry the token");
    c->closing = true;
    return;
  }
  std::string reason, value;
  Status s = Status::kOk;
  switch (r.op) {
    case Op::kAuth:
      break;
    case Op::kSet:
      s = map_.set(a[0], a[1], &reason);
      break;
    case Op::kGet:
    case Op::kWait: {
      c->wait_is_get = r.op == Op::kGet;
      c->wait_keys.assign(c->wait_is_get ? a.begin() : a.begin() + 1, a.end());
      auto wait_for = limits_.peer_deadline;
      if (r.op == Op::kWait && a[0].size() == 8) {
        const int64_t ms = i64_of(a[0]);
        if (ms > 0 && ms < wait_for.count()) wait_for = std::chrono::milliseconds(ms);
      }
      c->waiting = true;
      c->wait_deadline = Clock::now() + wait_for;
      finish_waits(c, Clock::now());
      return;
    }
    case Op::kAdd: {
      int64_t sum = 0;
      if (a[1].size() != 8) {
        s = Status::kRefused;
        reason = "an increment of " + std::to_string(a[1].size()) + " bytes (8 expected)";
      } else {
        s = map_.add(a[0], i64_of(a[1]), &sum, &reason);
      }
      value = i64_bytes(sum);
      break;
    }
    case Op::kCheck:
      value = map_.check(a) ? "1" : "0";
      break;
    case Op::kCompareSet:
      s = map_.compare_set(a[0], a[1], a[2], &value, &reason);
      break;
    case Op::kDelete:
      value = map_.erase(a[0]) ? "1" : "0";
      break;
    case Op::kNumKeys:
      value = i64_bytes(map_.num_keys());
      break;
  }
  if (s == Status::kRefused) {
    count(&StoreStats::malformed);
    c->closing = true;
    value = "refused: " + reason;
  }
  queue_reply(c, s, value);
}

void StoreServer::finish_waits(Connection* c, Clock::time_point now) {
  if (!c->waiting) return;
  std::string value;
  if (c->wait_is_get ? map_.get(c->wait_keys[0], &value) : map_.check(c->wait_keys)) {
    c->waiting = false;
    queue_reply(c, Status::kOk, value);
  } else if (now >= c->wait_deadline) {
    c->waiting = false;
    queue_reply(c, Status::kTimeout, "");
  }
}

void StoreServer::close_expired(Connection* c, Clock::time_point now) {
  const auto limit = limits_.peer_deadline;
  const bool silent = !c->authenticated && now - c->opened >= limit;
  const bool unfinished = !c->in.empty() && !c->waiting && now - c->request_started >= limit;
  const bool unread = !c->out.empty() && now - c->reply_queued >= limit;
  if (!c->dead && (silent || unfinished || unread)) {
    c->dead = true;
    count(&StoreStats::timed_out);
  }
}

void StoreServer::serve() {
  Connections conns;
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stop_) break;
    }
    auto now = Clock::now();
    auto next = now + std::chrono::seconds(1);
    fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (auto& c : conns) {
      const short events =
          static_cast<short>((c->readable() ? POLLIN : 0) | (c->out.empty() ? 0 : POLLOUT));
      fds.push_back({c->fd, events, 0});
      const auto limit = limits_.peer_deadline;
      if (!c->authenticated) next = std::min(next, c->opened + limit);
      if (!c->in.empty() && !c->waiting) next = std::min(next, c->request_started + limit);
      if (!c->out.empty()) next = std::min(next, c->reply_queued + limit);
      if (c->waiting) next = std::min(next, c->wait_deadline);
    }
    const auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait_ms, 0)));
    if (fds[0].revents & POLLIN) {
      uint64_t drained = 0;
      (void)!::read(wake_fd_, &drained, sizeof drained);
    }
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection* c = conns[i].get();
      const short ev = fds[i + 2].revents;
      if (ev & POLLOUT) flush_replies(c);
      if (ev & (POLLIN | POLLHUP | POLLERR)) {
        if (c->readable())
          read_from(c);
        else if (ev & (POLLHUP | POLLERR))
          c->dead = true;
      }
    }
    if (fds[1].revents & POLLIN) accept_all(&conns);
    now = Clock::now();
    size_t buffered = 0;
    for (auto& c : conns) {
      if (c->dead) continue;
      finish_waits(c.get(), now);
      serve_input(c.get());
      close_expired(c.get(), now);
      buffered += c->in.capacity() + c->out.capacity();
    }
    Connections kept;
    for (auto& c : conns) {
      if (c->dead || (c->closing && c->out.empty()))
        ::close(c->fd);
      else
        kept.push_back(std::move(c));
    }
    conns.swap(kept);
    std::lock_guard<std::mutex> lk(mu_);
    stats_.open = static_cast<int64_t>(conns.size());
    stats_.open_unauthenticated =
        std::count_if(conns.begin(), conns.end(), [](const auto& c) { return !c->authenticated; });
    stats_.peak_buffered_bytes = std::max(stats_.peak_buffered_bytes, buffered);
  }
  for (auto& c : conns) ::close(c->fd);
}

}  // namespace splitsim::store
