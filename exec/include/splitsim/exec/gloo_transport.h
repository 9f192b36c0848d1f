#pragma once
// GlooTransport: tensors between processes with PyTorch's c10d
// ProcessGroupGloo (send/recv), rendezvous through a BoundedTcpStore that
// rank 0 hosts at the listen address (that address only). Sends to the own
// rank stay in-process.
#include <memory>
#include <string>

#include "splitsim/exec/tcp_sockets.h"
#include "splitsim/exec/topology.h"
#include "splitsim/exec/transport.h"

namespace splitsim {

struct GlooOptions {
  std::string host;  // rank 0: address to listen on; others: rank 0's address
  int port = 0;
  int rank = 0;
  int world_size = 2;
  // Connect / rendezvous timeout and per-operation timeout.
  std::chrono::milliseconds timeout{60000};
  // TCP congestion control for this process's connections, set per socket
  // once they are open (set_congestion_control, tcp_sockets.h); "" keeps
  // the network namespace's default.
  std::string congestion_control;
  // The run's shared secret ("" none): the rendezvous store serves no
  // request of a connection before it presented it.
  std::string token;
};

class GlooTransport : public Transport {
 public:
  // Rendezvous with the other ranks. Throws TransportError naming the
  // address and the timeout when a peer does not show up in time.
  static std::unique_ptr<GlooTransport> connect(const GlooOptions& options);
  ~GlooTransport() override;

  // What this process's TCP sockets use after connect: the algorithm
  // ("cubic"), or "bbr (cubic refused: Operation not permitted)".
  const std::string& congestion_control() const;

  int rank() const override;
  int world_size() const override;
  std::shared_ptr<Transfer> send(std::vector<torch::Tensor> tensors, int peer, int tag) override;
  std::shared_ptr<Transfer> recv(std::vector<torch::Tensor> tensors, int peer, int tag) override;
  void abort(const std::string& why) override;

 private:
  struct Impl;
  explicit GlooTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "HOST:PORT" -> host, port. Throws InputError naming `flag` when malformed.
void parse_address(const std::string& address, const std::string& flag, std::string* host,
                   int* port);

// The Gloo options of the party `role` (client `client_index` of several)
// of `topo` in a run of `command` ("exec", "train"): its rank, rank 0
// listening on `listen`, the others connecting to `connect`. Throws
// InputError naming "role", "listen" or "connect", or $.partition when the
// plan has fewer than two parties.
GlooOptions party_gloo_options(const ExecTopology& topo, const std::string& role, int client_index,
                               const std::string& listen, const std::string& connect,
                               double timeout_s, const std::string& command);

}  // namespace splitsim
