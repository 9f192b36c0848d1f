#include "splitsim/explore/explore_request.h"

#include <ostream>
#include <vector>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/explore/accuracy.h"
#include "splitsim/explore/report.h"

namespace splitsim {
namespace {

// The runs of r.accuracy; throws InputError when the request contradicts
// itself or r.emit_best cannot be written (before the search).
std::vector<MeasuredAccuracy> check_request(const ExploreRequest& r) {
  if (r.top < 1) throw InputError("top", "must be >= 1");
  if (!r.accuracy.empty() && r.target_accuracy_pct < 0)
    throw InputError("target_accuracy", "--accuracy ranks by the time to a target: give it");
  if (r.accuracy.empty() && (r.target_accuracy_pct >= 0 || r.max_accuracy_drop_pct >= 0))
    throw InputError("accuracy",
                     "--target-accuracy and --max-accuracy-drop need the report "
                     "of splitsim train (--accuracy FILE)");
  if (!r.emit_best.empty()) check_output_path(r.emit_best, "emit_best");
  std::vector<MeasuredAccuracy> measured;
  if (!r.accuracy.empty()) measured = read_accuracy_report(r.accuracy);
  return measured;
}

}  // namespace

void explore_scenario(const ExploreRequest& r, const std::function<ExploreSubject()>& load,
                      const ValidateTop& validate, std::ostream& out, std::ostream& err) {
  const std::vector<MeasuredAccuracy> measured = check_request(r);
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
  const Exploration e = run_exploration(v.scenario, subject.model, subject.devices, space, options);
  if (tty) err << "\n";
  const Candidate* best = &e.result.candidates[e.ranking.front()];
  nlohmann::json accuracy;
  if (!measured.empty()) {
    const AccuracyRanking ranked = rank_by_time_to_accuracy(
        e, measured, r.target_accuracy_pct / 100,
        r.max_accuracy_drop_pct < 0 ? -1.0 : r.max_accuracy_drop_pct / 100);
    accuracy = accuracy_ranking_json(e, measured, ranked, static_cast<size_t>(r.top));
    if (!ranked.rows.empty())
      best = &e.result.candidates[ranked.rows.front().candidate];
    else
      err << "explore: no candidate has measured codecs that reach the target within the "
             "allowed drop; the best by "
          << objective_name(e.objective) << " stands\n";
  }
  if (!r.emit_best.empty()) {
    write_output_file(r.emit_best, candidate_scenario_json(v.json, *best).dump(2) + "\n",
                      "emit_best");
    err << "best plan written to " << r.emit_best << "\n";
  }
  nlohmann::json validation;
  if (r.validate_top > 0) validation = validate(e, v.json);
  if (r.json)
    write_explore_json(out, v.scenario.name, e, r.top, validation, accuracy);
  else if (r.csv)
    write_explore_csv(out, e);
  else
    write_explore_table(out, v.scenario.name, e, r.top, validation, accuracy);
}

}  // namespace splitsim
