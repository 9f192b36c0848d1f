#include "splitsim/exec/session.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "splitsim/costmodel/errors.h"
#include "splitsim/exec/checkpoint.h"
#include "splitsim/sim/metrics.h"

namespace splitsim {
namespace {

constexpr int kTagHello = (1 << 26) + 1;
constexpr int kTagVerdict = (1 << 26) + 2;
constexpr int kTagGo = (1 << 26) + 3;
constexpr int kTagPing = (1 << 26) + 4;
constexpr int kTagPong = (1 << 26) + 5;
constexpr int kTagSizes = (1 << 26) + 6;
constexpr int kTagEvents = (1 << 26) + 7;
constexpr int kTagStats = (1 << 26) + 8;
constexpr int kTagClock = (1 << 26) + 9;
constexpr int kTagSteps = (1 << 26) + 10;
constexpr int kTagResume = (1 << 26) + 11;
constexpr int kPings = 8;
constexpr int64_t kTextBytes = 4096;

// This host's boot id (/proc/sys/kernel/random/boot_id, 32 hex digits) as
// two integers, {0, 0} where it cannot be read. Processes with the same one
// read the same steady clock (CLOCK_MONOTONIC; network namespaces do not
// change it).
std::array<int64_t, 2> boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string text;
  std::getline(in, text);
  std::array<uint64_t, 2> v{0, 0};
  int digits = 0;
  for (const char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) continue;
    if (digits >= 32) return {0, 0};
    const uint64_t d =
        static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                  ? c - '0'
                                  : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    v[static_cast<size_t>(digits / 16)] = v[static_cast<size_t>(digits / 16)] << 4 | d;
    ++digits;
  }
  if (digits != 32) return {0, 0};
  return {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1])};
}

// What a rank tells rank 0 of its clock: its boot id and its time origin on
// the steady clock (ns).
torch::Tensor clock_tensor(ExecClock::time_point start) {
  const auto id = boot_id();
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
  return torch::tensor({id[0], id[1], ns}, torch::kInt64);
}

torch::Tensor text_tensor(const std::string& s) {
  torch::Tensor t = torch::zeros({kTextBytes}, torch::kUInt8);
  std::memcpy(t.data_ptr<uint8_t>(), s.data(), std::min<size_t>(s.size(), kTextBytes - 1));
  return t;
}
// The text in a kTextBytes buffer a peer filled: up to the first NUL, never
// past the buffer (the peer need not send one).
std::string tensor_text(const torch::Tensor& t) {
  const auto* p = reinterpret_cast<const char*>(t.data_ptr<uint8_t>());
  const size_t n = std::min<size_t>(static_cast<size_t>(t.numel()), kTextBytes);
  return std::string(p, strnlen(p, n));
}

// Compares two kTextBytes buffers in time independent of where they differ
// (and of the secret's length: both are zero-padded to the full buffer).
bool same_secret(const torch::Tensor& a, const torch::Tensor& b) {
  const uint8_t* pa = a.data_ptr<uint8_t>();
  const uint8_t* pb = b.data_ptr<uint8_t>();
  volatile uint8_t diff = 0;
  for (int64_t i = 0; i < kTextBytes; ++i) diff = static_cast<uint8_t>(diff | (pa[i] ^ pb[i]));
  return diff == 0;
}

// Throws std::runtime_error unless every field a peer sent in an event can
// index what rank 0 holds (kinds, parties, clients) and every time is finite.
void check_event(const TimelineEvent& e, const Timeline& tl, int rank) {
  const auto parties = static_cast<int32_t>(tl.parties.size());
  const bool ok = static_cast<int32_t>(e.kind) >= 0 &&
                  static_cast<int32_t>(e.kind) <= static_cast<int32_t>(kLastEventKind) &&
                  e.party >= 0 && e.party < parties && e.peer >= -1 && e.peer < parties &&
                  (e.stage >= 0 || e.boundary == -1) && e.boundary >= -1 && e.client >= 0 &&
                  e.client < tl.clients && e.batch >= 0 && e.microbatch >= -1 && e.bytes >= 0 &&
                  std::isfinite(e.start_s) && std::isfinite(e.end_s);
  if (!ok) {
    throw std::runtime_error("rank " + std::to_string(rank) +
                             " sent an event outside the run (party, client or kind out of "
                             "range, or a time that is not finite); refusing its results");
  }
}

void exchange(Transport& tr, std::vector<torch::Tensor> send, int peer, int send_tag,
              std::vector<torch::Tensor> recv, int recv_tag, std::chrono::milliseconds timeout) {
  auto r = recv.empty() ? nullptr : tr.recv(recv, peer, recv_tag);
  auto s = send.empty() ? nullptr : tr.send(send, peer, send_tag);
  if (s) s->wait(timeout);
  if (r) r->wait(timeout);
}

double seconds(ExecClock::time_point t, ExecClock::time_point origin) {
  return std::chrono::duration<double>(t - origin).count();
}

}  // namespace

std::string shared_token(const std::string& flag_value) {
  std::string token = flag_value;
  if (token.empty()) {
    if (const char* env = std::getenv("SPLITSIM_TOKEN"); env != nullptr) token = env;
  }
  if (token.size() > kMaxTokenBytes)
    throw InputError(flag_value.empty() ? "SPLITSIM_TOKEN" : "token",
                     "the token is " + std::to_string(token.size()) + " bytes; the limit is " +
                         std::to_string(kMaxTokenBytes));
  return token;
}

std::string stable_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void handshake(Transport& tr, const RunIdentity& me, std::chrono::milliseconds timeout) {
  if (me.token.size() >= static_cast<size_t>(kTextBytes)) {
    throw HandshakeError("the token is " + std::to_string(me.token.size()) +
                         " bytes; the limit is " + std::to_string(kMaxTokenBytes));
  }
  const std::string mine = me.version + "\n" + stable_hash(me.variant_json) + "\n" + me.label;
  const torch::Tensor my_token = text_tensor(me.token);
  auto describe = [](const std::string& id) {
    const auto a = id.find('\n'), b = id.find('\n', a + 1);
    return "variant \"" + id.substr(b + 1) + "\" (scenario hash " + id.substr(a + 1, b - a - 1) +
           ", splitsim " + id.substr(0, a) + ")";
  };
  if (tr.rank() != 0) {
    torch::Tensor verdict = torch::zeros({kTextBytes}, torch::kUInt8);
    exchange(tr, {text_tensor(mine), my_token}, 0, kTagHello, {verdict}, kTagVerdict, timeout);
    const std::string v = tensor_text(verdict);
    if (v != "ok") throw HandshakeError(v);
    return;
  }
  std::string verdict = "ok";
  bool token_refused = false;
  for (int r = 1; r < tr.world_size(); ++r) {
    torch::Tensor hello = torch::zeros({kTextBytes}, torch::kUInt8);
    torch::Tensor token = torch::zeros({kTextBytes}, torch::kUInt8);
    tr.recv({hello, token}, r, kTagHello)->wait(timeout);
    const std::string theirs = tensor_text(hello);
    if (!same_secret(token, my_token)) {
      // Nothing about this side is told to a peer without the secret: a
      // token refusal replaces any other verdict, which would describe rank 0.
      if (!token_refused)
        verdict = "handshake refused: rank " + std::to_string(r) +
                  " presented a wrong or missing token; give both sides the same --token or "
                  "SPLITSIM_TOKEN";
      token_refused = true;
    } else if (theirs != mine && verdict == "ok")
      verdict = "handshake refused: rank 0 (server) runs " + describe(mine) + ", rank " +
                std::to_string(r) + " runs " + describe(theirs) +
                "; start both sides with the same scenario file, --variant, --iterations and "
                "splitsim version";
  }
  for (int r = 1; r < tr.world_size(); ++r)
    tr.send({text_tensor(verdict)}, r, kTagVerdict)->wait(timeout);
  if (verdict != "ok") throw HandshakeError(verdict);
}

int64_t agree_resume_step(Transport& tr, const std::vector<int64_t>& mine,
                          std::chrono::milliseconds timeout) {
  auto text_of = [](const std::vector<int64_t>& steps) {
    std::string t;
    const size_t from = steps.size() > 64 ? steps.size() - 64 : 0;
    for (size_t i = from; i < steps.size(); ++i)
      t += (t.empty() ? "" : ",") + std::to_string(steps[i]);
    return t;
  };
  auto steps_of = [](const std::string& text) {
    std::vector<int64_t> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoll(item));
    return out;
  };
  if (tr.rank() != 0) {
    torch::Tensor verdict = torch::zeros({kTextBytes}, torch::kUInt8);
    exchange(tr, {text_tensor(text_of(mine))}, 0, kTagSteps, {verdict}, kTagResume, timeout);
    const std::string v = tensor_text(verdict);
    if (v.rfind("step ", 0) != 0) throw InputError("resume", v);
    return std::stoll(v.substr(5));
  }
  std::vector<std::vector<int64_t>> all = {mine};
  std::vector<std::string> names = {"rank 0 (server)"};
  for (int r = 1; r < tr.world_size(); ++r) {
    torch::Tensor steps = torch::zeros({kTextBytes}, torch::kUInt8);
    tr.recv({steps}, r, kTagSteps)->wait(timeout);
    try {
      all.push_back(steps_of(tensor_text(steps)));
    } catch (const std::exception&) {
      all.push_back({});  // malformed: as none, which the verdict then names
    }
    names.push_back("rank " + std::to_string(r));
  }
  std::string verdict;
  int64_t step = 0;
  try {
    step = common_checkpoint_step(all, names);
    verdict = "step " + std::to_string(step);
  } catch (const InputError& e) {
    verdict = e.message();
  }
  for (int r = 1; r < tr.world_size(); ++r)
    tr.send({text_tensor(verdict)}, r, kTagResume)->wait(timeout);
  if (verdict.rfind("step ", 0) != 0) throw InputError("resume", verdict);
  return step;
}

ExecClock::time_point synchronise(Transport& tr, std::chrono::milliseconds timeout,
                                  std::vector<double>* offsets_s) {
  offsets_s->clear();
  ExecClock::time_point start;
  torch::Tensor go = torch::zeros({1}, torch::kFloat64);
  if (tr.rank() == 0) {
    std::vector<std::shared_ptr<Transfer>> sends;
    for (int r = 1; r < tr.world_size(); ++r) sends.push_back(tr.send({go}, r, kTagGo));
    start = ExecClock::now();
    for (auto& s : sends) s->wait(timeout);
    offsets_s->assign(static_cast<size_t>(tr.world_size()), 0.0);
    for (int r = 1; r < tr.world_size(); ++r) {
      double best_rtt = 1e30;
      for (int i = 0; i < kPings; ++i) {
        torch::Tensor ping = torch::zeros({1}, torch::kFloat64),
                      pong = torch::zeros({1}, torch::kFloat64);
        auto rv = tr.recv({pong}, r, kTagPong + 16 * i);
        const double t1 = seconds(ExecClock::now(), start);
        tr.send({ping}, r, kTagPing + 16 * i)->wait(timeout);
        rv->wait(timeout);
        const double t2 = seconds(ExecClock::now(), start);
        if (t2 - t1 < best_rtt) {
          best_rtt = t2 - t1;
          (*offsets_s)[static_cast<size_t>(r)] = pong.item<double>() - (t1 + t2) / 2;
        }
      }
      // On one host both read one steady clock: the offset is the
      // difference of the time origins, exactly, where the ping-pong's is
      // off by up to half a round trip (on a shaped veth 50-100 us, a
      // third of a small transfer's time).
      torch::Tensor theirs = torch::zeros({3}, torch::kInt64);
      tr.recv({theirs}, r, kTagClock)->wait(timeout);
      const torch::Tensor mine = clock_tensor(start);
      const auto* t = theirs.data_ptr<int64_t>();
      const auto* m = mine.data_ptr<int64_t>();
      if ((m[0] != 0 || m[1] != 0) && t[0] == m[0] && t[1] == m[1])
        (*offsets_s)[static_cast<size_t>(r)] = static_cast<double>(m[2] - t[2]) * 1e-9;
    }
    return start;
  }
  tr.recv({go}, 0, kTagGo)->wait(timeout);
  start = ExecClock::now();
  for (int i = 0; i < kPings; ++i) {
    torch::Tensor ping = torch::zeros({1}, torch::kFloat64);
    tr.recv({ping}, 0, kTagPing + 16 * i)->wait(timeout);
    torch::Tensor pong = torch::full({1}, seconds(ExecClock::now(), start), torch::kFloat64);
    tr.send({pong}, 0, kTagPong + 16 * i)->wait(timeout);
  }
  tr.send({clock_tensor(start)}, 0, kTagClock)->wait(timeout);
  return start;
}

void join_transfer_ends(Timeline* timeline) {
  // (from, to, boundary, direction, client, batch, micro-batch): a training
  // mode's weights (boundary -1) go up and down for one client and batch.
  using Key = std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int64_t, int64_t>;
  const auto key = [](const TimelineEvent& e, int32_t from, int32_t to) {
    return Key{from, to, e.boundary, e.backward, e.client, e.batch, e.microbatch};
  };
  std::map<Key, TimelineEvent*> sends;
  for (auto& e : timeline->events)
    if (e.kind == EventKind::kSend) sends[key(e, e.party, e.peer)] = &e;
  for (auto& e : timeline->events) {
    if (e.kind != EventKind::kRecv) continue;
    auto it = sends.find(key(e, e.peer, e.party));
    if (it == sends.end()) continue;
    TimelineEvent& send = *it->second;
    send.end_s = std::max(send.start_s, e.end_s);
    e.start_s = send.start_s;
    e.end_s = send.end_s;
  }
}

void gather(Transport& tr, const std::vector<double>& offsets_s, RunResult* result,
            std::chrono::milliseconds timeout, int64_t max_events) {
  constexpr int64_t kStatFields = 5;
  if (tr.rank() != 0) {
    const auto& ev = result->timeline.events;
    torch::Tensor sizes = torch::tensor(
        {static_cast<int64_t>(ev.size()), static_cast<int64_t>(result->stats.size()),
         result->batches_done, result->skipped_updates,
         result->peak_tensor_bytes.count(tr.rank()) != 0 ? result->peak_tensor_bytes.at(tr.rank())
                                                         : int64_t{0}},
        torch::kInt64);
    torch::Tensor events =
        torch::empty({static_cast<int64_t>(ev.size() * sizeof(TimelineEvent))}, torch::kUInt8);
    if (!ev.empty()) std::memcpy(events.data_ptr<uint8_t>(), ev.data(), events.numel());
    torch::Tensor stats =
        torch::empty({static_cast<int64_t>(result->stats.size()), kStatFields}, torch::kFloat64);
    for (size_t i = 0; i < result->stats.size(); ++i) {
      const BatchStats& s = result->stats[i];
      const double row[kStatFields] = {double(s.client), double(s.batch), s.loss, s.correct,
                                       s.samples};
      for (int64_t f = 0; f < kStatFields; ++f) stats[static_cast<int64_t>(i)][f] = row[f];
    }
    tr.send({sizes}, 0, kTagSizes)->wait(timeout);
    if (!ev.empty()) tr.send({events}, 0, kTagEvents)->wait(timeout);
    if (!result->stats.empty()) tr.send({stats}, 0, kTagStats)->wait(timeout);
    return;
  }
  for (int r = 1; r < tr.world_size(); ++r) {
    torch::Tensor sizes = torch::zeros({5}, torch::kInt64);
    tr.recv({sizes}, r, kTagSizes)->wait(timeout);
    const int64_t n_ev = sizes[0].item<int64_t>(), n_st = sizes[1].item<int64_t>();
    // Every length a peer announces is bounded before anything is allocated.
    if (n_ev < 0 || n_ev > max_events || n_st < 0 || n_st > max_events ||
        sizes[2].item<int64_t>() < 0 || sizes[3].item<int64_t>() < 0 ||
        sizes[4].item<int64_t>() < 0) {
      throw std::runtime_error("rank " + std::to_string(r) + " announced " + std::to_string(n_ev) +
                               " events and " + std::to_string(n_st) +
                               " batch records; this run has at most " +
                               std::to_string(max_events) + "; refusing its results");
    }
    result->batches_done = std::min(result->batches_done, sizes[2].item<int64_t>());
    result->skipped_updates += sizes[3].item<int64_t>();
    result->peak_tensor_bytes[r] = sizes[4].item<int64_t>();
    if (n_ev > 0) {
      torch::Tensor events =
          torch::empty({n_ev * static_cast<int64_t>(sizeof(TimelineEvent))}, torch::kUInt8);
      tr.recv({events}, r, kTagEvents)->wait(timeout);
      std::vector<TimelineEvent> got(static_cast<size_t>(n_ev));
      std::memcpy(got.data(), events.data_ptr<uint8_t>(), events.numel());
      for (auto& e : got) {
        check_event(e, result->timeline, r);
        e.start_s -= offsets_s[static_cast<size_t>(r)];
        e.end_s -= offsets_s[static_cast<size_t>(r)];
        result->timeline.events.push_back(e);
      }
    }
    if (n_st > 0) {
      torch::Tensor stats = torch::empty({n_st, kStatFields}, torch::kFloat64);
      tr.recv({stats}, r, kTagStats)->wait(timeout);
      for (int64_t i = 0; i < n_st; ++i) {
        auto row = stats[i];
        result->stats.push_back({static_cast<int>(row[0].item<double>()),
                                 static_cast<int64_t>(row[1].item<double>()), row[2].item<double>(),
                                 row[3].item<double>(), row[4].item<double>()});
      }
    }
  }
  join_transfer_ends(&result->timeline);
  sort_events(&result->timeline);
}

nlohmann::json exec_metrics_json(const RunSpec& spec, const RunResult& r) {
  const Plan& plan = spec.plan;
  nlohmann::json j;
  const int64_t batches = std::min(r.batches_done, plan.iterations);
  if (batches > 0) {
    Timeline tl = r.timeline;
    tl.events.erase(std::remove_if(tl.events.begin(), tl.events.end(),
                                   [&](const TimelineEvent& e) { return e.batch >= batches; }),
                    tl.events.end());
    // Resumed: the batches before the checkpoint ran in another process.
    const int64_t warmup = std::max(plan.warmup, r.first_batch);
    Metrics m = compute_metrics(tl, plan, std::min(warmup, batches - 1));
    m.source = "exec";
    to_json(j, m);
  } else {
    j["schema"] = "splitsim.metrics/1";
    j["source"] = "exec";
    j["scenario"] = plan.scenario;
    j["variant"] = plan.variant;
  }
  j["complete"] = r.complete;
  if (r.first_batch > 0) j["resumed_from_batch"] = r.first_batch;
  if (!r.complete) j["error"] = r.error;
  j["batches_completed"] = batches;
  // Training figures per batch, summed over the micro-batches (and averaged
  // over clients).
  std::map<int64_t, BatchStats> per_batch;
  for (const auto& s : r.stats) {
    if (s.batch >= batches) continue;
    BatchStats& t = per_batch[s.batch];
    t.batch = s.batch;
    t.loss += s.loss / plan.clients;
    t.correct += s.correct;
    t.samples += s.samples;
  }
  nlohmann::json losses = nlohmann::json::array(), accuracies = nlohmann::json::array();
  for (const auto& [b, s] : per_batch) {
    losses.push_back(s.loss);
    accuracies.push_back(s.samples > 0 ? s.correct / s.samples : 0.0);
  }
  nlohmann::json training = {{"loss_per_batch", losses},
                             {"accuracy_per_batch", accuracies},
                             {"skipped_updates", r.skipped_updates}};
  if (!losses.empty()) {
    training["loss_first"] = losses.front();
    training["loss_last"] = losses.back();
    training["accuracy_last"] = accuracies.back();
  }
  j["training"] = training;
  // Per party: the tensor bytes it held at most (measured where the rank
  // reported them) beside the plan's peak memory of its stages.
  const ExecTopology& topo = spec.topology;
  nlohmann::json memory = nlohmann::json::object();
  for (int rank = 0; rank < topo.world_size(); ++rank) {
    const int party = topo.rank_party[static_cast<size_t>(rank)];
    std::vector<int> stages;
    for (int k = 0; k < topo.stages; ++k) {
      bool here = false;
      for (int c = 0; c < topo.clients; ++c) here = here || topo.party_of(k, c) == party;
      if (here) stages.push_back(k);
    }
    const int64_t predicted = party_peak_memory_bytes(plan, stages);
    nlohmann::json entry = {{"predicted_peak_bytes", predicted}};
    const auto it = r.peak_tensor_bytes.find(rank);
    if (it != r.peak_tensor_bytes.end()) entry["measured_peak_tensor_bytes"] = it->second;
    memory[topo.parties[static_cast<size_t>(party)]] = entry;
  }
  j["memory"] = memory;
  return j;
}

}  // namespace splitsim
