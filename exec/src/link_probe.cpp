#include "splitsim/exec/link_probe.h"

#include <sched.h>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <thread>

#include "splitsim/exec/cpu_accounting.h"

namespace splitsim {
namespace {

// Tags of the probe's messages (one transfer in flight per (peer, tag)).
constexpr int kSyncTag = 1;
constexpr int kDataTag = 100;  // + message index % kDataTags
constexpr int kDataTags = 64;
constexpr int kReportTag = 2;
constexpr int kInFlight = 2;  // as exec: a few sends and receives posted ahead

std::vector<int> my_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// A two-rank barrier: rank 0 sends a token, rank 1 echoes it.
void barrier(Transport& t, std::chrono::milliseconds timeout) {
  auto token = torch::zeros({1}, torch::kInt64);
  const int peer = 1 - t.rank();
  if (t.rank() == 0) {
    t.send({token}, peer, kSyncTag)->wait(timeout);
    t.recv({token}, peer, kSyncTag)->wait(timeout);
  } else {
    t.recv({token}, peer, kSyncTag)->wait(timeout);
    t.send({token}, peer, kSyncTag)->wait(timeout);
  }
}

// Sends (or receives) `count` messages of `bytes`, kInFlight posted at a
// time, each receive into a fresh tensor.
void stream(Transport& t, bool sending, int64_t count, int64_t bytes,
            std::chrono::milliseconds timeout) {
  const int peer = 1 - t.rank();
  const torch::Tensor payload = torch::ones({bytes}, torch::kUInt8);
  std::deque<std::shared_ptr<Transfer>> posted;
  for (int64_t i = 0; i < count; ++i) {
    const int tag = kDataTag + static_cast<int>(i % kDataTags);
    posted.push_back(sending ? t.send({payload}, peer, tag)
                             : t.recv({torch::empty({bytes}, torch::kUInt8)}, peer, tag));
    if (static_cast<int>(posted.size()) >= kInFlight) {
      posted.front()->wait(timeout);
      posted.pop_front();
    }
  }
  for (auto& p : posted) p->wait(timeout);
}

// What competes with compute on this process's CPUs: its own threads
// (Gloo's included, in the kernel for their system calls) and the
// interrupt work on those CPUs, in interrupt context or deferred to
// ksoftirqd (on veth a sender's CPU also runs the receiver's network stack
// in softirq). Other processes' time on them is not counted.
struct Mark {
  CpuSnapshot cpu;
  double process_s = 0, ksoftirqd_s = 0;
};

Mark mark(const std::vector<int>& cpus) {
  Mark m;
  m.cpu = take_cpu_snapshot();
  m.process_s = process_cpu_s();
  for (int c : cpus) m.ksoftirqd_s += ksoftirqd_cpu_s(c);
  return m;
}

LinkProbeSide measure(const std::vector<int>& cpus, const Mark& a, const Mark& b) {
  LinkProbeSide s;
  s.wall_s = b.cpu.wall_s - a.cpu.wall_s;
  s.busy_s = (b.process_s - a.process_s) + (b.ksoftirqd_s - a.ksoftirqd_s);
  for (int c : cpus) s.busy_s += cpu_interrupt_s(a.cpu, b.cpu, c);
  return s;
}

double per_byte(const LinkProbeSide& phase, const LinkProbeSide& idle, int64_t bytes) {
  if (bytes <= 0) return 0;
  const double idle_rate = idle.wall_s > 0 ? idle.busy_s / idle.wall_s : 0;
  return std::max(0.0, (phase.busy_s - idle_rate * phase.wall_s) / static_cast<double>(bytes));
}

nlohmann::json side_json(const LinkProbeSide& s) {
  return {{"wall_s", s.wall_s}, {"busy_s", s.busy_s}};
}

LinkProbeSide side_from_json(const nlohmann::json& j) {
  return {j.at("wall_s").get<double>(), j.at("busy_s").get<double>()};
}

}  // namespace

LinkProbeResult run_link_probe(Transport& t, const LinkProbeOptions& o) {
  if (t.world_size() != 2) throw std::invalid_argument("the link probe needs exactly two ranks");
  const bool server = t.rank() == 0;
  const std::vector<int> cpus = my_cpus();
  const int64_t count = std::max<int64_t>(1, o.bytes_per_direction / o.message_bytes);
  LinkProbeResult r;
  LinkProbeSide mine[3];

  barrier(t, o.timeout);
  Mark a = mark(cpus);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_s));
  barrier(t, o.timeout);
  Mark b = mark(cpus);
  mine[0] = measure(cpus, a, b);
  for (int phase = 1; phase <= 2; ++phase) {
    const bool up = phase == 1;  // client -> server
    a = mark(cpus);
    stream(t, up ? !server : server, count, o.message_bytes, o.timeout);
    barrier(t, o.timeout);
    b = mark(cpus);
    mine[phase] = measure(cpus, a, b);
  }
  r.idle.bytes = 0;
  r.up.bytes = r.down.bytes = count * o.message_bytes;

  // The client reports its three sides to the server.
  auto report = torch::zeros({6}, torch::kFloat64);
  if (!server) {
    auto* p = report.data_ptr<double>();
    for (int i = 0; i < 3; ++i) {
      p[2 * i] = mine[i].wall_s;
      p[2 * i + 1] = mine[i].busy_s;
    }
    t.send({report}, 0, kReportTag)->wait(o.timeout);
    r.idle.client = mine[0];
    r.up.client = mine[1];
    r.down.client = mine[2];
    return r;
  }
  t.recv({report}, 1, kReportTag)->wait(o.timeout);
  const auto* p = report.data_ptr<double>();
  LinkProbePhase* phases[3] = {&r.idle, &r.up, &r.down};
  for (int i = 0; i < 3; ++i) {
    phases[i]->server = mine[i];
    phases[i]->client = {p[2 * i], p[2 * i + 1]};
  }
  derive_link_costs(&r);
  return r;
}

void derive_link_costs(LinkProbeResult* r) {
  r->client_send_s_per_byte = per_byte(r->up.client, r->idle.client, r->up.bytes);
  r->server_recv_s_per_byte = per_byte(r->up.server, r->idle.server, r->up.bytes);
  r->server_send_s_per_byte = per_byte(r->down.server, r->idle.server, r->down.bytes);
  r->client_recv_s_per_byte = per_byte(r->down.client, r->idle.client, r->down.bytes);
  r->cpu_s_per_byte_sent = (r->client_send_s_per_byte + r->server_send_s_per_byte) / 2;
  r->cpu_s_per_byte_received = (r->server_recv_s_per_byte + r->client_recv_s_per_byte) / 2;
}

nlohmann::json link_probe_json(const LinkProbeResult& r) {
  nlohmann::json phases;
  const std::pair<const char*, const LinkProbePhase*> named[] = {
      {"idle", &r.idle}, {"client_to_server", &r.up}, {"server_to_client", &r.down}};
  for (const auto& [name, ph] : named)
    phases[name] = {
        {"bytes", ph->bytes}, {"server", side_json(ph->server)}, {"client", side_json(ph->client)}};
  return {{"schema", "splitsim.link_probe/1"},
          {"phases", phases},
          {"client_send_s_per_byte", r.client_send_s_per_byte},
          {"server_recv_s_per_byte", r.server_recv_s_per_byte},
          {"server_send_s_per_byte", r.server_send_s_per_byte},
          {"client_recv_s_per_byte", r.client_recv_s_per_byte},
          {"cpu_s_per_byte_sent", r.cpu_s_per_byte_sent},
          {"cpu_s_per_byte_received", r.cpu_s_per_byte_received}};
}

LinkProbeResult link_probe_from_json(const nlohmann::json& j) {
  try {
    if (j.at("schema") != "splitsim.link_probe/1")
      throw std::runtime_error("schema is not splitsim.link_probe/1");
    LinkProbeResult r;
    const auto& ph = j.at("phases");
    const std::pair<const char*, LinkProbePhase*> named[] = {
        {"idle", &r.idle}, {"client_to_server", &r.up}, {"server_to_client", &r.down}};
    for (const auto& [name, phase] : named) {
      phase->bytes = ph.at(name).at("bytes").get<int64_t>();
      phase->server = side_from_json(ph.at(name).at("server"));
      phase->client = side_from_json(ph.at(name).at("client"));
    }
    derive_link_costs(&r);
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not a link probe report: ") + e.what());
  }
}

}  // namespace splitsim
