// Codec objects in scenarios: parsing, defaults, descriptions and errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "expect_input_error.h"
#include "splitsim/costmodel/codec.h"

namespace splitsim {
namespace {

using nlohmann::json;

json codec(const std::string& text) { return json::parse(text); }

TEST(CodecParse, RoundTripAndDescribeEveryMethod) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"method": "none"})", "none"},
      {R"({"method": "fp16"})", "fp16"},
      {R"({"method": "bf16"})", "bf16"},
      {R"({"method": "conv_insert", "out_channels": 20, "kernel": 4})", "conv_insert(->20 k4 s4)"},
      {R"({"method": "linear_insert", "out_features": 64})", "linear_insert(->64)"},
      {R"({"method": "decaying_linear", "rate": 0.5, "every_steps": 100, "iterations": 4,
           "l1": 0.001, "sequence_axis": true})",
       "decaying_linear(rate 0.5 every 100 x4 l1 0.001 +seq)"},
      {R"({"method": "power_iteration", "rank": 3, "iters": 2})",
       "power_iteration(rank 3 iters 2)"},
      {R"({"method": "quantize", "bits": 10})", "quantize(10 bit)"},
      {R"({"method": "topk", "keep_ratio": 0.6})", "topk(keep 0.6)"},
  };
  ASSERT_EQ(cases.size(), method_names().size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const CodecSpec spec = parse_codec(json::parse(cases[i].first), "$.c");
    EXPECT_EQ(method_name(spec.method), method_names()[i]);
    EXPECT_EQ(describe(spec), cases[i].second);
    const json out = codec_to_json(spec);
    EXPECT_EQ(out["method"], method_names()[i]);
    EXPECT_EQ(parse_codec(out, "$.c"), spec) << out.dump();
  }
}

TEST(CodecParse, Defaults) {
  const CodecSpec conv = parse_codec(codec(R"({"method": "conv_insert", "out_channels": 8,
                                               "kernel": 3})"),
                                     "$");
  EXPECT_EQ(conv.stride, 3);
  EXPECT_EQ(parse_codec(codec(R"({"method": "power_iteration", "rank": 7})"), "$").iters, 1);
  const CodecSpec d = parse_codec(codec(R"({"method": "decaying_linear", "rate": 1,
                                            "every_steps": 1, "iterations": 0})"),
                                  "$");
  EXPECT_EQ(d.l1, 0.0);
  EXPECT_FALSE(d.sequence_axis);
  EXPECT_EQ(parse_codec(codec(R"({"method": "none"})"), "$"), CodecSpec{});
}

TEST(CodecParse, Errors) {
  auto parse = [](const std::string& text) { return [text] { parse_codec(codec(text), "$.c"); }; };
  expect_error(parse(R"({"method": "zip"})"), "$.c.method",
               "allowed: none, fp16, bf16, conv_insert, linear_insert, decaying_linear, "
               "power_iteration, quantize, topk");
  expect_error(parse(R"({"method": "none", "bits": 8})"), "$.c.bits",
               "belongs to quantize, not none; none takes no other keys");
  expect_error(parse(R"({"method": "conv_insert", "out_channels": 8, "kernel": 3, "rank": 2})"),
               "$.c.rank", "conv_insert takes: out_channels, kernel, stride");
  expect_error(parse(R"({"method": "power_iteration", "ranks": 2})"), "$.c.ranks",
               "did you mean \"rank\"?");
  expect_error(parse(R"({"method": "power_iteration"})"), "$.c.rank", "missing required key");
  expect_error(parse(R"({"method": "quantize", "bits": 17})"), "$.c.bits",
               "an integer from 2 to 16, got 17");
  expect_error(parse(R"({"method": "topk", "keep_ratio": 0})"), "$.c.keep_ratio",
               "a number in (0, 1], got 0");
  expect_error(parse(R"({"method": "decaying_linear", "rate": 0.5, "every_steps": 1,
                         "iterations": 2, "sequence_axis": 1})"),
               "$.c.sequence_axis", "expected true or false");
  expect_error(parse(R"("none")"), "$.c", "expected a codec object");
  expect_error(parse(R"({"bits": 8})"), "$.c.method", "missing required key \"method\"");
}

}  // namespace
}  // namespace splitsim
