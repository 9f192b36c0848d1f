#pragma once
// The actors of one simulation and the state they share (sim/README.md
// "Execution model"). Everything here lives inside one SimGrid Engine run.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <utility>
#include <vector>

#include "deployment.h"
#include "host_arbiter.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/schedule.h"
#include "splitsim/sim/simulator.h"
#include "splitsim/sim/timeline.h"
#include "turnstile.h"

namespace splitsim::sim_internal {

// "The tensor of (batch, microbatch) has arrived."
// It becomes usable at arrival_s (the latency after its last byte left):
// the receiver waits until then (messages of one channel arrive in order).
struct Message {
  int64_t batch = 0;
  int64_t microbatch = 0;
  double arrival_s = 0;
};

// What one instance receives in one direction, in arrival order.
class Inbox {
 public:
  Inbox();
  void deliver(const Message& m);
  // Blocks until a message is there and returns the oldest.
  Message take();

 private:
  std::deque<Message> queue_;
  simgrid::s4u::SemaphorePtr ready_;
};

// A transfer waiting for its turn on a party pair.
struct Outgoing {
  Message message;
  Inbox* inbox = nullptr;
  int64_t bytes = 0;
  int64_t messages = 1;  // tensors on the wire, each sent as its own message
  int64_t last_tensor_bytes = 0;  // the last of them
  double posted_s = 0;            // when the stage posted it (set by post())
  TimelineEvent send;  // filled but for times; recv mirrors it
};

struct SimContext;
class Rounds;

// One actor per directed pair of parties that talk (a connection, like a
// Gloo pair): pushes the bytes of its transfers through the network one
// message after the other, in posting order, so the messages of a channel
// arrive in order. Daemon: it ends with the stage actors.
class PairSender {
 public:
  PairSender(SimContext* ctx, int from_party, int to_party);
  // Queues a transfer; never blocks.
  void post(Outgoing o);
  void run();

 private:
  SimContext* ctx_;
  int from_, to_;
  std::deque<Outgoing> queue_;
  simgrid::s4u::SemaphorePtr pending_;
};

// Records the send and recv events of `o` (ending at its arrival) and hands
// its message over.
void complete_transfer(SimContext* ctx, Outgoing* o, double start_s, double arrival_s);

struct SimContext {
  const Plan* plan = nullptr;
  const Deployment* deployment = nullptr;
  SimOptions options;
  Timeline* timeline = nullptr;
  std::vector<simgrid::s4u::Host*> hosts;              // per party
  std::vector<std::unique_ptr<HostArbiter>> arbiters;  // per party
  std::vector<Inbox> fwd_inbox, bwd_inbox;             // per instance
  std::map<std::pair<int, int>, std::unique_ptr<PairSender>> senders;
  std::vector<simgrid::s4u::BarrierPtr> barriers;  // per client (ddg, fr)
  std::vector<std::vector<Op>> ops;                // per stage
  // interleaved_1f1b: per (party, client) the turn of its stages' ops.
  std::map<std::pair<int, int>, std::unique_ptr<Turnstile>> turns;
  std::vector<int> computing;                      // per party: 1 while it computes
  // Per party: when its last computation ended (NaN before the first), for
  // the platform's wake cost.
  std::vector<double> computed_until;
  std::shared_ptr<Rounds> rounds;                  // a training mode's rounds, or null

  // Marks `party` as computing or not. On a shared machine with a
  // co-compute slowdown, every computing party runs at pstate 1 (slowed)
  // while another party computes too, else at pstate 0.
  void set_computing(int party, bool on);
};

// Creates the Inboxes, senders, barriers and actors of every instance.
// REQUIRES: ctx's plan, deployment, timeline and hosts set.
void deploy_actors(SimContext* ctx);

}  // namespace splitsim::sim_internal
