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
         schedule == Schedule::k1F1B || schedule == Schedule::kZbH1;
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

std::vector<Op> stage_ops(Schedule schedule, int k, int K, int64_t m, int64_t batches) {
  assert(0 <= k && k < K && m >= 1 && batches >= 0);
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

int64_t stashed_microbatches(Schedule schedule, int k, int K, int64_t m) {
  assert(0 <= k && k < K && m >= 1);
  // K batches fill every order: pipedream needs K-k micro-batches in the
  // stream, ddg and fr K-k batches behind the delayed backward
  // (tests/costmodel/schedule_test.cpp checks that more batches keep more
  // in flight nowhere).
  return peak_in_flight(stage_ops(schedule, k, K, m, K));
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
