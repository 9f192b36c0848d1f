#include "data_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "splitsim/costmodel/errors.h"
#include "splitsim/costmodel/unique_fd.h"
#include "splitsim/costmodel/input_file.h"

namespace splitsim {
namespace {

// Up to `n` bytes into `to` (fewer only at the end of the file).
size_t read_up_to(int fd, uint8_t* to, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, to + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw InputError(path, std::string("cannot read: ") + std::strerror(errno));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

std::string byte_text(uint64_t n) { return std::to_string(n) + " bytes"; }

uint64_t checked_total(uint64_t total, const std::string& path) {
  if (total > kMaxDataFileBytes)
    throw InputError(path, "holds " + byte_text(total) + "; the limit for a dataset file is " +
                               byte_text(kMaxDataFileBytes));
  return total;
}

std::vector<uint8_t> read_plain(int fd, const std::string& path, uint64_t stored,
                                size_t header_bytes, const DeclaredBytes& declared) {
  std::vector<uint8_t> header(header_bytes);
  uint64_t total = stored;
  if (header_bytes > 0) {
    if (read_up_to(fd, header.data(), header_bytes, path) < header_bytes)
      throw InputError(
          path, byte_text(stored) + ": shorter than its " + byte_text(header_bytes) + " header");
    total = declared(header.data());
    if (total != stored)
      throw InputError(path, "its header declares " + byte_text(total) +
                                 " in all, but the file has " + byte_text(stored) +
                                 (total > stored ? " (truncated?)" : ""));
  }
  std::vector<uint8_t> out(checked_total(total, path));
  std::copy(header.begin(), header.end(), out.begin());
  if (read_up_to(fd, out.data() + header_bytes, out.size() - header_bytes, path) <
      out.size() - header_bytes)
    throw InputError(path, "became shorter while it was read");
  return out;
}

std::vector<uint8_t> read_gzip(int fd, const std::string& path, size_t header_bytes,
                               const DeclaredBytes& declared) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)  // 16: gzip framing only
    throw InputError(path, "cannot inflate: zlib failed to start");
  struct End {
    z_stream* zs;
    ~End() { inflateEnd(zs); }
  } end{&zs};
  // Until the header is read: the hard cap; then the size it declares.
  uint64_t limit = kMaxDataFileBytes;
  bool header_seen = header_bytes == 0;
  std::vector<uint8_t> out;
  std::vector<uint8_t> in(size_t{1} << 16);
  bool input_done = false;
  int rc = Z_OK;
  while (true) {
    if (zs.avail_in == 0 && !input_done) {
      const size_t n = read_up_to(fd, in.data(), in.size(), path);
      input_done = n < in.size();
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0 && input_done) break;
      if (inflateReset(&zs) != Z_OK) throw InputError(path, "cannot inflate its next gzip member");
    }
    // Room for one byte past the limit: inflating it shows the bomb.
    const size_t room =
        static_cast<size_t>(std::min<uint64_t>(size_t{1} << 16, limit + 1 - out.size()));
    if (out.capacity() < out.size() + room)
      out.reserve(static_cast<size_t>(std::min<uint64_t>(
          limit + 1, std::max<uint64_t>(out.size() + room, 2 * out.capacity()))));
    const size_t before = out.size();
    out.resize(before + room);
    zs.next_out = out.data() + before;
    zs.avail_out = static_cast<uInt>(room);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(before + room - zs.avail_out);
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR)
      throw InputError(path,
                       std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "inflate failed"));
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && input_done)
      throw InputError(path, "the gzip stream ends early (truncated?)");
    if (!header_seen && out.size() >= header_bytes) {
      header_seen = true;
      limit = checked_total(declared(out.data()), path);
    }
    if (out.size() > limit)
      throw InputError(path, header_bytes > 0 ? "inflates past the " + byte_text(limit) +
                                                    " its header declares (stopped there)"
                                              : "inflates past the limit of " + byte_text(limit) +
                                                    " for a dataset file (stopped there)");
  }
  if (!header_seen)
    throw InputError(path, "inflates to " + byte_text(out.size()) + ": shorter than its " +
                               byte_text(header_bytes) + " header");
  if (header_bytes > 0 && out.size() != limit)
    throw InputError(path, "its header declares " + byte_text(limit) +
                               " in all, but it inflates to " + byte_text(out.size()) +
                               " (truncated?)");
  return out;
}

}  // namespace

std::vector<uint8_t> read_data_file(const std::string& path, size_t header_bytes,
                                    const DeclaredBytes& declared) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw InputError(path, std::string("cannot read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw InputError(
        path, "is " + file_kind_name(st.st_mode) + "; a dataset file must be a regular file");
  uint8_t magic[2] = {0, 0};
  const bool gzip = ::pread(fd.get(), magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  return gzip ? read_gzip(fd.get(), path, header_bytes, declared)
              : read_plain(fd.get(), path, static_cast<uint64_t>(st.st_size), header_bytes,
                           declared);
}

}  // namespace splitsim
