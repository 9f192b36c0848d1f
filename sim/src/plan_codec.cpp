#include "plan_codec.h"

#include "plan_codec_binary.h"

namespace splitsim::sim_internal {

std::string encode_plan(const Plan& plan) { return encode_fields(plan); }

Plan decode_plan(const char* data, size_t size) { return decode_fields<Plan>(data, size); }

}  // namespace splitsim::sim_internal
