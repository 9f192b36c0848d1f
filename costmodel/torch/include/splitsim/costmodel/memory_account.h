#pragma once
// MemoryAccount: LibTorch CPU tensor memory allocated while threads are
// joined to it. c10 reports every CPU allocation and free to the calling
// thread's PROFILER_STATE debug info (the hook the profiler uses); the
// account keeps the bytes allocated on its threads and not yet freed, and
// the most at any time. measure_model joins one thread to learn what a unit
// keeps for its backward; exec joins every thread that builds or runs
// stages (exec/README.md "Design": Memory). Tensors only: not the LibTorch runtime,
// the code, the heap's own overhead or Gloo's buffers.
#include <c10/util/ThreadLocalDebugInfo.h>

#include <cstdint>
#include <memory>

namespace splitsim {

class MemoryAccount {
 public:
  MemoryAccount();
  ~MemoryAccount();
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  // While alive, the calling thread's tensor allocations and frees count.
  class Join {
   public:
    explicit Join(MemoryAccount& account);
    ~Join();

   private:
    std::unique_ptr<c10::DebugInfoGuard> guard_;
  };

  int64_t live_bytes() const;
  int64_t peak_bytes() const;

 private:
  struct Reporter;
  std::shared_ptr<Reporter> reporter_;
};

}  // namespace splitsim
