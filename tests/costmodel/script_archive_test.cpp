// The checks of a TorchScript archive before LibTorch reads it
// (splitsim/costmodel/script_archive.h), on archives written here: a small
// zip writer and a pickle written opcode by opcode as torch.jit.save does.
#include "splitsim/costmodel/script_archive.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace splitsim {
namespace {

void put(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A zip of stored entries (no CRC: the checks do not read it).
std::string zip(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out, directory;
  for (const auto& [name, data] : files) {
    const uint64_t local = out.size();
    put(out, 0x04034b50, 4);
    put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 4), put(out, 0, 4);
    put(out, data.size(), 4), put(out, data.size(), 4);
    put(out, name.size(), 2), put(out, 0, 2);
    out += name + data;
    put(directory, 0x02014b50, 4);
    put(directory, 20, 2), put(directory, 20, 2), put(directory, 0, 2), put(directory, 0, 2);
    put(directory, 0, 4), put(directory, 0, 4);
    put(directory, data.size(), 4), put(directory, data.size(), 4);
    put(directory, name.size(), 2), put(directory, 0, 2), put(directory, 0, 2);
    put(directory, 0, 2), put(directory, 0, 2), put(directory, 0, 4), put(directory, local, 4);
    directory += name;
  }
  const uint64_t at = out.size();
  out += directory;
  put(out, 0x06054b50, 4);
  put(out, 0, 2), put(out, 0, 2), put(out, files.size(), 2), put(out, files.size(), 2);
  put(out, directory.size(), 4), put(out, at, 4), put(out, 0, 2);
  return out;
}

// Pickle opcodes, as Python's pickletools names them.
std::string unicode(const std::string& s) {
  std::string o = "X";
  put(o, s.size(), 4);
  return o + s;
}
std::string int1(int v) { return std::string("K") + static_cast<char>(v); }
std::string global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}

// A module with one parameter `w` of `sizes` (contiguous strides) on a
// FloatStorage of `numel` elements in record data/0, as torch.jit.save
// writes it.
std::string module_pickle(int numel, std::vector<int> sizes, int offset = 0) {
  std::vector<int> strides(sizes.size(), 1);
  for (int i = static_cast<int>(sizes.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * sizes[i + 1];
  std::string p = "\x80\x02" + global("__torch__", "M") + ")\x81}(" + unicode("w");
  p += global("torch._utils", "_rebuild_tensor_v2") + "((" + unicode("storage") +
       global("torch", "FloatStorage") + unicode("0") + unicode("cpu") + int1(numel) + "tQ";
  p += int1(offset) + "(";
  for (int s : sizes) p += int1(s);
  p += "t(";
  for (int s : strides) p += int1(s);
  p += "t\x89" + global("collections", "OrderedDict") + ")RtR";
  return p + "ub.";
}

std::string archive(const std::string& pickle, int record_bytes) {
  return zip({{"m/data.pkl", pickle},
              {"m/code/__torch__.py", "class M(Module):\n  pass\n"},
              {"m/data/0", std::string(static_cast<size_t>(record_bytes), '\0')},
              {"m/version", "3\n"}});
}

// check_script_archive refuses `bytes` with a message holding `text`.
void expect_refused(const std::string& bytes, const std::string& text) {
  try {
    check_script_archive(bytes);
    FAIL() << "accepted; expected a refusal with \"" << text << "\"";
  } catch (const ArchiveError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(ScriptArchive, AcceptsWhatTorchJitSaveWrites) {
  EXPECT_NO_THROW(check_script_archive(archive(module_pickle(12, {3, 4}), 48)));
  const PickleContents c = scan_pickle(module_pickle(12, {3, 4}));
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].storage.key, "0");
  EXPECT_EQ(c.tensors[0].sizes, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(c.tensors[0].strides, (std::vector<int64_t>{4, 1}));
}

TEST(ScriptArchive, AStorageLongerThanItsRecordIsRefused) {
  // 8 floats on a 2-byte record: LibTorch would read 30 bytes past it.
  expect_refused(archive(module_pickle(8, {8}), 2), "the record holds 2 bytes");
  expect_refused(archive(module_pickle(12, {3, 4}), 47), "12 elements of 4 bytes");
}

TEST(ScriptArchive, ATensorPastItsStorageIsRefused) {
  expect_refused(archive(module_pickle(12, {4, 4}), 64), "reaching element 15");
  expect_refused(archive(module_pickle(12, {3, 4}, 1), 48), "reaching element 12");
}

TEST(ScriptArchive, DeepNestingIsRefusedWithoutRecursion) {
  // 200,000 marks open at once, then 200,000 one-tuples in a chain.
  std::string marks = "\x80\x02" + std::string(200000, '(') + "N.";
  expect_refused(archive(marks, 0), "MARKs at once");
  std::string chain = "\x80\x02N" + std::string(200000, '\x85') + ".";
  expect_refused(archive(chain, 0), "nests values more than 1000 deep");
  // 3,000 lists, each appended into the one before it after that one was
  // made (each looks shallow when it is made): L0 = [L1], L1 = [L2], ...
  std::string lists = "\x80\x02]r";
  put(lists, 0, 4);
  for (int k = 0; k < 3000; ++k) {
    lists += "j", put(lists, k, 4);      // L_k
    lists += "]r", put(lists, k + 1, 4);  // L_k+1, kept in the memo
    lists += "a0";                        // L_k.append(L_k+1); back to L0
  }
  expect_refused(archive(lists + ".", 0), "nests values more than 1000 deep");
  // A list inside itself.
  expect_refused(archive("\x80\x02]2a.", 0), "inside itself");
}

TEST(ScriptArchive, GlobalsTorchScriptNeverWritesAreRefused) {
  const std::string p = "\x80\x02" + global("os", "system") + unicode("true") + "\x85R.";
  expect_refused(archive(p, 0), "os.system");
  expect_refused(archive("\x80\x02i__main__\nX\n.", 0), "opcode 0x69");
}

TEST(ScriptArchive, BrokenZipsAreRefused) {
  const std::string good = archive(module_pickle(12, {3, 4}), 48);
  expect_refused("not a zip at all, just some words long enough", "not a zip archive");
  expect_refused(good.substr(0, good.size() - 30), "not a zip archive");
  // The directory's offset pointing past the end.
  std::string moved = good;
  moved[moved.size() - 3] = '\x7f';
  expect_refused(moved, "central directory lies past the end");
  // A stored entry whose sizes differ, and one longer than the file.
  std::string sized = good;
  const size_t dir = sized.find("PK\x01\x02");
  sized[dir + 20] = '\x7f';
  expect_refused(sized, "its two sizes differ");
  sized[dir + 24] = '\x7f';
  sized[dir + 23] = sized[dir + 27] = '\x01';
  expect_refused(sized, "\"m/data.pkl\" runs past the end of the file");
}

TEST(ScriptArchive, TheLayoutTorchJitSaveWritesIsRequired) {
  const std::string p = module_pickle(12, {3, 4});
  expect_refused(zip({{"m/data.pkl", p}, {"m/data/0", std::string(48, '\0')}, {"m/version", "3"}}),
                 "code/*.py");
  expect_refused(zip({{"m/code/__torch__.py", "x"}, {"m/version", "3"}}), "data.pkl");
  expect_refused(zip({{"m/data.pkl", p}, {"m/code/a.py", "x"}, {"m/version", "3"},
                      {"m/data.pkl", p}}),
                 "twice");
  expect_refused(zip({{"m/data.pkl", p}, {"m/code/a.py", "x"}, {"m/version", "3"}}),
                 "does not hold");
}

}  // namespace
}  // namespace splitsim
