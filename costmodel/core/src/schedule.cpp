#include "splitsim/costmodel/schedule.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace splitsim {

namespace {

struct ScheduleInfo {
  Schedule schedule;
  const char* name;
};
constexpr ScheduleInfo kSchedules[] = {
    {Schedule::kSequential, "sequential"},
    {Schedule::kGpipe, "gpipe"},
    {Schedule::k1F1B, "1f1b"},
    {Schedule::kPipeDream, "pipedream"},
    {Schedule::kDdg, "ddg"},
    {Schedule::kFr, "fr"},
    {Schedule::kZbH1, "zb_h1"},
    {Schedule::kInterleaved1F1B, "interleaved_1f1b"},
};

// Shorthands for the orders below: F(b, i), B(b, i), U(b), Sync(t).
Op F(int64_t b, int64_t i) { return {OpKind::kForward, b, i}; }
Op B(int64_t b, int64_t i) { return {OpKind::kBackward, b, i}; }
Op W(int64_t b, int64_t i) { return {OpKind::kWeight, b, i}; }
Op U(int64_t b) { return {OpKind::kUpdate, b, -1}; }
Op Sync(int64_t t) { return {OpKind::kBarrier, t, -1}; }

}  // namespace

const std::vector<Schedule>& all_schedules() {
  static const std::vector<Schedule> all = [] {
    std::vector<Schedule> v;
    for (const auto& info : kSchedules) v.push_back(info.schedule);
    return v;
  }();
  return all;
}

const char* schedule_name(Schedule s) {
  for (const auto& info : kSchedules) {
    if (info.schedule == s) return info.name;
  }
  return "?";
}

std::vector<std::string> schedule_names() {
  std::vector<std::string> names;
  for (const auto& info : kSchedules) names.push_back(info.name);
  return names;
}

bool schedule_from_name(const std::string& name, Schedule* s) {
  for (const auto& info : kSchedules) {
    if (name == info.name) {
      *s = info.schedule;
      return true;
    }
  }
  return false;
}

std::string to_string(const Op& op) {
  switch (op.kind) {
    case OpKind::kForward:
      return "F" + std::to_string(op.batch) + "." + std::to_string(op.microbatch);
    case OpKind::kBackward:
      return "B" + std::to_string(op.batch) + "." + std::to_string(op.microbatch);
    case OpKind::kWeight:
      return "W" + std::to_string(op.batch) + "." + std::to_string(op.microbatch);
    case OpKind::kUpdate:
      return "U" + std::to_string(op.batch);
    case OpKind::kBarrier:
      return "S" + std::to_string(op.batch);
  }
  return "?";
}

std::string to_string(const std::vector<Op>& ops) {
  std::string out;
  for (const Op& op : ops) out += (out.empty() ? "" : " ") + to_string(op);
  return out;
}

bool has_iteration_barrier(Schedule schedule) {
  return schedule == Schedule::kDdg || schedule == Schedule::kFr;
}

bool splits_backward(Schedule schedule) { return schedule == Schedule::kZbH1; }

bool is_synchronous(Schedule schedule) {
  return schedule == Schedule::kSequential || schedule == Schedule::kGpipe ||
         schedule == Schedule::k1F1B || schedule == Schedule::kZbH1 ||
         schedule == Schedule::kInterleaved1F1B;
}

int64_t cooldown_batches(Schedule schedule, int K, int64_t m) {
  switch (schedule) {
    case Schedule::kDdg:
    case Schedule::kFr:
      return K - 1;
    case Schedule::kPipeDream:
      return (K - 1 + m - 1) / m;
    default:
      return 0;
  }
}

namespace {

void sequential(int64_t m, int64_t batches, std::vector<Op>* ops) {
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      ops->push_back(F(b, i));
      ops->push_back(B(b, i));
    }
    ops->push_back(U(b));
  }
}

void gpipe(int64_t m, int64_t batches, std::vector<Op>* ops) {
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < m; ++i) ops->push_back(F(b, i));
    for (int64_t i = m - 1; i >= 0; --i) ops->push_back(B(b, i));
    ops->push_back(U(b));
  }
}

void one_f_one_b(int k, int K, int64_t m, int64_t batches, std::vector<Op>* ops) {
  const int64_t w = std::min<int64_t>(K - k, m);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < w; ++i) ops->push_back(F(b, i));
    for (int64_t i = 0; i < m; ++i) {
      ops->push_back(B(b, i));
      if (i + w < m) ops->push_back(F(b, i + w));
    }
    ops->push_back(U(b));
  }
}

void pipedream(int k, int K, int64_t m, int64_t batches, std::vector<Op>* ops) {
  const int64_t total = m * batches;
  const int64_t w = std::min<int64_t>(K - k, total);
  for (int64_t j = 0; j < w; ++j) ops->push_back(F(j / m, j % m));
  for (int64_t j = 0; j < total; ++j) {
    ops->push_back(B(j / m, j % m));
    if (j % m == m - 1) ops->push_back(U(j / m));
    if (j + w < total) ops->push_back(F((j + w) / m, (j + w) % m));
  }
}

// The zero-bubble repository's ZB-H1 order (exact semantics) per batch:
// warm-up forwards, k forward-backward pairs whose weight passes wait, then
// F B W while forwards are left, B W while backwards are left, the waiting
// Ws. Weight passes follow their backwards' order.
void zb_h1(int k, int K, int64_t m, int64_t batches, std::vector<Op>* ops) {
  for (int64_t b = 0; b < batches; ++b) {
    int64_t f = 0, g = 0, w = 0;  // next forward, backward (input gradient), weight pass
    for (int64_t j = 0; j < std::min<int64_t>(K - k - 1, m); ++j) ops->push_back(F(b, f++));
    for (int j = 0; j < k && f < m; ++j) {
      ops->push_back(F(b, f++));
      ops->push_back(B(b, g++));
    }
    while (f < m) {
      ops->push_back(F(b, f++));
      ops->push_back(B(b, g++));
      ops->push_back(W(b, w++));
    }
    while (g < m) {
      ops->push_back(B(b, g++));
      ops->push_back(W(b, w++));
    }
    while (w < m) ops->push_back(W(b, w++));
    ops->push_back(U(b));
  }
}

// ddg and fr share the order; fr differs in what its backward costs.
void delayed(int k, int K, int64_t m, int64_t batches, std::vector<Op>* ops) {
  const int64_t delay = K - 1 - k;
  const int64_t iterations = batches == 0 ? 0 : batches + K - 1;
  for (int64_t t = 0; t < iterations; ++t) {
    if (t < batches)
      for (int64_t i = 0; i < m; ++i) ops->push_back(F(t, i));
    const int64_t b = t - delay;
    if (b >= 0 && b < batches) {
      for (int64_t i = 0; i < m; ++i) ops->push_back(B(b, i));
      ops->push_back(U(b));
    }
    ops->push_back(Sync(t));
  }
}

}  // namespace

int virtual_stages_of(const std::vector<std::string>& stage_parties) {
  const int K = static_cast<int>(stage_parties.size());
  int p = 0;  // the turn: the parties up to the first repeat
  while (p < K && std::find(stage_parties.begin(), stage_parties.begin() + p,
                            stage_parties[static_cast<size_t>(p)]) == stage_parties.begin() + p)
    ++p;
  if (p == 0 || K % p != 0) return 0;
  for (int s = p; s < K; ++s)
    if (stage_parties[static_cast<size_t>(s)] != stage_parties[static_cast<size_t>(s % p)])
      return 0;
  return K / p;
}

std::string interleaving_problem(const std::vector<std::string>& stage_parties, int64_t m,
                                 int virtual_stages) {
  const int v = virtual_stages_of(stage_parties);
  const int K = static_cast<int>(stage_parties.size());
  if (v < 2)
    return "interleaved_1f1b needs parties that take turns at least twice (stage s on the party "
           "of stage s mod p, e.g. client, server, client, server); these do not";
  if (virtual_stages != v)
    return "virtual_stages " + std::to_string(virtual_stages) + " disagrees with the partition, " +
           "whose " + std::to_string(K / v) + " parties hold " + std::to_string(v) + " stages each";
  const int p = K / v;
  if (m % p != 0)
    return "interleaved_1f1b needs a number of micro-batches that is a multiple of the " +
           std::to_string(p) + " parties; chunks is " + std::to_string(m);
  return "";
}

std::vector<StageOp> device_ops(int d, int p, int v, int64_t m, int64_t batches) {
  assert(0 <= d && d < p && v >= 1 && m >= 1 && m % p == 0 && batches >= 0);
  const int64_t total = m * v, round = static_cast<int64_t>(p) * v;
  const int64_t warmup = m == p ? total : std::min<int64_t>(2 * (p - d - 1) + (v - 1) * p, total);
  auto chunk = [&](int64_t j) { return static_cast<int>((j % round) / p); };
  auto microbatch = [&](int64_t j) { return (j / round) * p + j % p; };
  std::vector<StageOp> ops;
  for (int64_t b = 0; b < batches; ++b) {
    // The party's j-th forward and j-th backward.
    auto fwd = [&](int64_t j) { ops.push_back({chunk(j) * p + d, F(b, microbatch(j))}); };
    auto bwd = [&](int64_t j) { ops.push_back({(v - 1 - chunk(j)) * p + d, B(b, microbatch(j))}); };
    for (int64_t j = 0; j < warmup; ++j) fwd(j);
    for (int64_t j = 0; j < total - warmup; ++j) {
      fwd(warmup + j);
      bwd(j);
    }
    for (int64_t j = total - warmup; j < total; ++j) bwd(j);
    for (int c = 0; c < v; ++c) ops.push_back({c * p + d, U(b)});
  }
  return ops;
}

std::vector<Op> stage_ops(Schedule schedule, int k, int K, int64_t m, int64_t batches,
                          int virtual_stages) {
  assert(0 <= k && k < K && m >= 1 && batches >= 0);
  if (schedule == Schedule::kInterleaved1F1B) {
    assert(virtual_stages >= 1 && K % virtual_stages == 0);
    const int p = K / virtual_stages;
    std::vector<Op> own;
    for (const StageOp& s : device_ops(k % p, p, virtual_stages, m, batches))
      if (s.stage == k) own.push_back(s.op);
    return own;
  }
  std::vector<Op> ops;
  ops.reserve(static_cast<size_t>(batches * (3 * m + 2) + K));
  switch (schedule) {
    case Schedule::kSequential:
      sequential(m, batches, &ops);
      break;
    case Schedule::kGpipe:
      gpipe(m, batches, &ops);
      break;
    case Schedule::k1F1B:
      one_f_one_b(k, K, m, batches, &ops);
      break;
    case Schedule::kPipeDream:
      pipedream(k, K, m, batches, &ops);
      break;
    case Schedule::kDdg:
    case Schedule::kFr:
      delayed(k, K, m, batches, &ops);
      break;
    case Schedule::kZbH1:
      zb_h1(k, K, m, batches, &ops);
      break;
    case Schedule::kInterleaved1F1B:  // above
      break;
  }
  return ops;
}

int64_t peak_in_flight(const std::vector<Op>& ops) {
  const bool weight_passes =
      std::any_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::kWeight; });
  const OpKind releases = weight_passes ? OpKind::kWeight : OpKind::kBackward;
  int64_t now = 0, peak = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kForward) peak = std::max(peak, ++now);
    if (op.kind == releases) --now;
  }
  return peak;
}

int64_t stashed_microbatches(Schedule schedule, int k, int K, int64_t m, int virtual_stages) {
  assert(0 <= k && k < K && m >= 1);
  // K batches fill every order: pipedream needs K-k micro-batches in the
  // stream, ddg and fr K-k batches behind the delayed backward
  // (tests/costmodel/schedule_test.cpp checks that more batches keep more
  // in flight nowhere).
  return peak_in_flight(stage_ops(schedule, k, K, m, K, virtual_stages));
}

int64_t waiting_weight_passes(Schedule schedule, int k, int K, int64_t m) {
  assert(0 <= k && k < K && m >= 1);
  int64_t now = 0, peak = 0;
  for (const Op& op : stage_ops(schedule, k, K, m, 1)) {
    if (op.kind == OpKind::kBackward && splits_backward(schedule)) peak = std::max(peak, ++now);
    if (op.kind == OpKind::kWeight) --now;
  }
  return peak;
}

int64_t peak_weight_versions(const std::vector<Op>& ops) {
  std::map<std::pair<int64_t, int64_t>, int64_t> held;  // (batch, micro-batch) -> version
  std::map<int64_t, int64_t> holders;                   // version -> forwards holding it
  int64_t updates = 0, peak = 1;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kForward) {
      held[{op.batch, op.microbatch}] = updates;
      ++holders[updates];
    }
    if (op.kind == OpKind::kBackward) {
      const auto it = held.find({op.batch, op.microbatch});
      if (it != held.end() && --holders[it->second] == 0) holders.erase(it->second);
      if (it != held.end()) held.erase(it);
    }
    if (op.kind == OpKind::kUpdate) ++updates;
    const int64_t versions =
        static_cast<int64_t>(holders.size()) + (holders.count(updates) != 0 ? 0 : 1);
    peak = std::max(peak, versions);
  }
  return peak;
}

int64_t weight_versions(Schedule schedule, int k, int K, int64_t m) {
  assert(0 <= k && k < K && m >= 1);
  // Only pipedream stashes weights (ddg and fr run a delayed backward with
  // the current ones). The warm-up's forwards all run with the first
  // version; K more batches replace each in flight by one of its own.
  if (schedule != Schedule::kPipeDream) return 1;
  return peak_weight_versions(stage_ops(schedule, k, K, m, 2 * K + 1));
}

}  // namespace splitsim
