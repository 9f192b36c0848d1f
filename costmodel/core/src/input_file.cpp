#include "splitsim/costmodel/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "json_read.h"
#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/unique_fd.h"

namespace splitsim {

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
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
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

namespace {

// A SAX pass over the text that refuses a key given twice in one object (the
// JSON library would keep the last one silently), at the key's JSON path. It
// builds nothing: the DOM parse after it is as fast as without the check (a
// parser callback made that parse four times slower).
class DuplicateKeys : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit DuplicateKeys(const std::string& file) : file_(file) {}
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    f.key = k;
    if (!f.keys.insert(k).second) {
      throw InputError(json_read::member_path(path(), k),
                       "duplicate key \"" + k + "\" in " + file_ + "; give each key once");
    }
    return true;
  }
  // Syntax errors are the DOM parse's to report, at their position.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    bool is_array = false;
    size_t index = 0;
    std::set<std::string> keys;
    std::string key;
  };
  bool value() {
    if (!stack_.empty() && stack_.back().is_array) ++stack_.back().index;
    return true;
  }
  bool open(bool is_array) {
    stack_.emplace_back();
    stack_.back().is_array = is_array;
    return true;
  }
  bool close() {
    stack_.pop_back();
    return value();
  }
  // The path of the innermost object (its parents' keys and indexes).
  std::string path() const {
    std::string p = "$";
    for (size_t i = 0; i + 1 < stack_.size(); ++i) {
      p = stack_[i].is_array ? json_read::index_path(p, stack_[i].index)
                             : json_read::member_path(p, stack_[i].key);
    }
    return p;
  }

  const std::string& file_;
  std::vector<Frame> stack_;
};

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  using nlohmann::json;
  check_json_limits(text, file);
  try {
    DuplicateKeys duplicates(file);
    json::sax_parse(text, &duplicates);
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points at the offending character.
    std::string detail = e.what();
    const size_t column_at = detail.find("column ");
    const size_t colon = detail.find(": ", column_at == std::string::npos ? 0 : column_at);
    if (colon != std::string::npos) detail = detail.substr(colon + 2);
    throw InputError(text_position(text, e.byte == 0 ? 0 : e.byte - 1, file),
                     "JSON syntax error: " + detail);
  } catch (const json::exception&) {
    // check_json_limits catches the known cases at their position first.
    throw InputError(file, "not valid JSON: a value is out of range");
  }
}

nlohmann::json parse_json_file(const std::string& path, const std::string& what) {
  return parse_json_text(read_input_file(path, what), path);
}

}  // namespace splitsim
