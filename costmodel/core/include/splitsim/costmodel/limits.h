#pragma once
// Bounds on scenario values: what the tool can really build, measure and
// simulate on one machine (scenarios/FORMAT.md "Input limits" gives each
// reason). A value outside is an InputError at its JSON path naming the
// limit and the value.
#include <cstdint>

namespace splitsim::limits {

// Samples per batch: 2^20. Keeps every per-batch byte and MAC count far
// below 2^63 for any model within the model limits below.
constexpr int64_t kMaxBatchSize = int64_t{1} << 20;
// Micro-batches per batch; each is a set of simulated tasks per stage.
constexpr int64_t kMaxChunks = 1024;
// Batches to run or simulate.
constexpr int64_t kMaxIterations = 100000;
// Simulated clients; each is a set of SimGrid actors.
constexpr int64_t kMaxClients = 1024;
// iterations x chunks x clients x stages (parts of the partition): the
// stage tasks one simulation runs, each a forward and a backward (about
// 10 to 25 us each on one core: at most some 10 to 30 s of simulation).
constexpr int64_t kMaxStagePasses = 1000000;

// Plan files (splitsim.plan/1). Seconds of one task: SimGrid's clock is a
// double that must stay exact to well below a microsecond, so a task of
// more than a year comes from a device profile or a model far outside
// anything real. Bytes (and shapes, parameter counts): 2^50 each, so that
// sums over every micro-batch (kMaxChunks) and stage stay far below 2^63.
// MACs, elements and ops per batch: 2^60 (the planner keeps them below 2^62).
constexpr double kMaxTaskS = 3.2e7;
constexpr int64_t kMaxPlanBytes = int64_t{1} << 50;
constexpr int64_t kMaxPlanWork = int64_t{1} << 60;

// Network. Below 1 kbit/s (after bandwidth_factor) SimGrid's solver rounds
// the transfers to nothing and reports a deadlock; above 1 Pbit/s no link
// exists. Latencies and overheads of more than an hour are typos.
constexpr double kMinBandwidthBitPerS = 1e3;
constexpr double kMaxBandwidthBitPerS = 1e15;
constexpr double kMinBandwidthFactor = 1e-3;
constexpr double kMaxLatencyS = 3600;
// network.loss_rate: beyond a fifth of the packets TCP hardly moves at all.
constexpr double kMaxLossRate = 0.2;
// network.loss_recovery_s: a minute per lost packet is no link.
constexpr double kMaxLossRecoveryS = 60;
constexpr double kMaxOverheadS = 3600;
// Platform: a microsecond of CPU per byte is a thousand times what a
// network stack costs; slowdowns beyond 100x are typos.
constexpr double kMaxCpuSPerByte = 1e-6;
constexpr double kMaxCoComputeSlowdown = 100;
// Bandwidth trace: lines, times and the smallest factor.
constexpr int64_t kMaxTraceLines = 100000;
constexpr double kMaxTraceTimeS = 1e9;
constexpr double kMinTraceFactor = 1e-3;

// Model options. `plan` runs one training step of each model: the CNNs
// for real, the transformers on the meta device (shapes only, one unit's
// weights built at a time); exec, train and profile run them for real. These
// keep a planned model within what one machine measures in seconds and a
// real run within a few GiB of weights.
constexpr int64_t kMaxNumClasses = 100000;
constexpr int64_t kMinImageSize = 8;
constexpr int64_t kMaxImageSize = 512;
constexpr int64_t kMaxSeqLen = 4096;
constexpr int64_t kMaxPositions = 4096;
constexpr int64_t kMaxHidden = 8192;
constexpr int64_t kMaxLayers = 128;
constexpr int64_t kMaxHeads = 128;
constexpr int64_t kMaxFfn = 32768;
constexpr int64_t kMaxVocabSize = 262144;
// Parameters of a transformer (embeddings + layers + head) that exec, train
// and profile build, and of its largest unit (the embeddings or the LM head,
// or one block) that planning builds at once: 2^28, 1 GiB of fp32 weights,
// twice RoBERTa-large.
constexpr int64_t kMaxTransformerParams = int64_t{1} << 28;
// TorchScript input: dimensions and elements per sample.
constexpr int64_t kMaxInputDims = 8;
constexpr int64_t kMaxInputElements = int64_t{1} << 24;

}  // namespace splitsim::limits
