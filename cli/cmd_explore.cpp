// `splitsim explore SCENARIO`: search cut points, codecs, chunk counts,
// schedules and bandwidths (sim/explore/README.md), simulate the candidates the
// closed-form screen keeps, print the Pareto front and a ranking.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/explore.h"
#include "splitsim/costmodel/input_file.h"
#include "splitsim/costmodel/limits.h"
#include "splitsim/sim/metrics.h"
#include "splitsim/sim/simulator.h"
#include "workspace.h"

namespace splitsim {
namespace {

struct ExploreArgs {
  std::string scenario, space_file, objective, kinds, chunks, bandwidths, emit_best;
  int stages = 0;
  int64_t client_memory_bytes = -1;
  double max_client_mac_share = -1;
  int top = 10, jobs = 0, validate_top = 0, validate_repeat = 3, max_simulations = 1000;
  bool json = false, csv = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

template <typename T>
std::vector<T> parse_list(const std::string& s, const std::string& flag) {
  std::vector<T> out;
  for (const auto& item : split(s)) {
    try {
      size_t used = 0;
      const double v = std::stod(item, &used);
      // 1e18: converting a larger value to an integer is undefined.
      if (used != item.size() || !(v > 0) || !(v <= 1e18)) throw std::invalid_argument(item);
      out.push_back(static_cast<T>(v));
    } catch (const std::exception&) {
      throw InputError(flag, "\"" + item + "\" is not a positive number; give a list like 1,4,8");
    }
  }
  if (out.empty()) throw InputError(flag, "give at least one value");
  return out;
}

ExploreSpace make_space(const ExploreArgs& a, const Scenario& base) {
  ExploreSpace space;
  if (!a.space_file.empty()) {
    nlohmann::json j;
    try {
      j = parse_json_file(a.space_file, "explore space file");
    } catch (const InputError& e) {
      throw InputError("--space", e.what());
    }
    try {
      space = parse_space(j);
    } catch (const InputError& e) {
      throw InputError(a.space_file + " " + e.where(),
                       std::string(e.what()).substr(e.where().size() + 2));
    }
  }
  if (!a.objective.empty()) space.objective = parse_objective(a.objective, "--objective");
  if (!a.kinds.empty()) {
    space.kinds.clear();
    for (const auto& k : split(a.kinds)) space.kinds.push_back(parse_cut_kind(k, "--kinds"));
  }
  if (a.stages > 0) {
    std::vector<std::string> parties;
    for (const auto& p : base.partition)
      if (std::find(parties.begin(), parties.end(), p.party) == parties.end())
        parties.push_back(p.party);
    for (const auto& [party, dev] : base.devices)
      if (std::find(parties.begin(), parties.end(), party) == parties.end())
        parties.push_back(party);
    if (static_cast<int>(parties.size()) < a.stages)
      throw InputError("--stages", "the scenario has " + std::to_string(parties.size()) +
                                       " parties in $.devices, fewer than " +
                                       std::to_string(a.stages) + " stages");
    parties.resize(a.stages);
    space.stage_parties = parties;
  }
  if (!a.chunks.empty()) space.chunks = parse_list<int64_t>(a.chunks, "--chunks");
  if (!a.bandwidths.empty())
    space.bandwidths_bit_per_s = parse_list<double>(a.bandwidths, "--bandwidth-bit-per-s");
  if (a.client_memory_bytes >= 0) space.client_memory_bytes = a.client_memory_bytes;
  if (a.max_client_mac_share >= 0) space.max_client_mac_share = a.max_client_mac_share;
  if (a.max_client_mac_share == 0)
    throw InputError("--max-client-mac-share", "must be a number in (0, 1]");
  check_space(space);
  return space;
}

std::string row(const Candidate& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%12.6f %14lld %16lld %6.3f %14lld  %s", c.time_per_batch_s,
                static_cast<long long>(c.wire_bytes_per_batch),
                static_cast<long long>(c.client_macs_per_batch), c.client_mac_share,
                static_cast<long long>(c.client_memory_bytes), c.label.c_str());
  return buf;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs one `validate DIR --matrix` over the first `n` ranked candidates
// (one scenario file each, repetitions interleaved) and compares what was
// measured with both predictions: the explorer's (the scenario's devices)
// and validate's (this machine's profile and platform). Returns the report.
nlohmann::json validate_top(const std::vector<Candidate>& c, const std::vector<size_t>& ranked,
                            int n, int repeat, const nlohmann::json& base_json) {
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) throw std::runtime_error("--validate-top: cannot find this binary");
  exe[len] = 0;
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
  const int count = std::min<int>(n, static_cast<int>(ranked.size()));
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/top%02d.json", i + 1);
    std::ofstream(dir + name) << candidate_scenario_json(base_json, c[ranked[i]]).dump(2);
  }
  const std::string cmd = shell_quote(exe) + " validate " + shell_quote(dir) +
                          " --matrix --keep-going --json --repeat " + std::to_string(repeat);
  std::cerr << "explore: validating the top " << count << " (" << repeat
            << " interleaved repetitions each)\n";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (pipe && std::fgets(buf, sizeof buf, pipe)) text += buf;
  const int rc = pipe ? ::pclose(pipe) : -1;
  const nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (report.is_discarded() || !report.contains("runs") ||
      report["runs"].size() != static_cast<size_t>(count))
    throw std::runtime_error(
        "--validate-top: `splitsim validate DIR --matrix --json` failed (exit " +
        std::to_string(rc) + "); is validate available and runnable here?");
  nlohmann::json plans = nlohmann::json::array();
  std::vector<double> measured, lo, hi, predicted;
  for (int i = 0; i < count; ++i) {
    const nlohmann::json& run = report["runs"][i];
    const bool ok = !run.contains("failure");
    const double m = ok ? run["errors"]["time_per_batch_s"]["measured"].get<double>() : NAN;
    measured.push_back(m);
    predicted.push_back(run["predicted"].value("time_per_batch_s", NAN));
    const auto& spread = run.value("measured_time_per_batch_spread_s", nlohmann::json());
    lo.push_back(spread.is_array() ? spread[0].get<double>() : m);
    hi.push_back(spread.is_array() ? spread[1].get<double>() : m);
    plans.push_back({{"rank", i + 1},
                     {"label", c[ranked[i]].label},
                     {"explorer_predicted_time_per_batch_s", c[ranked[i]].time_per_batch_s},
                     {"validate_predicted_time_per_batch_s", predicted.back()},
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
      {"summary", report["summary"]}};
}

int run_explore(const ExploreArgs& a) {
  if (a.top < 1) throw InputError("--top", "must be >= 1");
  auto progress = [](const std::string& line) { std::cerr << line << "\n"; };
  Workspace ws(a.scenario, progress);
  const ScenarioVariant& v = ws.variants().front();
  if (ws.variants().size() > 1)
    std::cerr << "explore: the scenario has a sweep; exploring around its first variant \""
              << v.label << "\"\n";
  const ExploreSpace space = make_space(a, v.scenario);
  const auto t0 = std::chrono::steady_clock::now();
  ExploreResult r = explore(v.scenario, ws.model(v), ws.devices(v), space);
  std::vector<size_t> to_sim;
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (!r.candidates[i].screened_out) to_sim.push_back(i);
  std::stable_sort(to_sim.begin(), to_sim.end(), [&](size_t x, size_t y) {
    return r.candidates[x].lower_bound_s < r.candidates[y].lower_bound_s;
  });
  const size_t capped = to_sim.size() > static_cast<size_t>(a.max_simulations)
                            ? to_sim.size() - a.max_simulations
                            : 0;
  to_sim.resize(to_sim.size() - capped);
  const int jobs = a.jobs > 0 ? a.jobs : std::max(1u, std::thread::hardware_concurrency());
  const size_t batch = 32;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  for (size_t s = 0; s < to_sim.size(); s += batch) {
    std::vector<Plan> plans;
    for (size_t k = s; k < std::min(to_sim.size(), s + batch); ++k)
      plans.push_back(r.candidates[to_sim[k]].plan);
    const auto timelines = simulate_many(plans, SimOptions{}, jobs);
    for (size_t k = 0; k < plans.size(); ++k)
      r.candidates[to_sim[s + k]].time_per_batch_s =
          compute_metrics(timelines[k], plans[k], plans[k].warmup).time_per_batch_s;
    // A terminal gets one line rewritten in place; a log one line per step.
    std::cerr << (tty ? "\r" : "") << "explore: " << r.candidates.size() << " screened, "
              << std::min(to_sim.size(), s + batch) << "/" << to_sim.size() << " simulated"
              << (tty ? "" : "\n") << std::flush;
  }
  if (tty) std::cerr << "\n";
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto front = candidate_front(r.candidates);
  const auto ranked = rank(r.candidates, space.objective);
  if (ranked.empty()) throw std::runtime_error("no candidate was simulated");
  const nlohmann::json base_json = v.json;
  if (!a.emit_best.empty()) {
    std::ofstream out(a.emit_best);
    out << candidate_scenario_json(base_json, r.candidates[ranked.front()]).dump(2) << "\n";
    if (!out) throw InputError("--emit-best", "cannot write \"" + a.emit_best + "\"");
    std::cerr << "best plan written to " << a.emit_best << "\n";
  }
  nlohmann::json validation;
  if (a.validate_top > 0)
    validation = validate_top(r.candidates, ranked, a.validate_top, a.validate_repeat, base_json);

  const size_t shown = std::min<size_t>(a.top, ranked.size());
  if (a.json) {
    nlohmann::json j = {{"schema", "splitsim.explore/1"},
                        {"scenario", v.scenario.name},
                        {"objective", objective_name(space.objective)},
                        {"enumerated", r.enumerated},
                        {"rejected_by_constraints", r.rejected_by_constraints},
                        {"candidates", r.candidates.size()},
                        {"screened_out", r.screened_out},
                        {"not_simulated_over_cap", capped},
                        {"simulated", to_sim.size()},
                        {"wall_s", wall_s}};
    j["front"] = nlohmann::json::array();
    for (size_t i : front) j["front"].push_back(candidate_to_json(r.candidates[i]));
    j["ranking"] = nlohmann::json::array();
    for (size_t k = 0; k < shown; ++k)
      j["ranking"].push_back(candidate_to_json(r.candidates[ranked[k]]));
    if (!validation.is_null()) j["validation"] = validation;
    std::cout << j.dump(2) << "\n";
  } else if (a.csv) {
    std::cout << "rank,on_front,time_per_batch_s,wire_bytes_per_batch,client_macs_per_batch,"
                 "client_mac_share,client_memory_bytes,label\n";
    for (size_t k = 0; k < ranked.size(); ++k) {
      const Candidate& c = r.candidates[ranked[k]];
      const bool on = std::find(front.begin(), front.end(), ranked[k]) != front.end();
      std::cout << k + 1 << "," << on << "," << c.time_per_batch_s << "," << c.wire_bytes_per_batch
                << "," << c.client_macs_per_batch << "," << c.client_mac_share << ","
                << c.client_memory_bytes << ",\"" << c.label << "\"\n";
    }
  } else {
    const char* head =
        "  time/batch s       wire B/batch    client MAC/batch  share   client mem B  candidate";
    std::cout << "== explore " << v.scenario.name << ": " << r.enumerated << " enumerated, "
              << r.rejected_by_constraints << " broke a constraint, " << r.screened_out
              << " screened out, " << to_sim.size() << " simulated";
    if (capped) std::cout << " (" << capped << " over --max-simulations not simulated)";
    std::cout << ", " << wall_s << " s\n-- Pareto front (time, bytes, client MACs, client "
              << "memory): " << front.size() << " plan(s)\n"
              << head << "\n";
    for (size_t i : front) std::cout << row(r.candidates[i]) << "\n";
    std::cout << "-- ranking by " << objective_name(space.objective) << " (top " << shown << ")\n"
              << head << "\n";
    for (size_t k = 0; k < shown; ++k) std::cout << row(r.candidates[ranked[k]]) << "\n";
    if (!validation.is_null()) {
      std::cout << "-- validation of the top " << validation["plans"].size() << " ("
                << validation["repeat"] << " repetitions each)\n";
      for (const auto& p : validation["plans"])
        std::cout << "  #" << p["rank"] << " explorer " << p["explorer_predicted_time_per_batch_s"]
                  << " s, this machine " << p["validate_predicted_time_per_batch_s"]
                  << " s, measured " << p["measured_time_per_batch_s"] << " s ("
                  << p["measured_spread_s"][0] << ".." << p["measured_spread_s"][1] << ")  "
                  << p["label"].get<std::string>() << "\n";
      std::cout << "measured best: #" << validation["measured_best_rank"]
                << "; predicted best on this machine: #" << validation["predicted_best_rank"]
                << "; measured best is the predicted best (within the measured spread): "
                << (validation["measured_best_is_predicted_best"].get<bool>() ? "yes" : "no")
                << "; the explorer's best: "
                << (validation["measured_best_is_explorers_best"].get<bool>() ? "yes" : "no")
                << "; the predicted best measured "
                << validation["predicted_best_regret_pct"].get<double>()
                << "% slower than the best\n";
    }
  }
  return 0;
}

}  // namespace

Command add_explore_command(CLI::App& app) {
  auto a = std::make_shared<ExploreArgs>();
  CLI::App* sub = app.add_subcommand(
      "explore",
      "Search cut points (single, U-shape, K-stage by dynamic programming), codecs, chunk "
      "counts, schedules and link bandwidths under client memory and MAC constraints; screen "
      "with closed-form bounds, simulate the rest, print the Pareto front over (time, bytes, "
      "client MACs, client memory) and a ranking. See costmodel/EXPLORE.md.");
  sub->add_option("scenario", a->scenario, "base scenario JSON (model, batch, devices, network)")
      ->required();
  sub->add_option("--space", a->space_file, "explore space JSON (schema splitsim.explore/1)");
  sub->add_option("--objective", a->objective, "ranking: time | bytes | client_macs");
  sub->add_option("--kinds", a->kinds, "cut kinds: single,ushape,kstage (default single,ushape)");
  sub->add_option("--stages", a->stages, "kstage: K, over the scenario's first K parties")
      ->check(int_range(2, 64));
  sub->add_option("--chunks", a->chunks, "chunk counts, e.g. 1,4,8 (default: the scenario's)");
  sub->add_option("--bandwidth-bit-per-s", a->bandwidths, "link bandwidths to sweep, e.g. 1e9,4e9");
  sub->add_option("--client-memory-bytes", a->client_memory_bytes, "client memory limit (0: none)")
      ->check(int_range(0, int64_t{1} << 50));
  sub->add_option("--max-client-mac-share", a->max_client_mac_share,
                  "largest share of the MACs the client may run, in (0, 1]")
      ->check(number_range(0, 1, true));
  sub->add_option("--top", a->top, "rows of the ranking")
      ->capture_default_str()
      ->check(int_range(1, 100000));
  sub->add_option("--max-simulations", a->max_simulations,
                  "simulate at most this many survivors of the screen (lowest bound first)")
      ->capture_default_str()
      ->check(int_range(1, 1000000));
  auto* json = sub->add_flag("--json", a->json, "JSON report (schema splitsim.explore/1)");
  sub->add_flag("--csv", a->csv, "CSV: the ranking, one row per simulated candidate")
      ->excludes(json);
  sub->add_option("--emit-best", a->emit_best, "write the best plan as a scenario file");
  sub->add_option("--jobs", a->jobs, "simulations at once (default: the CPU count)")
      ->check(int_range(1, 1024));
  sub->add_option("--validate-top", a->validate_top,
                  "run `splitsim validate --matrix` on the top N plans (interleaved) and say "
                  "whether the measured best is the predicted best, within the measured spread")
      ->check(int_range(0, 100));
  sub->add_option("--validate-repeat", a->validate_repeat,
                  "with --validate-top: real runs per plan")
      ->capture_default_str()
      ->check(int_range(1, 100));
  return {sub, [a] { return run_explore(*a); }};
}

}  // namespace splitsim
