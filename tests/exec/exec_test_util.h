#pragma once
// Helpers for the exec tests: hand-built Plans (no measuring), an
// in-process two-rank run over LoopbackTransport, and child processes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "../free_port.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/model_zoo.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/run_spec.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/exec/loopback_transport.h"
#include "splitsim/exec/runner.h"

namespace splitsim::testing {

// Whether a TCP connection to ADDR:port completes within 1 s.
inline bool connects(const char* addr, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, addr, &a.sin_addr);
  connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  pollfd p{fd, POLLOUT, 0};
  bool ok = poll(&p, 1, 1000) == 1;
  int err = 0;
  socklen_t len = sizeof err;
  if (ok) ok = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  close(fd);
  return ok;
}

inline Scenario small_scenario(const std::string& model = "resnet20", int64_t batch = 4) {
  Scenario sc;
  sc.name = "exec_test";
  sc.model.name = model;
  sc.model = resolve_model_defaults(sc.model, "$.model");
  sc.batch_size = batch;
  sc.optimizer.name = "sgd";
  sc.optimizer.lr = 0.05;
  sc.optimizer.momentum = 0.9;
  sc.seed = 3;
  return sc;
}

// A Plan over `cuts` (the last unit of every stage but the last), parties
// alternating client / server, codec `fwd`/`bwd` at every boundary.
inline Plan make_test_plan(const Scenario& sc, const std::vector<int>& cuts, const CodecSpec& fwd,
                           const CodecSpec& bwd, int64_t chunks, Schedule schedule,
                           int64_t iterations) {
  SplitModel model = build_model(sc.model, sc.seed);
  model.train(false);  // shapes from one sample: batch norm on 1x1 maps needs eval mode
  Plan p;
  p.scenario = sc.name;
  p.variant = "base";
  p.model = sc.model.name;
  p.batch_size = sc.batch_size;
  for (int64_t i = 0; i < chunks; ++i)
    p.microbatch_sizes.push_back(sc.batch_size / chunks + (i < sc.batch_size % chunks ? 1 : 0));
  p.schedule = schedule;
  p.iterations = iterations;
  p.warmup = 0;
  std::vector<int> lasts = cuts;
  lasts.push_back(model.size() - 1);
  torch::NoGradGuard no_grad;
  torch::Tensor x = model.make_input(1, 0);
  int first = 0;
  for (size_t k = 0; k < lasts.size(); ++k) {
    PlanStage st;
    st.name = "stage" + std::to_string(k);
    st.party = k % 2 == 0 ? "client" : "server";
    st.first_unit = first;
    st.last_unit = lasts[k];
    for (int u = first; u <= lasts[k]; ++u) {
      st.units.push_back(model.names[u]);
      for (const auto& w : model.units[static_cast<size_t>(u)]->parameters()) {
        st.param_count += w.numel();
        if (!w.requires_grad()) st.frozen_param_count += w.numel();
      }
    }
    p.stages.push_back(st);
    x = model.forward(x, first, lasts[k]);
    if (k + 1 < lasts.size()) {
      PlanBoundary b;
      b.from_stage = static_cast<int>(k);
      b.to_stage = static_cast<int>(k) + 1;
      std::vector<int64_t> shape(x.sizes().begin() + 1, x.sizes().end());
      b.activation_shape = {sc.batch_size};
      b.activation_shape.insert(b.activation_shape.end(), shape.begin(), shape.end());
      b.forward.codec = fwd;
      b.backward.codec = bwd;
      for (int64_t m : p.microbatch_sizes) {
        b.forward.wire_bytes.push_back(wire_bytes(fwd, shape, m));
        b.backward.wire_bytes.push_back(wire_bytes(bwd, carried_shape(fwd, shape), m));
      }
      for (int64_t v : b.forward.wire_bytes) b.forward.wire_bytes_per_batch += v;
      for (int64_t v : b.backward.wire_bytes) b.backward.wire_bytes_per_batch += v;
      p.boundaries.push_back(b);
    }
    first = lasts[k] + 1;
  }
  drop_unneeded_gradients(p);  // as make_plan: no gradient back to a part that trains nothing
  return p;
}

// The run of a hand-built plan as exec would derive it.
inline RunSpec test_run(const Scenario& sc, const Plan& plan) {
  return make_run_spec({"base", sc, nlohmann::json::object()}, plan);
}

// Runs every rank of a plan (both of one client and a server; one more per
// client) in this process; the results by rank.
inline std::vector<RunResult> run_loopback(const Scenario& sc, const Plan& plan,
                                           RunOptions options) {
  const RunSpec spec = test_run(sc, plan);
  const int world = spec.topology.world_size();
  auto hub = std::make_shared<LoopbackHub>(world);
  std::vector<RunResult> out(static_cast<size_t>(world));
  const auto start = ExecClock::now();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      LoopbackTransport t(hub, rank);
      out[rank] = run_party(spec, t, rank, options, start);
    });
  for (auto& t : threads) t.join();
  return out;
}

// Gradients of the unsplit model for batch 0 of the synthetic source.
inline std::vector<std::vector<torch::Tensor>> unsplit_gradients(const Scenario& sc) {
  SplitModel model = build_model(sc.model, sc.seed);
  model.train(true);
  auto source = make_synthetic_source(model, sc.seed);
  auto [x, y] = source->batch(0, 0, sc.batch_size);
  model.loss(model.forward(x), y).backward();
  std::vector<std::vector<torch::Tensor>> grads;
  for (const auto& u : model.units) {
    grads.emplace_back();
    for (const auto& p : u->parameters())  // frozen: zeros, as exec keeps them
      grads.back().push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return grads;
}

}  // namespace splitsim::testing
