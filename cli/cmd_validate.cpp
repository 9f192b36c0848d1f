// `splitsim validate SCENARIO...` (exec/validate/README.md): its flags,
// bound to a ValidateRequest, and one call to validate()
// (exec/validate/include/splitsim/validate/validate_command.h): predict variants on
// this machine's measured profile, platform and link rate, run them for
// real, repeated and interleaved, and print predicted vs measured per metric
// (one variant) or the matrix summary (`--matrix`).
#include <cstdlib>
#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/validate/validate_command.h"

namespace splitsim {

namespace {

// "slow=4" -> {"slow", 4}; throws CLI::ValidationError otherwise.
std::pair<std::string, double> parse_group_factor(const std::string& text) {
  const size_t eq = text.find('=');
  char* end = nullptr;
  const double factor = eq == std::string::npos ? 0 : std::strtod(text.c_str() + eq + 1, &end);
  if (eq == 0 || eq == std::string::npos || end == nullptr || *end != '\0' || !(factor >= 1) ||
      factor > 1000)
    throw CLI::ValidationError("--client-slowdown",
                               "\"" + text + "\" is not GROUP=F with 1 <= F <= 1000");
  return {text.substr(0, eq), factor};
}

}  // namespace

Command add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateRequest>();
  ValidatorOptions& o = args->validator;
  CLI::App* sub = app.add_subcommand(
      "validate",
      "Predict variants with this machine's measured CPU profile (one thread per party), the "
      "host work per byte measured by a link probe, the co-compute slowdown of two parties "
      "on one machine and the cost of a computation after a wait (the wake cost); run each for "
      "real --repeat times, interleaved (splitsim exec: server and "
      "client pinned to separate cores, joined as root by a veth pair between two network "
      "namespaces shaped with tc htb or tbf, else by unshaped loopback); print predicted vs "
      "measured per metric with the error %, the spread and the machine's CPU steal. A "
      "scenario with several clients runs the server and a process per client behind a switch "
      "(as root), each client's port shaped to its group's rate, and compares the time per "
      "round, each group's time per batch and bytes, and the straggler.");
  sub->add_option("scenario", args->scenarios,
                  "scenario JSON file(s), or directories of them (every *.json inside)")
      ->required();
  sub->add_option("--variant", args->variant,
                  "the variant whose label contains this text (with --matrix: a filter)");
  sub->add_option("--link-rate", args->link_rate,
                  "rate of the real link, each way, for every variant: 50mbit, 200mbit, 1gbit, "
                  "500kbit (default: each variant's network.bandwidth_bit_per_s)");
  sub->add_option_function<std::string>(
         "--shaper", [&o](const std::string& name) { o.shaper = parse_shaper(name); },
         "how the veth is shaped, each way: htb (paces whole GSO packets; the default) or tbf "
         "(a token bucket that cuts GSO packets into frames released one by one, which costs "
         "the cores 15-20 ns per byte at 100-300 Mbit/s)")
      ->check(CLI::IsMember({"tbf", "htb"}));
  sub->add_option("--tcp-congestion-control", o.congestion_control,
                  "TCP congestion control of the real runs' connections, set on each socket "
                  "(one of /proc/sys/net/ipv4/tcp_available_congestion_control; the report "
                  "names what each run used). Where this kernel lacks it, the namespaces' "
                  "default, with a notice")
      ->capture_default_str()
      ->check(congestion_control_name());
  sub->add_option_function<std::vector<std::string>>(
         "--client-slowdown",
         [args](const std::vector<std::string>& pairs) {
           for (const std::string& p : pairs) args->client_slowdowns.insert(parse_group_factor(p));
         },
         "a scenario with several clients: GROUP=F (comma-separated or repeated) makes each "
         "client process of that group emulate a processor F >= 1 times slower (exec "
         "--compute-slowdown F), and the prediction gives the group this machine's profile F "
         "times slower")
      ->delimiter(',');
  sub->add_option("--threads", o.threads, "compute threads per process (and CPUs pinned)")
      ->capture_default_str()
      ->check(int_range(1, 1024));
  sub->add_option("--iterations", o.iterations,
                  "batches per run, warm-up included (default: the scenario's iterations)")
      ->check(int_range(1, limits::kMaxIterations));
  sub->add_option("--repeat", o.repeat,
                  "real runs per variant, interleaved (round r runs every variant once); the "
                  "median is compared, the min..max reported")
      ->capture_default_str()
      ->check(int_range(1, 100));
  sub->add_option("--retries", o.retries,
                  "re-runs of a repetition disturbed by CPU steal > 3% or other processes > 5% "
                  "of the CPUs (it is kept, flagged, after the last)")
      ->capture_default_str()
      ->check(int_range(0, 10));
  sub->add_flag("--quick", args->quick,
                "only every 7th variant of each scenario file (the first, the 8th, ...), counted "
                "after --variant's filter");
  sub->add_option("--timeout-s", o.timeout_s, "wall-clock limit of one real run")
      ->capture_default_str()
      ->check(number_range(kMinTimeoutS, 86400));
  sub->add_flag("--json", args->json,
                "JSON report on stdout (splitsim.validation/1, or splitsim.validation_matrix/1 "
                "with --matrix)");
  sub->add_option("--report", args->report, "also write the JSON report to this file");
  sub->add_option("--calibration", args->calibration,
                  "apply this calibration (splitsim.calibration/1, `splitsim calibrate`) to every "
                  "prediction");
  sub->add_flag("--matrix", args->matrix,
                "validate every (selected) variant; print a table and the median and p90 "
                "|error| of time per batch, over all and per model");
  sub->add_flag("--keep-going", o.keep_going,
                "with --matrix: record a failed run and go on (exit code 1 at the end)");
  sub->add_flag("--let-cores-idle", o.let_cores_idle,
                "do not keep the run's CPUs busy with SCHED_IDLE pollers: a waiting party's core "
                "may idle, and on a VM compute after idling runs slower than the profile says");
  sub->add_flag("--no-platform-model", args->no_platform_model,
                "predict without the link probe's host work per byte, the co-compute slowdown and "
                "the wake cost (the report always shows the error without them too)");
  sub->add_flag("--reprofile", o.reprofile, "measure this machine again, ignore the cache");
  sub->add_option("--profile-cache", o.profile_cache,
                  "directory of cached profiles (default $SPLITSIM_PROFILE_CACHE, else "
                  "$XDG_CACHE_HOME/splitsim or ~/.cache/splitsim)");
  sub->add_option("--exec-bin", o.exec_bin,
                  "binary to run as `BIN exec ...` and `BIN link-probe ...` (default "
                  "$SPLITSIM_EXEC_BIN, else this one; for tests)");
  return {sub, [args] { return validate(*args, std::cout, stamped_log(std::cerr)) ? 0 : 1; }};
}

}  // namespace splitsim
