#pragma once
// The CLI's subcommands. Each registers a subcommand and its flags on `app`
// and returns it with the function that runs it (returning the exit code).
#include <CLI/CLI.hpp>
#include <functional>

namespace splitsim {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_plan_command(CLI::App& app);
Command add_profile_command(CLI::App& app);
Command add_simulate_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_exec_command(CLI::App& app);
Command add_validate_command(CLI::App& app);
Command add_explore_command(CLI::App& app);
Command add_link_probe_command(CLI::App& app);
Command add_calibrate_command(CLI::App& app);
Command add_train_command(CLI::App& app);

}  // namespace splitsim
