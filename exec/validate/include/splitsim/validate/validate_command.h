#pragma once
// `splitsim validate` in one call: the scenario files and directories, the
// variant selection (--variant, --quick, --matrix), the Validator's runs and
// the report (a table or JSON on `out`, and the --report file). The CLI
// (cli/cmd_validate.cpp) binds its flags to a ValidateRequest and calls it.
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "splitsim/validate/validator.h"

namespace splitsim {

struct ValidateRequest {
  std::vector<std::string> scenarios;  // files, or directories (their *.json in name order)
  std::string variant;                 // the variant whose label contains it (--matrix: a filter)
  std::string link_rate;               // "200mbit", ...; "": each variant's own rate
  std::string report;                  // also write the JSON report to this file
  std::string calibration;             // --calibration FILE: applied to the predictions
  bool json = false, matrix = false, quick = false, no_platform_model = false;
  // Several clients: client group -> exec --compute-slowdown factor.
  std::map<std::string, double> client_slowdowns;
  // exec_bin "": $SPLITSIM_EXEC_BIN, else this binary; profile_cache "": the
  // default (default_profile_cache_dir). link_rate_bit_per_s and
  // platform_model are set from link_rate and no_platform_model.
  ValidatorOptions validator;
};

// --quick: every kQuickStride-th variant of each scenario file (the first,
// then every kQuickStride-th after it).
constexpr size_t kQuickStride = 7;

// Validates the selected variants and prints the report on `out` (the
// single-variant comparison, or the matrix with --matrix; JSON with --json).
// Returns false when a run failed (with --keep-going). Throws InputError
// for bad input, before anything runs.
bool validate(const ValidateRequest& request, std::ostream& out, const Validator::Log& log);

// A Log writing each line to `err` after "validate [  12.3 s]: ", the
// seconds since the Log was made.
Validator::Log stamped_log(std::ostream& err);

}  // namespace splitsim
