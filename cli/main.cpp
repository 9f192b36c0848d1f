// splitsim: predict, and measure for real, split-learning training speed.
#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "flag_checks.h"
#include "splitsim/costmodel/errors.h"
#ifdef SPLITSIM_WITH_TORCH
#include "splitsim/costmodel/library_logs.h"
#endif

namespace {

// A library's exception text as one line: LibTorch appends a backtrace
// ("frame #0: ...") after the first line, nlohmann prefixes
// "[json.exception.type_error.302] ".
std::string one_line(const std::string& what) {
  std::string s = what.substr(0, what.find('\n'));
  if (s.rfind("[json.exception.", 0) == 0) {
    const size_t close = s.find("] ");
    if (close != std::string::npos) s = s.substr(close + 2);
  }
  if (s.size() > 500) s = s.substr(0, 497) + "...";
  return s;
}

// A message as the terminal may show it: control characters, which a file
// or flag can carry into the message (an ESC starts a terminal command), as
// \xNN.
std::string visible(const std::string& message) {
  std::string out;
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef SPLITSIM_WITH_TORCH
  splitsim::quiet_library_logs();  // only splitsim's own words on stderr
#endif
  CLI::App app{
      "splitsim: how fast does a network train when its layers are split between a client and "
      "a server joined by a network link?\nExit codes: 0 ok; 2 something given is wrong (a "
      "flag, a file, an address, a model); 1 a failure of this machine or a peer while running."};
  app.require_subcommand(1);
  app.set_version_flag("--version", SPLITSIM_VERSION);
  // Without LibTorch (SPLITSIM_WITH_TORCH undefined) only `simulate`, of
  // plan files; every other command measures or runs a model.
#ifdef SPLITSIM_WITH_TORCH
  const std::vector<splitsim::Command> commands = {
      splitsim::add_plan_command(app),      splitsim::add_profile_command(app),
      splitsim::add_simulate_command(app),  splitsim::add_bench_command(app),
      splitsim::add_exec_command(app),      splitsim::add_validate_command(app),
      splitsim::add_explore_command(app),   splitsim::add_link_probe_command(app),
      splitsim::add_calibrate_command(app), splitsim::add_train_command(app),
  };
#else
  const std::vector<splitsim::Command> commands = {splitsim::add_simulate_command(app)};
#endif
  const std::string unknown = splitsim::unknown_subcommand(app, argc, argv);
  if (!unknown.empty()) {
    std::cerr << "error: " << unknown << "\nRun with --help for more information.\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  const splitsim::Command* command = nullptr;
  for (const auto& c : commands)
    if (c.app->parsed()) command = &c;
  if (command == nullptr) return 1;
  try {
    return command->run();
  } catch (const splitsim::InputError& e) {
    // The library names the input field; the user reads the flag.
    std::cerr << "error: " << visible(splitsim::as_flag_error(*command->app, e).what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << visible(one_line(e.what())) << "\n";
    return 1;
  }
}
