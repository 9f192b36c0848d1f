#include "splitsim/costmodel/data_dir.h"

#include <cstdlib>
#include <filesystem>

namespace splitsim {

std::string data_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("SPLITSIM_DATA_DIR"); env != nullptr && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path dir = exe.parent_path().parent_path() / "share" / "splitsim" / "scenarios";
  return fs::is_directory(dir, ec) ? dir.lexically_normal().string() : "";
}

std::string default_scenario_file() {
  const std::string dir = data_dir();
  const std::string file = "mobilenet_v2_ushape.json";
  return dir.empty() ? file : (std::filesystem::path(dir) / file).string();
}

}  // namespace splitsim
