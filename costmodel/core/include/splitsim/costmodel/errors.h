#pragma once
// Errors at the edges: scenario files, CLI flags, device and profile files.
#include <stdexcept>
#include <string>

namespace splitsim {

// A mistake in something the user gave us. `where()` names the JSON path
// ("$.partition[1].to") or the flag ("--threads"); what() is the full message
// "<where>: <what is wrong>; <what is allowed>". The CLI turns it into exit code 2.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& where, const std::string& message)
      : std::runtime_error(where + ": " + message), where_(where) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

}  // namespace splitsim
