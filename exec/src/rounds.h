#pragma once
// Internals of the runner: the waits and weight moves a training mode puts
// between the clients' batches (Plan::training), as the simulator's Rounds
// (sim/src/rounds.h) runs them, over the transport:
//  - vanilla: the clients take turns; when client c has updated batch b its
//    client part goes up to the server and down to the next client, whose
//    stage 0 starts batch b (client 0: b + 1) once it has loaded it.
//  - splitfed_v1 / splitfed_v2: the clients run in parallel; after every
//    `aggregate_every` batches each uploads its client part, the server
//    averages them (splitfed_v1 its per-client server parts too, held on
//    this rank: PartyContext::replicas) and sends the average back; stage 0
//    loads it before its next batch.
//  - vanilla and splitfed_v2 share one server part: client c's server
//    stages start batch b once client c - 1's (client n - 1's of batch
//    b - 1 for client 0) have updated it.
// The weights are one tensor, the client part's trainable parameters and
// running statistics end to end (Plan::client_part_bytes()); their
// transfers are timeline events of boundary -1 and stage -1, the server's
// averaging an `average` event.
#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "splitsim/sim/timeline.h"

namespace splitsim::exec_internal {

struct PartyContext;
struct InstanceResult;

class Rounds {
 public:
  // REQUIRES: ctx's plan is synchronised(), its stages (and replicas) built.
  explicit Rounds(PartyContext& ctx);

  // Instance (stage, client), before its first op of batch b: loads the
  // weights it waits for (client stage 0), or waits for its server turn.
  void before_batch(int stage, int client, int64_t b, InstanceResult* out);
  // Instance (stage, client) has run its update of batch b: the client's
  // last local stage to get there uploads; a server stage passes the turn.
  void after_batch(int stage, int client, int64_t b, InstanceResult* out);
  // Client stage 0 after its last op: loads the average that closes the
  // last round, if one does.
  void after_last(int stage, int client, InstanceResult* out);
  // The server rank's thread: vanilla's hand-overs, splitfed's averages.
  // Never throws: a failure ends it with out->error set.
  void serve(InstanceResult* out);
  // Whether this rank runs serve().
  bool serves() const { return serves_; }
  // An instance failed: every wait here ends with an error.
  void fail();

 private:
  bool vanilla() const;
  bool averages_after(int64_t b) const;  // splitfed: batch b closes a round
  bool is_server_stage(int stage) const;
  bool shares_server_part() const;  // vanilla, splitfed_v2: server turns
  int client_rank(int client) const;
  // What a round moves and averages of `client`'s client part (server:
  // its server part): the trainable parameters, then the floating-point
  // buffers (batch norm's running statistics) of the stages' units.
  std::vector<torch::Tensor> state_of(int client, bool server) const;
  // The client part's (this rank's client), and the server parts' of every
  // client (splitfed_v1 on the server rank).
  std::vector<torch::Tensor> client_params(int client) const;
  std::vector<std::vector<torch::Tensor>> server_params() const;
  int tag(int64_t batch, bool down, int client) const;
  // Receives the client part labelled `batch` from the server, loads it.
  void load(int client, int64_t batch, InstanceResult* out);
  // Sends `weights` (CPU, one tensor) for `client`'s batch `batch`.
  void transfer(const torch::Tensor& weights, int to_rank, int client, int64_t batch, bool down,
                InstanceResult* out);
  torch::Tensor receive(int from_rank, int client, int64_t batch, bool down, InstanceResult* out);
  void average(int64_t b, InstanceResult* out);
  void wait_server_updates(int64_t b);
  void record(InstanceResult* out, EventKind kind, int party, int peer, int client, int64_t batch,
              int64_t bytes, double t0, double t1) const;

  PartyContext& ctx_;
  int n_ = 1, server_rank_ = 0, server_party_ = 0, server_stages_ = 0, client_stages_ = 0;
  int64_t batches_ = 0, bytes_ = 0;
  bool serves_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool failed_ = false;
  int64_t server_turn_ = 0;  // b * n + c: whose batch the shared server part takes next
  std::map<std::pair<int, int64_t>, int> client_updated_, server_updated_;  // (client, batch)
};

}  // namespace splitsim::exec_internal
