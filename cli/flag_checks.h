#pragma once
// CLI11 validators for numeric flags with a short message naming the range
// and the value ("must be an integer from 1 to 1024, got 0"); CLI11's own
// PositiveNumber prints its bound as a 300-digit number. CLI11 puts the
// flag's name in front.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "splitsim/costmodel/errors.h"

namespace splitsim {

// An integer in [lo, hi], in decimal digits (CLI11 alone reads "0x10" as 16).
CLI::Validator int_range(int64_t lo, int64_t hi);
// A finite decimal number in [lo, hi] (lo excluded when `lo_open`).
CLI::Validator number_range(double lo, double hi, bool lo_open = false);

// Smallest --timeout-s: timeouts are kept in whole milliseconds, so a
// shorter one would become 0 ms.
constexpr double kMinTimeoutS = 0.001;

// A TCP congestion control name: letters, digits and '_', at most 15
// characters (the kernel's TCP_CA_NAME_MAX less its NUL).
CLI::Validator congestion_control_name();
// exec's and link-probe's --tcp-congestion-control NAME into `name`.
void add_congestion_control_flag(CLI::App* sub, std::string* name);

// `e` as the user should read it from `sub`: a library names an input field
// in snake_case ("train_samples"), and when `sub` has that flag
// ("--train-samples") the error names the flag instead. Any other where (a
// JSON path, a file, a flag) stays.
InputError as_flag_error(const CLI::App& sub, const InputError& e);

// Names the subcommand in argv[1] when it is not one of `app`'s and not a
// flag, with the valid ones: "unknown subcommand "x"; valid: plan, ...".
// Returns "" otherwise. CLI11 would say only "A subcommand is required", or
// print the main help for "x --help".
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv);

}  // namespace splitsim
