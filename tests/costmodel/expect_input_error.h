#pragma once
// The costmodel tests' check for refused input.
#include <gtest/gtest.h>

#include <string>

#include "splitsim/costmodel/errors.h"

namespace splitsim {

// Runs `f`, expecting InputError at `where` whose message contains `phrase`.
template <class F>
void expect_error(F f, const std::string& where, const std::string& phrase) {
  try {
    f();
    ADD_FAILURE() << "no InputError; expected one at " << where;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos)
        << "\"" << phrase << "\" not in: " << e.what();
  }
}

}  // namespace splitsim
