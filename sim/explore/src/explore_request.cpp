#include "splitsim/explore/explore_request.h"

#include <optional>
#include <ostream>
#include <vector>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/explore/accuracy.h"
#include "splitsim/explore/leakage.h"
#include "splitsim/explore/report.h"

namespace splitsim {
namespace {

// What `splitsim train` measured: the runs of r.accuracy and of r.leakage.
struct Measured {
  std::vector<MeasuredAccuracy> accuracy;
  std::vector<MeasuredLeakage> leakage;
};

bool has_limit(const LeakageLimits& l) {
  return l.max_psnr_db || l.max_distance_correlation || l.max_label_auc;
}

// The reports the request names, read; throws InputError when the request
// contradicts itself or r.emit_best cannot be written (before the search).
Measured check_request(const ExploreRequest& r) {
  if (r.top < 1) throw InputError("top", "must be >= 1");
  if (!r.accuracy.empty() && r.target_accuracy_pct < 0)
    throw InputError("target_accuracy", "--accuracy ranks by the time to a target: give it");
  if (r.accuracy.empty() && (r.target_accuracy_pct >= 0 || r.max_accuracy_drop_pct >= 0))
    throw InputError("accuracy",
                     "--target-accuracy and --max-accuracy-drop need the report "
                     "of splitsim train (--accuracy FILE)");
  if (r.leakage.empty() && has_limit(r.leakage_limits))
    throw InputError("leakage",
                     "--max-psnr, --max-distance-correlation and --max-label-auc need the "
                     "report of splitsim train --leakage (--leakage FILE)");
  check_leakage_limits(r.leakage_limits);
  if (!r.emit_best.empty()) check_output_path(r.emit_best, "emit_best");
  Measured measured;
  if (!r.accuracy.empty()) measured.accuracy = read_accuracy_report(r.accuracy);
  if (!r.leakage.empty()) measured.leakage = read_leakage_reports(r.leakage);
  check_one_task(measured.accuracy, measured.leakage);
  return measured;
}

// The rankings beside the exploration's, as JSON (null: not asked for), and
// the plan --emit-best writes: the first of the leakage ranking, else of
// the accuracy ranking, else the exploration's best.
struct Rankings {
  nlohmann::json accuracy, leakage;
  const Candidate* best = nullptr;
};

Rankings rank_measured(const ExploreRequest& r, const Exploration& e, const Measured& measured,
                       std::ostream& err) {
  Rankings out;
  out.best = &e.result.candidates[e.ranking.front()];
  const size_t top = static_cast<size_t>(r.top);
  std::optional<AccuracyRanking> accuracy;
  if (!measured.accuracy.empty()) {
    accuracy = rank_by_time_to_accuracy(
        e, measured.accuracy, r.target_accuracy_pct / 100,
        r.max_accuracy_drop_pct < 0 ? -1.0 : r.max_accuracy_drop_pct / 100);
    out.accuracy = accuracy_ranking_json(e, measured.accuracy, *accuracy, top);
    if (!accuracy->rows.empty())
      out.best = &e.result.candidates[accuracy->rows.front().candidate];
    else
      err << "explore: no candidate has measured codecs that reach the target within the "
             "allowed drop; the best by "
          << objective_name(e.objective) << " stands\n";
  }
  if (measured.leakage.empty()) return out;
  const AccuracyRanking* a = accuracy ? &*accuracy : nullptr;
  const LeakageRanking leakage =
      rank_by_leakage(e, measured.leakage, r.leakage_limits, a, a ? &measured.accuracy : nullptr);
  out.leakage = leakage_ranking_json(e, measured.leakage, leakage, a, top);
  if (!leakage.rows.empty())
    out.best = &e.result.candidates[leakage.rows.front().candidate];
  else
    err << "explore: no candidate with measured leakage (the same cuts and codecs) is within "
           "the limits"
        << (a ? " and reaches the target" : "") << "; the best plan stands as without --leakage\n";
  return out;
}

}  // namespace

void explore_scenario(const ExploreRequest& r, const std::function<ExploreSubject()>& load,
                      const ValidateTop& validate, std::ostream& out, std::ostream& err) {
  const Measured measured = check_request(r);
  const ExploreSubject subject = load();
  const ScenarioVariant& v = subject.variant;
  const ExploreSpace space = make_space(r.space, v.scenario);
  ExploreOptions options = r.options;
  // A terminal gets one line rewritten in place; a log one line per step.
  const bool tty = r.progress_in_place;
  options.progress = [tty, &err](const ExploreProgress& p) {
    err << (tty ? "\r" : "") << progress_line(p) << (tty ? "" : "\n") << std::flush;
  };
  options.spread_top = static_cast<size_t>(r.top);
  if (r.spread_pct >= 0) options.spread = r.spread_pct / 100;
  // A measured cut is ranked by its leakage even where the screen finds a
  // faster, smaller plan: simulated whatever the screen says.
  if (!measured.leakage.empty())
    options.always_simulate = [&measured](const Candidate& c) {
      return matching_leakage_run(c, measured.leakage) >= 0;
    };
  const Exploration e = run_exploration(v.scenario, subject.model, subject.devices, space, options);
  if (tty) err << "\n";
  const Rankings ranked = rank_measured(r, e, measured, err);
  if (!r.emit_best.empty()) {
    write_output_file(r.emit_best, candidate_scenario_json(v.json, *ranked.best).dump(2) + "\n",
                      "emit_best");
    err << "best plan written to " << r.emit_best << "\n";
  }
  nlohmann::json validation;
  if (r.validate_top > 0) validation = validate(e, v.json);
  if (r.json)
    write_explore_json(out, v.scenario.name, e, r.top, validation, ranked.accuracy, ranked.leakage);
  else if (r.csv)
    write_explore_csv(out, e);
  else
    write_explore_table(out, v.scenario.name, e, r.top, validation, ranked.accuracy,
                        ranked.leakage);
}

}  // namespace splitsim
