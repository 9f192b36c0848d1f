#pragma once
// Where validate keeps its cached profiles: in a directory of this user's,
// never a fixed name in a world-writable one, and never through a link
// another user could plant (validate runs as root). Its files are written
// with write_output_file
// (costmodel/core/include/splitsim/costmodel/output_file.h).
#include <string>

namespace splitsim {

// The default cache directory: $SPLITSIM_PROFILE_CACHE, else
// $XDG_CACHE_HOME/splitsim (when absolute), else ~/.cache/splitsim: per
// user, never a fixed name in a world-writable directory. "" without a home.
std::string default_profile_cache_dir();

// Creates `dir` (mode 0700; parents as usual) or checks the existing one: a
// real directory, not a symbolic link, owned by this user; makes it 0700.
// Throws std::runtime_error otherwise.
void prepare_cache_dir(const std::string& dir);

}  // namespace splitsim
