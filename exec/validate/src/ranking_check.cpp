// explore --validate-top: the top plans through `splitsim validate --matrix`.
#include "splitsim/validate/ranking_check.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "splitsim/costmodel/subprocess.h"

namespace splitsim {
namespace {

std::string this_binary() {
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) throw std::runtime_error("--validate-top: cannot find this binary");
  return std::string(exe, static_cast<size_t>(len));
}

}  // namespace

nlohmann::json validate_top(const Exploration& e, const nlohmann::json& base_json,
                            const ValidateTopRequest& request,
                            const std::function<void(const std::string&)>& log) {
  const std::string bin = request.splitsim_bin.empty() ? this_binary() : request.splitsim_bin;
  std::string dir = (std::filesystem::temp_directory_path() / "splitsim-explore-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr)
    throw std::runtime_error("--validate-top: cannot create a directory in " +
                             std::filesystem::temp_directory_path().string());
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  const int count = std::min<int>(request.top, static_cast<int>(e.ranking.size()));
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/top%02d.json", i + 1);
    std::ofstream(dir + name)
        << candidate_scenario_json(base_json, e.result.candidates[e.ranking[i]]).dump(2);
  }
  if (log)
    log("explore: validating the top " + std::to_string(count) + " (" +
        std::to_string(request.repeat) + " interleaved repetitions each)");
  std::string text;
  const int rc = run_capturing_stdout({bin, "validate", dir, "--matrix", "--keep-going", "--json",
                                       "--repeat", std::to_string(request.repeat)},
                                      &text);
  const nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (report.is_discarded() || !report.contains("runs") ||
      report["runs"].size() != static_cast<size_t>(count))
    throw std::runtime_error(
        "--validate-top: `splitsim validate DIR --matrix --json` failed (exit " +
        std::to_string(rc) + "); is validate available and runnable here?");
  return compare_top(e, count, request.repeat, report);
}

double kendall_tau(const std::vector<RankedTime>& x, const std::vector<RankedTime>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("kendall_tau: lists of unequal length");
  auto tied = [](const RankedTime& a, const RankedTime& b) {
    return a.time_s == b.time_s || (a.low_s <= b.high_s && b.low_s <= a.high_s);
  };
  double concordant = 0, discordant = 0, tied_x = 0, tied_y = 0;
  size_t valid = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i].time_s) || std::isnan(y[i].time_s)) continue;
    ++valid;
    for (size_t j = i + 1; j < x.size(); ++j) {
      if (std::isnan(x[j].time_s) || std::isnan(y[j].time_s)) continue;
      const bool tx = tied(x[i], x[j]), ty = tied(y[i], y[j]);
      if (tx && ty) continue;  // tied in both: in neither count
      if (tx) ++tied_x;
      else if (ty) ++tied_y;
      else if ((x[i].time_s > x[j].time_s) == (y[i].time_s > y[j].time_s)) ++concordant;
      else ++discordant;
    }
  }
  // tau-b: the pairs not tied in x, and those not tied in y.
  const double untied_x = concordant + discordant + tied_y;
  const double untied_y = concordant + discordant + tied_x;
  if (valid < 2 || untied_x == 0 || untied_y == 0) return NAN;
  return (concordant - discordant) / std::sqrt(untied_x * untied_y);
}

double kendall_tau(const std::vector<double>& x, const std::vector<double>& y) {
  auto points = [](const std::vector<double>& v) {
    std::vector<RankedTime> out;
    for (double t : v) out.push_back({t, t, t});
    return out;
  };
  return kendall_tau(points(x), points(y));
}

nlohmann::json compare_top(const Exploration& e, int count, int repeat,
                           const nlohmann::json& validate_report) {
  if (count < 1 || static_cast<size_t>(count) > e.ranking.size())
    throw std::invalid_argument("compare_top: " + std::to_string(count) + " plans of " +
                                std::to_string(e.ranking.size()) + " ranked");
  nlohmann::json plans = nlohmann::json::array();
  std::vector<double> measured, lo, hi, predicted, explorer;
  std::vector<TimeSpread> predicted_spread;
  for (int i = 0; i < count; ++i) {
    const Candidate& c = e.result.candidates[e.ranking[i]];
    const nlohmann::json& run = validate_report.at("runs").at(i);
    const bool ok = !run.contains("failure");
    const double m = ok ? run["errors"]["time_per_batch_s"]["measured"].get<double>() : NAN;
    measured.push_back(m);
    predicted.push_back(run["predicted"].value("time_per_batch_s", NAN));
    const auto& spread = run.value("measured_time_per_batch_spread_s", nlohmann::json());
    lo.push_back(spread.is_array() ? spread[0].get<double>() : m);
    hi.push_back(spread.is_array() ? spread[1].get<double>() : m);
    explorer.push_back(c.time_per_batch_s);
    const auto& ps = run.value("predicted_time_per_batch_spread_s", nlohmann::json());
    predicted_spread.push_back(ps.is_array()
                                   ? TimeSpread{ps[0].get<double>(), ps[1].get<double>()}
                                   : TimeSpread{predicted.back(), predicted.back()});
    plans.push_back({{"rank", i + 1},
                     {"label", c.label},
                     {"explorer_predicted_time_per_batch_s", c.time_per_batch_s},
                     {"validate_predicted_time_per_batch_s", predicted.back()},
                     {"validate_predicted_spread_s",
                      {predicted_spread.back().low_s, predicted_spread.back().high_s}},
                     {"measured_time_per_batch_s", m},
                     {"measured_spread_s", {lo.back(), hi.back()}}});
  }
  auto argmin = [](const std::vector<double>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (std::isnan(v[best]) || v[i] < v[best]) best = i;
    return best;
  };
  const size_t measured_best = argmin(measured), predicted_best = argmin(predicted);
  // "Within the spread": the two plans' measured min..max overlap.
  auto agrees = [&](size_t p) {
    return p == measured_best || (!std::isnan(measured[p]) && lo[p] <= hi[measured_best]);
  };
  const bool order_holds = std::is_sorted(measured.begin(), measured.end());
  // The plans the prediction does not tell apart from its best.
  nlohmann::json ties = nlohmann::json::array();
  for (size_t p = 0; p < predicted.size(); ++p)
    if (p != predicted_best && predicted_tie(predicted_spread[p], predicted_spread[predicted_best]))
      ties.push_back(p + 1);
  const bool best_or_tie =
      measured_best == predicted_best ||
      (!std::isnan(measured[measured_best]) &&
       predicted_tie(predicted_spread[measured_best], predicted_spread[predicted_best]));
  std::vector<RankedTime> predicted_ranked, measured_ranked;
  for (size_t p = 0; p < predicted.size(); ++p) {
    predicted_ranked.push_back(
        {predicted[p], predicted_spread[p].low_s, predicted_spread[p].high_s});
    measured_ranked.push_back({measured[p], lo[p], hi[p]});
  }
  auto number = [](double x) { return std::isnan(x) ? nlohmann::json() : nlohmann::json(x); };
  return {
      {"plans", plans},
      {"repeat", repeat},
      {"measured_best_rank", measured_best + 1},
      {"predicted_best_rank", predicted_best + 1},
      {"measured_best_is_predicted_best", agrees(predicted_best)},
      {"measured_best_is_explorers_best", agrees(0)},
      // What following the prediction costs: the predicted best's
      // measured time over the measured best's.
      {"predicted_best_regret_pct", 100 * (measured[predicted_best] / measured[measured_best] - 1)},
      {"measured_order_matches_predicted", order_holds},
      {"predicted_ties_with_best", ties},
      {"measured_best_is_predicted_best_or_tie", best_or_tie},
      {"kendall_tau", number(kendall_tau(predicted, measured))},
      {"kendall_tau_with_spreads", number(kendall_tau(predicted_ranked, measured_ranked))},
      {"kendall_tau_explorer", number(kendall_tau(explorer, measured))},
      {"summary", validate_report.at("summary")}};
}

}  // namespace splitsim
