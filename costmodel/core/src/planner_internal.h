#pragma once
// make_plan's steps that planner.cpp (stages, boundaries, memory) and
// planner_clients.cpp (client groups on devices of their own) share.
// Internal to costmodel/core.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/plan.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim::planner_internal {

// What every stage's and boundary's numbers depend on besides its own cut.
struct PlanContext {
  const Scenario& sc;
  const ModelProfile& model;
  const std::map<std::string, DeviceProfile>& devices;  // at the compute precision
  int64_t m = 1;                                        // micro-batches
  int64_t b_max = 1;                                    // the largest micro-batch
  WireDType act = WireDType::kF32;
  int64_t state_copies = 0;
  // Activations at the compute precision. Mixed precision (exec's autocast)
  // computes matmuls and convolutions in half precision, and what the units
  // keep of them halves (x0.5); the loss runs on FP32 logits, and what a
  // stage receives is decoded to FP32.
  double halves = 1;
};

// The seconds of stage `st`'s units per micro-batch of `sizes` on `dev`
// (codecs come later), and their op classes' shares.
void time_units(const ModelProfile& model, const DeviceProfile& dev,
                const std::vector<int64_t>& sizes, PlanStage& st);

// The wire tensors of the receives a stage has posted ahead at most at
// once. A transport posts each receive ahead of the op that takes it (exec:
// the receives of the next 2m + 2 ops, exec/src/stage_instance.cpp), so that
// the bytes land while the stage computes; each holds one micro-batch's wire
// tensors (the largest micro-batch's). Counted where the stage's memory
// peaks, while a backward runs; the running op's own is not counted:
// decoded, it is the received gradient.
int64_t posted_receive_bytes(const Plan& plan, int k, int64_t m);

// The plan's virtual_stages: 1, or for interleaved_1f1b the partition's
// stages per party, checked (InputError at $.virtual_stages, $.partition or
// $.chunks).
int virtual_stages(const Scenario& sc);

// The plan's training mode and aggregation (Scenario::training): a mode
// with rounds needs a party besides the client role's to aggregate or hand
// on through (InputError at $.training); its averaging costs a read of each
// copy and a write of the average at that party's memory bandwidth.
void set_training(const Scenario& sc, const std::map<std::string, DeviceProfile>& devices,
                  Plan* plan);

// zb_h1: stage `st`'s backward split into B (its input's gradient) and W
// (its parameters' gradients) as exec runs them, from the units' measured
// bwd_input / bwd_params: bwd_s becomes B + W per micro-batch of `sizes`
// and bwd_weight_s W, each the stage's timed backward (time_units) scaled
// by the formula's share of that work on `dev`.
void split_backward_seconds(const ModelProfile& model, const DeviceProfile& dev,
                            const std::vector<int64_t>& sizes, PlanStage& st);

// Boundary `bd`'s codec seconds per micro-batch of `sizes`, the sender on
// `sdev` and the receiver on `rdev`, kept on the boundary; a trainable
// codec's layers' backward goes into the two stages' model backward.
void price_codecs(const std::vector<int64_t>& sizes, const DeviceProfile& sdev,
                  const DeviceProfile& rdev, PlanBoundary& bd, PlanStage& sender,
                  PlanStage& receiver);

// Stage `st`'s optimizer step on `dev`: its units' measured update times
// where `dev` has them for every unit, else the formula.
double update_seconds(const PlanContext& c, const DeviceProfile& dev, const PlanStage& st);

// `plan` with the scenario's calibrations applied: its "calibration", then
// a command's (Scenario::command_calibration). The one door through which
// calibration enters a planned Plan.
Plan calibrated(const Plan& plan, const Scenario& sc);

// Client group i of the scenario: its clients' links (drawn) and, on a
// device of its own, the client-role stages' costs on it
// (planner_clients.cpp).
PlanClientGroup client_group(const PlanContext& c, const Plan& plan, size_t i);

}  // namespace splitsim::planner_internal
