#include "splitsim/costmodel/median.h"

#include <algorithm>
#include <cmath>

namespace splitsim {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace splitsim
