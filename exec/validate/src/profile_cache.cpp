#include "splitsim/validate/profile_cache.h"

#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "splitsim/costmodel/efficiency_fit.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/costmodel/timing.h"
#include "splitsim/validate/safe_files.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string cache_key(const ModelSpec& m, int64_t batch, int64_t in_flight, int threads,
                      const OptimizerSpec& o, bool loaded) {
  char host[256] = "";
  gethostname(host, sizeof host);
  // Bump kMethod when what a profile holds or how it is fitted changes, so
  // stale caches are measured again (2: classes too small to measure keep
  // their prior efficiency; 3: measured beside a companion load,
  // ProfileOptions::load_cpus; 4: freed heap memory held, heap.h; 5:
  // TorchScript units from the forward graph). A TorchScript file is known
  // by its path, size and modification time, so a file written anew is
  // measured anew.
  constexpr int kMethod = 5;
  std::error_code ec;
  const auto file_size = m.path.empty() ? 0 : std::filesystem::file_size(m.path, ec);
  const auto file_time =
      m.path.empty() ? 0 : std::filesystem::last_write_time(m.path, ec).time_since_epoch().count();
  nlohmann::json j = {
      {"version", SPLITSIM_VERSION},
      {"method", kMethod},
      {"host", host},
      {"model", m.name},
      {"num_classes", m.num_classes},
      {"image_size", m.image_size},
      {"seq_len", m.seq_len},
      {"sizes", {m.hidden, m.layers, m.heads, m.ffn, m.vocab_size, m.max_positions, m.kv_heads}},
      {"path", m.path},
      {"file", {ec ? 0 : file_size, ec ? 0 : file_time}},
      {"split_inside", m.split_inside},
      {"dropout", m.dropout},
      {"finetune",
       {m.finetune.method, m.finetune.rank, m.finetune.alpha, m.finetune.dropout,
        m.finetune.targets, m.finetune.frozen}},
      {"input_shape", m.input_shape},
      {"input_dtype", m.input_dtype},
      {"batch", batch},
      {"in_flight", in_flight},
      {"threads", threads},
      {"companion_load", loaded},
      {"optimizer", {o.name, o.lr, o.momentum, o.weight_decay, o.eps}}};
  return j.dump();
}

// Pins the calling thread to `cpu` for its lifetime; restores the old mask.
class ScopedAffinity {
 public:
  explicit ScopedAffinity(int cpu) {
    if (cpu < 0 || sched_getaffinity(0, sizeof old_, &old_) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    active_ = sched_setaffinity(0, sizeof set, &set) == 0;
  }
  ~ScopedAffinity() {
    if (active_) sched_setaffinity(0, sizeof old_, &old_);
  }

 private:
  cpu_set_t old_{};
  bool active_ = false;
};

}  // namespace

std::string profile_cache_file(const std::string& cache_dir, const ModelSpec& spec, int64_t batch,
                               int64_t in_flight, int threads, const OptimizerSpec& optimizer,
                               bool loaded) {
  char name[256];
  std::snprintf(name, sizeof name, "%s_b%lldx%lld_t%d_%016llx.json", spec.name.c_str(),
                static_cast<long long>(batch), static_cast<long long>(in_flight), threads,
                static_cast<unsigned long long>(
                    fnv1a(cache_key(spec, batch, in_flight, threads, optimizer, loaded))));
  return (std::filesystem::path(cache_dir) / name).string();
}

CachedProfile profile_for_validation(const ModelSpec& spec, const ModelProfile& model,
                                     int64_t batch, int64_t in_flight, int threads,
                                     const OptimizerSpec& optimizer, const std::string& cache_dir,
                                     bool reprofile, int cpu, const std::vector<int>& load_cpus,
                                     const std::function<void(const std::string&)>& progress,
                                     double tolerance) {
  const bool loaded = !load_cpus.empty();
  const std::string file =
      profile_cache_file(cache_dir, spec, batch, in_flight, threads, optimizer, loaded);
  ProfileOptions opts;
  opts.batch = batch;
  opts.in_flight = in_flight;
  opts.threads = threads;
  opts.optimizer = optimizer;
  opts.load_cpus = load_cpus;
  if (!reprofile && std::filesystem::exists(file)) {
    std::optional<DeviceProfile> cached;
    try {
      cached = parse_device(parse_json_file(file, "cached profile"), file);
    } catch (const std::exception& e) {
      progress("cached profile " + file + " is unreadable (" + e.what() + "); measuring again");
    }
    if (cached && cached->timing_spread <= 0) {
      progress("cached profile " + file +
               " has no timing spread (an older splitsim wrote it); measuring again");
      cached.reset();
    }
    if (cached) {
      // The machine may have changed speed since (on a VM, by 20% from one
      // hour to the next without any steal): two rounds now decide whether
      // the cached profile still holds.
      ProfileOptions check = opts;
      check.warmup = 1;
      check.repeats = 2;
      DeviceProfile now;
      {
        ScopedAffinity pin(cpu);
        now = profile_this_machine(spec, check, [](const std::string&) {});
      }
      const double then_s = unit_seconds(*cached), now_s = unit_seconds(now);
      const double change = then_s > 0 ? now_s / then_s - 1 : 0;
      char text[96];
      std::snprintf(text, sizeof text, " (checked now: %+.1f%%)", 100 * change);
      if (std::abs(change) <= tolerance) return {*cached, "cached " + file + text};
      progress("cached profile " + file + text + " no longer holds; measuring again");
    }
  }
  progress("profiling " + spec.name + " at batch " + std::to_string(batch) + " x " +
           std::to_string(in_flight) + " in flight with " + std::to_string(threads) +
           " thread(s) on this machine" +
           (cpu >= 0 ? " (pinned to CPU " + std::to_string(cpu) + ")" : "") +
           (loaded ? ", the other party's CPU running the same model meanwhile" : ""));
  DeviceProfile device;
  {
    ScopedAffinity pin(cpu);
    device =
        profile_this_machine(spec, opts, [&](const std::string& l) { progress("profile: " + l); });
  }
  device.name = "cpu_this_machine_validate";
  device.description = "this machine's CPU, " + std::to_string(threads) +
                       " thread(s), measured by splitsim validate";
  // Codec work (encode/decode) is priced by the formula: measure the peaks
  // and fit the efficiencies to the unit timings, as `splitsim profile` does.
  {
    ScopedAffinity pin(cpu);
    device.peak_flops = measure_peak_flops();
    device.memory_bandwidth_Bps = measure_memory_bandwidth();
  }
  if (device.memory_bytes <= 0) device.memory_bytes = 1e10;
  std::vector<TimedWork> data;
  for (size_t i = 0; i < model.units.size() && i < device.timings.size(); ++i) {
    data.push_back({model.units[i].fwd.scaled(batch), device.timings[i].fwd_s});
    data.push_back({model.units[i].bwd.scaled(batch), device.timings[i].bwd_s});
  }
  if (!data.empty()) device.efficiency = fit_efficiency(device, data).efficiency;
  try {
    prepare_cache_dir(cache_dir);
    write_output_file(file, nlohmann::json(device).dump(2) + "\n", "profile_cache");
    return {device, "measured now, cached in " + file};
  } catch (const std::exception& e) {
    return {device, "measured now (not cached: " + std::string(e.what()) + ")"};
  }
}

double unit_seconds(const DeviceProfile& d) {
  double s = 0;
  for (const UnitTiming& t : d.timings) s += t.fwd_s + t.bwd_s;
  return s;
}

CodecTiming time_codec_pinned(const CodecSpec& codec, const std::vector<int64_t>& shape,
                              int64_t batch, int threads, int cpu) {
  ScopedAffinity pin(cpu);
  return time_codec(codec, shape, batch, threads);
}

std::vector<WakePoint> measure_wake_cost_pinned(
    const ModelSpec& spec, int64_t batch, int threads, int cpu,
    const std::function<void(const std::string&)>& progress) {
  ScopedAffinity pin(cpu);
  return measure_wake_cost(spec, batch, threads, progress);
}

}  // namespace splitsim
