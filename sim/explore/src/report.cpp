// The explorer's table, JSON and CSV.
#include "splitsim/explore/report.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace splitsim {
namespace {

std::string row(const Candidate& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%12.6f %14lld %16lld %6.3f %14lld  %s", c.time_per_batch_s,
                static_cast<long long>(c.wire_bytes_per_batch),
                static_cast<long long>(c.client_macs_per_batch), c.client_mac_share,
                static_cast<long long>(c.client_memory_bytes), c.label.c_str());
  return buf;
}

// A row of the ranking: the row, then the time's predicted spread and
// whether it ties the first.
std::string ranking_row(const Candidate& c, bool tie) {
  char spread[96] = "  -";
  if (c.spread.known())
    std::snprintf(spread, sizeof spread, "  %.6f..%.6f%s", c.spread.low_s, c.spread.high_s,
                  tie ? "  tie #1" : "");
  return row(c) + spread;
}

// What the spread was and which plans tie the first.
void print_ties(std::ostream& out, const Exploration& e, size_t shown) {
  const double largest = largest_spread(e.spreads);
  if (largest <= 0) {
    out << "-- ties: no device profile measured a timing spread (`splitsim profile` "
           "writes one; --spread PCT sets one), so none is declared\n";
    return;
  }
  char line[160];
  std::snprintf(line, sizeof line,
                "-- spread: each party's compute at up to +-%.1f%% (the ranking's first %zu "
                "simulated at both ends); ",
                100 * largest, std::min(shown, e.ranking.size()));
  out << line;
  if (e.objective != Objective::kTime) {
    out << "ties are judged when ranking by time\n";
  } else if (e.tied_with_best == 0) {
    out << "no plan ties the first\n";
  } else {
    out << e.tied_with_best << " plan(s) tie the first (their ranges overlap): the prediction "
        << "does not tell them apart\n";
  }
}

// A number of the leakage ranking with `precision` decimals ("-" for
// null), in `width` columns.
std::string cell(const nlohmann::json& x, int width, int precision) {
  char text[48];
  if (x.is_number())
    std::snprintf(text, sizeof text, "%*.*f", width, precision, x.get<double>());
  else
    std::snprintf(text, sizeof text, "%*s", width, "-");
  return text;
}

// What the leakage limits ask, in words: "reconstruction PSNR <= 12 dB and
// label AUC <= 0.6" ("any leakage" without a limit).
std::string limits_text(const nlohmann::json& leakage) {
  const nlohmann::json& l = leakage["limits"];
  std::string text;
  auto add = [&](const char* key, const char* name, const char* unit) {
    if (l[key].is_null()) return;
    char part[96];
    std::snprintf(part, sizeof part, "%s%s <= %g%s", text.empty() ? "" : " and ", name,
                  l[key].get<double>(), unit);
    text += part;
  };
  add("max_psnr_db", "reconstruction PSNR", " dB");
  add("max_distance_correlation", "distance correlation", "");
  add("max_label_auc", "label AUC", "");
  return text.empty() ? "any leakage" : text;
}

// The plans within the leakage limits (leakage_ranking_json(), leakage.h)
// and the front over time, PSNR (and accuracy).
void print_leakage(std::ostream& out, const nlohmann::json& leakage) {
  const bool by_target = leakage.contains("target_accuracy");
  std::string heading = "-- fastest plans with " + limits_text(leakage);
  if (by_target) {
    char target[32];
    std::snprintf(target, sizeof target, "%.2f", 100 * leakage["target_accuracy"].get<double>());
    heading += std::string(", by time to ") + target + "% test accuracy";
  }
  out << heading
      << " (leakage measured by splitsim train --leakage at the same cuts and codecs, the worst "
         "over evaluations and boundaries): "
      << leakage["ranked"].get<size_t>() << " ranked; cuts and codecs not measured "
      << leakage["unmeasured"].get<size_t>() << ", over a limit "
      << leakage["over_limit"].get<size_t>();
  if (by_target) out << ", not in the accuracy ranking " << leakage["not_accurate"].get<size_t>();
  out << "\n  time/batch s  PSNR dB    dCor  label AUC"
      << (by_target ? "  test acc  to target s" : "") << "  candidate\n";
  for (const auto& row : leakage["ranking"]) {
    out << "  " << cell(row["time_per_batch_s"], 12, 6) << "  "
        << cell(row["reconstruction_psnr_db"], 7, 2) << "  "
        << cell(row["distance_correlation"], 6, 3) << "  "
        << cell(row["label_auc_direction"], 9, 3);
    if (by_target)
      out << "  " << cell(100 * row["test_accuracy"].get<double>(), 7, 2) << "%  "
          << cell(row["time_to_target_s"], 11, 2);
    out << "  " << row["label"].get<std::string>() << "\n";
  }
  out << "-- leakage front (time per batch, reconstruction PSNR"
      << (by_target ? ", test accuracy" : "") << "): " << leakage["front"].size() << " plan(s)\n";
  for (const auto& label : leakage["front"]) out << "  " << label.get<std::string>() << "\n";
}

}  // namespace

std::string progress_line(const ExploreProgress& p) {
  return "explore: " + std::to_string(p.candidates) + " screened, " + std::to_string(p.simulated) +
         "/" + std::to_string(p.to_simulate) + " simulated";
}

void write_explore_json(std::ostream& out, const std::string& scenario, const Exploration& e,
                        size_t top, const nlohmann::json& validation,
                        const nlohmann::json& accuracy, const nlohmann::json& leakage) {
  const ExploreResult& r = e.result;
  nlohmann::json j = {{"schema", "splitsim.explore/1"},
                      {"scenario", scenario},
                      {"objective", objective_name(e.objective)},
                      {"enumerated", r.enumerated},
                      {"rejected_by_constraints", r.rejected_by_constraints},
                      {"candidates", r.candidates.size()},
                      {"screened_out", r.screened_out},
                      {"not_simulated_over_cap", e.not_simulated_over_cap},
                      {"simulated", e.simulated},
                      {"wall_s", e.wall_s},
                      {"spreads", e.spreads},
                      {"tied_with_best", e.tied_with_best}};
  j["front"] = nlohmann::json::array();
  for (size_t i : e.front) j["front"].push_back(candidate_to_json(r.candidates[i]));
  j["ranking"] = nlohmann::json::array();
  const size_t shown = std::min(top, e.ranking.size());
  for (size_t k = 0; k < shown; ++k)
    j["ranking"].push_back(candidate_to_json(r.candidates[e.ranking[k]]));
  if (!validation.is_null()) j["validation"] = validation;
  if (!accuracy.is_null()) j["accuracy"] = accuracy;
  if (!leakage.is_null()) j["leakage"] = leakage;
  out << j.dump(2) << "\n";
}

void write_explore_csv(std::ostream& out, const Exploration& e) {
  out << "rank,on_front,time_per_batch_s,wire_bytes_per_batch,client_macs_per_batch,"
         "client_mac_share,client_memory_bytes,label\n";
  for (size_t k = 0; k < e.ranking.size(); ++k) {
    const Candidate& c = e.result.candidates[e.ranking[k]];
    const bool on = std::find(e.front.begin(), e.front.end(), e.ranking[k]) != e.front.end();
    out << k + 1 << "," << on << "," << c.time_per_batch_s << "," << c.wire_bytes_per_batch << ","
        << c.client_macs_per_batch << "," << c.client_mac_share << "," << c.client_memory_bytes
        << ",\"" << c.label << "\"\n";
  }
}

void write_explore_table(std::ostream& out, const std::string& scenario, const Exploration& e,
                         size_t top, const nlohmann::json& validation,
                         const nlohmann::json& accuracy, const nlohmann::json& leakage) {
  const ExploreResult& r = e.result;
  const size_t shown = std::min(top, e.ranking.size());
  const char* head =
      "  time/batch s       wire B/batch    client MAC/batch  share   client mem B  candidate";
  out << "== explore " << scenario << ": " << r.enumerated << " enumerated, "
      << r.rejected_by_constraints << " broke a constraint, " << r.screened_out << " screened out, "
      << e.simulated << " simulated";
  if (e.not_simulated_over_cap)
    out << " (" << e.not_simulated_over_cap << " over --max-simulations not simulated)";
  out << ", " << e.wall_s << " s\n-- Pareto front (time, bytes, client MACs, client "
      << "memory): " << e.front.size() << " plan(s)\n"
      << head << "\n";
  for (size_t i : e.front) out << row(r.candidates[i]) << "\n";
  out << "-- ranking by " << objective_name(e.objective) << " (top " << shown << ")\n"
      << head << "  predicted spread s\n";
  const Candidate& first = r.candidates[e.ranking.front()];
  for (size_t k = 0; k < shown; ++k) {
    const Candidate& c = r.candidates[e.ranking[k]];
    out << ranking_row(c, k > 0 && e.objective == Objective::kTime &&
                              predicted_tie(first.spread, c.spread))
        << "\n";
  }
  print_ties(out, e, shown);
  if (!accuracy.is_null()) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "-- ranking by time to %.2f%% test accuracy (batches measured by splitsim "
                  "train x simulated time per batch): %zu ranked; codecs not trained %zu, over "
                  "the accuracy drop %zu, target not reached %zu\n",
                  100 * accuracy["target_accuracy"].get<double>(), accuracy["ranked"].get<size_t>(),
                  accuracy["unmeasured"].get<size_t>(), accuracy["over_drop"].get<size_t>(),
                  accuracy["not_reached"].get<size_t>());
    out << line << "  to target s  batches  test acc  time/batch s  candidate\n";
    for (const auto& a : accuracy["ranking"]) {
      std::snprintf(line, sizeof line, "  %11.2f  %7lld  %7.2f%%  %12.6f  %s\n",
                    a["time_to_target_s"].get<double>(), a["batches_to_target"].get<long long>(),
                    100 * a["test_accuracy"].get<double>(), a["time_per_batch_s"].get<double>(),
                    a["label"].get<std::string>().c_str());
      out << line;
    }
  }
  if (!leakage.is_null()) print_leakage(out, leakage);
  if (validation.is_null()) return;
  out << "-- validation of the top " << validation["plans"].size() << " (" << validation["repeat"]
      << " repetitions each)\n";
  for (const auto& p : validation["plans"]) {
    out << "  #" << p["rank"] << " explorer " << p["explorer_predicted_time_per_batch_s"]
        << " s, this machine " << p["validate_predicted_time_per_batch_s"] << " s";
    if (p.contains("validate_predicted_spread_s"))
      out << " (" << p["validate_predicted_spread_s"][0] << ".."
          << p["validate_predicted_spread_s"][1] << ")";
    out << ", measured " << p["measured_time_per_batch_s"] << " s (" << p["measured_spread_s"][0]
        << ".." << p["measured_spread_s"][1] << ")  " << p["label"].get<std::string>() << "\n";
  }
  out << "measured best: #" << validation["measured_best_rank"]
      << "; predicted best on this machine: #" << validation["predicted_best_rank"]
      << "; measured best is the predicted best (within the measured spread): "
      << (validation["measured_best_is_predicted_best"].get<bool>() ? "yes" : "no")
      << "; the explorer's best: "
      << (validation["measured_best_is_explorers_best"].get<bool>() ? "yes" : "no")
      << "; the predicted best measured " << validation["predicted_best_regret_pct"].get<double>()
      << "% slower than the best\n";
  if (!validation.contains("kendall_tau")) return;
  auto tau = [](const nlohmann::json& t) {
    if (t.is_null()) return std::string("undefined");
    char text[16];
    std::snprintf(text, sizeof text, "%.2f", t.get<double>());
    return std::string(text);
  };
  out << "predicted ties with the predicted best: "
      << (validation["predicted_ties_with_best"].empty()
              ? std::string("none")
              : validation["predicted_ties_with_best"].dump())
      << "; measured best is the predicted best or a declared tie: "
      << (validation["measured_best_is_predicted_best_or_tie"].get<bool>() ? "yes" : "no")
      << "; Kendall tau, predicted vs measured order: " << tau(validation["kendall_tau"])
      << " (the explorer's: " << tau(validation["kendall_tau_explorer"])
      << "; ties where the spreads overlap: " << tau(validation["kendall_tau_with_spreads"])
      << ")\n";
}

}  // namespace splitsim
