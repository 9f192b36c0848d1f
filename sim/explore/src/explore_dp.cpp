// K-stage partitions by dynamic programming over the unit sequence, as
// PipeDream's planner: best[k][j] is the smallest bottleneck (slowest stage
// compute or link direction, per batch) of stages 0..k covering units 0..j.
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "explore_internal.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/planner.h"
#include "splitsim/costmodel/unit_graph.h"
#include "splitsim/explore/explore.h"

namespace splitsim {
namespace {

namespace ei = explore_internal;
constexpr double kInf = std::numeric_limits<double>::infinity();

WireDType activation_dtype(const std::string& precision) {
  if (precision == "fp16") return WireDType::kF16;
  if (precision == "bf16") return WireDType::kBF16;
  return WireDType::kF32;
}

// Costs of stages and links for one codec option, chunk count, schedule and
// bandwidth. Stage costs come from make_plan on a partition of at most three
// parts (the stage and its neighbours), so they equal the full Plan's.
class StageCosts {
 public:
  StageCosts(const Scenario& base, const ModelProfile& model,
             const std::map<std::string, DeviceProfile>& devices, const ExploreSpace& space,
             const CodecOption& codec)
      : base_(base), model_(model), devices_(devices), space_(space), codec_(codec) {
    n_ = static_cast<int>(model.units.size());
    K_ = static_cast<int>(space.stage_parties.size());
    chunks_ = space.chunks.empty() ? base.chunks : space.chunks.front();
    schedule_ = space.schedules.empty() ? base.schedule : space.schedules.front();
    bw_ = space.bandwidths_bit_per_s.empty() ? 0 : space.bandwidths_bit_per_s.front();
    cut_ok_.assign(n_ + 1, false);
    for (const auto& c : valid_cuts(model)) cut_ok_[c.position] = true;
    sizes_.assign(chunks_, base.batch_size / chunks_);
    for (int64_t i = 0; i < base.batch_size % chunks_; ++i) ++sizes_[i];
  }

  int units() const { return n_; }
  int stages() const { return K_; }

  // Returns the codecs of boundary `k` (between stage k and k+1) at cut
  // position p, or false when the cut is invalid or the codec does not apply.
  bool boundary(int k, int p, BoundaryCodecs* out) const {
    if (p <= 0 || p >= n_ || !cut_ok_[p]) return false;
    return instantiate_codec(codec_, model_.units[p - 1].output_shape, k, K_ - 1, out);
  }

  // Slowest direction of boundary k at cut p, in seconds per batch.
  double link_s(int k, int p) const {
    BoundaryCodecs bc;
    if (!boundary(k, p, &bc)) return kInf;
    const auto& shape = model_.units[p - 1].output_shape;
    const auto carried = carried_shape(bc.forward, shape);
    const WireDType act = activation_dtype(base_.precision);
    double fwd = 0, bwd = 0;
    for (int64_t b : sizes_) {
      fwd += wire_bytes(bc.forward, shape, b, act);
      bwd += wire_bytes(bc.backward, carried, b, act);
    }
    const Scenario sc = ei::with_choices(base_, {}, {}, chunks_, schedule_, bw_);
    const std::string& a = space_.stage_parties[k];
    const std::string& c = space_.stage_parties[k + 1];
    const std::string& client = space_.stage_parties.front();
    return std::max(fwd / ei::link_Bps(sc.network, a, c, client),
                    bwd / ei::link_Bps(sc.network, c, a, client));
  }

  // Compute per batch of stage k running units [i, j], codec work and
  // optimizer step included. REQUIRES the cuts at i and j+1 to be usable.
  double stage_s(int k, int i, int j) {
    const auto key = std::make_tuple(k, i, j);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    std::vector<PartSpec> parts;
    std::vector<BoundaryCodecs> comp;
    BoundaryCodecs bc;
    auto name = [&](int u) { return model_.units[u].name; };
    if (i > 0) {
      parts.push_back({space_.stage_parties[k - 1], name(0), name(i - 1)});
      boundary(k - 1, i, &bc);
      comp.push_back(bc);
    }
    const size_t self = parts.size();
    parts.push_back({space_.stage_parties[k], name(i), name(j)});
    if (j < n_ - 1) {
      parts.push_back({space_.stage_parties[k + 1], name(j + 1), name(n_ - 1)});
      boundary(k, j + 1, &bc);
      comp.push_back(bc);
    }
    const Plan plan = make_plan(ei::with_choices(base_, parts, comp, chunks_, schedule_, bw_),
                                model_, devices_, "dp");
    const double s = plan.stage_compute_s(static_cast<int>(self));
    memo_.emplace(key, s);
    return s;
  }

  // A lower bound on stage_s(k, i, j) that grows as i decreases: the units'
  // forward and backward time alone, from the same formula, shaved by 1e-6.
  double units_s(int k, int i, int j) const {
    const DeviceProfile& dev = devices_.at(space_.stage_parties[k]);
    double s = 0;
    for (int u = i; u <= j; ++u) {
      const UnitTiming* t = dev.timing_for(model_.model, model_.input_shape, model_.units[u].name);
      for (int64_t b : sizes_) {
        if (t != nullptr) {
          s += (t->fwd_s + t->bwd_s) * b / dev.measured_batch;
        } else {
          OpCounts c = model_.units[u].fwd;
          c += model_.units[u].bwd;
          c.ops = 0;
          s += formula_seconds(dev, c.scaled(b));
        }
      }
    }
    return s * (1 - 1e-6);
  }

  int64_t unit_macs(int u) const { return model_.units[u].fwd.macs() + model_.units[u].bwd.macs(); }

 private:
  const Scenario& base_;
  const ModelProfile& model_;
  const std::map<std::string, DeviceProfile>& devices_;
  const ExploreSpace& space_;
  const CodecOption& codec_;
  int n_ = 0, K_ = 0;
  int64_t chunks_ = 1;
  Schedule schedule_ = Schedule::kSequential;
  double bw_ = 0;
  std::vector<bool> cut_ok_;
  std::vector<int64_t> sizes_;
  std::map<std::tuple<int, int, int>, double> memo_;
};

}  // namespace

bool kstage_partition(const Scenario& base, const ModelProfile& model,
                      const std::map<std::string, DeviceProfile>& devices,
                      const ExploreSpace& space, const CodecOption& codec,
                      std::vector<PartSpec>* partition, double* bottleneck_s) {
  StageCosts costs(base, model, devices, space, codec);
  const int n = costs.units(), K = costs.stages();
  if (K < 1 || K > n) return false;
  int64_t total_macs = 0;
  std::vector<int64_t> prefix_macs(n + 1, 0);
  for (int u = 0; u < n; ++u) prefix_macs[u + 1] = prefix_macs[u] + costs.unit_macs(u);
  total_macs = prefix_macs[n];
  BoundaryCodecs unused;
  // A stage may end at j when it is the last one (j = n-1) or the cut after j is usable.
  auto can_end = [&](int k, int j) {
    return k == K - 1 ? j == n - 1 : j < n - 1 && costs.boundary(k, j + 1, &unused);
  };
  std::vector<std::vector<double>> best(K, std::vector<double>(n, kInf));
  std::vector<std::vector<int>> start(K, std::vector<int>(n, -1));
  for (int j = 0; j < n; ++j) {
    if (!can_end(0, j)) continue;
    // Client MAC share: stage 0 runs on the client.
    if (static_cast<double>(prefix_macs[j + 1]) >
        space.max_client_mac_share * static_cast<double>(total_macs) * (1 + 1e-12))
      break;
    best[0][j] = costs.stage_s(0, 0, j);
    start[0][j] = 0;
  }
  for (int k = 1; k < K; ++k) {
    for (int j = k; j < n; ++j) {
      if (!can_end(k, j)) continue;
      double b = kInf;
      for (int i = j; i >= k; --i) {
        // Partial plans ending at (k, j) that cannot beat the best one so far
        // are dominated: a longer stage only costs more compute.
        if (space.prune && costs.units_s(k, i, j) >= b) break;
        if (best[k - 1][i - 1] == kInf || best[k - 1][i - 1] >= b) continue;
        const double link = costs.link_s(k - 1, i);
        if (link >= b) continue;
        const double v = std::max({best[k - 1][i - 1], link, costs.stage_s(k, i, j)});
        if (v < b) {
          b = v;
          start[k][j] = i;
        }
      }
      best[k][j] = b;
    }
  }
  if (best[K - 1][n - 1] == kInf) return false;
  *bottleneck_s = best[K - 1][n - 1];
  partition->assign(K, PartSpec{});
  int j = n - 1;
  for (int k = K - 1; k >= 0; --k) {
    const int i = start[k][j];
    (*partition)[k] = {space.stage_parties[k], model.units[i].name, model.units[j].name};
    j = i - 1;
  }
  return true;
}

}  // namespace splitsim
