#include "splitsim/costmodel/format.h"

#include <cmath>
#include <cstdio>

namespace splitsim {
namespace {

// |value| divided by 1000 until below 1000 (at most to P); the prefix.
const char* scale_down(double* value) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (std::fabs(*value) >= 1000 && p < 5) {
    *value /= 1000;
    ++p;
  }
  return kPrefixes[p];
}

}  // namespace

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string format_si(double value, const std::string& unit, const std::string& separator) {
  const double original = value;
  const char* prefix = scale_down(&value);
  char buf[64];
  std::snprintf(buf, sizeof buf, std::fabs(original) < 1000 ? "%.0f" : "%.2f", value);
  return buf + separator + prefix + unit;
}

std::string format_si_digits(double value, int digits) {
  const char* prefix = scale_down(&value);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g%s", digits, value, prefix);
  return buf;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

std::string format_percent(double fraction, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, 100 * fraction);
  return buf;
}

std::string format_signed_percent(double fraction, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.*f%%", decimals, 100 * fraction);
  return buf;
}

std::string format_number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

}  // namespace splitsim
