#pragma once
// Where validate caches its measured profiles: a directory of this user's,
// never a fixed name in a world-writable one (files there are written as
// root through paths another user could plant).
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
