// The compression catalogue's formulas (codec.h) against literal figures,
// and check_applicable's refusals. The real modules are checked against
// these formulas in codec_module_test.cpp.
#include "splitsim/costmodel/codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec_specs.h"
#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

using namespace codec_specs;  // NOLINT: test helpers

using Layout = std::vector<WireTensor>;

TEST(CodecFormula, DtypeSizesAndNames) {
  EXPECT_EQ(dtype_bytes(WireDType::kF32), 4);
  EXPECT_EQ(dtype_bytes(WireDType::kF16), 2);
  EXPECT_EQ(dtype_bytes(WireDType::kBF16), 2);
  EXPECT_EQ(dtype_bytes(WireDType::kU8), 1);
  EXPECT_EQ(dtype_bytes(WireDType::kI32), 4);
  EXPECT_EQ(dtype_bytes(WireDType::kI64), 8);
  EXPECT_STREQ(dtype_name(WireDType::kBF16), "bf16");
  EXPECT_STREQ(dtype_name(WireDType::kU8), "u8");
  WireTensor t{{3, 5, 7}, WireDType::kF16};
  EXPECT_EQ(t.numel(), 105);
  EXPECT_EQ(t.bytes(), 210);
  EXPECT_EQ(t, (WireTensor{{3, 5, 7}, WireDType::kF16}));
  EXPECT_FALSE(t == (WireTensor{{3, 5, 7}, WireDType::kBF16}));
}

TEST(CodecFormula, SpecEqualityComparesEveryField) {
  EXPECT_EQ(conv(32, 4, 4), conv(32, 4, 4));
  EXPECT_FALSE(conv(32, 4, 4) == conv(20, 4, 4));
  EXPECT_FALSE(quantize(8) == quantize(10));
  EXPECT_FALSE(topk(0.5) == topk(0.4));
  EXPECT_FALSE(decaying(0.5, 10, 2, false) == decaying(0.5, 10, 2, true));
  CodecSpec a = decaying(0.5, 10, 2, false), b = a;
  b.l1 = 1e-4;
  EXPECT_FALSE(a == b);
}

TEST(CodecFormula, NoneAndCastsSendTheWholeTensor) {
  const Shape s{128, 768};
  EXPECT_EQ(wire_layout(plain(CodecMethod::kNone), s, 32),
            (Layout{{{32, 128, 768}, WireDType::kF32}}));
  EXPECT_EQ(wire_layout(plain(CodecMethod::kNone), s, 32, WireDType::kF16),
            (Layout{{{32, 128, 768}, WireDType::kF16}}));
  EXPECT_EQ(wire_layout(plain(CodecMethod::kFp16), s, 32),
            (Layout{{{32, 128, 768}, WireDType::kF16}}));
  EXPECT_EQ(wire_layout(plain(CodecMethod::kBf16), s, 32),
            (Layout{{{32, 128, 768}, WireDType::kBF16}}));
  EXPECT_EQ(wire_bytes(plain(CodecMethod::kNone), s, 32), 32 * 128 * 768 * 4);
  EXPECT_EQ(wire_bytes(plain(CodecMethod::kFp16), s, 32), 32 * 128 * 768 * 2);
}

TEST(CodecFormula, ConvInsertCarriesTheConvOutput) {
  // The reports' cuts: [64,32,112,112] with 32->32 (and 32->20) k4 s4;
  // [64,1280,7,7] with 1280->320 k1.
  EXPECT_EQ(carried_shape(conv(32, 4, 4), {32, 112, 112}), (Shape{32, 28, 28}));
  EXPECT_EQ(wire_bytes(conv(20, 4, 4), {32, 112, 112}, 64), 64 * 20 * 28 * 28 * 4);
  EXPECT_EQ(wire_layout(conv(320, 1, 1), {1280, 7, 7}, 64),
            (Layout{{{64, 320, 7, 7}, WireDType::kF32}}));
  // Odd sizes: (57-4)/4+1 = 14, (55-4)/4+1 = 13; (7-3)/2+1 = 3, (9-3)/2+1 = 4.
  EXPECT_EQ(carried_shape(conv(8, 4, 4), {24, 57, 55}), (Shape{8, 14, 13}));
  EXPECT_EQ(carried_shape(conv(2, 3, 2), {5, 7, 9}), (Shape{2, 3, 4}));
}

TEST(CodecFormula, LinearInsertCarriesTheReducedHidden) {
  EXPECT_EQ(carried_shape(linear(64), {128, 768}), (Shape{128, 64}));
  EXPECT_EQ(wire_bytes(linear(64), {128, 768}, 32), 32 * 128 * 64 * 4);
}

TEST(CodecFormula, DecayingLinearShrinksInWholeSteps) {
  const CodecSpec d = decaying(0.5, 100, 3, false);
  const Shape s{128, 768};
  EXPECT_EQ(carried_shape(d, s, 0), (Shape{128, 768}));
  EXPECT_EQ(carried_shape(d, s, 99), (Shape{128, 768}));
  EXPECT_EQ(carried_shape(d, s, 100), (Shape{128, 384}));
  EXPECT_EQ(carried_shape(d, s, 250), (Shape{128, 192}));
  EXPECT_EQ(carried_shape(d, s, 300), (Shape{128, 96}));
  EXPECT_EQ(carried_shape(d, s, 100000), (Shape{128, 96}));
  EXPECT_EQ(carried_shape(d, s), (Shape{128, 96}));  // kSteadyState
  const CodecSpec ds = decaying(0.5, 100, 3, true);
  EXPECT_EQ(carried_shape(ds, s, 150), (Shape{64, 384}));
  EXPECT_EQ(carried_shape(ds, s), (Shape{16, 96}));
  EXPECT_EQ(wire_layout(ds, s, 4), (Layout{{{4, 16, 96}, WireDType::kF32}}));
  // round(7 * 0.3^1) = 2; never below 1.
  EXPECT_EQ(carried_shape(decaying(0.3, 1, 1, false), {5, 7}), (Shape{5, 2}));
  EXPECT_EQ(carried_shape(decaying(0.1, 1, 5, true), {5, 3}), (Shape{1, 1}));
}

TEST(CodecFormula, PowerIterationSendsTwoFactors) {
  EXPECT_EQ(wire_layout(power(3, 1), {32, 112, 112}, 64),
            (Layout{{{64, 32, 3}, WireDType::kF32}, {{64, 3, 12544}, WireDType::kF32}}));
  EXPECT_EQ(wire_layout(power(16, 2), {128, 768}, 32, WireDType::kF16),
            (Layout{{{32, 128, 16}, WireDType::kF16}, {{32, 16, 768}, WireDType::kF16}}));
  EXPECT_EQ(wire_bytes(power(7, 1), {1280, 7, 7}, 64), 64 * (1280 * 7 + 7 * 49) * 4);
  EXPECT_EQ(carried_shape(power(7, 1), {1280, 7, 7}), (Shape{1280, 7, 7}));
}

TEST(CodecFormula, QuantizeIsBitPacked) {
  const Shape s{5, 7, 9};  // n = 945 for batch 3
  EXPECT_EQ(wire_layout(quantize(10), s, 3),
            (Layout{{{1182}, WireDType::kU8}, {{2}, WireDType::kF32}}));  // ceil(9450/8)
  EXPECT_EQ(wire_bytes(quantize(10), s, 3), 1182 + 8);
  EXPECT_EQ(wire_bytes(quantize(12), s, 3), 1418 + 8);  // ceil(11340/8)
  EXPECT_EQ(wire_bytes(quantize(8), {32, 112, 112}, 64), 64 * 32 * 112 * 112 + 8);
  EXPECT_EQ(wire_bytes(quantize(2), {3}, 1), 1 + 8);
}

TEST(CodecFormula, TopKPicksTheSmallerPositionEncoding) {
  // n = 1000. keep 0.5: k = 500, bitmap of 125 bytes < 2000 bytes of indices.
  EXPECT_EQ(wire_layout(topk(0.5), {10, 100}, 1),
            (Layout{{{500}, WireDType::kF32}, {{125}, WireDType::kU8}}));
  // keep 0.01: k = 10, 40 bytes of indices < 125 bytes of bitmap.
  EXPECT_EQ(wire_layout(topk(0.01), {10, 100}, 1),
            (Layout{{{10}, WireDType::kF32}, {{10}, WireDType::kI32}}));
  // n = 320, k = 10: bitmap 40 bytes == indices 40 bytes -> indices.
  EXPECT_EQ(wire_layout(topk(10.0 / 320), {320}, 1)[1], (WireTensor{{10}, WireDType::kI32}));
  // ceil without rounding noise: 0.6 * 10 = 6, 0.7 * 10 = 7; at least 1.
  EXPECT_EQ(wire_layout(topk(0.6), {10}, 1)[0].numel(), 6);
  EXPECT_EQ(wire_layout(topk(0.7), {5}, 2)[0].numel(), 7);
  EXPECT_EQ(wire_layout(topk(0.55), {10}, 1)[0].numel(), 6);
  EXPECT_EQ(wire_layout(topk(1e-9), {10}, 1)[0].numel(), 1);
  EXPECT_EQ(wire_bytes(topk(1.0), {128, 768}, 2), 2 * 128 * 768 * 4 + 2 * 128 * 768 / 8);
}

TEST(CodecFormula, WorkOfTheTrainableInserts) {
  const CodecWork c = codec_work(conv(20, 4, 4), {32, 112, 112}, 64);
  const int64_t conv_macs = int64_t{64} * 28 * 28 * (20 * 32 * 4 * 4);
  EXPECT_EQ(c.encode_macs, conv_macs);
  EXPECT_EQ(c.decode_macs, conv_macs);
  EXPECT_EQ(c.sender_backward_macs, 2 * conv_macs);
  EXPECT_EQ(c.receiver_backward_macs, 2 * conv_macs);
  EXPECT_EQ(c.sender_param_count, 20 * 32 * 16 + 20);
  EXPECT_EQ(c.receiver_param_count, 20 * 32 * 16 + 32);

  const CodecWork l = codec_work(linear(64), {128, 768}, 32);
  EXPECT_EQ(l.encode_macs, int64_t{32} * 128 * 768 * 64);
  EXPECT_EQ(l.decode_macs, l.encode_macs);
  EXPECT_EQ(l.sender_param_count, 768 * 64 + 64);
  EXPECT_EQ(l.receiver_param_count, 64 * 768 + 768);

  // Steady state of rate 0.5 x3 on [128,768] along both axes: rt = 16, r = 96.
  const CodecWork d = codec_work(decaying(0.5, 100, 3, true), {128, 768}, 2);
  EXPECT_EQ(d.encode_macs, 2 * 128 * 768 * 96 + 2 * 96 * 128 * 16);
  EXPECT_EQ(d.decode_macs, d.encode_macs);
  EXPECT_EQ(d.sender_param_count, 768 * 768 + 768 + 128 * 128 + 128);  // full-size tensors
  EXPECT_EQ(d.receiver_param_count, d.sender_param_count);
  EXPECT_EQ(codec_work(decaying(0.5, 100, 3, true), {128, 768}, 2, 0).encode_macs,
            2 * 128 * 768 * 768 + 2 * 768 * 128 * 128);
}

TEST(CodecFormula, WorkOfTheWireOnlyCodecs) {
  const CodecWork p = codec_work(power(3, 2), {32, 112, 112}, 64);
  EXPECT_EQ(p.encode_macs, int64_t{64} * 2 * 2 * 32 * 12544 * 3);
  EXPECT_EQ(p.encode_elems, 64 * 2 * 2 * 32 * 3 * 3);
  EXPECT_EQ(p.decode_macs, int64_t{64} * 32 * 12544 * 3);
  EXPECT_EQ(p.sender_backward_macs, 0);
  EXPECT_EQ(p.sender_param_count, 0);

  const int64_t n = 4 * 128 * 768;
  const CodecWork q = codec_work(quantize(8), {128, 768}, 4);
  EXPECT_EQ(q.encode_macs + q.decode_macs, 0);
  EXPECT_EQ(q.encode_elems, 3 * n);
  EXPECT_EQ(q.decode_elems, 2 * n);
  const CodecWork t = codec_work(topk(0.5), {128, 768}, 4);
  EXPECT_EQ(t.encode_macs + t.decode_macs, 0);
  EXPECT_EQ(t.encode_elems, 2 * n + n / 2);
  EXPECT_EQ(t.decode_elems, n + n / 2);
  const CodecWork h = codec_work(plain(CodecMethod::kFp16), {128, 768}, 4);
  EXPECT_EQ(h.encode_elems, n);
  EXPECT_EQ(h.decode_elems, n);
  const CodecWork none = codec_work(plain(CodecMethod::kNone), {128, 768}, 4);
  EXPECT_EQ(none.encode_elems + none.decode_elems + none.encode_macs + none.decode_macs, 0);
}

// --- check_applicable ------------------------------------------------------

const std::string kPath = "$.compression[1].forward";

// Expects an InputError naming kPath whose message contains every fragment.
void expect_refused(const CodecSpec& spec, const Shape& shape,
                    const std::vector<std::string>& fragments) {
  try {
    check_applicable(spec, shape, kPath);
    ADD_FAILURE() << "check_applicable accepted what it should refuse";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), kPath);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(kPath + ": ", 0), 0u) << what;
    for (const std::string& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << what;
  }
}

TEST(CodecApplicable, AcceptsWhatApplies) {
  EXPECT_NO_THROW(check_applicable(plain(CodecMethod::kNone), {10}, kPath));
  EXPECT_NO_THROW(check_applicable(plain(CodecMethod::kBf16), {2, 3, 4, 5}, kPath));
  EXPECT_NO_THROW(check_applicable(conv(32, 4, 4), {32, 112, 112}, kPath));
  EXPECT_NO_THROW(check_applicable(conv(2, 7, 3), {5, 7, 9}, kPath));
  EXPECT_NO_THROW(check_applicable(linear(768), {128, 768}, kPath));
  EXPECT_NO_THROW(check_applicable(decaying(1.0, 1, 0, true), {128, 768}, kPath));
  EXPECT_NO_THROW(check_applicable(power(49, 1), {1280, 7, 7}, kPath));
  EXPECT_NO_THROW(check_applicable(power(128, 1), {128, 768}, kPath));
  EXPECT_NO_THROW(check_applicable(quantize(2), {10}, kPath));
  EXPECT_NO_THROW(check_applicable(quantize(16), {10}, kPath));
  EXPECT_NO_THROW(check_applicable(topk(1.0), {10}, kPath));
}

TEST(CodecApplicable, ConvInsertRefusals) {
  expect_refused(conv(32, 4, 4), {128, 768},
                 {"conv_insert applies to image activations [C,H,W]", "[128,768] (per sample)",
                  "use linear_insert", "power_iteration"});
  expect_refused(conv(0, 4, 4), {32, 112, 112}, {"out_channels", ">= 1"});
  expect_refused(conv(32, 0, 4), {32, 112, 112}, {"kernel", ">= 1"});
  expect_refused(conv(32, 4, -1), {32, 112, 112}, {"stride", ">= 1"});
  expect_refused(conv(32, 8, 1), {1280, 7, 7}, {"kernel 8", "<= 7"});
  expect_refused(conv(2, 8, 1), {5, 9, 7}, {"kernel must be <= 7"});
}

TEST(CodecApplicable, LinearRefusals) {
  expect_refused(
      linear(64), {32, 112, 112},
      {"linear_insert applies to transformer activations [T,H]", "[32,112,112]", "conv_insert"});
  expect_refused(linear(0), {128, 768}, {"out_features", "1..768", "got 0"});
  expect_refused(linear(769), {128, 768}, {"1..768", "got 769"});
  expect_refused(decaying(0.5, 1, 1, false), {10}, {"decaying_linear applies", "[10]"});
  expect_refused(decaying(0.0, 1, 1, false), {128, 768}, {"rate", "(0, 1]"});
  expect_refused(decaying(1.5, 1, 1, false), {128, 768}, {"rate", "(0, 1]"});
  expect_refused(decaying(0.5, 0, 1, false), {128, 768}, {"every_steps", ">= 1"});
  expect_refused(decaying(0.5, 1, -1, false), {128, 768}, {"iterations", ">= 0"});
  CodecSpec negative_l1 = decaying(0.5, 1, 1, false);
  negative_l1.l1 = -1.0;
  expect_refused(negative_l1, {128, 768}, {"l1"});
}

TEST(CodecApplicable, PowerIterationRefusals) {
  expect_refused(power(3, 1), {1000}, {"power_iteration applies", "[1000]", "quantize"});
  expect_refused(power(3, 1), {2, 3, 4, 5}, {"power_iteration applies", "[2,3,4,5]"});
  expect_refused(power(50, 1), {1280, 7, 7}, {"1..49", "[1280,49]", "got 50"});
  expect_refused(power(129, 1), {128, 768}, {"1..128", "got 129"});
  expect_refused(power(0, 1), {128, 768}, {"rank", "got 0"});
  expect_refused(power(3, 0), {128, 768}, {"iters", ">= 1"});
}

TEST(CodecApplicable, QuantizeTopKAndShapeRefusals) {
  expect_refused(quantize(1), {128, 768}, {"bits", "2..16", "got 1"});
  expect_refused(quantize(17), {128, 768}, {"bits", "2..16", "got 17"});
  expect_refused(topk(0.0), {128, 768}, {"keep_ratio", "(0, 1]"});
  expect_refused(topk(1.5), {128, 768}, {"keep_ratio", "(0, 1]"});
  expect_refused(topk(-0.5), {128, 768}, {"keep_ratio"});
  expect_refused(plain(CodecMethod::kNone), {128, 0}, {"empty dimension", "[128,0]"});
}

}  // namespace
}  // namespace splitsim
