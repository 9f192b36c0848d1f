// `splitsim explore SCENARIO` (sim/explore/README.md): its flags, bound to an
// ExploreRequest, and one call to explore_scenario()
// (sim/explore/include/splitsim/explore/explore_request.h: search cut
// points, codecs, chunk counts, schedules and bandwidths; simulate the
// candidates the closed-form screen keeps; Pareto front, ranking, report).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/explore/explore_request.h"
#include "splitsim/validate/ranking_check.h"

namespace splitsim {
namespace {

void log(const std::string& line) { std::cerr << line << "\n"; }

// The scenario measured: the variant --variant picks, else the first.
ExploreSubject load_subject(const ExploreRequest& r) {
  Workspace ws(r.scenario, log, ScenarioNeeds::kModel);  // explore picks the partition
  if (!r.variant.empty()) ws.select_one(r.variant, "explore searches around");
  const ScenarioVariant& v = ws.variants().front();
  if (ws.variants().size() > 1)
    std::cerr << "explore: the scenario has a sweep; exploring around its first variant \""
              << v.label << "\" (--variant TEXT picks another)\n";
  return {v, ws.model(v), ws.devices(v)};
}

int run_explore(ExploreRequest r) {
  r.progress_in_place = ::isatty(STDERR_FILENO) == 1;
  explore_scenario(
      r, [&r] { return load_subject(r); },
      [&r](const Exploration& e, const nlohmann::json& base_json) {
        return validate_top(e, base_json, {r.validate_top, r.validate_repeat, ""}, log);
      },
      std::cout, std::cerr);
  return 0;
}

}  // namespace

Command add_explore_command(CLI::App& app) {
  auto a = std::make_shared<ExploreRequest>();
  SpaceFlags& s = a->space;
  CLI::App* sub = app.add_subcommand(
      "explore",
      "Search cut points (single, U-shape, K-stage by dynamic programming), codecs, chunk "
      "counts, schedules and link bandwidths under client memory and MAC constraints; screen "
      "with closed-form bounds, simulate the rest, print the Pareto front over (time, bytes, "
      "client MACs, client memory) and a ranking. See sim/explore/README.md.");
  sub->add_option("scenario", a->scenario, "base scenario JSON (model, batch, devices, network)")
      ->required();
  sub->add_option("--variant", a->variant,
                  "a scenario with a sweep: explore around the one variant whose label contains "
                  "TEXT (default: the first)");
  sub->add_option("--space", s.space_file, "explore space JSON (schema splitsim.explore/1)");
  sub->add_option("--calibration", s.calibration,
                  "apply this calibration (splitsim.calibration/1) to every candidate's plan");
  sub->add_option("--objective", s.objective, "ranking: time | bytes | client_macs");
  sub->add_option("--kinds", s.kinds, "cut kinds: single,ushape,kstage (default single,ushape)");
  sub->add_option("--stages", s.stages, "kstage: K, over the scenario's first K parties")
      ->check(int_range(2, 64));
  sub->add_option("--chunks", s.chunks, "chunk counts, e.g. 1,4,8 (default: the scenario's)");
  sub->add_option("--bandwidth-bit-per-s", s.bandwidths, "link bandwidths to sweep, e.g. 1e9,4e9");
  sub->add_option("--client-memory-bytes", s.client_memory_bytes, "client memory limit (0: none)")
      ->check(int_range(0, int64_t{1} << 50));
  sub->add_option("--max-client-mac-share", s.max_client_mac_share,
                  "largest share of the MACs the client may run, in (0, 1]")
      ->check(number_range(0, 1, true));
  sub->add_option("--top", a->top, "rows of the ranking")
      ->capture_default_str()
      ->check(int_range(1, 100000));
  sub->add_option("--spread", a->spread_pct,
                  "every party's compute time may lie this many percent either side of its "
                  "profile: the ranking's rows are simulated at both ends, and plans whose "
                  "ranges overlap the first's are declared a tie (default: each device "
                  "profile's measured timing_spread, 0 where it has none)")
      ->check(number_range(0, 99));
  sub->add_option("--max-simulations", a->options.max_simulations,
                  "simulate at most this many survivors of the screen (lowest bound first)")
      ->capture_default_str()
      ->check(int_range(1, 1000000));
  auto* json = sub->add_flag("--json", a->json, "JSON report (schema splitsim.explore/1)");
  sub->add_flag("--csv", a->csv, "CSV: the ranking, one row per simulated candidate")
      ->excludes(json);
  sub->add_option("--emit-best", a->emit_best,
                  "write the best plan as a scenario file (atomically: a temporary file beside "
                  "it, then renamed)");
  sub->add_option("--jobs", a->options.jobs, "simulations at once (default: the CPU count)")
      ->check(int_range(1, 1024));
  sub->add_option("--validate-top", a->validate_top,
                  "run `splitsim validate --matrix` on the top N plans (interleaved) and say "
                  "whether the measured best is the predicted best, within the measured spread")
      ->check(int_range(0, 100));
  sub->add_option("--accuracy", a->accuracy,
                  "a report of splitsim train (one run or a sweep): also rank by the time to "
                  "--target-accuracy, from the batches each candidate's codecs needed; the best "
                  "plan (--emit-best) is then the first of that ranking");
  sub->add_option("--target-accuracy", a->target_accuracy_pct,
                  "with --accuracy: the test accuracy to reach, in percent")
      ->check(number_range(0, 100));
  sub->add_option("--max-accuracy-drop", a->max_accuracy_drop_pct,
                  "with --accuracy: leave out codecs whose best test accuracy is more than this "
                  "many percentage points below the uncompressed run's")
      ->check(number_range(0, 100));
  sub->add_option("--leakage", a->leakage,
                  "reports of splitsim train --leakage (one run or a sweep; several files, or "
                  "the flag repeated): also rank the plans whose cuts and codecs were measured "
                  "and whose worst leakage is within --max-psnr, --max-distance-correlation and "
                  "--max-label-auc, by time per batch (by time to --target-accuracy with "
                  "--accuracy: a plan must pass both); the best plan (--emit-best) is then the "
                  "first of that ranking");
  sub->add_option_function<double>(
         "--max-psnr", [a](double x) { a->leakage_limits.max_psnr_db = x; },
         "with --leakage: leave out plans whose reconstruction attack reached a PSNR above "
         "this many dB (at any evaluation and boundary)")
      ->check(number_range(-1000, 1000));
  sub->add_option_function<double>(
         "--max-distance-correlation",
         [a](double x) { a->leakage_limits.max_distance_correlation = x; },
         "with --leakage: leave out plans whose activations' distance correlation with the "
         "input exceeded this, in [-1, 1]")
      ->check(number_range(-1, 1));
  sub->add_option_function<double>(
         "--max-label-auc", [a](double x) { a->leakage_limits.max_label_auc = x; },
         "with --leakage: leave out plans whose gradients told the labels apart with a "
         "direction-attack ROC AUC above this, in [0, 1]")
      ->check(number_range(0, 1));
  sub->add_option("--validate-repeat", a->validate_repeat,
                  "with --validate-top: real runs per plan")
      ->capture_default_str()
      ->check(int_range(1, 100));
  return {sub, [a] { return run_explore(*a); }};
}

}  // namespace splitsim
