#pragma once
// A TorchScript file (torch.jit.save's zip archive) checked before LibTorch's
// loader reads it, because that loader trusts the file: a pickle nested deep
// enough overflows its stack, and a tensor that claims more elements than its
// storage record holds is read past the end of the record. No LibTorch here:
// the zip's directory and the pickles are read by this file's own code.
//
// What is checked (each failure an ArchiveError saying what and where):
//  - the zip: its end record and central directory lie inside the file,
//    every entry's data lies inside the file, stored entries are as long as
//    they say, a compressed entry expands at most kMaxExpansion times, no
//    name twice, at most kMaxEntries entries;
//  - the layout: one top folder holding `data.pkl`, `version` (or
//    `.data/version`) and at least one `code/*.py`;
//  - `data.pkl` and `constants.pkl` (stored, not compressed, as
//    torch.jit.save writes them): only the opcodes such a pickle is made of,
//    values nested at most kMaxNesting deep and none inside itself, only the
//    globals TorchScript writes (its classes under `__torch__`, tensor
//    rebuilding, storages, OrderedDict), every storage within its record
//    (`data/KEY`, `constants/KEY`) and every tensor within its storage.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace splitsim {

class ArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One file in a zip archive, from its central directory.
struct ZipEntry {
  std::string name;
  int method = 0;             // 0 stored, 8 deflated
  uint64_t compressed = 0;    // bytes in the archive
  uint64_t uncompressed = 0;  // bytes once expanded
  uint64_t data_offset = 0;   // where its (compressed) bytes start
};

constexpr int kMaxEntries = 1 << 20;
constexpr uint64_t kMaxExpansion = 1100;  // deflate's own maximum is about 1032:1
constexpr int kMaxNesting = 1000;

// The entries of the zip archive `bytes`. Throws ArchiveError when it is not
// one or an entry does not fit the file.
std::vector<ZipEntry> read_zip_directory(std::string_view bytes);

// A storage a pickle names (a persistent id): its record and element count.
struct PickledStorage {
  std::string key;           // "0": the record data/0 (or constants/0)
  std::string storage_type;  // "FloatStorage"
  int64_t numel = 0;
};

// A tensor a pickle rebuilds from a storage, and the elements it spans.
struct PickledTensor {
  PickledStorage storage;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

struct PickleContents {
  std::vector<PickledStorage> storages;
  std::vector<PickledTensor> tensors;
};

// The storages and tensors of one TorchScript pickle (data.pkl,
// constants.pkl), with the checks above on its opcodes, nesting, globals and
// tensor extents. Throws ArchiveError.
PickleContents scan_pickle(std::string_view pickle);

// Bytes per element of a storage type ("FloatStorage" -> 4); 0 when unknown.
int storage_item_bytes(const std::string& storage_type);

// Every check above on a whole archive. Throws ArchiveError.
void check_script_archive(std::string_view bytes);

}  // namespace splitsim
