#include "plan_codec.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace splitsim::sim_internal {
namespace {

void append(std::string* out, const void* p, size_t n) {
  out->append(static_cast<const char*>(p), n);
}

class PlanWriter {
 public:
  std::string out;
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&out, &v, sizeof v);
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    out += s;
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<uint64_t>(v.size()));
    append(&out, v.data(), v.size() * sizeof(T));
  }
};

class PlanReader {
 public:
  PlanReader(const char* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  void pod(T* v) {
    take(v, sizeof *v);
  }
  void str(std::string* s) {
    s->resize(count(1));
    take(s->data(), s->size());
  }
  template <typename T>
  void vec(std::vector<T>* v) {
    v->resize(count(sizeof(T)));
    take(v->data(), v->size() * sizeof(T));
  }
  bool done() const { return pos_ == n_; }

 private:
  size_t count(size_t item) {
    uint64_t k = 0;
    pod(&k);
    if (k > (n_ - pos_) / item) throw std::runtime_error("malformed plan");
    return static_cast<size_t>(k);
  }
  void take(void* dst, size_t n) {
    if (n > n_ - pos_) throw std::runtime_error("malformed plan");
    if (n > 0) std::memcpy(dst, p_ + pos_, n);
    pos_ += n;
  }
  const char* p_;
  size_t n_, pos_ = 0;
};

// One function per direction, field for field in the same order.
void write_plan(const Plan& p, PlanWriter* w) {
  w->str(p.scenario);
  w->str(p.variant);
  w->str(p.model);
  w->pod(p.batch_size);
  w->vec(p.microbatch_sizes);
  w->pod(p.schedule);
  w->str(p.compute_precision);
  w->pod(static_cast<uint64_t>(p.stages.size()));
  for (const PlanStage& s : p.stages) {
    w->str(s.name);
    w->str(s.party);
    w->str(s.device);
    for (int64_t v :
         {int64_t{s.first_unit}, int64_t{s.last_unit}, s.param_count, s.param_bytes,
          s.frozen_param_count, s.frozen_param_bytes, s.optimizer_state_bytes,
          s.stash_bytes_per_microbatch, s.stashed_microbatches, s.weight_versions, s.replay_bytes,
          s.work_bytes, s.input_bytes, s.recv_bytes, s.step_bytes, s.peak_memory_bytes})
      w->pod(v);
    w->vec(s.fwd_s);
    w->vec(s.bwd_s);
    w->pod(s.update_s);
    w->pod(s.timed_from_measurement);
  }
  w->pod(static_cast<uint64_t>(p.boundaries.size()));
  for (const PlanBoundary& b : p.boundaries) {
    w->pod(b.from_stage);
    w->pod(b.to_stage);
    w->vec(b.activation_shape);
    for (const PlanTransfer* t : {&b.forward, &b.backward}) {
      w->vec(t->carried_shape);
      w->vec(t->wire_bytes);
      w->pod(t->wire_messages);
      w->pod(t->wire_bytes_per_batch);
      w->vec(t->encode_s);
      w->vec(t->decode_s);
    }
  }
  const NetworkSpec& n = p.network;
  for (double v : {n.bandwidth_bit_per_s, n.up_bandwidth_bit_per_s, n.down_bandwidth_bit_per_s,
                   n.latency_s, n.per_message_overhead_s, n.bandwidth_factor,
                   n.server_bandwidth_bit_per_s, n.server_latency_s, n.burst_peak_bit_per_s})
    w->pod(v);
  w->str(n.bandwidth_trace);
  w->pod(n.burst_bytes);
  w->pod(n.burst_packet_bytes);
  const PlatformSpec& f = p.platform;
  for (double v : {f.cpu_s_per_byte_sent, f.cpu_s_per_byte_received, f.cpu_s_per_message_sent,
                   f.cpu_s_per_message_received, f.co_compute_slowdown})
    w->pod(v);
  w->pod(f.shared_machine);
  w->pod(static_cast<uint64_t>(f.parties.size()));
  for (const auto& [name, work] : f.parties) {
    w->str(name);
    w->pod(work);
  }
  w->pod(p.iterations);
  w->pod(p.warmup);
  w->pod(p.clients);
  w->pod(static_cast<uint64_t>(p.client_groups.size()));
  for (const PlanClientGroup& g : p.client_groups) {
    w->str(g.name);
    w->str(g.device);
    w->pod(g.count);
    w->vec(g.bandwidth_bit_per_s);
    w->vec(g.latency_s);
    w->pod(static_cast<uint64_t>(g.stage_costs.size()));
    for (const PlanStageCosts& c : g.stage_costs) {
      w->pod(c.stage);
      w->vec(c.fwd_s);
      w->vec(c.bwd_s);
      w->pod(c.update_s);
    }
  }
}

Plan read_plan(PlanReader* r) {
  Plan p;
  r->str(&p.scenario);
  r->str(&p.variant);
  r->str(&p.model);
  r->pod(&p.batch_size);
  r->vec(&p.microbatch_sizes);
  r->pod(&p.schedule);
  r->str(&p.compute_precision);
  uint64_t n = 0;
  r->pod(&n);
  for (uint64_t i = 0; i < n; ++i) {
    PlanStage& s = p.stages.emplace_back();
    r->str(&s.name);
    r->str(&s.party);
    r->str(&s.device);
    int64_t first = 0, last = 0;
    r->pod(&first);
    r->pod(&last);
    s.first_unit = static_cast<int>(first);
    s.last_unit = static_cast<int>(last);
    for (int64_t* v : {&s.param_count, &s.param_bytes, &s.frozen_param_count, &s.frozen_param_bytes,
                       &s.optimizer_state_bytes, &s.stash_bytes_per_microbatch,
                       &s.stashed_microbatches, &s.weight_versions, &s.replay_bytes, &s.work_bytes,
                       &s.input_bytes, &s.recv_bytes, &s.step_bytes, &s.peak_memory_bytes})
      r->pod(v);
    r->vec(&s.fwd_s);
    r->vec(&s.bwd_s);
    r->pod(&s.update_s);
    r->pod(&s.timed_from_measurement);
  }
  r->pod(&n);
  for (uint64_t i = 0; i < n; ++i) {
    PlanBoundary& b = p.boundaries.emplace_back();
    r->pod(&b.from_stage);
    r->pod(&b.to_stage);
    r->vec(&b.activation_shape);
    for (PlanTransfer* t : {&b.forward, &b.backward}) {
      r->vec(&t->carried_shape);
      r->vec(&t->wire_bytes);
      r->pod(&t->wire_messages);
      r->pod(&t->wire_bytes_per_batch);
      r->vec(&t->encode_s);
      r->vec(&t->decode_s);
    }
  }
  NetworkSpec& net = p.network;
  for (double* v : {&net.bandwidth_bit_per_s, &net.up_bandwidth_bit_per_s,
                    &net.down_bandwidth_bit_per_s, &net.latency_s, &net.per_message_overhead_s,
                    &net.bandwidth_factor, &net.server_bandwidth_bit_per_s, &net.server_latency_s,
                    &net.burst_peak_bit_per_s})
    r->pod(v);
  r->str(&net.bandwidth_trace);
  r->pod(&net.burst_bytes);
  r->pod(&net.burst_packet_bytes);
  PlatformSpec& f = p.platform;
  for (double* v : {&f.cpu_s_per_byte_sent, &f.cpu_s_per_byte_received, &f.cpu_s_per_message_sent,
                    &f.cpu_s_per_message_received, &f.co_compute_slowdown})
    r->pod(v);
  r->pod(&f.shared_machine);
  r->pod(&n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string name;
    r->str(&name);
    r->pod(&f.parties[name]);
  }
  r->pod(&p.iterations);
  r->pod(&p.warmup);
  r->pod(&p.clients);
  r->pod(&n);
  for (uint64_t i = 0; i < n; ++i) {
    PlanClientGroup& g = p.client_groups.emplace_back();
    r->str(&g.name);
    r->str(&g.device);
    r->pod(&g.count);
    r->vec(&g.bandwidth_bit_per_s);
    r->vec(&g.latency_s);
    uint64_t costs = 0;
    r->pod(&costs);
    for (uint64_t k = 0; k < costs; ++k) {
      PlanStageCosts& c = g.stage_costs.emplace_back();
      r->pod(&c.stage);
      r->vec(&c.fwd_s);
      r->vec(&c.bwd_s);
      r->pod(&c.update_s);
    }
  }
  if (!r->done()) throw std::runtime_error("malformed plan");
  return p;
}

}  // namespace

std::string encode_plan(const Plan& plan) {
  PlanWriter w;
  write_plan(plan, &w);
  return w.out;
}

Plan decode_plan(const char* data, size_t size) {
  PlanReader r(data, size);
  return read_plan(&r);
}

}  // namespace splitsim::sim_internal
