// Checkpoint files (checkpoint.h): what is written reads back whole, and a
// torn, corrupted, foreign or crafted file is refused with an InputError
// naming it, never loaded; the steps a directory holds whole; the step the
// parties agree on.
#include "splitsim/exec/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

struct CheckpointTest : ::testing::Test {
  void SetUp() override {
    dir = (std::filesystem::temp_directory_path() /
           ("splitsim_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name()))
              .string();
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string dir;
};

// Two tensors: 3 floats, then a Long scalar.
CheckpointFile sample() {
  CheckpointFile f;
  f.step = 40;
  f.stage = 1;
  f.client = 0;
  f.identity = "0123456789abcdef";
  f.records = {{"stats", {{0, 39, 0.5, 3.0, 16.0}}}, {"evals", nlohmann::json::array()}};
  const float w[3] = {1.5F, -2.0F, 0.25F};
  const int64_t step = 7;
  f.payload.append(reinterpret_cast<const char*>(w), sizeof w);
  f.payload.append(reinterpret_cast<const char*>(&step), sizeof step);
  f.tensors = {{"unit.4.param.weight", "Float", {3}, 0, 12},
               {"optimizer.0.step", "Long", {}, 12, 8}};
  return f;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The bytes of a file whose header is `header` and payload `payload`, with
// a correct CRC: a crafted file that passes the checksum.
std::string crafted(const std::string& header, const std::string& payload) {
  std::string out = "SPLTCKPT";
  for (uint64_t v : {static_cast<uint64_t>(header.size()), static_cast<uint64_t>(payload.size())})
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  out += header + payload;
  uint32_t crc = 0xffffffffu;  // CRC-32 (zlib's), bit by bit
  for (unsigned char ch : out) {
    crc ^= ch;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xffffffffu;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return out;
}

TEST_F(CheckpointTest, WhatIsWrittenReadsBackWholeAndNoTemporaryFileStays) {
  const std::string path = checkpoint_path(dir, 40, 1, 0);
  EXPECT_EQ(std::filesystem::path(path).filename(), "step-00000040.stage-1.client-0.ckpt");
  write_checkpoint_file(path, sample());
  const CheckpointFile f = read_checkpoint_file(path, 1 << 20);
  EXPECT_EQ(f.step, 40);
  EXPECT_EQ(f.stage, 1);
  EXPECT_EQ(f.identity, "0123456789abcdef");
  EXPECT_EQ(f.records, sample().records);
  EXPECT_EQ(f.payload, sample().payload);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[1].name, "optimizer.0.step");
  EXPECT_TRUE(f.tensors[1].shape.empty());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  // A write that cannot happen throws, names the file and leaves the old one.
  EXPECT_THROW(write_checkpoint_file(dir + "/missing/x.ckpt", sample()), CheckpointWriteError);
  std::filesystem::create_directories(dir + "/blocked.ckpt");  // rename onto a directory fails
  try {
    write_checkpoint_file(dir + "/blocked.ckpt", sample());
    ADD_FAILURE() << "renamed onto a directory";
  } catch (const CheckpointWriteError& e) {
    EXPECT_NE(std::string(e.what()).find("blocked.ckpt"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/blocked.ckpt.tmp"));
}

// Every mutation below is refused: an InputError that names the file and
// says why; none returns a CheckpointFile.
TEST_F(CheckpointTest, TornCorruptedAndCraftedFilesAreRefusedNamingTheFile) {
  const std::string good_path = dir + "/good.ckpt";
  write_checkpoint_file(good_path, sample());
  const std::string good = slurp(good_path);
  const std::string header = good.substr(24, good.size() - 24 - 20 - 4);
  const std::string payload = good.substr(good.size() - 4 - 20, 20);
  ASSERT_EQ(nlohmann::json::parse(header)["step"], 40);
  std::vector<std::pair<std::string, std::string>> mutations;  // (what, bytes)
  mutations.push_back({"empty", ""});
  mutations.push_back({"magic only", good.substr(0, 8)});
  for (size_t cut : {size_t{23}, size_t{24}, good.size() / 2, good.size() - 5, good.size() - 1})
    mutations.push_back({"truncated to " + std::to_string(cut), good.substr(0, cut)});
  mutations.push_back({"a byte more", good + "x"});
  for (size_t at :
       {size_t{0}, size_t{9}, size_t{17}, size_t{30}, good.size() - 10, good.size() - 2}) {
    std::string flipped = good;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x20);
    mutations.push_back({"byte " + std::to_string(at) + " flipped", flipped});
  }
  mutations.push_back({"another format", "PK\x03\x04" + good.substr(4)});
  // Crafted with a valid CRC.
  auto edit = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json h = nlohmann::json::parse(header);
    change(h);
    return crafted(h.dump(), payload);
  };
  mutations.push_back({"header not JSON", crafted("{not json", payload)});
  mutations.push_back({"header an array", crafted("[1,2]", payload)});
  mutations.push_back(
      {"another schema", edit([](auto& h) { h["schema"] = "splitsim.checkpoint/9"; })});
  mutations.push_back({"no step", edit([](auto& h) { h.erase("step"); })});
  mutations.push_back({"negative step", edit([](auto& h) { h["step"] = -1; })});
  mutations.push_back({"step a string", edit([](auto& h) { h["step"] = "40"; })});
  mutations.push_back(
      {"unknown dtype", edit([](auto& h) { h["tensors"][0]["dtype"] = "Complex"; })});
  mutations.push_back(
      {"shape too large", edit([](auto& h) { h["tensors"][0]["shape"] = {1 << 30}; })});
  mutations.push_back({"negative dim", edit([](auto& h) { h["tensors"][0]["shape"] = {-3}; })});
  mutations.push_back({"huge dims overflowing", edit([](auto& h) {
                         h["tensors"][0]["shape"] = {int64_t{1} << 40, int64_t{1} << 40};
                       })});
  mutations.push_back({"offset outside", edit([](auto& h) { h["tensors"][1]["offset"] = 1000; })});
  mutations.push_back({"overlapping", edit([](auto& h) { h["tensors"][1]["offset"] = 4; })});
  mutations.push_back(
      {"bytes disagree with shape", edit([](auto& h) { h["tensors"][0]["bytes"] = 8; })});
  mutations.push_back({"payload not covered", edit([](auto& h) { h["tensors"].erase(1); })});
  mutations.push_back({"header length past the file", [&] {
                         std::string b = good;
                         b[8] = static_cast<char>(0x7f);
                         return b;
                       }()});
  ASSERT_GE(mutations.size(), 20u);
  int loaded = 0;
  for (const auto& [what, bytes] : mutations) {
    const std::string path = dir + "/mutated.ckpt";
    put(path, bytes);
    try {
      read_checkpoint_file(path, 1 << 20);
      ++loaded;
      ADD_FAILURE() << what << ": loaded";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), path) << what;
      EXPECT_NE(e.message().find("checkpoint"), std::string::npos) << what << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": not an InputError: " << e.what();
    }
  }
  EXPECT_EQ(loaded, 0);
  // Larger than the caller allows, and not a regular file.
  EXPECT_THROW(read_checkpoint_file(good_path, 16), InputError);
  EXPECT_THROW(read_checkpoint_file(dir, 1 << 20), InputError);
  EXPECT_THROW(read_checkpoint_file(dir + "/absent.ckpt", 1 << 20), InputError);
}

TEST_F(CheckpointTest, StepsHeldWholeAndTheOldOnesRemoved) {
  for (int64_t step : {8, 16, 24})
    for (int stage : {0, 2}) put(checkpoint_path(dir, step, stage, 0), "x");
  put(checkpoint_path(dir, 32, 0, 0), "x");           // stage 2 died before its file
  put(checkpoint_path(dir, 40, 2, 0) + ".tmp", "x");  // a write cut short
  put(dir + "/notes.txt", "x");
  EXPECT_EQ(complete_checkpoint_steps(dir, {{0, 0}, {2, 0}}), (std::vector<int64_t>{8, 16, 24}));
  EXPECT_EQ(complete_checkpoint_steps(dir, {{0, 0}}), (std::vector<int64_t>{8, 16, 24, 32}));
  EXPECT_EQ(complete_checkpoint_steps(dir, {{1, 0}}), std::vector<int64_t>{});
  EXPECT_EQ(complete_checkpoint_steps(dir + "/absent", {{0, 0}}), std::vector<int64_t>{});
  remove_checkpoints_before(dir, 0, 0, 24);
  EXPECT_EQ(complete_checkpoint_steps(dir, {{0, 0}}), (std::vector<int64_t>{24, 32}));
  EXPECT_EQ(complete_checkpoint_steps(dir, {{2, 0}}), (std::vector<int64_t>{8, 16, 24}));
}

TEST(CheckpointStep, TheNewestStepEveryPartyHolds) {
  EXPECT_EQ(common_checkpoint_step({{20, 40}, {20}}, {"server", "client"}), 20);
  EXPECT_EQ(common_checkpoint_step({{20, 40}, {20, 40}}, {"server", "client"}), 40);
  EXPECT_EQ(common_checkpoint_step({{}, {}}, {"server", "client"}), 0);
  try {
    common_checkpoint_step({{40, 60}, {}}, {"server", "client"});
    ADD_FAILURE() << "no common step accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "resume");
    EXPECT_NE(e.message().find("server has 40, 60; client has none"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace splitsim
