#pragma once
// How numbers and shapes read in splitsim's text output: one home, so that
// every table writes them alike.
#include <cstdint>
#include <string>
#include <vector>

namespace splitsim {

// {64, 32, 112, 112} -> "[64,32,112,112]".
std::string format_shape(const std::vector<int64_t>& shape);

}  // namespace splitsim
