#pragma once
// How numbers and shapes read in splitsim's text output: one home, so that
// every table writes them alike. Plain functions of their arguments; tested
// in tests/costmodel/format_test.cpp.
#include <cstdint>
#include <string>
#include <vector>

namespace splitsim {

// {64, 32, 112, 112} -> "[64,32,112,112]".
std::string format_shape(const std::vector<int64_t>& shape);

// Decimal prefixes (k, M, G, T, P) of |value|: under 1000 "%.0f", else
// "%.2f" of the scaled value, then `separator`, the prefix and `unit`:
// 999 -> "999", 1234567 -> "1.23M"; with unit "B" and separator " ",
// 1234567 -> "1.23 MB" and 12 -> "12 B".
std::string format_si(double value, const std::string& unit = "",
                      const std::string& separator = "");

// The same prefixes with `digits` significant digits ("%.<digits>g"), no
// unit: 1234567 -> "1.235M" (4 digits), 0.5 -> "0.5", -2500 -> "-2.5k".
std::string format_si_digits(double value, int digits);

// Seconds in s, ms or us: 1.5 -> "1.500 s", 0.0123 -> "12.300 ms",
// 0.0000042 -> "4.2 us".
std::string format_seconds(double s);

// A fraction as a percentage with `decimals` decimals: 0.256 -> "26%" (0),
// "25.60%" (2). format_signed_percent always shows the sign: "+25.6%" (1).
std::string format_percent(double fraction, int decimals = 0);
std::string format_signed_percent(double fraction, int decimals = 1);

// "%g": 2e8 -> "2e+08", 0.25 -> "0.25".
std::string format_number(double value);

}  // namespace splitsim
