#pragma once
// MemoryAccount: the LibTorch CPU tensor memory of one exec process. c10
// reports every CPU allocation and free to the calling thread's
// PROFILER_STATE debug info (the hook the profiler uses); every thread that
// builds or runs stages joins the same account, which keeps the bytes
// allocated and not yet freed, and the most at any time. It counts tensors
// only: not the LibTorch runtime, the code, the heap's own overhead or
// Gloo's buffers (exec/README.md "Memory").
#include <c10/util/ThreadLocalDebugInfo.h>

#include <cstdint>
#include <memory>

namespace splitsim::exec_internal {

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

}  // namespace splitsim::exec_internal
