#include "splitsim/costmodel/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <streambuf>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/input_file.h"

namespace splitsim {
namespace {

std::string in_quotes(const std::string& path) { return "\"" + path + "\""; }

std::string directory_of(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

// Refuses what is at `path` unless it is a regular file or nothing.
void check_target(const std::string& path, const std::string& flag) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw InputError(flag, "cannot write " + in_quotes(path) + ": " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode))
    throw InputError(flag, in_quotes(path) +
                               " is a symbolic link; give the file itself (an output replaces "
                               "only a regular file, or creates one)");
  if (!S_ISREG(st.st_mode))
    throw InputError(flag, in_quotes(path) + " is " + file_kind_name(st.st_mode) +
                               "; an output replaces only a regular file (or creates one)");
}

// Buffered writes to a file descriptor, keeping the first write error.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  // errno of the first failed write; 0 while none failed.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (error_ == 0 && p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        error_ = n < 0 ? errno : EIO;
      else
        p += n;
    }
    setp(buf_, buf_ + sizeof buf_);
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  char buf_[1 << 16];
};

// A fresh file beside `path`, created exclusively and never through a
// symbolic link: in a shared directory another user cannot make us write
// where a planted link points. Sets `*tmp` to its name.
int create_temporary(const std::string& path, const std::string& flag, std::string* tmp) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    *tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt);
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) break;
  }
  throw InputError(flag, "cannot write " + in_quotes(path) + ": cannot create " + in_quotes(*tmp) +
                             " beside it: " + std::strerror(errno));
}

// Best effort: the rename itself reaches the disk (some file systems refuse
// fsync on a directory; the file's own data is already synced).
void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag) {
  if (path.empty()) throw InputError(flag, "an empty path; give a file name");
  check_target(path, flag);
  const std::string dir = directory_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw InputError(flag, "cannot write " + in_quotes(path) + ": its directory " + in_quotes(dir) +
                               ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw InputError(
        flag, "cannot write " + in_quotes(path) + ": " + in_quotes(dir) + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(flag, "cannot write into the directory " + in_quotes(dir) + " of " +
                               in_quotes(path) + ": " + std::strerror(errno));
}

void write_output_stream(const std::string& path, const std::string& flag,
                         const std::function<void(std::ostream&)>& write) {
  check_output_path(path, flag);
  std::string tmp;
  const int fd = create_temporary(path, flag, &tmp);
  int error = 0;
  try {
    FdStreamBuf buf(fd);
    std::ostream out(&buf);
    write(out);
    out.flush();
    error = buf.error() != 0 ? buf.error() : (out ? 0 : EIO);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    throw InputError(flag, "cannot write " + in_quotes(path) + ": " + std::strerror(error) + " (" +
                               in_quotes(path) + " is left as it was)");
  }
  try {
    check_target(path, flag);  // again: the path may have changed during the write
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int why = errno;
    ::unlink(tmp.c_str());
    throw InputError(flag, "cannot rename " + in_quotes(tmp) + " to " + in_quotes(path) + ": " +
                               std::strerror(why));
  }
  sync_directory(directory_of(path));
}

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  write_output_stream(path, flag, [&text](std::ostream& out) { out << text; });
}

}  // namespace splitsim
