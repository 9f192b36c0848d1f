#include "splitsim/validate/validate_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <sstream>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/output_file.h"
#include "splitsim/costmodel/workspace.h"
#include "splitsim/validate/profile_cache.h"
#include "splitsim/validate/safe_files.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {
namespace {

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
  print_memory_checks(os, r.memory);
}

bool validate_several_clients(const ValidateRequest& args, const ValidatorOptions& o,
                              const std::vector<ValidationItem>& items, std::ostream& os,
                              const Validator::Log& log) {
  const std::vector<ClientsValidationRun> runs =
      validate_clients(items, o, args.client_slowdowns, log);
  const std::string report = clients_validation_json(runs).dump(2) + "\n";
  std::ostringstream out;
  if (args.json) {
    out << report;
  } else {
    for (const ClientsValidationRun& r : runs) print_clients_run(out, r);
    if (runs.size() > 1) print_clients_summary(out, summarize_clients(runs));
  }
  if (!args.report.empty()) write_output_file(args.report, report, "report");
  os << out.str();
  return std::none_of(runs.begin(), runs.end(),
                      [](const ClientsValidationRun& r) { return !r.failure.empty(); });
}

}  // namespace

bool validate(const ValidateRequest& args, std::ostream& os, const Validator::Log& log) {
  ValidatorOptions o = args.validator;
  o.link_rate_bit_per_s = 0;
  if (!args.link_rate.empty()) o.link_rate_bit_per_s = parse_link_rate(args.link_rate, "link_rate");
  if (!args.report.empty()) check_output_path(args.report, "report");  // before the runs
  o.exec_bin = exec_binary(o.exec_bin);
  if (o.profile_cache.empty()) o.profile_cache = default_profile_cache_dir();
  o.platform_model = !args.no_platform_model;
  if (!args.calibration.empty()) o.calibration = load_calibration_file(args.calibration);

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
    check_link_rate(rate, o.link_rate_bit_per_s > 0 ? "link_rate"
                                                    : "$.network.bandwidth_bit_per_s (variant \"" +
                                                          it.variant->label + "\")");
  }
  if (items.empty())
    throw InputError("variant",
                     "no variant of the given scenario(s) contains \"" + args.variant + "\"");
  if (!args.matrix && items.size() > 1) {
    std::string labels;
    for (const auto& it : items)
      labels += (labels.empty() ? "\"" : ", \"") + it.variant->label + "\"";
    throw InputError("variant", std::to_string(items.size()) +
                                    " variants are selected; pick one with --variant or run "
                                    "them all with --matrix (labels: " +
                                    labels + ")");
  }
  const size_t several = std::count_if(items.begin(), items.end(), [](const ValidationItem& it) {
    return it.variant->scenario.clients > 1;
  });
  if (several > 0) {
    if (several < items.size())
      throw InputError("variant",
                       "the selected variants mix one client and several; validate them apart "
                       "(--variant)");
    if (!args.link_rate.empty())
      throw InputError("link_rate", "with several clients each port takes the scenario's rates");
    return validate_several_clients(args, o, items, os, log);
  }
  if (!args.client_slowdowns.empty())
    throw InputError("client_slowdown", "is for scenarios with several clients in groups");
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
  if (!args.report.empty()) write_output_file(args.report, report, "report");
  os << out.str();
  return std::none_of(runs.begin(), runs.end(),
                      [](const ValidationRun& r) { return !r.failure.empty(); });
}

Validator::Log stamped_log(std::ostream& err) {
  const auto start = std::chrono::steady_clock::now();
  return [start, &err](const std::string& line) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "validate [%6.1f s]: ", s);
    err << stamp << line << "\n";
  };
}

}  // namespace splitsim
