#pragma once
// MemoryAccount: LibTorch CPU tensor memory allocated while threads are
// joined to it. c10 reports every CPU allocation and free to the calling
// thread's PROFILER_STATE debug info (the hook the profiler uses); the
// account keeps the bytes allocated on its threads and not yet freed, and
// the most at any time. measure_model joins one thread to learn what a unit
// keeps for its backward; exec joins every thread that builds or runs
// stages (exec/README.md "Design": Memory). Tensors only: not the LibTorch runtime,
// the code, the heap's own overhead or Gloo's buffers.
#include <ATen/core/Tensor.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <cstdint>
#include <memory>

namespace splitsim {

class MemoryAccount {
 public:
  // `net`: the frees of memory allocated before the account count too, so
  // live_bytes() is the change since it began (negative where a step frees
  // more than it allocates) and peak_bytes() the highest point of that: what
  // a backward adds above the stash it releases as it goes.
  explicit MemoryAccount(bool net = false);
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

// StorageAccount: the bytes of the tensors that ATen ops create on the
// calling thread while it is alive and that are still held, on any device,
// the meta device included (which allocates nothing, so MemoryAccount cannot
// see it). It watches every op's inputs and outputs (RecordFunction): a
// storage first seen as an op's output was created inside; one first seen as
// an input of an outermost op (not one a kernel calls), or named by
// exclude(), was there before and never counts. measure_model
// uses it for the stash of units measured on the meta device; on the CPU it
// agrees with MemoryAccount byte for byte on every zoo model's units
// (tests/costmodel/measure_shapes_test.cpp). One per thread at a time.
class StorageAccount {
 public:
  // `net`: as MemoryAccount's, storages first seen as an op's input that
  // die while the account is alive count against the created ones.
  explicit StorageAccount(bool net = false);
  ~StorageAccount();
  StorageAccount(const StorageAccount&) = delete;
  StorageAccount& operator=(const StorageAccount&) = delete;

  // `existing` (and its storage's views) was there before: never counted.
  void exclude(const at::Tensor& existing);
  // Bytes of the storages created inside and still alive now, and the most
  // of them alive at the end of any op so far (temporaries a kernel
  // allocates and frees without an op are not seen).
  int64_t live_bytes() const;
  int64_t peak_bytes() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
  uint64_t handle_ = 0;
};

}  // namespace splitsim
