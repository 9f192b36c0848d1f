#include "memory_probe.h"

#include <algorithm>
#include <unordered_map>

namespace splitsim {

struct MemoryProbe::Reporter : c10::MemoryReportingInfoBase {
  std::unordered_map<void*, int64_t> live;
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;

  void reportMemoryUsage(void* ptr, int64_t alloc_size, int64_t, int64_t, c10::Device) override {
    if (alloc_size > 0) {
      live[ptr] = alloc_size;
      live_bytes += alloc_size;
      peak_bytes = std::max(peak_bytes, live_bytes);
      return;
    }
    auto it = live.find(ptr);
    if (it == live.end()) return;  // allocated before the probe
    live_bytes -= it->second;
    live.erase(it);
  }
  bool memoryProfilingEnabled() const override { return true; }
};

MemoryProbe::MemoryProbe() : reporter_(std::make_shared<Reporter>()) {
  guard_ = std::make_unique<c10::DebugInfoGuard>(c10::DebugInfoKind::PROFILER_STATE, reporter_);
}

MemoryProbe::~MemoryProbe() = default;

int64_t MemoryProbe::live_bytes() const { return reporter_->live_bytes; }
int64_t MemoryProbe::peak_bytes() const { return reporter_->peak_bytes; }

}  // namespace splitsim
