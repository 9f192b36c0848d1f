// Device profiles: the spec-sheet formula, parsing, and the efficiency fit.
#include "splitsim/costmodel/device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/efficiency_fit.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

DeviceProfile unit_device() {
  DeviceProfile d;
  d.name = "d";
  d.peak_flops = 2e9;  // 1e9 MAC/s
  d.memory_bandwidth_Bps = 8e9;
  d.efficiency = {0.5, 0.1, 0.8, 1.0, 1e-5};
  return d;
}

TEST(DeviceTest, FormulaAddsEachClass) {
  OpCounts w;
  w.conv_macs = 1'000'000'000;          // 2 s at 0.5
  w.depthwise_macs = 100'000'000;       // 1 s at 0.1
  w.matmul_macs = 800'000'000;          // 1 s at 0.8
  w.elementwise_elems = 1'000'000'000;  // 8 GB / 8 GB/s = 1 s
  w.ops = 100'000;                      // 1 s
  EXPECT_NEAR(formula_seconds(unit_device(), w), 6.0, 1e-9);
}

TEST(DeviceTest, FitRecoversKnownEfficiencies) {
  const DeviceProfile truth = unit_device();
  std::vector<TimedWork> data;
  for (int i = 1; i <= 12; ++i) {
    OpCounts w;
    w.conv_macs = (i % 3) * 1'000'000LL * i;
    w.depthwise_macs = (i % 2) * 300'000LL * i;
    w.matmul_macs = ((i + 1) % 4) * 2'000'000LL;
    w.elementwise_elems = 500'000LL * (13 - i);
    w.ops = 3 + i % 5;
    data.push_back({w, formula_seconds(truth, w)});
  }
  DeviceProfile prior = truth;
  prior.efficiency = Efficiency{};
  const FitResult fit = fit_efficiency(prior, data);
  EXPECT_NEAR(fit.efficiency.conv, 0.5, 1e-6);
  EXPECT_NEAR(fit.efficiency.depthwise, 0.1, 1e-6);
  EXPECT_NEAR(fit.efficiency.matmul, 0.8, 1e-6);
  EXPECT_NEAR(fit.efficiency.elementwise, 1.0, 1e-6);
  EXPECT_NEAR(fit.efficiency.per_op_s, 1e-5, 1e-10);
  EXPECT_LT(fit.rms_rel_error, 1e-9);
  EXPECT_EQ(fit.observations, 12);
}

TEST(DeviceTest, FitKeepsThePriorForClassesWithoutData) {
  DeviceProfile d = unit_device();
  std::vector<TimedWork> data;
  for (int i = 1; i <= 4; ++i) {
    OpCounts w;
    w.matmul_macs = 1'000'000LL * i;
    data.push_back({w, 1e-3 * i * 1.25});  // efficiency 0.8
  }
  const FitResult fit = fit_efficiency(d, data);
  EXPECT_NEAR(fit.efficiency.matmul, 0.8, 1e-9);
  EXPECT_DOUBLE_EQ(fit.efficiency.conv, 0.5);
  EXPECT_EQ(fit.fitted, std::vector<std::string>{"matmul"});
}

TEST(DeviceTest, FitKeepsThePriorForAClassTooSmallToMeasure) {
  // Conv at efficiency 0.5 explains each timing; a sliver of matmul (0.1% of
  // the time at full speed) rides along, with +-2% noise on the timings.
  DeviceProfile d = unit_device();
  std::vector<TimedWork> data;
  for (int i = 1; i <= 8; ++i) {
    OpCounts w;
    w.conv_macs = 1'000'000LL * i;
    w.matmul_macs = 2'000LL * i;
    const double noise = i % 2 ? 1.02 : 0.98;
    data.push_back({w, 2e-3 * i * noise});
  }
  const FitResult fit = fit_efficiency(d, data);
  EXPECT_NEAR(fit.efficiency.conv, 0.5, 0.02);
  EXPECT_DOUBLE_EQ(fit.efficiency.matmul, 0.8);  // the prior
  EXPECT_EQ(std::count(fit.fitted.begin(), fit.fitted.end(), "matmul"), 0);
}

TEST(DeviceTest, ShippedProfilesLoad) {
  const std::string dir = std::string(SPLITSIM_SOURCE_DIR) + "/scenarios/devices";
  for (const char* name : {"xeon_40core", "gtx1080", "v100", "a100", "h100"}) {
    const DeviceProfile d = load_device(name, {dir}, "$.devices.x");
    EXPECT_EQ(d.name, name);
    EXPECT_GT(d.peak_flops, 1e12);
    EXPECT_FALSE(d.sources.empty()) << name << " must cite its sources";
  }
  // Tensor-core peaks where the datasheets list them; none for Pascal.
  const auto peak = [&](const char* name) { return load_device(name, {dir}, "$.devices.x"); };
  EXPECT_EQ(peak("v100").peak_flops_fp16, 125e12);
  EXPECT_EQ(peak("v100").peak_flops_bf16, 0);
  EXPECT_EQ(peak("a100").peak_flops_bf16, 312e12);
  EXPECT_EQ(peak("h100").peak_flops_fp16, 989e12);
  EXPECT_EQ(peak("gtx1080").peak_flops_fp16, 0);
  EXPECT_EQ(peak("xeon_40core").peak_flops_fp16, 0);
}

// A device "g" of 10 TFLOP/s FP32 and 80 TFLOP/s FP16, 1 TB/s.
DeviceProfile fp16_device() {
  DeviceProfile d;
  d.name = "g";
  d.peak_flops = 10e12;
  d.memory_bandwidth_Bps = 1e12;
  d.peak_flops_fp16 = 80e12;
  return d;
}

// Mixed precision computes at the precision's peak where the device lists
// one, else at its FP32 peak; the peaks round-trip and must be positive.
TEST(DeviceTest, ComputePrecisionPicksItsPeak) {
  const DeviceProfile d = fp16_device();
  bool applied = false;
  EXPECT_EQ(at_compute_precision(d, "fp16", &applied).peak_flops, 80e12);
  EXPECT_TRUE(applied);
  EXPECT_EQ(at_compute_precision(d, "bf16", &applied).peak_flops, 10e12);  // none listed
  EXPECT_FALSE(applied);
  EXPECT_EQ(at_compute_precision(d, "fp32", &applied).peak_flops, 10e12);
  nlohmann::json j;
  to_json(j, d);
  EXPECT_EQ(parse_device(j, "$").peak_flops_fp16, 80e12);
  EXPECT_FALSE(j.contains("peak_flops_bf16"));
  j["peak_flops_bf16"] = 0;
  try {
    parse_device(j, "$.devices.g");
    ADD_FAILURE() << "a zero peak was taken";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.devices.g.peak_flops_bf16");
  }
}

// A processor F times slower: every formula term and every measured
// timing takes F times as long (what validate predicts for a client group
// that exec --compute-slowdown F slows).
TEST(DeviceTest, SlowedProfileTakesFactorTimesAsLong) {
  DeviceProfile d = unit_device();
  d.timings = {{"conv1", 0.01, 0.02, 0.003}};
  d.codec_timings.push_back({"{}", {4}, 8, 1e-4, 2e-4, 3e-4, std::nullopt});
  OpCounts w;
  w.conv_macs = 1e9;
  w.elementwise_elems = 1e9;
  w.ops = 100;
  const DeviceProfile s = slowed_profile(d, 4);
  EXPECT_NEAR(formula_seconds(s, w), 4 * formula_seconds(d, w), 1e-12);
  EXPECT_DOUBLE_EQ(s.timings[0].fwd_s, 0.04);
  EXPECT_DOUBLE_EQ(s.timings[0].bwd_s, 0.08);
  EXPECT_DOUBLE_EQ(s.timings[0].update_s, 0.012);
  EXPECT_DOUBLE_EQ(s.codec_timings[0].encode_s, 4e-4);
  EXPECT_DOUBLE_EQ(s.codec_timings[0].decode_s, 8e-4);
  EXPECT_DOUBLE_EQ(*s.codec_timings[0].sender_backward_s, 1.2e-3);
  EXPECT_FALSE(s.codec_timings[0].receiver_backward_s.has_value());
  EXPECT_DOUBLE_EQ(update_formula_seconds(s, 1000, 1), 4 * update_formula_seconds(d, 1000, 1));
}

// Tensor cores reach their own share of their peak: efficiency_fp16 replaces
// the MAC classes' shares (only at fp16), leaves element-wise work alone,
// defaults each key to the FP32 share, and is refused without its peak.
TEST(DeviceTest, HalfPrecisionEfficienciesApplyToTheMacClassesOnly) {
  DeviceProfile d = fp16_device();
  d.peak_flops_bf16 = 40e12;
  d.efficiency.matmul = 0.8;
  d.efficiency.conv = 0.6;
  d.efficiency.elementwise = 0.7;
  nlohmann::json j;
  to_json(j, d);
  j["efficiency_fp16"] = {{"matmul", 0.4}};
  const DeviceProfile parsed = parse_device(j, "$");
  ASSERT_TRUE(parsed.efficiency_fp16.has_value());
  EXPECT_FALSE(parsed.efficiency_bf16.has_value());
  const DeviceProfile fp16 = at_compute_precision(parsed, "fp16");
  EXPECT_EQ(fp16.efficiency.matmul, 0.4);
  EXPECT_EQ(fp16.efficiency.conv, 0.6);  // not given: the FP32 share
  EXPECT_EQ(fp16.efficiency.elementwise, 0.7);
  EXPECT_EQ(at_compute_precision(parsed, "bf16").efficiency.matmul, 0.8);  // none for bf16
  EXPECT_EQ(at_compute_precision(parsed, "fp32").efficiency.matmul, 0.8);
  // 1e9 matmul MACs: 2e9 FLOP at 80 TFLOP/s x 0.4 = 62.5 us (at 0.8 it would be half that).
  OpCounts w;
  w.matmul_macs = 1e9;
  EXPECT_DOUBLE_EQ(formula_parts(fp16, w).matmul, 2e9 / (80e12 * 0.4));
  nlohmann::json again;
  to_json(again, parsed);
  EXPECT_EQ(again.at("efficiency_fp16").at("matmul"), 0.4);
  EXPECT_FALSE(again.contains("efficiency_bf16"));

  const auto error_at = [](nlohmann::json bad) {
    try {
      parse_device(bad, "$.devices.g");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  nlohmann::json no_peak = j;
  no_peak.erase("peak_flops_fp16");
  EXPECT_NE(error_at(no_peak).find("$.devices.g.efficiency_fp16: given without peak_flops_fp16"),
            std::string::npos)
      << error_at(no_peak);
  nlohmann::json elementwise = j;
  elementwise["efficiency_fp16"]["elementwise"] = 0.5;  // memory-bound: not a MAC class
  EXPECT_EQ(error_at(elementwise).rfind("$.devices.g.efficiency_fp16.elementwise", 0), 0u)
      << error_at(elementwise);
}

TEST(DeviceTest, UnknownDeviceListsTheKnownOnes) {
  const std::string dir = std::string(SPLITSIM_SOURCE_DIR) + "/scenarios/devices";
  try {
    load_device("gtx9999", {dir}, "$.devices.server");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.devices.server");
    EXPECT_NE(std::string(e.what()).find("gtx1080"), std::string::npos);
  }
}

TEST(DeviceTest, MalformedProfilesAreRefused) {
  nlohmann::json j = {{"schema", "splitsim.device/1"},
                      {"name", "x"},
                      {"peak_flops", 1e12},
                      {"memory_bandwidth_Bps", 1e11}};
  EXPECT_NO_THROW(parse_device(j, "$"));
  auto bad = j;
  bad["peak_flop"] = 1;
  EXPECT_THROW(parse_device(bad, "$"), InputError);
  bad = j;
  bad["peak_flops"] = -1;
  EXPECT_THROW(parse_device(bad, "$"), InputError);
  bad = j;
  bad["efficiency"] = {{"conv", "fast"}};
  EXPECT_THROW(parse_device(bad, "$"), InputError);
}

TEST(DeviceTest, JsonRoundTripKeepsTimings) {
  DeviceProfile d = unit_device();
  d.measured_model = "resnet20";
  d.measured_input_shape = {3, 32, 32};
  d.measured_batch = 16;
  d.measured_in_flight = 4;
  d.threads = 1;
  d.timings = {{"conv1", 0.1, 0.2, 0.01}};
  nlohmann::json j = d;
  const DeviceProfile back = parse_device(j, "$");
  EXPECT_EQ(back.measured_in_flight, 4);
  j["measured"].erase("in_flight");  // profiles written before it: one micro-batch
  EXPECT_EQ(parse_device(j, "$").measured_in_flight, 1);
  j["measured"]["in_flight"] = 0;
  EXPECT_THROW(parse_device(j, "$"), InputError);
  ASSERT_NE(back.timing_for("resnet20", {3, 32, 32}, "conv1"), nullptr);
  EXPECT_DOUBLE_EQ(back.timing_for("resnet20", {3, 32, 32}, "conv1")->bwd_s, 0.2);
  EXPECT_EQ(back.timing_for("resnet20", {3, 64, 64}, "conv1"), nullptr);
  EXPECT_DOUBLE_EQ(back.efficiency.per_op_s, 1e-5);
}

TEST(DeviceTest, MeasuredCodecsRoundTripAndAreChecked) {
  DeviceProfile d = unit_device();
  nlohmann::json q8 = {{"method", "quantize"}, {"bits", 8}};
  CodecTiming timing;
  timing.codec = codec_to_json(parse_codec(q8, "$")).dump();
  timing.shape = {16, 8, 8};
  timing.batch = 4;
  timing.encode_s = 1e-4;
  timing.decode_s = 2e-4;
  d.codec_timings = {timing};
  nlohmann::json j = d;
  ASSERT_TRUE(j.contains("measured_codecs"));
  const DeviceProfile back = parse_device(j, "$");
  const CodecTiming* t = back.codec_timing_for(d.codec_timings[0].codec, {16, 8, 8}, 4);
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->encode_s, 1e-4);
  EXPECT_DOUBLE_EQ(t->decode_s, 2e-4);
  EXPECT_EQ(back.codec_timing_for(d.codec_timings[0].codec, {16, 8, 8}, 2), nullptr);
  EXPECT_EQ(back.codec_timing_for(d.codec_timings[0].codec, {16, 4, 4}, 4), nullptr);
  EXPECT_FALSE(t->sender_backward_s.has_value());  // a fixed codec's: not written, not read
  EXPECT_FALSE(j["measured_codecs"][0].contains("sender_backward_s"));
  {
    DeviceProfile trained = d;
    trained.codec_timings[0].sender_backward_s = 3e-4;
    trained.codec_timings[0].receiver_backward_s = 0.0;
    const DeviceProfile r = parse_device(nlohmann::json(trained), "$");
    const CodecTiming* rt = r.codec_timing_for(d.codec_timings[0].codec, {16, 8, 8}, 4);
    ASSERT_NE(rt, nullptr);
    EXPECT_EQ(rt->sender_backward_s, std::optional<double>(3e-4));
    EXPECT_EQ(rt->receiver_backward_s, std::optional<double>(0.0));
  }
  // A hand-written codec is read the way scenarios read it.
  j["measured_codecs"][0]["codec"] = q8;
  EXPECT_NE(parse_device(j, "$").codec_timing_for(d.codec_timings[0].codec, {16, 8, 8}, 4),
            nullptr);
  auto bad = j;
  bad["measured_codecs"][0]["batch"] = 0;
  EXPECT_THROW(parse_device(bad, "$"), InputError);
  bad = j;
  bad["measured_codecs"][0]["encode_s"] = -1;
  EXPECT_THROW(parse_device(bad, "$"), InputError);
  bad = j;
  bad["measured_codecs"][0]["receiver_backward_s"] = -1e-4;
  EXPECT_THROW(parse_device(bad, "$"), InputError);
  bad = j;
  bad["measured_codecs"][0]["speed"] = 1;
  try {
    parse_device(bad, "$");
    ADD_FAILURE() << "an unknown key was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("$.measured_codecs[0].speed"), std::string::npos)
        << e.what();
  }
  bad = j;
  bad["measured_codecs"][0]["codec"] = {{"method", "zip"}};
  EXPECT_THROW(parse_device(bad, "$"), InputError);
}

}  // namespace
}  // namespace splitsim
