#pragma once
// Private to matrix_summary.cpp and matrix_print.cpp: the targets a
// validation matrix is held to, printed and written in the report.
namespace splitsim::matrix_targets {

inline constexpr double kTargetMedian = 0.04, kTargetP90 = 0.08, kTargetMax = 0.15,
                        kTargetBusy = 0.10;
inline constexpr double kTargetPeakMedian = 0.10, kTargetPeakP90 = 0.20,
                        kTargetAverageMedian = 0.05;
inline constexpr double kTargetOverlapVsSim = 1.15;
inline constexpr double kTargetMemory = 0.15;  // planned peak memory per party against exec's

inline const char* met(bool ok) { return ok ? "met" : "MISSED"; }

}  // namespace splitsim::matrix_targets
