#pragma once
// LibTorch's and Gloo's errors (c10::Error) carry a C++ backtrace in what():
// users get the reason only.
#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace splitsim {

inline std::string error_reason(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

// The first line of the reason: what a party's summary and report carry.
inline std::string first_line_of(const std::exception& e) {
  const std::string r = error_reason(e);
  return r.substr(0, r.find('\n'));
}

}  // namespace splitsim
