#pragma once
// Runs the splitsim binary as a user would, bounded in time.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace splitsim::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the binary path as shell words. Killed after 300 s.
// `prefix` (shell words ending in a space) goes in front, e.g. to run it as
// another user.
inline CliResult run_cli(const std::string& args, const std::string& prefix = "") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("splitsim_cli_out_" + std::to_string(::getpid()));
  const auto err = dir / ("splitsim_cli_err_" + std::to_string(::getpid()));
  const std::string cmd = prefix + "timeout 300 " + std::string(SPLITSIM_BIN) + " " + args + " >" +
                          out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

inline std::string source_path(const std::string& rel) {
  return std::string(SPLITSIM_SOURCE_DIR) + "/" + rel;
}

inline nlohmann::json load_json(const std::string& rel) {
  std::ifstream in(source_path(rel));
  return nlohmann::json::parse(in);
}

// Writes `j` to a fresh temp file and returns its path.
inline std::string write_temp_json(const nlohmann::json& j, const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("splitsim_" + name + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << j.dump(2);
  return p.string();
}

}  // namespace splitsim::testing
