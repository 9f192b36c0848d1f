#pragma once
// Measured CPU profiles of this machine for `splitsim validate`, cached on
// disk: one file per (model and its options, per-sample input, batch,
// threads, optimizer, host, program version) in a cache directory.
#include <functional>
#include <string>
#include <vector>

#include "splitsim/costmodel/codec.h"
#include "splitsim/costmodel/device.h"
#include "splitsim/costmodel/model_profile.h"
#include "splitsim/costmodel/scenario.h"
#include "splitsim/validate/safe_files.h"

namespace splitsim {

struct CachedProfile {
  DeviceProfile device;
  std::string origin;  // "measured now, cached in FILE" or "cached FILE"
};

// The cache file for these inputs (the key is hashed into the name);
// `loaded`: measured beside a companion load.
std::string profile_cache_file(const std::string& cache_dir, const ModelSpec& spec, int64_t batch,
                               int64_t in_flight, int threads, const OptimizerSpec& optimizer,
                               bool loaded);

// The sum of every unit's forward and backward seconds in `d`.
double unit_seconds(const DeviceProfile& d);

// A cached profile is used only while two rounds timed now sum to within
// this fraction of its unit seconds; else it is measured again.
constexpr double kCachedProfileTolerance = 0.05;

// Returns the cached profile (checked against two rounds timed now), or
// measures one (profile_this_machine with `threads` threads at `batch` with
// `in_flight` micro-batches held at once (ProfileOptions::in_flight), this
// thread pinned to `cpu` meanwhile when cpu >= 0) and caches it (written atomically). With `load_cpus`, a thread
// pinned to them trains the same model meanwhile, as the other party's
// process does during the real run. `reprofile` ignores the
// cache. `model` (the measured MACs of `spec`) serves the efficiency fit
// that prices codec work. A cache file that does not parse is measured again.
CachedProfile profile_for_validation(const ModelSpec& spec, const ModelProfile& model,
                                     int64_t batch, int64_t in_flight, int threads,
                                     const OptimizerSpec& optimizer, const std::string& cache_dir,
                                     bool reprofile, int cpu, const std::vector<int>& load_cpus,
                                     const std::function<void(const std::string&)>& progress,
                                     double tolerance = kCachedProfileTolerance);

// Times a codec (time_codec) with `threads` threads, this thread pinned to
// `cpu` meanwhile when cpu >= 0. Not cached on disk: a few milliseconds.
CodecTiming time_codec_pinned(const CodecSpec& codec, const std::vector<int64_t>& shape,
                              int64_t batch, int threads, int cpu);

// measure_wake_cost with `threads` threads, this thread pinned to `cpu`
// meanwhile when cpu >= 0. Not cached on disk: a few seconds.
std::vector<WakePoint> measure_wake_cost_pinned(
    const ModelSpec& spec, int64_t batch, int threads, int cpu,
    const std::function<void(const std::string&)>& progress);

}  // namespace splitsim
