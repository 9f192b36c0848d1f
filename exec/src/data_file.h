#pragma once
// Reading one dataset file (--data) within bounds, so that no file can
// block the reader, exhaust memory or reach LibTorch with sizes it would
// refuse in its own words (exec/README.md "Data"). Every refusal is an
// InputError naming the file.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace splitsim {

// Largest dataset file, inflated: 256 MiB (a Fashion-MNIST training image
// file is 47 MB, a CIFAR-10 batch 31 MB). Images take 4 bytes a pixel once
// read, so this keeps one file's tensor within 1 GiB.
constexpr uint64_t kMaxDataFileBytes = uint64_t{1} << 28;

// The whole size of a file's content (header included) that its header
// declares. Gets the first header bytes; throws InputError for a header
// that is wrong or declares more than kMaxDataFileBytes.
using DeclaredBytes = std::function<uint64_t(const uint8_t* header)>;

// The content of `path`, inflated when it is gzip (by its magic bytes).
// Refuses anything but a regular file (a FIFO, a device, a directory, a
// link to one) without blocking. With `header_bytes` > 0, the content must
// hold that header and be exactly `declared(header)` bytes: a plain file's
// size is checked before anything else is read, and a gzip stream stops as
// soon as it inflates past the declared size. Without a header, the content
// is at most kMaxDataFileBytes.
std::vector<uint8_t> read_data_file(const std::string& path, size_t header_bytes,
                                    const DeclaredBytes& declared);

}  // namespace splitsim
