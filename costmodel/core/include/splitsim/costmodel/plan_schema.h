#pragma once
// The Plan's fields, listed once: every codec of a Plan walks these lists
// (the plan file's JSON writer, costmodel/core/src/plan_json_writer.h, and
// reader, costmodel/core/src/plan_json_reader.h; the simulator's binary codec,
// sim/src/plan_codec_binary.h), so that a new field is one line here
// (tests/costmodel/plan_schema_test.cpp and tests/sim/plan_codec_test.cpp add
// one by one line and check every codec carries it). Each line names the
// field's key in a plan file, how the file's reader checks it (a plan_json::
// reader), and when the file leaves it out; the binary codec carries every
// stored member in the same order.
//
// A visitor V has these members (T: the member's type):
//   required(key, T& m, JsonCodec<T>, need)  in every file; `need` says what
//                                            a file without it lacks
//   optional(key, T& m, JsonCodec<T>)        written always; a file without it
//                                            leaves the default
//   per_microbatch(key, std::vector<E>& m, JsonCodec<E>, need)
//                                            required, one entry per micro-batch
//   per_microbatch_if_any(key, std::vector<E>& m, JsonCodec<E>)
//                                            written when non-empty; one entry
//                                            per micro-batch when given
//   total(key, const std::vector<double>& parts)
//                                            written, the sum of `parts`; a file
//                                            may repeat it (the reader checks)
//   count_of(key, int64_t value, from)       written, a count computed from
//                                            `from`; checked like total
//   complement(key, int64_t& whole, int64_t& part)
//                                            the file holds whole - part (read:
//                                            part = whole - it; absent: part 0)
//   sum_of(key, int64_t& m, const std::vector<int64_t>& parts, from)
//                                            a stored total of `parts`: written,
//                                            computed when read, checked if given
//   nested(key, S& m, need)                  a required object with its own list
//   objects(key, std::vector<S>& m, need)    a required list of such objects;
//                                            its owner reads it (each object
//                                            is checked against the others)
//   objects_if_any(key, std::vector<S>& m)   the same, optional, written when
//                                            non-empty
//   checked(key, T& m, need)                 required, written as
//                                            nlohmann::json converts it; its
//                                            owner reads it, checking it
//                                            against other values
//   checked_if_any(key, T& m)                the same, optional, written when
//                                            non-empty
//   schedule(key, Schedule& m, need)         required, by name (schedule_names())
//   scenario_object(key, NetworkSpec& / PlatformSpec& m, need)
//                                            required, in the scenario
//                                            format's JSON
//   binary(T& m)                             not in plan files
// Writers walk a const value through the same list (fields(v, const_cast...))
// and never change it.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "splitsim/costmodel/plan.h"

namespace splitsim {

namespace plan_json {

using nlohmann::json;

// How one value is read from a plan file (an InputError naming `path` when
// it is wrong) and written to it (nullptr: as nlohmann::json converts it).
template <typename T>
struct JsonCodec {
  T (*read)(const json& v, const std::string& path);
  void (*write)(json& j, const T& v) = nullptr;
};

// Readers of plan_fields.cpp.
std::string read_text(const json& v, const std::string& path);  // non-empty
std::string read_label(const json& v, const std::string& path);  // a variant's label
int64_t read_batch_size(const json& v, const std::string& path);  // 1 to limits::kMaxBatchSize
int64_t read_iterations(const json& v, const std::string& path);  // 1 to limits::kMaxIterations
int64_t read_clients(const json& v, const std::string& path);     // 1 to limits::kMaxClients
std::string read_compute_precision(const json& v, const std::string& path);  // fp32|fp16|bf16
std::string read_training(const json& v, const std::string& path);     // training_mode_names()
int64_t read_aggregate_every(const json& v, const std::string& path);  // 1 to kMaxIterations
double read_seconds_per_byte(const json& v, const std::string& path);  // 0 to 1
std::string read_text_or_empty(const json& v, const std::string& path);
std::vector<std::string> read_texts(const json& v, const std::string& path);
// Bytes, a shape's dimension, a count of parameters: non-negative, and small
// enough that a sum over every micro-batch or stage stays far below 2^63.
int64_t read_count(const json& v, const std::string& path);
int64_t read_at_least_one(const json& v, const std::string& path);  // weight versions
int64_t read_messages(const json& v, const std::string& path);      // 1 to 2^20
int read_stage_index(const json& v, const std::string& path);
// Seconds of one task: finite, in [0, limits::kMaxTaskS].
double read_seconds(const json& v, const std::string& path);
std::vector<int64_t> read_shape(const json& v, const std::string& path);
// Work by op class, {"conv_macs", ..., "ops"}; "macs", if given, their MACs' sum.
OpCounts read_work(const json& v, const std::string& path);
// One micro-batch's op-class shares: every class, each in [0, 1], summing to
// 1 (or all 0: a stage with no model work).
OpClassParts read_op_class_shares(const json& v, const std::string& path);
void write_op_class_shares(json& j, const OpClassParts& p);
bool read_timed_from(const json& v, const std::string& path);  // "measured": true
void write_timed_from(json& j, const bool& measured);
bool read_flag(const json& v, const std::string& path);  // true or false
int read_virtual_stages(const json& v, const std::string& path);  // 1 to 1024
CodecSpec read_codec(const json& v, const std::string& path);
void write_codec(json& j, const CodecSpec& c);

inline constexpr JsonCodec<std::string> kText{read_text};
inline constexpr JsonCodec<std::string> kLabel{read_label};
inline constexpr JsonCodec<int64_t> kBatchSize{read_batch_size};
inline constexpr JsonCodec<int64_t> kIterations{read_iterations};
inline constexpr JsonCodec<int64_t> kClients{read_clients};
inline constexpr JsonCodec<std::string> kComputePrecision{read_compute_precision};
inline constexpr JsonCodec<std::string> kTraining{read_training};
inline constexpr JsonCodec<int64_t> kAggregateEvery{read_aggregate_every};
inline constexpr JsonCodec<double> kSecondsPerByte{read_seconds_per_byte};
inline constexpr JsonCodec<std::string> kTextOrEmpty{read_text_or_empty};
inline constexpr JsonCodec<std::vector<std::string>> kTexts{read_texts};
inline constexpr JsonCodec<int64_t> kCount{read_count};
inline constexpr JsonCodec<int64_t> kAtLeastOne{read_at_least_one};
inline constexpr JsonCodec<int64_t> kMessages{read_messages};
inline constexpr JsonCodec<int> kStageIndex{read_stage_index};
inline constexpr JsonCodec<double> kSeconds{read_seconds};
inline constexpr JsonCodec<std::vector<int64_t>> kShape{read_shape};
inline constexpr JsonCodec<OpCounts> kWork{read_work};
inline constexpr JsonCodec<OpClassParts> kShares{read_op_class_shares, write_op_class_shares};
inline constexpr JsonCodec<bool> kTimedFrom{read_timed_from, write_timed_from};
inline constexpr JsonCodec<bool> kFlag{read_flag};
inline constexpr JsonCodec<int> kVirtualStages{read_virtual_stages};
inline constexpr JsonCodec<CodecSpec> kCodec{read_codec, write_codec};

}  // namespace plan_json

namespace plan_schema {

template <class V>
void fields(V& v, PlanStage& s) {
  using namespace plan_json;          // NOLINT: the readers above
  v.optional("name", s.name, kText);  // default: "stage<k>"
  v.required("party", s.party, kText, "the party running the stage");
  v.optional("device", s.device, kTextOrEmpty);
  v.optional("units", s.units, kTexts);
  v.binary(s.first_unit);
  v.binary(s.last_unit);
  v.count_of("fwd_macs_per_batch", s.fwd_per_batch.macs(), "fwd_work_per_batch");
  v.count_of("bwd_macs_per_batch", s.bwd_per_batch.macs(), "bwd_work_per_batch");
  v.optional("fwd_work_per_batch", s.fwd_per_batch, kWork);
  v.optional("bwd_work_per_batch", s.bwd_per_batch, kWork);
  v.optional("param_count", s.param_count, kCount);
  v.optional("param_bytes", s.param_bytes, kCount);
  v.optional("buffer_bytes", s.buffer_bytes, kCount);
  // Plan files written before fine-tuning existed: everything trained.
  v.complement("trainable_param_count", s.param_count, s.frozen_param_count);
  v.complement("trainable_param_bytes", s.param_bytes, s.frozen_param_bytes);
  v.optional("optimizer_state_bytes", s.optimizer_state_bytes, kCount);
  v.optional("stash_bytes_per_microbatch", s.stash_bytes_per_microbatch, kCount);
  v.optional("stashed_microbatches", s.stashed_microbatches, kCount);
  v.optional("weight_versions", s.weight_versions, kAtLeastOne);
  v.optional("replay_bytes", s.replay_bytes, kCount);
  v.optional("work_bytes", s.work_bytes, kCount);
  v.optional("input_bytes", s.input_bytes, kCount);
  v.optional("recv_bytes", s.recv_bytes, kCount);
  v.optional("step_bytes", s.step_bytes, kCount);
  v.optional("peak_memory_bytes", s.peak_memory_bytes, kCount);
  // In the file, the stage's whole passes, codec work included; in the
  // Plan, the model's part (plan_fields.h: with_whole_passes).
  v.per_microbatch("fwd_s_per_microbatch", s.fwd_s, kSeconds, "seconds");
  v.per_microbatch("bwd_s_per_microbatch", s.bwd_s, kSeconds, "seconds");
  v.total("fwd_s_per_batch", s.fwd_s);
  v.total("bwd_s_per_batch", s.bwd_s);
  // Optional: zb_h1's weight-gradient part of the model's backward.
  v.per_microbatch_if_any("bwd_weight_s_per_microbatch", s.bwd_weight_s, kSeconds);
  v.required("update_s_per_batch", s.update_s, kSeconds, "seconds");
  v.optional("timed_from", s.timed_from_measurement, kTimedFrom);
  v.per_microbatch_if_any("fwd_op_class_shares_per_microbatch", s.fwd_op_class_shares, kShares);
  v.per_microbatch_if_any("bwd_op_class_shares_per_microbatch", s.bwd_op_class_shares, kShares);
}

// "method" and "description" repeat the codec (plan_parse.cpp checks and
// writes them beside this list).
template <class V>
void fields(V& v, PlanTransfer& t) {
  using namespace plan_json;  // NOLINT
  v.optional("codec", t.codec, kCodec);
  v.optional("carried_shape_per_sample", t.carried_shape, kShape);
  v.sum_of("wire_bytes_per_batch", t.wire_bytes_per_batch, t.wire_bytes,
           "wire_bytes_per_microbatch");
  v.per_microbatch("wire_bytes_per_microbatch", t.wire_bytes, kCount,
                   "a list with one entry per micro-batch");
  // Optional: 1 in plans written before it.
  v.optional("wire_messages_per_microbatch", t.wire_messages, kMessages);
  // Optional: only for several tensors.
  v.per_microbatch_if_any("last_tensor_bytes_per_microbatch", t.last_tensor_bytes, kCount);
  v.per_microbatch("encode_s_per_microbatch", t.encode_s, kSeconds,
                   "a list with one entry per micro-batch");
  v.per_microbatch("decode_s_per_microbatch", t.decode_s, kSeconds,
                   "a list with one entry per micro-batch");
  v.total("encode_s_per_batch", t.encode_s);
  v.total("decode_s_per_batch", t.decode_s);
}

template <class V>
void fields(V& v, PlanBoundary& b) {
  using namespace plan_json;  // NOLINT
  v.required("from_stage", b.from_stage, kStageIndex, "a stage index");
  v.required("to_stage", b.to_stage, kStageIndex, "a stage index");
  v.optional("activation_shape", b.activation_shape, kShape);
  v.nested("forward", b.forward, "a transfer object");
  v.nested("backward", b.backward, "a transfer object");
  // Optional: true in plans written before it.
  v.optional("needs_gradient", b.needs_gradient, kFlag);
}

template <class V>
void fields(V& v, PlanStageCosts& c) {
  using namespace plan_json;  // NOLINT
  v.required("stage", c.stage, kStageIndex, "see the plan format");
  v.per_microbatch("fwd_s_per_microbatch", c.fwd_s, kSeconds, "see the plan format");
  v.per_microbatch("bwd_s_per_microbatch", c.bwd_s, kSeconds, "see the plan format");
  v.required("update_s_per_batch", c.update_s, kSeconds, "see the plan format");
  // Where the group's codec work differs from the plan's (a file leaves out
  // a list that equals the plan's).
  v.per_microbatch_if_any("fwd_decode_s_per_microbatch", c.fwd_decode_s, kSeconds);
  v.per_microbatch_if_any("fwd_encode_s_per_microbatch", c.fwd_encode_s, kSeconds);
  v.per_microbatch_if_any("bwd_decode_s_per_microbatch", c.bwd_decode_s, kSeconds);
  v.per_microbatch_if_any("bwd_encode_s_per_microbatch", c.bwd_encode_s, kSeconds);
}

// Its plain values are read from this list; plan_parse.cpp's read_group
// reads the per-client lists (`count` entries each) and the stage costs
// (stages of the client role), like the top level below.
template <class V>
void fields(V& v, PlanClientGroup& g) {
  using namespace plan_json;  // NOLINT
  v.required("name", g.name, kText, "see the plan format");
  v.optional("device", g.device, kTextOrEmpty);
  v.required("count", g.count, kClients, "see the plan format");
  v.checked_if_any("bandwidth_bit_per_s", g.bandwidth_bit_per_s);  // one per client
  v.checked_if_any("latency_s", g.latency_s);
  v.objects_if_any("stage_costs", g.stage_costs);
}

// The scenario format's objects: their JSON is the scenario's
// (plan.cpp writes them, scenario_internal reads them); listed here for the
// binary codec.
template <class V>
void fields(V& v, NetworkSpec& n) {
  for (double* d :
       {&n.bandwidth_bit_per_s, &n.up_bandwidth_bit_per_s, &n.down_bandwidth_bit_per_s,
        &n.latency_s, &n.per_message_overhead_s, &n.bandwidth_factor, &n.server_bandwidth_bit_per_s,
        &n.server_latency_s, &n.burst_peak_bit_per_s, &n.loss_rate, &n.loss_recovery_s})
    v.binary(*d);
  v.binary(n.bandwidth_trace);
  v.binary(n.burst_bytes);
  v.binary(n.burst_packet_bytes);
}

template <class V>
void fields(V& v, PlatformSpec& f) {
  for (double* d : {&f.cpu_s_per_byte_sent, &f.cpu_s_per_byte_received, &f.cpu_s_per_message_sent,
                    &f.cpu_s_per_message_received, &f.co_compute_slowdown})
    v.binary(*d);
  v.binary(f.shared_machine);
  v.binary(f.parties);
  v.binary(f.wake_cost);
}

// What a plan file written before the simulator read it lacks.
inline constexpr const char* kWriteAgain =
    "see the plan format (plan files written before the simulator read them lack it: write it "
    "again with `splitsim plan --json`)";

// The top level. Its plain values are read from this list; parse_plan
// (plan_parse.cpp) reads the ones that check each other (micro-batch sizes
// against the batch, warm-up against iterations, boundaries against
// stages, groups against clients) and the chunk count they repeat.
template <class V>
void fields(V& v, Plan& p) {
  using namespace plan_json;  // NOLINT
  v.optional("scenario", p.scenario, kText);
  v.optional("variant", p.variant, kLabel);
  v.optional("model", p.model, kTextOrEmpty);
  v.required("batch_size", p.batch_size, kBatchSize, kWriteAgain);
  v.count_of("chunks", p.chunks(), "microbatch_sizes");
  v.checked("microbatch_sizes", p.microbatch_sizes, kWriteAgain);
  v.schedule("schedule", p.schedule, kWriteAgain);
  v.objects("stages", p.stages, kWriteAgain);
  v.objects("boundaries", p.boundaries, kWriteAgain);
  v.scenario_object("network", p.network, kWriteAgain);
  v.scenario_object("platform", p.platform, kWriteAgain);
  v.required("iterations", p.iterations, kIterations, kWriteAgain);
  v.checked("warmup", p.warmup, kWriteAgain);
  v.required("clients", p.clients, kClients, kWriteAgain);
  v.objects_if_any("client_groups", p.client_groups);
  v.optional("compute_precision", p.compute_precision, kComputePrecision);
  // Optional: 1 (parse_plan checks it against the stages' parties).
  v.optional("virtual_stages", p.virtual_stages, kVirtualStages);
  // Optional: "unsynchronised", every 1, no averaging cost.
  v.optional("training", p.training, kTraining);
  v.optional("aggregate_every", p.aggregate_every, kAggregateEvery);
  v.optional("average_s_per_byte", p.average_s_per_byte, kSecondsPerByte);
}

}  // namespace plan_schema
}  // namespace splitsim
