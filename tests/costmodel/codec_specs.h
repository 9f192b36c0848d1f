#pragma once
// CodecSpec builders shared by the codec tests (formulas, modules, inserts).
#include <cstdint>
#include <vector>

#include "splitsim/costmodel/codec.h"

namespace splitsim::codec_specs {

using Shape = std::vector<int64_t>;

inline CodecSpec plain(CodecMethod m) {
  CodecSpec c;
  c.method = m;
  return c;
}
inline CodecSpec conv(int64_t out, int64_t k, int64_t s) {
  CodecSpec c = plain(CodecMethod::kConvInsert);
  c.out_channels = out;
  c.kernel = k;
  c.stride = s;
  return c;
}
inline CodecSpec linear(int64_t r) {
  CodecSpec c = plain(CodecMethod::kLinearInsert);
  c.out_features = r;
  return c;
}
inline CodecSpec decaying(double rate, int64_t every, int64_t iterations, bool sequence_axis) {
  CodecSpec c = plain(CodecMethod::kDecayingLinear);
  c.rate = rate;
  c.every_steps = every;
  c.iterations = iterations;
  c.sequence_axis = sequence_axis;
  return c;
}
inline CodecSpec power(int64_t rank, int64_t iters) {
  CodecSpec c = plain(CodecMethod::kPowerIteration);
  c.rank = rank;
  c.iters = iters;
  return c;
}
inline CodecSpec quantize(int64_t bits) {
  CodecSpec c = plain(CodecMethod::kQuantize);
  c.bits = bits;
  return c;
}
inline CodecSpec topk(double keep) {
  CodecSpec c = plain(CodecMethod::kTopK);
  c.keep_ratio = keep;
  return c;
}

// [batch, shape...]
inline Shape batched(int64_t batch, const Shape& shape) {
  Shape out{batch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

}  // namespace splitsim::codec_specs
