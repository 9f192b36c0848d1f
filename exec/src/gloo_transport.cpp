#include "splitsim/exec/gloo_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <mutex>

// Debian's LibTorch is built with c10d Gloo (libgloo-dev); the header hides it otherwise.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "error_reason.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/exec/bounded_tcp_store.h"
#include "splitsim/exec/loopback_transport.h"
#include "waiter_pool.h"

namespace splitsim {
// Set by GlooTransport::abort, read by its transfers.
struct GlooAbortState {
  std::mutex mutex;
  std::string why;  // "" while not aborted
  std::string reason() {
    std::lock_guard<std::mutex> lock(mutex);
    return why;
  }
};

namespace {

// "2.5 s": a timeout as people write it.
std::string seconds_text(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(t.count()) / 1000.0);
  return buf;
}

// The local address the kernel would use to reach `host` (a UDP "connect"
// sends nothing). Falls back to `host` itself.
std::string local_address_towards(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return host;
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<uint16_t>(port));
  std::string out = host;
  if (::inet_pton(AF_INET, host.c_str(), &remote.sin_addr) == 1 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char buf[INET_ADDRSTRLEN];
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf))
      out = buf;
  }
  ::close(fd);
  return out;
}

// What rank 0's store refused or closed, and who holds a connection
// without the token, for a rendezvous that did not complete ("" when none).
std::string closed_peers(const store::StoreStats& st) {
  std::string out;
  const auto add = [&out](int64_t n, const std::string& what) {
    if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(st.refused_tokens, "presented a wrong or missing token (give both sides the same --token "
                         "or SPLITSIM_TOKEN)");
  add(st.malformed, "sent a malformed or oversized request");
  add(st.timed_out, "stayed silent or left a request unfinished");
  add(st.evicted, "came past the connection limit");
  add(st.open_unauthenticated, "connected and sent no complete token yet");
  return out.empty() ? "" : "; the store's peers: " + out;
}

class GlooTransfer : public Transfer {
 public:
  GlooTransfer(std::vector<c10::intrusive_ptr<c10d::Work>> works, std::string what,
               std::chrono::milliseconds timeout, std::shared_ptr<GlooAbortState> abort)
      : what_(std::move(what)), abort_(std::move(abort)), works_(std::move(works)) {
    // A waiter of the pool stamps the completion time exactly. It holds no
    // reference to the works: the transfer's tensors are freed where the
    // transfer is dropped, on a thread that the memory account sees
    // (MemoryAccount counts frees on its joined threads only).
    std::vector<c10d::Work*> works_to_wait;
    for (const auto& w : works_) works_to_wait.push_back(w.get());
    auto done = std::make_shared<std::promise<ExecClock::time_point>>();
    result_ = done->get_future();
    exec_internal::WaiterPool::instance().run(
        [works = std::move(works_to_wait), timeout, what = what_, done] {
          try {
            for (c10d::Work* w : works) w->wait(timeout);
            done->set_value(ExecClock::now());
          } catch (const std::exception& e) {
            done->set_exception(std::make_exception_ptr(TransportError(
                what + " failed (peer gone or no progress within " + seconds_text(timeout) +
                "): " + error_reason(e) + kTransferTimeoutHint)));
          }
        });
  }
  ~GlooTransfer() override {
    if (!result_.valid()) return;
    // Aborted: the waiter may block in the works until Gloo's timeout; they
    // are left to the process's exit.
    if (!abort_->reason().empty() &&
        result_.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
      new std::vector<c10::intrusive_ptr<c10d::Work>>(std::move(works_));  // NOLINT: on purpose
      return;
    }
    result_.wait();
  }
  void wait(std::chrono::milliseconds timeout) override {
    if (done_) return;
    const auto deadline = ExecClock::now() + timeout + std::chrono::seconds(2);
    while (result_.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      const std::string why = abort_->reason();
      if (!why.empty()) throw TransportError(what_ + " stopped: " + why);
      if (ExecClock::now() > deadline)
        throw TransportError(what_ + " timed out after " + seconds_text(timeout) +
                             kTransferTimeoutHint);
    }
    at_ = result_.get();
    done_ = true;
  }
  ExecClock::time_point completed_at() const override { return at_; }
  bool ready() const override {
    return done_ || !abort_->reason().empty() ||
           result_.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready;
  }

 private:
  std::string what_;
  std::shared_ptr<GlooAbortState> abort_;
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  std::future<ExecClock::time_point> result_;
  bool done_ = false;
  ExecClock::time_point at_;
};

}  // namespace

void parse_address(const std::string& address, const std::string& flag, std::string* host,
                   int* port) {
  const auto colon = address.rfind(':');
  int p = 0;
  try {
    if (colon == std::string::npos || colon == 0) throw std::invalid_argument("no colon");
    size_t used = 0;
    p = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || p <= 0 || p > 65535)
      throw std::invalid_argument("port");
  } catch (const std::exception&) {
    throw InputError(flag, "expected HOST:PORT with a port in 1..65535, got \"" + address + "\"");
  }
  *host = address.substr(0, colon);
  *port = p;
}

GlooOptions party_gloo_options(const ExecTopology& topo, const std::string& role, int client_index,
                               const std::string& listen, const std::string& connect,
                               double timeout_s, const std::string& command) {
  if (topo.world_size() < 2)
    throw InputError("$.partition", command + " needs at least two parties");
  GlooOptions go;
  go.rank = rank_of_role(topo, role, client_index);
  go.world_size = topo.world_size();
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  if (go.rank == 0 && listen.empty())
    throw InputError("listen", "rank 0 (party \"" + topo.server_party +
                                     "\") listens: pass --listen ADDR:PORT");
  if (go.rank != 0 && connect.empty())
    throw InputError("connect",
                     "party \"" + role + "\" connects to the server: pass --connect ADDR:PORT");
  parse_address(go.rank == 0 ? listen : connect, go.rank == 0 ? "listen" : "connect", &go.host,
                &go.port);
  return go;
}

struct GlooTransport::Impl {
  GlooOptions options;
  c10::intrusive_ptr<BoundedTcpStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::shared_ptr<LoopbackHub> self_hub;
  std::unique_ptr<LoopbackTransport> self;
  std::string congestion_control;
  std::shared_ptr<GlooAbortState> abort = std::make_shared<GlooAbortState>();
};

GlooTransport::GlooTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GlooTransport::~GlooTransport() = default;

std::unique_ptr<GlooTransport> GlooTransport::connect(const GlooOptions& o) {
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  const std::string where = o.host + ":" + std::to_string(o.port);
  const std::string secs = seconds_text(o.timeout);
  const store::StoreLimits limits = store::StoreLimits::for_world(o.world_size, o.timeout);
  try {
    impl->store = o.rank == 0
                      ? BoundedTcpStore::serve(o.host, o.port, o.token, limits, o.timeout)
                      : BoundedTcpStore::connect(o.host, o.port, o.token, limits, o.timeout);
  } catch (const StoreRefused& e) {
    throw TransportError(e.what());
  } catch (const std::exception& e) {
    throw TransportError(
        (o.rank == 0
             ? "cannot listen on " + where
             : "cannot reach the server at " + where + " within the connect timeout of " + secs) +
        " (--timeout-s; is the server running and the address right?): " + error_reason(e));
  }
  try {
    auto go = c10d::ProcessGroupGloo::Options::create(o.timeout);
    const std::string local = o.rank == 0 ? o.host : local_address_towards(o.host, o.port);
    go->devices.push_back(local == "0.0.0.0"
                              ? c10d::ProcessGroupGloo::createDefaultDevice()
                              : c10d::ProcessGroupGloo::createDeviceForHostname(local));
    impl->group =
        c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, o.rank, o.world_size, go);
  } catch (const std::exception& e) {
    throw TransportError("rendezvous of " + std::to_string(o.world_size) + " processes at " +
                         where + " did not complete within " + secs +
                         " (--timeout-s; did every party start?): " + error_reason(e) +
                         closed_peers(impl->store->server_stats()));
  }
  impl->congestion_control = default_congestion_control();
  if (!o.congestion_control.empty()) {
    const CongestionControlResult cc = set_congestion_control(o.congestion_control);
    impl->congestion_control = cc.in_use.empty() ? impl->congestion_control : cc.in_use;
    if (!cc.refusal.empty())
      impl->congestion_control += " (" + o.congestion_control + " refused: " + cc.refusal + ")";
  }
  impl->self_hub = std::make_shared<LoopbackHub>(o.world_size);
  impl->self = std::make_unique<LoopbackTransport>(impl->self_hub, o.rank);
  return std::unique_ptr<GlooTransport>(new GlooTransport(std::move(impl)));
}

const std::string& GlooTransport::congestion_control() const {
  return impl_->congestion_control;
}
int GlooTransport::rank() const { return impl_->options.rank; }
int GlooTransport::world_size() const { return impl_->options.world_size; }

std::shared_ptr<Transfer> GlooTransport::send(std::vector<torch::Tensor> tensors, int peer,
                                              int tag) {
  if (peer == rank()) return impl_->self->send(std::move(tensors), peer, tag);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  // Each tensor is its own message; sub-tags keep them apart.
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<at::Tensor> one{tensors[i]};
    works.push_back(impl_->group->send(one, peer, tag * 8 + static_cast<int>(i)));
  }
  bytes_sent_ += nbytes(tensors);
  return std::make_shared<GlooTransfer>(std::move(works), "send to rank " + std::to_string(peer),
                                        impl_->options.timeout, impl_->abort);
}

std::shared_ptr<Transfer> GlooTransport::recv(std::vector<torch::Tensor> tensors, int peer,
                                              int tag) {
  if (peer == rank()) return impl_->self->recv(std::move(tensors), peer, tag);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<at::Tensor> one{tensors[i]};
    works.push_back(impl_->group->recv(one, peer, tag * 8 + static_cast<int>(i)));
  }
  bytes_received_ += nbytes(tensors);
  return std::make_shared<GlooTransfer>(std::move(works),
                                        "receive from rank " + std::to_string(peer),
                                        impl_->options.timeout, impl_->abort);
}

void GlooTransport::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(impl_->abort->mutex);
    if (impl_->abort->why.empty()) impl_->abort->why = why.empty() ? "aborted" : why;
  }
  impl_->self_hub->fail(why);
}

}  // namespace splitsim
