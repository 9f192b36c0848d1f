#include "splitsim/costmodel/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string file_kind_name(unsigned int mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    throw InputError(path, "cannot read " + what + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw InputError(path, "cannot read " + what + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(
        path, "is " + file_kind_name(st.st_mode) + "; give the " + what + " as a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw InputError(path, what + " is " + std::to_string(st.st_size) + " bytes; the limit is " +
                               std::to_string(max_bytes) + " bytes");
  }
  std::string text;
  text.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (true) {
    if (got == text.size()) text.resize(std::min(max_bytes + 1, text.size() * 2 + 4096));
    const ssize_t n = ::read(fd.get(), &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path, "cannot read " + what + ": " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
    // A file that grows while it is read is held to the same limit.
    if (got > max_bytes) {
      throw InputError(path,
                       what + " is over the limit of " + std::to_string(max_bytes) + " bytes");
    }
  }
  text.resize(got);
  return text;
}

std::string text_position(const std::string& text, size_t pos, const std::string& file) {
  pos = std::min(pos, text.size());
  const auto begin = text.begin(), at = text.begin() + static_cast<std::ptrdiff_t>(pos);
  const size_t line = 1 + static_cast<size_t>(std::count(begin, at, '\n'));
  const size_t last_newline = text.rfind('\n', pos == 0 ? 0 : pos - 1);
  const size_t column =
      (last_newline == std::string::npos || last_newline >= pos) ? pos + 1 : pos - last_newline;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void check_json_limits(const std::string& text, const std::string& file) {
  int depth = 0;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      const size_t start = i;
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (i - start - 1 > kMaxJsonStringBytes && i <= n) {
        throw InputError(text_position(text, start, file),
                         "string of " + std::to_string(std::min(i, n) - start - 1) +
                             " bytes; the limit is " + std::to_string(kMaxJsonStringBytes) +
                             " bytes");
      }
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw InputError(text_position(text, i, file),
                         "arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) +
                             " levels; the limit is " + std::to_string(kMaxJsonDepth));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      // A number that overflows a double ("1e309") is refused here, where its
      // position is known; the parser's own message names none.
      size_t end = i;
      while (end < n && std::strchr("+-0123456789.eE", text[end]) != nullptr) ++end;
      const std::string token = text.substr(i, end - i);
      errno = 0;
      const double x = std::strtod(token.c_str(), nullptr);
      if (std::isinf(x)) {
        throw InputError(text_position(text, i, file),
                         "number " + token.substr(0, 40) +
                             " is out of the range of a double (magnitude up to about 1.8e308)");
      }
      i = end - 1;
    }
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  check_json_limits(text, file);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string detail = e.what();
    const size_t column_at = detail.find("column ");
    const size_t colon = detail.find(": ", column_at == std::string::npos ? 0 : column_at);
    if (colon != std::string::npos) detail = detail.substr(colon + 2);
    throw InputError(text_position(text, e.byte == 0 ? 0 : e.byte - 1, file),
                     "JSON syntax error: " + detail);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, "not valid JSON: a value is out of range");
  }
}

nlohmann::json parse_json_file(const std::string& path, const std::string& what) {
  return parse_json_text(read_input_file(path, what), path);
}

}  // namespace splitsim
