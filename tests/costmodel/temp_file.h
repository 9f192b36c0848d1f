#pragma once
// A file in the temporary directory, named for this process and `name`,
// removed when the test is done with it; written with `text` if given.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace splitsim::testing {

class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("splitsim_test_" + std::to_string(::getpid()) + "_" + name))
                  .string()) {}
  TempFile(const std::string& name, const std::string& text) : TempFile(name) {
    std::ofstream(path_) << text;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace splitsim::testing
