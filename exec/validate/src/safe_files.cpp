#include "splitsim/validate/safe_files.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace splitsim {

std::string default_profile_cache_dir() {
  if (const char* dir = std::getenv("SPLITSIM_PROFILE_CACHE"); dir != nullptr && *dir) return dir;
  // XDG: a relative $XDG_CACHE_HOME is invalid and ignored.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return (std::filesystem::path(xdg) / "splitsim").string();
  const char* home = std::getenv("HOME");
  std::string home_dir = home != nullptr && home[0] == '/' ? home : "";
  if (home_dir.empty()) {
    if (const passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_dir != nullptr)
      home_dir = pw->pw_dir;
  }
  if (home_dir.empty()) return "";
  return (std::filesystem::path(home_dir) / ".cache" / "splitsim").string();
}

void prepare_cache_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) throw std::runtime_error("no cache directory (HOME is unset)");
  std::error_code ec;
  const fs::path path(dir);
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error(dir + " is not a directory (a symbolic link is refused)");
  if (st.st_uid != geteuid()) throw std::runtime_error(dir + " belongs to another user");
  if ((st.st_mode & 0077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot make " + dir + " private: " + std::strerror(errno));
}

}  // namespace splitsim
