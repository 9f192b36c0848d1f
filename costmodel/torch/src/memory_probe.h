#pragma once
// MemoryProbe: while alive, records every CPU allocation and free LibTorch
// makes on this thread (c10's memory-reporting hook, the one the profiler
// uses) and tells how many bytes allocated in its lifetime are still live.
#include <cstdint>
#include <memory>

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

namespace splitsim {

class MemoryProbe {
 public:
  MemoryProbe();
  ~MemoryProbe();
  MemoryProbe(const MemoryProbe&) = delete;
  MemoryProbe& operator=(const MemoryProbe&) = delete;

  // Bytes allocated since construction and not freed yet.
  int64_t live_bytes() const;
  // Largest live_bytes() seen so far.
  int64_t peak_bytes() const;

 private:
  struct Reporter;
  std::shared_ptr<Reporter> reporter_;
  std::unique_ptr<c10::DebugInfoGuard> guard_;
};

}  // namespace splitsim
