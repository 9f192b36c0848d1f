// splitsim: predict, and measure for real, split-learning training speed.
#include <iostream>
#include <vector>

#include "commands.h"
#include "splitsim/costmodel/errors.h"

int main(int argc, char** argv) {
  CLI::App app{
      "splitsim: how fast does a network train when its layers are split between a client and "
      "a server joined by a network link?\nExit codes: 0 ok, 1 internal or runtime failure, 2 "
      "bad input (scenario, flags, files)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", SPLITSIM_VERSION);
  const std::vector<splitsim::Command> commands = {
      splitsim::add_plan_command(app),     splitsim::add_profile_command(app),
      splitsim::add_simulate_command(app), splitsim::add_bench_command(app),
      splitsim::add_exec_command(app),     splitsim::add_validate_command(app),
      splitsim::add_explore_command(app),  splitsim::add_link_probe_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const splitsim::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
