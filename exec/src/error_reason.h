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

}  // namespace splitsim
