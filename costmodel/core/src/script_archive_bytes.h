#pragma once
// Little-endian numbers in an archive's bytes, shared by the zip directory
// reader (zip_directory.cpp) and the pickle machine (script_archive.cpp).
#include <cstdint>
#include <string_view>

namespace splitsim {

// The n bytes at `at` as a little-endian number; the caller checked the range.
inline uint64_t little_endian(std::string_view b, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

}  // namespace splitsim
