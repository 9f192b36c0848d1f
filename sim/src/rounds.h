#pragma once
// Rounds: the waits a training mode puts between the clients' batches
// (Plan::training, sim/README.md "Training modes"). Runs inside SimGrid
// actors, which SimGrid switches only at simcalls: the plain members need no
// lock.
//  - vanilla: the clients take turns, batch by batch; when client c has
//    updated batch b, its client part goes up to the server and down to the
//    next client, whose stage 0 starts batch b (or b + 1) on its arrival.
//  - splitfed_v1 / splitfed_v2: the clients run in parallel; after every
//    `aggregate_every` batches each uploads its client part, the server
//    averages them (splitfed_v1 its per-client server parts too) and sends
//    the average back; a client's stage 0 starts the next batch on its
//    arrival. splitfed_v2's one server part serves the clients in client
//    order: client c's server stages start batch b when client c - 1's
//    (client n - 1's of batch b - 1 for client 0) have updated it.
// Gating stage 0 holds the whole client: every other stage's first op of a
// batch waits for what stage 0 sends.
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "runtime.h"

namespace splitsim::sim_internal {

class Rounds {
 public:
  // REQUIRES: ctx's plan is synchronised(), its deployment and senders set.
  explicit Rounds(SimContext* ctx);

  // Instance `in`, before its first op of batch b: waits for its turn.
  void before_batch(const Instance& in, int64_t b);
  // Instance `in` has run its update of batch b.
  void after_batch(const Instance& in, int64_t b);
  // Stage 0 of a client after its last op: waits for the average that
  // closes the last round, if one does.
  void after_last(const Instance& in);
  // The server's part, an actor of its own on the server's host: vanilla's
  // hand-overs, splitfed's averages.
  void serve();

  int server_party() const { return server_; }

 private:
  bool averages_after(int64_t b) const;  // splitfed: batch b closes a round
  bool is_server_stage(int stage) const;
  // Posts `bytes` of weights from party `from` to `to`, for `inbox`.
  void post_weights(int from, int to, int client, int64_t batch, Inbox* inbox);
  // The server's averaging of the round closed by batch b.
  void average(int64_t b);
  static void wait_for(Inbox* inbox);

  SimContext* ctx_;
  int n_ = 1, stages_ = 1, server_stages_ = 0, server_ = 0;
  int64_t batches_ = 0;
  int64_t bytes_ = 0;               // the client part's
  std::vector<Inbox> go_;           // per client: stage 0 may start
  std::vector<Inbox> server_turn_;  // per client: splitfed_v2's server turn
  Inbox uploads_;                   // to the server: hand-overs and copies to average
  std::map<std::pair<int, int64_t>, int> updated_, server_updated_;  // (client, batch)
  simgrid::s4u::SemaphorePtr wake_;
};

}  // namespace splitsim::sim_internal
