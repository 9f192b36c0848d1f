// Several clients sharing one server: contention and the server order.
#include <gtest/gtest.h>

#include "splitsim/costmodel/errors.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "test_plans.h"

namespace splitsim {
namespace {

using testing::set_wire_bytes;
using testing::ushape;

TEST(SimulatorClientsTest, ClientsGetTheirOwnPartiesAndLinks) {
  Plan p = ushape(1e-3, 1e-3, 1e-3, 1e-3);
  p.clients = 3;
  set_wire_bytes(&p, 0, 1000, 1000);
  set_wire_bytes(&p, 1, 10, 10);
  const Timeline tl = simulate(p);
  EXPECT_EQ(tl.parties, (std::vector<std::string>{"client0", "client1", "client2", "server"}));
  EXPECT_EQ(tl.client_parties, (std::vector<int32_t>{0, 1, 2}));
  const Metrics m = compute_metrics(tl, p, p.warmup);
  for (const char* c : {"client0", "client1", "client2"}) {
    ASSERT_NE(m.party(c), nullptr) << c;
    EXPECT_DOUBLE_EQ(m.party(c)->bytes_sent_per_batch, 1010) << c;
  }
  EXPECT_DOUBLE_EQ(m.party("server")->bytes_received_per_batch, 3 * 1010);
}

TEST(SimulatorClientsTest, TheServerIsSharedSoARoundTakesEveryClientsServerWork) {
  // Server work 30 ms per client batch, client work 4 ms, free links.
  Plan p = ushape(1e-3, 1e-3, 10e-3, 20e-3);
  p.iterations = 12;
  p.warmup = 4;
  const Metrics one = compute_metrics(simulate(p), p, p.warmup);
  EXPECT_NEAR(one.time_per_batch_s, 34e-3, 1e-9);
  p.clients = 3;
  const Metrics three = compute_metrics(simulate(p), p, p.warmup);
  EXPECT_NEAR(three.time_per_batch_s, 3 * 30e-3, 1e-9);
  EXPECT_NEAR(three.party("server")->utilisation, 1.0, 1e-9);
  EXPECT_EQ(three.busiest_resource, "server");
  EXPECT_NEAR(three.throughput_batches_per_s, 3 / 90e-3, 1e-6);
}

// Two server stages per client (client | server | server | client), GPipe
// with 4 micro-batches, 2 clients, 1 ms per server op: the clients of the
// server's forwards of batch 0, in the order the server runs them.
std::vector<int> server_forward_clients(ServerOrder order) {
  Plan p = testing::equal_stages(4, 4, 0, 0, Schedule::kGpipe, 2, 0,
                                 {"client", "server", "server", "client"});
  for (int k : {1, 2}) {
    p.stages[k].fwd_s.assign(4, 1e-3);
    p.stages[k].bwd_s.assign(4, 1e-3);
  }
  p.clients = 2;
  SimOptions options;
  options.server_order = order;
  const Timeline tl = simulate(p, options);
  std::vector<int> clients;
  for (const auto& e : tl.events)
    if (tl.parties[e.party] == "server" && e.kind == EventKind::kForward && e.batch == 0)
      clients.push_back(e.client);
  return clients;
}

TEST(SimulatorClientsTest, ServerOrderFifoVersusRoundRobin) {
  // From t = 1 ms each client keeps two requests waiting (its stage 1 and
  // stage 2 instances). Round-robin alternates clients; FIFO serves by
  // arrival, so the two requests client 0 posted at 1 ms run back to back.
  const auto rr = server_forward_clients(ServerOrder::kRoundRobin);
  const auto fifo = server_forward_clients(ServerOrder::kFifo);
  EXPECT_EQ(rr, (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
  ASSERT_GE(fifo.size(), 4u);
  EXPECT_EQ(std::vector<int>(fifo.begin(), fifo.begin() + 4), (std::vector<int>{0, 1, 0, 0}));
}

TEST(SimulatorClientsTest, ParsesServerOrders) {
  EXPECT_EQ(parse_server_order("fifo", "--server-order"), ServerOrder::kFifo);
  EXPECT_EQ(parse_server_order("round-robin", "--server-order"), ServerOrder::kRoundRobin);
  EXPECT_THROW(parse_server_order("lifo", "--server-order"), InputError);
}

}  // namespace
}  // namespace splitsim
