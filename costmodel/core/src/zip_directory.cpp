// The zip archive's central directory (script_archive.h read_zip_directory):
// every entry found where the directory says and inside the file.
#include <set>
#include <string>

#include "script_archive_bytes.h"
#include "splitsim/costmodel/script_archive.h"

namespace splitsim {
namespace {

// The n bytes at `at` as a little-endian number; throws when they pass the end.
uint64_t read_le(std::string_view b, uint64_t at, int n, const char* what) {
  if (at > b.size() || b.size() - at < static_cast<uint64_t>(n))
    throw ArchiveError(std::string("the zip's ") + what + " runs past the end of the file");
  return little_endian(b, at, n);
}

// ---- the zip's directory -------------------------------------------------------------

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kEnd64Signature = 0x06064b50;
constexpr uint32_t kEnd64LocatorSignature = 0x07064b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kLocalSignature = 0x04034b50;

struct Directory {
  uint64_t entries = 0, size = 0, offset = 0;
};

Directory find_directory(std::string_view b) {
  if (b.size() < 22) throw ArchiveError("not a zip archive (shorter than a zip's end record)");
  // The end record is the last 22 bytes plus a comment of up to 65535.
  const uint64_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  uint64_t end = b.size() - 22;
  while (little_endian(b, end, 4) != kEndSignature) {
    if (end == lowest) throw ArchiveError("not a zip archive (no end record)");
    --end;
  }
  Directory d{little_endian(b, end + 10, 2), little_endian(b, end + 12, 4),
              little_endian(b, end + 16, 4)};
  if (d.entries == 0xFFFF || d.size == 0xFFFFFFFF || d.offset == 0xFFFFFFFF) {
    if (end < 20 || little_endian(b, end - 20, 4) != kEnd64LocatorSignature)
      throw ArchiveError("the zip's end record points to a zip64 record that is not there");
    const uint64_t at = read_le(b, end - 20 + 8, 8, "zip64 locator");
    if (read_le(b, at, 4, "zip64 end record") != kEnd64Signature)
      throw ArchiveError("the zip64 end record is not where its locator says");
    d = {read_le(b, at + 32, 8, "zip64 end record"), read_le(b, at + 40, 8, "zip64 end record"),
         read_le(b, at + 48, 8, "zip64 end record")};
  }
  if (d.entries > static_cast<uint64_t>(kMaxEntries))
    throw ArchiveError("the zip declares " + std::to_string(d.entries) + " entries (at most " +
                       std::to_string(kMaxEntries) + ")");
  if (d.offset > b.size() || d.size > b.size() - d.offset)
    throw ArchiveError("the zip's central directory lies past the end of the file");
  return d;
}

// The zip64 extra field of a central-directory entry replaces each of the
// sizes and the offset that read 0xFFFFFFFF, in that order.
void apply_zip64_extra(std::string_view extra, uint64_t& uncompressed, uint64_t& compressed,
                       uint64_t& local) {
  uint64_t at = 0;
  while (at + 4 <= extra.size()) {
    const uint64_t id = little_endian(extra, at, 2), len = little_endian(extra, at + 2, 2);
    if (at + 4 + len > extra.size()) break;
    if (id == 1) {
      uint64_t p = at + 4;
      for (uint64_t* field : {&uncompressed, &compressed, &local}) {
        if (*field != 0xFFFFFFFF) continue;
        if (p + 8 > at + 4 + len) throw ArchiveError("a zip64 extra field is too short");
        *field = little_endian(extra, p, 8);
        p += 8;
      }
      return;
    }
    at += 4 + len;
  }
  if (uncompressed == 0xFFFFFFFF || compressed == 0xFFFFFFFF || local == 0xFFFFFFFF)
    throw ArchiveError("a zip entry's sizes are in a zip64 field that is not there");
}

ZipEntry read_entry(std::string_view b, uint64_t& at) {
  if (read_le(b, at, 4, "central directory") != kCentralSignature)
    throw ArchiveError("the zip's central directory is damaged");
  const uint64_t name_len = read_le(b, at + 28, 2, "central directory");
  const uint64_t extra_len = read_le(b, at + 30, 2, "central directory");
  const uint64_t comment_len = read_le(b, at + 32, 2, "central directory");
  if (at + 46 + name_len + extra_len + comment_len > b.size())
    throw ArchiveError("the zip's central directory runs past the end of the file");
  ZipEntry e;
  e.method = static_cast<int>(little_endian(b, at + 10, 2));
  e.compressed = little_endian(b, at + 20, 4);
  e.uncompressed = little_endian(b, at + 24, 4);
  uint64_t local = little_endian(b, at + 42, 4);
  e.name = std::string(b.substr(at + 46, name_len));
  apply_zip64_extra(b.substr(at + 46 + name_len, extra_len), e.uncompressed, e.compressed, local);
  at += 46 + name_len + extra_len + comment_len;

  if (read_le(b, local, 4, "entry header") != kLocalSignature)
    throw ArchiveError("zip entry \"" + e.name + "\" has no header where the directory says");
  e.data_offset = local + 30 + read_le(b, local + 26, 2, "entry header") +
                  read_le(b, local + 28, 2, "entry header");
  if (e.data_offset > b.size() || e.compressed > b.size() - e.data_offset)
    throw ArchiveError("zip entry \"" + e.name + "\" runs past the end of the file");
  if (e.method == 0 && e.compressed != e.uncompressed)
    throw ArchiveError("zip entry \"" + e.name + "\" is stored but its two sizes differ");
  if (e.method != 0 && e.method != 8)
    throw ArchiveError("zip entry \"" + e.name + "\" uses compression method " +
                       std::to_string(e.method) + " (a TorchScript archive uses 0 or 8)");
  if (e.method == 8 && e.uncompressed / kMaxExpansion > e.compressed)
    throw ArchiveError("zip entry \"" + e.name + "\" claims to expand " +
                       std::to_string(e.compressed) + " bytes to " +
                       std::to_string(e.uncompressed) + ", more than deflate can");
  return e;
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(std::string_view bytes) {
  const Directory d = find_directory(bytes);
  std::vector<ZipEntry> entries;
  std::set<std::string> names;
  uint64_t at = d.offset;
  for (uint64_t i = 0; i < d.entries; ++i) {
    entries.push_back(read_entry(bytes, at));
    if (!names.insert(entries.back().name).second)
      throw ArchiveError("the zip holds \"" + entries.back().name + "\" twice");
  }
  return entries;
}

}  // namespace splitsim
