#include "splitsim/costmodel/memory_account.h"

#include <c10/core/Allocator.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace splitsim {

struct MemoryAccount::Reporter : c10::MemoryReportingInfoBase {
  mutable std::mutex mutex;
  std::unordered_map<void*, int64_t> live;
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;

  void reportMemoryUsage(void* ptr, int64_t alloc_size, int64_t, int64_t,
                         c10::Device device) override {
    if (!device.is_cpu()) return;
    std::lock_guard<std::mutex> lock(mutex);
    if (alloc_size > 0) {
      live[ptr] = alloc_size;
      live_bytes += alloc_size;
      peak_bytes = std::max(peak_bytes, live_bytes);
      return;
    }
    auto it = live.find(ptr);
    if (it == live.end()) return;  // allocated before the account, or elsewhere
    live_bytes -= it->second;
    live.erase(it);
  }
  bool memoryProfilingEnabled() const override { return true; }
};

MemoryAccount::MemoryAccount() : reporter_(std::make_shared<Reporter>()) {}
MemoryAccount::~MemoryAccount() = default;

MemoryAccount::Join::Join(MemoryAccount& account)
    : guard_(std::make_unique<c10::DebugInfoGuard>(c10::DebugInfoKind::PROFILER_STATE,
                                                   account.reporter_)) {}
MemoryAccount::Join::~Join() = default;

int64_t MemoryAccount::live_bytes() const {
  std::lock_guard<std::mutex> lock(reporter_->mutex);
  return reporter_->live_bytes;
}

int64_t MemoryAccount::peak_bytes() const {
  std::lock_guard<std::mutex> lock(reporter_->mutex);
  return reporter_->peak_bytes;
}

}  // namespace splitsim
