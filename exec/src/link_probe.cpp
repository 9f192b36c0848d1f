#include "splitsim/exec/link_probe.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "link_probe_single.h"
#include "splitsim/exec/cpu_accounting.h"
#include "splitsim/exec/session.h"

namespace splitsim {
namespace {

// Tags of the probe's messages (one transfer in flight per (peer, tag)).
constexpr int kSyncTag = 1;
constexpr int kDataTag = 100;  // + message index % kDataTags
constexpr int kDataTags = 64;
constexpr int kReportTag = 2;
// 3 and 4: the timed transfers (link_probe_single.cpp)
constexpr int kTripsTag = 5;  // the client's single-message times, to the server
constexpr size_t kInFlight = 2;  // as exec: a few sends and receives posted ahead

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
// time, each receive into a fresh tensor. A sender with a gap posts one at
// a time and pauses `gap_s` after each has left.
void stream(Transport& t, bool sending, int64_t count, int64_t bytes,
            std::chrono::milliseconds timeout, double gap_s) {
  const int peer = 1 - t.rank();
  const bool gapped = sending && gap_s > 0;
  const size_t in_flight = gapped ? 1 : kInFlight;
  const torch::Tensor payload = torch::ones({bytes}, torch::kUInt8);
  std::deque<std::shared_ptr<Transfer>> posted;
  for (int64_t i = 0; i < count; ++i) {
    const int tag = kDataTag + static_cast<int>(i % kDataTags);
    posted.push_back(sending ? t.send({payload}, peer, tag)
                             : t.recv({torch::empty({bytes}, torch::kUInt8)}, peer, tag));
    if (posted.size() >= in_flight) {
      posted.front()->wait(timeout);
      posted.pop_front();
      if (gapped) std::this_thread::sleep_for(std::chrono::duration<double>(gap_s));
    }
  }
  for (auto& p : posted) p->wait(timeout);
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The compute beside the transfers: single-threaded products of a [256,512]
// and a [512,512] matrix (about 1.5 MB touched, a cache-sized working set
// like a layer's) until destroyed, counting them and its own CPU time.
class ComputeLoop {
 public:
  ComputeLoop() : thread_([this] { run(); }) {}
  ~ComputeLoop() {
    stop_ = true;
    thread_.join();
  }
  ComputeLoop(const ComputeLoop&) = delete;
  ComputeLoop& operator=(const ComputeLoop&) = delete;
  int64_t work() const { return work_.load(); }
  double cpu_s() const { return cpu_s_.load(); }

 private:
  void run() {
    torch::set_num_threads(1);
    const torch::Tensor a = torch::randn({256, 512}), b = torch::randn({512, 512});
    torch::Tensor c;
    while (!stop_) {
      c = torch::mm(a, b);
      work_.fetch_add(1);
      cpu_s_.store(thread_cpu_s());
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> work_{0};
  std::atomic<double> cpu_s_{0};
  std::thread thread_;
};

// A point in time for one side: the loop's count, and what competes with
// compute on this process's CPUs: its own threads but the loop (Gloo's
// included, in the kernel for their system calls) and the interrupt work on
// those CPUs, in interrupt context or deferred to ksoftirqd (on veth a
// sender's CPU also runs the receiver's network stack in softirq). Other
// processes' time on them is not counted.
struct Mark {
  CpuSnapshot cpu;
  double process_s = 0, ksoftirqd_s = 0;
  int64_t work = 0;
};

Mark mark(const std::vector<int>& cpus, const ComputeLoop& loop) {
  Mark m;
  m.work = loop.work();
  m.cpu = take_cpu_snapshot();
  m.process_s = process_cpu_s() - loop.cpu_s();
  for (int c : cpus) m.ksoftirqd_s += ksoftirqd_cpu_s(c);
  return m;
}

LinkProbeSide measure(const std::vector<int>& cpus, const Mark& a, const Mark& b) {
  LinkProbeSide s;
  s.wall_s = b.cpu.wall_s - a.cpu.wall_s;
  s.busy_s = std::max(0.0, (b.process_s - a.process_s) + (b.ksoftirqd_s - a.ksoftirqd_s));
  for (int c : cpus) s.busy_s += cpu_interrupt_s(a.cpu, b.cpu, c);
  s.work = static_cast<double>(b.work - a.work);
  return s;
}

// The two idle phases as one baseline.
LinkProbeSide baseline(const LinkProbeSide& a, const LinkProbeSide& b) {
  return {a.wall_s + b.wall_s, a.busy_s + b.busy_s, a.work + b.work};
}

// Compute seconds lost per byte: the phase's wall time less the time its
// work takes at the idle rate.
double lost_per_byte(const LinkProbeSide& phase, const LinkProbeSide& idle, int64_t bytes) {
  if (bytes <= 0 || !(idle.work > 0) || !(idle.wall_s > 0)) return 0;
  const double rate = idle.work / idle.wall_s;
  return std::max(0.0, (phase.wall_s - phase.work / rate) / static_cast<double>(bytes));
}

double busy_per_byte(const LinkProbeSide& phase, const LinkProbeSide& idle, int64_t bytes) {
  if (bytes <= 0) return 0;
  const double idle_rate = idle.wall_s > 0 ? idle.busy_s / idle.wall_s : 0;
  return std::max(0.0, (phase.busy_s - idle_rate * phase.wall_s) / static_cast<double>(bytes));
}

nlohmann::json side_json(const LinkProbeSide& s) {
  return {{"wall_s", s.wall_s}, {"busy_s", s.busy_s}, {"work", s.work}};
}

LinkProbeSide side_from_json(const nlohmann::json& j) {
  return {j.at("wall_s").get<double>(), j.at("busy_s").get<double>(), j.at("work").get<double>()};
}

// In the order they run: the two idle phases first and last.
constexpr int kPhases = 6;
constexpr const char* kPhaseNames[kPhases] = {
    "idle",         "client_to_server",       "server_to_client", "client_to_server_small",
    "server_to_client_small", "idle_after"};

// The phases of `r` (const or not) in kPhaseNames' order.
template <class Result>
auto phases_of(Result& r) {
  return std::array{&r.idle, &r.up, &r.down, &r.small_up, &r.small_down, &r.idle_after};
}

// Compute seconds lost per message of `phase` beyond its bytes at
// `per_byte`.
double lost_per_message(const LinkProbeSide& phase, const LinkProbeSide& idle, int64_t bytes,
                        int64_t messages, double per_byte) {
  if (messages <= 0) return 0;
  const double lost = lost_per_byte(phase, idle, bytes) * static_cast<double>(bytes);
  return std::max(0.0, (lost - per_byte * static_cast<double>(bytes)) /
                           static_cast<double>(messages));
}

}  // namespace

LinkProbeResult run_link_probe(Transport& t, const LinkProbeOptions& o) {
  if (t.world_size() != 2) throw std::invalid_argument("the link probe needs exactly two ranks");
  const bool server = t.rank() == 0;
  const std::vector<int> cpus = my_cpus();
  const int64_t count = std::max<int64_t>(1, o.bytes_per_direction / o.message_bytes);
  const int64_t small = std::max<int64_t>(1, o.small_messages);
  LinkProbeResult r;
  LinkProbeSide mine[kPhases];
  {
    ComputeLoop loop;
    barrier(t, o.timeout);
    for (int phase = 0; phase < kPhases; ++phase) {
      const Mark a = mark(cpus, loop);
      if (phase == 0 || phase == kPhases - 1) {
        std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_s / (phase ? 2 : 1)));
      } else {
        const bool up = phase % 2 == 1;  // client -> server
        const bool large = phase <= 2;
        stream(t, up ? !server : server, large ? count : small,
               large ? o.message_bytes : o.small_message_bytes, o.timeout, large ? o.gap_s : 0);
      }
      barrier(t, o.timeout);
      mine[phase] = measure(cpus, a, mark(cpus, loop));
    }
  }
  // The clocks as exec's handshake takes them (session.h): on rank 0 the
  // client's offset.
  std::vector<double> offsets;
  const ExecClock::time_point start = synchronise(t, o.timeout, &offsets);
  const std::vector<double> trips = single_messages(t, o, start);
  const auto phases = phases_of(r);
  r.up.bytes = r.down.bytes = count * o.message_bytes;
  r.small_up.bytes = r.small_down.bytes = small * o.small_message_bytes;
  r.small_messages = small;

  // The client reports its sides to the server.
  auto report = torch::zeros({3 * kPhases}, torch::kFloat64);
  if (!server) {
    auto* p = report.data_ptr<double>();
    for (int i = 0; i < kPhases; ++i) {
      p[3 * i] = mine[i].wall_s;
      p[3 * i + 1] = mine[i].busy_s;
      p[3 * i + 2] = mine[i].work;
      phases[i]->client = mine[i];
    }
    t.send({report}, 0, kReportTag)->wait(o.timeout);
    t.send({torch::tensor(trips, torch::kFloat64)}, 0, kTripsTag)->wait(o.timeout);
    return r;
  }
  t.recv({report}, 1, kReportTag)->wait(o.timeout);
  auto client_trips = torch::empty({static_cast<int64_t>(trips.size())}, torch::kFloat64);
  t.recv({client_trips}, 1, kTripsTag)->wait(o.timeout);
  const double* c = client_trips.data_ptr<double>();
  // offsets[1]: the client's clock - the server's.
  r.clock_offset_s = offsets.size() > 1 ? offsets[1] : 0;
  const std::vector<double> up_trips(c, c + client_trips.numel());
  for (const auto& [from, offset, single, pair] :
       {std::tuple{&up_trips, -r.clock_offset_s, &r.single_up, &r.pair_up},
        {&trips, r.clock_offset_s, &r.single_down, &r.pair_down}}) {
    size_t at = 0;
    *single = timed_samples(*from, &at, o.single_repeats, o.single_max_bytes, 0, offset);
    *pair =
        timed_samples(*from, &at, o.single_repeats, o.pair_max_bytes, o.pair_tail_bytes, offset);
  }
  const auto* p = report.data_ptr<double>();
  for (int i = 0; i < kPhases; ++i) {
    phases[i]->server = mine[i];
    phases[i]->client = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
  }
  derive_link_costs(&r);
  return r;
}

void derive_link_costs(LinkProbeResult* r) {
  const LinkProbeSide idle_server = baseline(r->idle.server, r->idle_after.server);
  const LinkProbeSide idle_client = baseline(r->idle.client, r->idle_after.client);
  r->client_send_s_per_byte = lost_per_byte(r->up.client, idle_client, r->up.bytes);
  r->server_recv_s_per_byte = lost_per_byte(r->up.server, idle_server, r->up.bytes);
  r->server_send_s_per_byte = lost_per_byte(r->down.server, idle_server, r->down.bytes);
  r->client_recv_s_per_byte = lost_per_byte(r->down.client, idle_client, r->down.bytes);
  r->cpu_s_per_byte_sent = (r->client_send_s_per_byte + r->server_send_s_per_byte) / 2;
  r->cpu_s_per_byte_received = (r->server_recv_s_per_byte + r->client_recv_s_per_byte) / 2;
  r->busy_s_per_byte_sent = (busy_per_byte(r->up.client, idle_client, r->up.bytes) +
                             busy_per_byte(r->down.server, idle_server, r->down.bytes)) /
                            2;
  r->busy_s_per_byte_received = (busy_per_byte(r->up.server, idle_server, r->up.bytes) +
                                 busy_per_byte(r->down.client, idle_client, r->down.bytes)) /
                                2;
  const int64_t n = r->small_messages;
  r->client_send_s_per_message = lost_per_message(r->small_up.client, idle_client,
                                                  r->small_up.bytes, n, r->client_send_s_per_byte);
  r->server_recv_s_per_message = lost_per_message(r->small_up.server, idle_server,
                                                  r->small_up.bytes, n, r->server_recv_s_per_byte);
  r->server_send_s_per_message = lost_per_message(
      r->small_down.server, idle_server, r->small_down.bytes, n, r->server_send_s_per_byte);
  r->client_recv_s_per_message = lost_per_message(
      r->small_down.client, idle_client, r->small_down.bytes, n, r->client_recv_s_per_byte);
  r->cpu_s_per_message_sent = (r->client_send_s_per_message + r->server_send_s_per_message) / 2;
  r->cpu_s_per_message_received =
      (r->server_recv_s_per_message + r->client_recv_s_per_message) / 2;
  const auto goodput = [](const LinkProbePhase& ph) {
    const double wall = std::max(ph.server.wall_s, ph.client.wall_s);
    return wall > 0 ? static_cast<double>(ph.bytes) / wall : 0.0;
  };
  r->goodput_up_Bps = goodput(r->up);
  r->goodput_down_Bps = goodput(r->down);
  std::vector<TransferSample> all;
  for (const auto* v : {&r->single_up, &r->single_down, &r->pair_up, &r->pair_down})
    all.insert(all.end(), v->begin(), v->end());
  r->link = fit_link(all);
}

double goodput_share(const LinkProbeResult& r, double rate_bit_per_s) {
  const double goodput = std::min(r.goodput_up_Bps, r.goodput_down_Bps);
  if (!(goodput > 0) || !(rate_bit_per_s > 0)) return 1;
  return std::min(1.0, goodput / (rate_bit_per_s / 8));
}

nlohmann::json link_probe_json(const LinkProbeResult& r) {
  nlohmann::json phases;
  const auto ph = phases_of(r);
  for (int i = 0; i < kPhases; ++i)
    phases[kPhaseNames[i]] = {{"bytes", ph[i]->bytes},
                              {"server", side_json(ph[i]->server)},
                              {"client", side_json(ph[i]->client)}};
  const auto samples_json = [](const std::vector<TransferSample>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const TransferSample& x : v) a.push_back({x.bytes, x.seconds});
    return a;
  };
  const int64_t tail = r.pair_up.empty() ? 0 : r.pair_up.front().tail_bytes;
  return {{"schema", "splitsim.link_probe/5"},
          {"single_transfers",
           {{"clock_offset_s", r.clock_offset_s},
            {"client_to_server", samples_json(r.single_up)},
            {"server_to_client", samples_json(r.single_down)}}},
          {"pair_transfers",
           {{"tail_bytes", tail},
            {"client_to_server", samples_json(r.pair_up)},
            {"server_to_client", samples_json(r.pair_down)}}},
          {"link", link_fit_json(r.link)},
          {"goodput_Bps",
           {{"client_to_server", r.goodput_up_Bps}, {"server_to_client", r.goodput_down_Bps}}},
          {"phases", phases},
          {"small_messages", r.small_messages},
          {"client_send_s_per_byte", r.client_send_s_per_byte},
          {"server_recv_s_per_byte", r.server_recv_s_per_byte},
          {"server_send_s_per_byte", r.server_send_s_per_byte},
          {"client_recv_s_per_byte", r.client_recv_s_per_byte},
          {"cpu_s_per_byte_sent", r.cpu_s_per_byte_sent},
          {"cpu_s_per_byte_received", r.cpu_s_per_byte_received},
          {"busy_s_per_byte_sent", r.busy_s_per_byte_sent},
          {"busy_s_per_byte_received", r.busy_s_per_byte_received},
          {"client_send_s_per_message", r.client_send_s_per_message},
          {"server_recv_s_per_message", r.server_recv_s_per_message},
          {"server_send_s_per_message", r.server_send_s_per_message},
          {"client_recv_s_per_message", r.client_recv_s_per_message},
          {"cpu_s_per_message_sent", r.cpu_s_per_message_sent},
          {"cpu_s_per_message_received", r.cpu_s_per_message_received}};
}

LinkProbeResult link_probe_from_json(const nlohmann::json& j) {
  try {
    if (j.at("schema") != "splitsim.link_probe/5")
      throw std::runtime_error("schema is not splitsim.link_probe/5");
    LinkProbeResult r;
    const auto& single = j.at("single_transfers");
    const auto& pair = j.at("pair_transfers");
    r.clock_offset_s = single.at("clock_offset_s").get<double>();
    const int64_t tail = pair.at("tail_bytes").get<int64_t>();
    for (const auto& [from, key, into, tail_bytes] :
         {std::tuple{&single, "client_to_server", &r.single_up, int64_t{0}},
          {&single, "server_to_client", &r.single_down, int64_t{0}},
          {&pair, "client_to_server", &r.pair_up, tail},
          {&pair, "server_to_client", &r.pair_down, tail}})
      for (const auto& x : from->at(key))
        into->push_back({x.at(0).get<int64_t>(), x.at(1).get<double>(), tail_bytes});
    const auto& ph = j.at("phases");
    r.small_messages = j.at("small_messages").get<int64_t>();
    const auto phases = phases_of(r);
    for (int i = 0; i < kPhases; ++i) {
      phases[i]->bytes = ph.at(kPhaseNames[i]).at("bytes").get<int64_t>();
      phases[i]->server = side_from_json(ph.at(kPhaseNames[i]).at("server"));
      phases[i]->client = side_from_json(ph.at(kPhaseNames[i]).at("client"));
    }
    derive_link_costs(&r);
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not a link probe report: ") + e.what());
  }
}

}  // namespace splitsim
