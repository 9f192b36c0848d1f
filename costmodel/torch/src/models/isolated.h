#pragma once
// Work on an untrusted file done first in a child process (fork), under a
// time and a memory limit, so that whatever the file makes LibTorch do
// (crash, loop, allocate without end) ends the child, not this process.
// TorchScript loading runs through it (torchscript.cpp): the child loads the
// file, cuts it and runs one sample; only when it succeeded does this process
// do the same.
#include <cstdint>
#include <functional>
#include <string>

namespace splitsim {
namespace models {

struct IsolationLimits {
  double seconds = 60;                       // SPLITSIM_MODEL_CHECK_S
  int64_t memory_bytes = int64_t{4} << 30;   // SPLITSIM_MODEL_CHECK_MIB: above what the process holds
};

// The limits, from the environment where set (a positive number each); an
// InputError naming the variable otherwise.
IsolationLimits isolation_limits();

struct IsolatedOutcome {
  enum Kind { kOk, kInputError, kError, kOutOfMemory, kTimeout, kSignal };
  Kind kind = kOk;
  std::string where;    // kInputError: the InputError's where()
  std::string message;  // kInputError, kError: the exception's text
  std::string step;     // the last step the work reported ("" before any)
  int signal = 0;       // kSignal
};

// Reports what the work is doing now ("loading it", "unit layer1.0").
using ReportStep = std::function<void(const std::string&)>;

// Runs `work` in a forked child with one intra-op thread (LibTorch's OpenMP
// pool does not survive a fork), at most `limits.memory_bytes` more address
// space than this process holds, killed at `limits.seconds`. Nothing the
// child does reaches this process but the outcome.
IsolatedOutcome run_isolated(const std::function<void(const ReportStep&)>& work,
                             const IsolationLimits& limits);

}  // namespace models
}  // namespace splitsim
