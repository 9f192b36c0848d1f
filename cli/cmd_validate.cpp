// `splitsim validate SCENARIO...`: flag handling over Validator
// (cli/validator.h): predict variants on this machine's measured profile,
// platform and link rate, run them for real, repeated and interleaved, and
// print predicted vs measured per metric (one variant) or the matrix
// summary (`--matrix`).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "flag_checks.h"
#include "profile_cache.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/limits.h"
#include "validation.h"
#include "validator.h"
#include "workspace.h"

namespace splitsim {
namespace {

struct ValidateArgs {
  std::vector<std::string> scenarios;
  std::string variant, link_rate, report, exec_bin, profile_cache;
  int threads = 1, repeat = 3, retries = 1;
  int64_t iterations = 0;
  double timeout_s = 300;
  bool json = false, matrix = false, keep_going = false, reprofile = false, quick = false;
  bool let_cores_idle = false, no_platform_model = false;
};

// --quick: every kQuickStride-th variant of each scenario file (the first,
// then every kQuickStride-th after it).
constexpr size_t kQuickStride = 7;

// Progress on stderr, each line with the seconds since validate started.
void log(const std::string& line) {
  static const auto start = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "validate [%6.1f s]: ", s);
  std::cerr << stamp << line << "\n";
}

// The binary whose `exec` subcommand runs: --exec-bin, $SPLITSIM_EXEC_BIN, or this one.
std::string exec_binary(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("SPLITSIM_EXEC_BIN"); env != nullptr && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "splitsim" : self.string();
}

// Scenario arguments: files, or directories whose *.json files are taken in
// name order.
std::vector<std::string> scenario_files(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    std::error_code ec;
    if (!std::filesystem::is_directory(a, ec)) {
      files.push_back(a);
      continue;
    }
    std::vector<std::string> in_dir;
    for (const auto& e : std::filesystem::directory_iterator(a, ec))
      if (e.path().extension() == ".json" && e.is_regular_file()) in_dir.push_back(e.path());
    std::sort(in_dir.begin(), in_dir.end());
    if (in_dir.empty())
      throw InputError("scenario", "the directory \"" + a + "\" holds no .json scenario file");
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

std::string awake_text(int awake_cores) {
  return awake_cores > 0 ? std::to_string(awake_cores) +
                               " CPU(s) kept from idling during the run (SCHED_IDLE pollers)"
                         : "left to idle while waiting (--let-cores-idle)";
}

void print_single(std::ostream& os, const ValidationRun& r) {
  os << "== " << r.scenario << " \"" << r.variant << "\": predicted (simulate) vs measured (exec)\n"
     << "link: " << r.link.description << "\nprofile: " << r.profile << "\n"
     << "cores: " << awake_text(r.awake_cores) << "\n";
  if (!r.repetitions.empty()) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "repetitions: %zu, measured time per batch %.4f..%.4f s (the prediction %.4f s "
                  "is %s)\n",
                  r.repetitions.size(), r.measured_min_time_s, r.measured_max_time_s,
                  r.predicted.time_per_batch_s, predicted_inside_spread(r) ? "inside" : "outside");
    os << line;
  }
  print_comparison(os, r.errors);
}

// Refuses a --report path that cannot take the report, before the run: a
// directory, or a file in a directory that does not exist.
void check_report_path(const std::string& report) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(report, ec)) {
    throw InputError("--report", "\"" + report + "\" is a directory; give a file name");
  }
  const fs::path parent = fs::path(report).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw InputError("--report", "directory \"" + parent.string() + "\" does not exist");
  }
}

int run_validate(const ValidateArgs& args) {
  ValidatorOptions o;
  if (!args.link_rate.empty())
    o.link_rate_bit_per_s = parse_link_rate(args.link_rate, "--link-rate");
  if (!args.report.empty()) check_report_path(args.report);
  o.exec_bin = exec_binary(args.exec_bin);
  o.profile_cache = args.profile_cache.empty() ? default_profile_cache_dir() : args.profile_cache;
  o.threads = args.threads;
  o.iterations = args.iterations;
  o.timeout_s = args.timeout_s;
  o.repeat = args.repeat;
  o.retries = args.retries;
  o.reprofile = args.reprofile;
  o.let_cores_idle = args.let_cores_idle;
  o.keep_going = args.keep_going;
  o.platform_model = !args.no_platform_model;

  const std::vector<std::string> files = scenario_files(args.scenarios);
  std::vector<std::unique_ptr<Workspace>> workspaces;
  std::vector<ValidationItem> items;
  for (const std::string& file : files) {
    workspaces.push_back(std::make_unique<Workspace>(file, log));
    Workspace& ws = *workspaces.back();
    if (!args.variant.empty()) {
      try {
        ws.select(args.variant);
      } catch (const InputError&) {
        if (files.size() == 1) throw;
        continue;  // another file may hold it
      }
    }
    const bool single = ws.variants().size() == 1 && ws.variants().front().label == "base";
    for (size_t i = 0; i < ws.variants().size(); ++i)
      if (!args.quick || i % kQuickStride == 0)
        items.push_back({std::filesystem::absolute(file).string(), &ws, &ws.variants()[i], single});
  }
  for (const ValidationItem& it : items) {
    const double rate = o.link_rate_bit_per_s > 0
                            ? o.link_rate_bit_per_s
                            : it.variant->scenario.network.bandwidth_bit_per_s;
    check_link_rate(rate, o.link_rate_bit_per_s > 0 ? "--link-rate"
                                                    : "$.network.bandwidth_bit_per_s (variant \"" +
                                                          it.variant->label + "\")");
  }
  if (items.empty())
    throw InputError("--variant",
                     "no variant of the given scenario(s) contains \"" + args.variant + "\"");
  if (!args.matrix && items.size() > 1) {
    std::string labels;
    for (const auto& it : items)
      labels += (labels.empty() ? "\"" : ", \"") + it.variant->label + "\"";
    throw InputError("--variant", std::to_string(items.size()) +
                                      " variants are selected; pick one with --variant or run "
                                      "them all with --matrix (labels: " +
                                      labels + ")");
  }
  Validator validator(o, log);
  std::vector<ValidationRun> runs = validator.run(items);

  std::ostringstream out;
  std::string report;
  if (args.matrix) {
    nlohmann::json j = matrix_json(runs);
    if (!validator.drift().empty()) j["summary"]["profile_drift"] = validator.drift();
    report = j.dump(2) + "\n";
    if (args.json) {
      out << report;
    } else {
      print_matrix(out, runs);
      if (!validator.drift().empty()) out << "profile drift: " << validator.drift() << "\n";
    }
  } else {
    nlohmann::json j = validation_json(runs.front());
    if (!validator.drift().empty()) j["profile_drift"] = validator.drift();
    report = j.dump(2) + "\n";
    if (args.json)
      out << report;
    else
      print_single(out, runs.front());
  }
  if (!args.report.empty()) write_file_atomically(args.report, report, "--report");
  std::cout << out.str();
  const bool failed = std::any_of(runs.begin(), runs.end(),
                                  [](const ValidationRun& r) { return !r.failure.empty(); });
  return failed ? 1 : 0;
}

}  // namespace

Command add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub = app.add_subcommand(
      "validate",
      "Predict variants with this machine's measured CPU profile (one thread per party), the "
      "host work per byte measured by a link probe and the co-compute slowdown of two parties "
      "on one machine; run each for real --repeat times, interleaved (splitsim exec: server and "
      "client pinned to separate cores, joined as root by a veth pair between two network "
      "namespaces shaped with tc tbf, else by unshaped loopback); print predicted vs measured "
      "per metric with the error %, the spread and the machine's CPU steal.");
  sub->add_option("scenario", args->scenarios,
                  "scenario JSON file(s), or directories of them (every *.json inside)")
      ->required();
  sub->add_option("--variant", args->variant,
                  "the variant whose label contains this text (with --matrix: a filter)");
  sub->add_option("--link-rate", args->link_rate,
                  "rate of the real link, each way, for every variant: 50mbit, 200mbit, 1gbit, "
                  "500kbit (default: each variant's network.bandwidth_bit_per_s)");
  sub->add_option("--threads", args->threads, "compute threads per process (and CPUs pinned)")
      ->capture_default_str()
      ->check(int_range(1, 1024));
  sub->add_option("--iterations", args->iterations,
                  "batches per run, warm-up included (default: the scenario's iterations)")
      ->check(int_range(1, limits::kMaxIterations));
  sub->add_option("--repeat", args->repeat,
                  "real runs per variant, interleaved (round r runs every variant once); the "
                  "median is compared, the min..max reported")
      ->capture_default_str()
      ->check(int_range(1, 100));
  sub->add_option("--retries", args->retries,
                  "re-runs of a repetition disturbed by CPU steal > 3% or other processes > 5% "
                  "of the CPUs (it is kept, flagged, after the last)")
      ->capture_default_str()
      ->check(int_range(0, 10));
  sub->add_flag("--quick", args->quick,
                "only every 7th variant of each scenario file (the first, the 8th, ...)");
  sub->add_option("--timeout-s", args->timeout_s, "wall-clock limit of one real run")
      ->capture_default_str()
      ->check(number_range(0, 86400, true));
  sub->add_flag("--json", args->json,
                "JSON report on stdout (splitsim.validation/1, or splitsim.validation_matrix/1 "
                "with --matrix)");
  sub->add_option("--report", args->report, "also write the JSON report to this file");
  sub->add_flag("--matrix", args->matrix,
                "validate every (selected) variant; print a table and the median and p90 "
                "|error| of time per batch, over all and per model");
  sub->add_flag("--keep-going", args->keep_going,
                "with --matrix: record a failed run and go on (exit code 1 at the end)");
  sub->add_flag("--let-cores-idle", args->let_cores_idle,
                "do not keep the run's CPUs busy with SCHED_IDLE pollers: a waiting party's core "
                "may idle, and on a VM compute after idling runs slower than the profile says");
  sub->add_flag("--no-platform-model", args->no_platform_model,
                "predict without the link probe's host work per byte and without the co-compute "
                "slowdown (the report always shows the error without them too)");
  sub->add_flag("--reprofile", args->reprofile, "measure this machine again, ignore the cache");
  sub->add_option("--profile-cache", args->profile_cache,
                  "directory of cached profiles (default $SPLITSIM_PROFILE_CACHE, else "
                  "$XDG_CACHE_HOME/splitsim or ~/.cache/splitsim)");
  sub->add_option("--exec-bin", args->exec_bin,
                  "binary to run as `BIN exec ...` and `BIN link-probe ...` (default "
                  "$SPLITSIM_EXEC_BIN, else this one; for tests)");
  return {sub, [args] { return run_validate(*args); }};
}

}  // namespace splitsim
