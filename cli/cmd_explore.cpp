// `splitsim explore SCENARIO` (sim/explore/README.md): its flags, the space
// they give (make_space), one call to run_exploration() (search cut points,
// codecs, chunk counts, schedules and bandwidths; simulate the candidates the
// closed-form screen keeps; Pareto front and ranking), and its report.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/explore/accuracy.h"
#include "splitsim/explore/exploration.h"
#include "splitsim/explore/report.h"
#include "splitsim/explore/space_flags.h"
#include "splitsim/validate/ranking_check.h"

namespace splitsim {
namespace {

struct ExploreArgs {
  std::string scenario, variant, emit_best;
  SpaceFlags space;
  ExploreOptions options;
  ValidateTopRequest validate;
  int top = 10;
  bool json = false, csv = false;
  std::string accuracy;  // a train report
  double target_accuracy_pct = -1, max_accuracy_drop_pct = -1;
  double spread_pct = -1;  // -1: the device profiles' timing spread
};

int run_explore(ExploreArgs a) {
  if (a.top < 1) throw InputError("--top", "must be >= 1");
  if (!a.accuracy.empty() && a.target_accuracy_pct < 0)
    throw InputError("--target-accuracy", "--accuracy ranks by the time to a target: give it");
  if (a.accuracy.empty() && (a.target_accuracy_pct >= 0 || a.max_accuracy_drop_pct >= 0))
    throw InputError("--accuracy",
                     "--target-accuracy and --max-accuracy-drop need the report "
                     "of splitsim train (--accuracy FILE)");
  if (!a.emit_best.empty()) check_output_path(a.emit_best, "--emit-best");  // before the search
  std::vector<MeasuredAccuracy> measured;
  if (!a.accuracy.empty()) measured = read_accuracy_report(a.accuracy);
  auto log = [](const std::string& line) { std::cerr << line << "\n"; };
  Workspace ws(a.scenario, log, ScenarioNeeds::kModel);  // explore picks the partition
  if (!a.variant.empty()) ws.select_one(a.variant, "explore searches around");
  const ScenarioVariant& v = ws.variants().front();
  if (ws.variants().size() > 1)
    std::cerr << "explore: the scenario has a sweep; exploring around its first variant \""
              << v.label << "\" (--variant TEXT picks another)\n";
  const ExploreSpace space = make_space(a.space, v.scenario);
  // A terminal gets one line rewritten in place; a log one line per step.
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  a.options.progress = [tty](const ExploreProgress& p) {
    std::cerr << (tty ? "\r" : "") << progress_line(p) << (tty ? "" : "\n") << std::flush;
  };
  a.options.spread_top = static_cast<size_t>(a.top);
  if (a.spread_pct >= 0) a.options.spread = a.spread_pct / 100;
  const Exploration e = run_exploration(v.scenario, ws.model(v), ws.devices(v), space, a.options);
  if (tty) std::cerr << "\n";
  const Candidate* best = &e.result.candidates[e.ranking.front()];
  nlohmann::json accuracy;
  if (!measured.empty()) {
    const AccuracyRanking ranked = rank_by_time_to_accuracy(
        e, measured, a.target_accuracy_pct / 100,
        a.max_accuracy_drop_pct < 0 ? -1.0 : a.max_accuracy_drop_pct / 100);
    accuracy = accuracy_ranking_json(e, measured, ranked, static_cast<size_t>(a.top));
    if (!ranked.rows.empty())
      best = &e.result.candidates[ranked.rows.front().candidate];
    else
      std::cerr << "explore: no candidate has measured codecs that reach the target within the "
                   "allowed drop; the best by "
                << objective_name(e.objective) << " stands\n";
  }
  if (!a.emit_best.empty()) {
    write_output_file(a.emit_best, candidate_scenario_json(v.json, *best).dump(2) + "\n",
                      "--emit-best");
    std::cerr << "best plan written to " << a.emit_best << "\n";
  }
  nlohmann::json validation;
  if (a.validate.top > 0) validation = validate_top(e, v.json, a.validate, log);
  if (a.json)
    write_explore_json(std::cout, v.scenario.name, e, a.top, validation, accuracy);
  else if (a.csv)
    write_explore_csv(std::cout, e);
  else
    write_explore_table(std::cout, v.scenario.name, e, a.top, validation, accuracy);
  return 0;
}

}  // namespace

Command add_explore_command(CLI::App& app) {
  auto a = std::make_shared<ExploreArgs>();
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
  sub->add_option("--validate-top", a->validate.top,
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
  sub->add_option("--validate-repeat", a->validate.repeat,
                  "with --validate-top: real runs per plan")
      ->capture_default_str()
      ->check(int_range(1, 100));
  return {sub, [a] { return run_explore(*a); }};
}

}  // namespace splitsim
