#include "plan_codec.h"

#include "plan_codec_binary.h"
#include "splitsim/sim/simulator.h"

namespace splitsim::sim_internal {

std::string encode_plan(const Plan& plan) { return encode_fields(plan); }

Plan decode_plan(const char* data, size_t size) { return decode_fields<Plan>(data, size); }

}  // namespace splitsim::sim_internal

namespace splitsim {

std::string plan_to_bytes(const Plan& plan) { return sim_internal::encode_plan(plan); }

Plan plan_from_bytes(const std::string& bytes) {
  return sim_internal::decode_plan(bytes.data(), bytes.size());
}

}  // namespace splitsim
