#pragma once
// The partition explorer: which cut points, codecs, chunk counts, schedules
// (and link bandwidths) are worth simulating, and which results are best.
// Pure functions of their inputs (no I/O, no globals, no SimGrid):
// run_exploration() (exploration.h) simulates the survivors and fills
// Candidate::time_per_batch_s. Documented in sim/explore/README.md.
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/calibration.h"
#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/costmodel/spread.h"

namespace splitsim {

enum class CutKind { kSingle, kUShape, kKStage };
const char* cut_kind_name(CutKind k);  // "single", "ushape", "kstage"
enum class Objective { kTime, kBytes, kClientMacs };
const char* objective_name(Objective o);  // "time", "bytes", "client_macs"

// Throws InputError naming `where` unless `name` is a kind / an objective.
CutKind parse_cut_kind(const std::string& name, const std::string& where);
Objective parse_objective(const std::string& name, const std::string& where);

// One codec choice, applied at every boundary of a candidate. `per_boundary`
// gives one codec per boundary instead (a candidate with another number of
// boundaries does not take it). `auto_insert_reduction` > 0 means: at each
// boundary, conv_insert C -> ceil(C/r) kernel 1 for [C,H,W] or
// linear_insert H -> ceil(H/r) for [T,H]. Trainable inserts send the gradient
// back uncompressed in the reduced shape; every other codec compresses both
// directions.
struct CodecOption {
  std::string label;  // "none", "q8", "pi4", "insert4", ...
  CodecSpec codec;
  std::vector<CodecSpec> per_boundary;
  int64_t auto_insert_reduction = 0;
};
// none, fp16, quantize 8, power_iteration rank 4, auto insert 1/4.
std::vector<CodecOption> default_codec_options();
// Returns the boundary codecs of `option` at a boundary carrying `shape` (per
// sample), boundary `index` of `count`, or false when it does not apply there
// (check_applicable fails, or a per-boundary list of another length).
bool instantiate_codec(const CodecOption& option, const std::vector<int64_t>& shape, int index,
                       int count, BoundaryCodecs* out);

// What to search and under which constraints. Empty lists mean "the base
// scenario's value" (chunks, schedule, bandwidth).
struct ExploreSpace {
  std::vector<CutKind> kinds = {CutKind::kSingle, CutKind::kUShape};
  std::string client_party;                // "" = the base partition's first party
  std::string server_party;                // "" = its first other party
  std::vector<std::string> stage_parties;  // kstage: one party per stage, in order
  std::vector<CodecOption> codecs;         // empty = default_codec_options()
  std::vector<int64_t> chunks;
  std::vector<Schedule> schedules;
  std::vector<double> bandwidths_bit_per_s;
  int64_t client_memory_bytes = 0;    // 0 = no limit
  double max_client_mac_share = 1.0;  // in (0, 1]
  Objective objective = Objective::kTime;
  bool prune = true;  // kstage DP: drop dominated partial plans
  // Applied to every candidate's plan (as Scenario::command_calibration),
  // so that screening and ranking use the calibrated costs. Not in the space file: the
  // command's --calibration.
  Calibration calibration;
};

// Parses a space file (schema "splitsim.explore/1"; sim/explore/README.md). Throws
// InputError naming the JSON path ("$.constraints.client_memory_bytes").
ExploreSpace parse_space(const nlohmann::json& j);
// Largest product codec options x chunk counts x schedules x bandwidths
// (space_combinations()): the explorer builds a plan for each combination at
// each cut (each cut pair for ushape), some 100 us and 8 kB each. At 1,024,
// MobileNetV2's 210 U-shape cut pairs make some 215,000 candidates.
constexpr int64_t kMaxSpaceCombinations = 1024;
// codec options x chunk counts x schedules x bandwidths, an empty list
// counting as one (the scenario's value; codecs: default_codec_options()).
int64_t space_combinations(const ExploreSpace& space);

// Throws InputError naming `where` for values out of range (negative memory,
// a MAC share outside (0,1], chunks < 1, a bandwidth <= 0, kstage without at
// least two stage parties).
void check_space(const ExploreSpace& space);

struct Candidate {
  std::string label;  // "ushape features.1|features.18 q8 chunks=4 gpipe 4e+09bit/s"
  CutKind kind = CutKind::kSingle;
  std::string codec_label;
  std::vector<PartSpec> partition;
  std::vector<BoundaryCodecs> compression;
  int64_t chunks = 1;
  Schedule schedule = Schedule::kSequential;
  double bandwidth_bit_per_s = 0;
  Plan plan;
  // From the Plan.
  int64_t wire_bytes_per_batch = 0;   // every boundary, both directions
  int64_t client_macs_per_batch = 0;  // fwd + bwd of the client's stages
  double client_mac_share = 0;
  int64_t client_memory_bytes = 0;              // party_peak_memory_bytes of the client's stages
  double lower_bound_s = 0, upper_bound_s = 0;  // screen_bounds()
  bool screened_out = false;                    // provably off the Pareto front
  double time_per_batch_s = std::numeric_limits<double>::quiet_NaN();  // simulated
  // Simulated at the ends of the devices' timing spread (splitsim/costmodel/spread.h);
  // the first ExploreOptions::spread_top of the ranking only.
  TimeSpread spread;
};

struct Bounds {
  double lower_s = 0, upper_s = 0;
};
// Closed-form bounds on a Plan's time per batch. lower: the steady-state
// bound max(compute per batch of each party, wire bytes of each link
// direction / its bandwidth); synchronous schedules (sequential, gpipe,
// 1f1b) also wait for one micro-batch's fill path (its forward and backward
// through every stage and link), and sequential for everything in series.
// upper: all compute, transfers and latencies in series.
Bounds screen_bounds(const Plan& plan);

struct ExploreResult {
  std::vector<Candidate> candidates;  // feasible ones, in enumeration order
  int64_t enumerated = 0;             // before constraints
  int64_t rejected_by_constraints = 0;
  int64_t screened_out = 0;
};

// Enumerates the candidates of `space` on `base` (its model, batch, devices,
// network, optimizer), drops those that break a constraint, computes their
// bounds and marks those provably off the Pareto front (screen()).
// Throws InputError when the space does not fit the scenario (unknown
// parties, no valid cut, no applicable codec).
ExploreResult explore(const Scenario& base, const ModelProfile& model,
                      const std::map<std::string, DeviceProfile>& devices,
                      const ExploreSpace& space);

// K-stage: the partition of the units into stage_parties.size() contiguous
// stages (stage k on party k) that minimises the slowest stage's compute or
// link time per batch (PipeDream's planner), for one codec option, chunk
// count, schedule and bandwidth. Returns false when no partition exists.
// `bottleneck_s` gets the minimum. With space.prune, partial plans that
// cannot beat the best found are dropped (the result is the same).
bool kstage_partition(const Scenario& base, const ModelProfile& model,
                      const std::map<std::string, DeviceProfile>& devices,
                      const ExploreSpace& space, const CodecOption& codec,
                      std::vector<PartSpec>* partition, double* bottleneck_s);

// The Plan's steady-state bottleneck (the lower bound without fill terms).
double steady_state_bound(const Plan& plan);

// Marks candidates dominated even at best: X is screened out when some Y has
// Y.upper < X.lower and no more bytes, client MACs and client memory.
void screen(std::vector<Candidate>* candidates);

// Points to minimise, all coordinates. Returns the indices of the points no
// other point dominates (<= in every coordinate, < in one), in input order.
// Duplicates are all kept.
std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& points);
// The candidates with a simulated time, Pareto-optimal over (time, bytes,
// client MACs, client memory).
std::vector<size_t> candidate_front(const std::vector<Candidate>& candidates);
// Indices of the candidates with a simulated time, best first for
// `objective` (ties broken by time, then bytes, then label).
std::vector<size_t> rank(const std::vector<Candidate>& candidates, Objective objective);

// `base_json` (a scenario object without "sweep") with the candidate's
// partition, compression, chunks, schedule and bandwidth: a ready-to-run
// scenario (schema splitsim.scenario/1).
nlohmann::json candidate_scenario_json(const nlohmann::json& base_json, const Candidate& c);
nlohmann::json candidate_to_json(const Candidate& c);

}  // namespace splitsim
