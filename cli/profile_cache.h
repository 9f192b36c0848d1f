#pragma once
// Measured CPU profiles of this machine for `splitsim validate`, cached on
// disk: one file per (model and its options, per-sample input, batch,
// threads, optimizer, host, program version) in a cache directory.
#include <functional>
#include <string>

#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"

namespace splitsim {

struct CachedProfile {
  DeviceProfile device;
  std::string origin;  // "measured now, cached in FILE" or "cached FILE"
};

// The default cache directory: $SPLITSIM_PROFILE_CACHE, else
// <temp dir>/splitsim-profile-cache.
std::string default_profile_cache_dir();

// The cache file for these inputs (the key is hashed into the name).
std::string profile_cache_file(const std::string& cache_dir, const ModelSpec& spec, int64_t batch,
                               int threads, const OptimizerSpec& optimizer);

// Returns the cached profile, or measures one (profile_this_machine with
// `threads` threads at `batch`, this process pinned to `cpu` meanwhile when
// cpu >= 0) and caches it (written atomically). `reprofile` ignores the
// cache. `model` (the measured MACs of `spec`) serves the efficiency fit
// that prices codec work. A cache file that does not parse is measured again.
CachedProfile profile_for_validation(const ModelSpec& spec, const ModelProfile& model,
                                     int64_t batch, int threads, const OptimizerSpec& optimizer,
                                     const std::string& cache_dir, bool reprofile, int cpu,
                                     const std::function<void(const std::string&)>& progress);

}  // namespace splitsim
