#pragma once
// Errors at the edges: scenario files, CLI flags, device and profile files.
#include <stdexcept>
#include <string>

namespace splitsim {

// A mistake in something the user gave us. `where()` names the JSON path
// ("$.partition[1].to"), the file, or the input field of an options struct
// in snake_case ("train_samples"); libraries never name a front end's flag,
// the CLI shows a field as its flag ("--train-samples"). what() is the full
// message "<where>: <what is wrong>; <what is allowed>". The CLI turns it into
// exit code 2.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& where, const std::string& message)
      : std::runtime_error(where + ": " + message), where_(where) {}
  const std::string& where() const { return where_; }
  // The message without the "where: " in front.
  std::string message() const { return std::string(what()).substr(where_.size() + 2); }

 private:
  std::string where_;
};

// `e` with " [in FILE]" after its message: the file whose JSON path it names.
inline InputError in_file(const InputError& e, const std::string& file) {
  return InputError(e.where(), e.message() + " [in " + file + "]");
}

}  // namespace splitsim
