#pragma once
// A file descriptor closed when it goes out of scope (the readers of
// untrusted files open with O_NONBLOCK and check what they opened).
#include <unistd.h>

namespace splitsim {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace splitsim
