// Issue #39: every flag that names an output file (cli/README.md "Output
// files") replaces only a regular file. A FIFO, a device node or a
// directory there is exit code 2 naming the flag and the path, at once,
// and is left as it was; a full disk is exit code 2 with the old file whole.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

namespace fs = std::filesystem;

// ResNet20 in two stages: parses and simulates in a second.
const char* const kScenario = R"({
  "schema": "splitsim.scenario/1", "name": "outputs", "model": {"name": "resnet20"},
  "batch_size": 8, "chunks": 2, "schedule": "gpipe", "dataset": "fashion_mnist",
  "partition": [{"party": "dev0", "from": "conv1", "to": "layer2.0"},
                {"party": "dev1", "from": "layer2.1", "to": "head"}],
  "devices": {"dev0": "v100", "dev1": "v100"},
  "network": {"bandwidth_bit_per_s": 1e9, "latency_s": 1e-4},
  "iterations": 4, "warmup": 1})";

class OutputPathsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("splitsim_outputs_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "targets");
    scenario_ = (dir_ / "s.json").string();
    std::ofstream(scenario_) << kScenario;
    measured_ = (dir_ / "m.json").string();
    std::ofstream(measured_) << "{}";
  }
  void TearDown() override {
    if (mounted_) ::umount2((dir_ / "disk").c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }
  // The command line of each output flag, writing to `out`.
  std::vector<std::pair<std::string, std::string>> commands(const std::string& out) const {
    return {
        {"--trace", "simulate " + scenario_ + " --trace " + out},
        {"-o", "calibrate " + scenario_ + " --measured " + measured_ + " -o " + out},
        {"-o", "profile --model resnet20 -o " + out},
        {"--emit-best", "explore " + scenario_ + " --emit-best " + out},
        {"--report", "train " + scenario_ + " --report " + out},
        {"--report", "validate " + scenario_ + " --report " + out},
        {"--trace", "exec " + scenario_ + " --role server --listen 127.0.0.1:1 --trace " + out},
    };
  }
  // Every output flag given `target` exits 2 within 30 s naming the flag and the path.
  void expect_every_flag_refuses(const fs::path& target, const std::string& phrase) {
    for (const auto& [flag, args] : commands(target.string())) {
      const auto t0 = std::chrono::steady_clock::now();
      const CliResult r = run_cli(args);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
      EXPECT_NE(r.err.find(flag + ": \"" + target.string() + "\" " + phrase), std::string::npos)
          << args << "\n"
          << r.err;
      EXPECT_LT(s, 30) << args;
    }
  }

  fs::path dir_;
  std::string scenario_, measured_;
  bool mounted_ = false;
};

TEST_F(OutputPathsCliTest, AFifoIsRefusedAndStaysAFifo) {
  const fs::path fifo = dir_ / "targets" / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_every_flag_refuses(fifo, "is a FIFO");
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST_F(OutputPathsCliTest, ADeviceNodeIsRefusedAndStaysOne) {
  // A node of our own with /dev/null's numbers: the real one is never touched.
  const fs::path node = dir_ / "targets" / "null";
  if (::mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod needs root: " << std::strerror(errno);
  expect_every_flag_refuses(node, "is a character device");
  struct stat st {};
  ASSERT_EQ(::lstat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputPathsCliTest, ADirectoryIsRefusedAndKept) {
  const fs::path folder = dir_ / "targets" / "folder";
  fs::create_directories(folder);
  std::ofstream(folder / "inside") << "kept\n";
  expect_every_flag_refuses(folder, "is a directory");
  EXPECT_EQ(slurp(folder / "inside"), "kept\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "targets"), fs::directory_iterator()), 1);
}

// A tmpfs of 64 KiB, filled (root only; skipped where mount is not allowed).
TEST_F(OutputPathsCliTest, AFullDiskIsExit2AndKeepsTheOldFile) {
  const fs::path disk = dir_ / "disk";
  fs::create_directories(disk);
  if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (root only): " << std::strerror(errno);
  mounted_ = true;
  const fs::path trace = disk / "trace.json";
  std::ofstream(trace) << "old\n";
  {
    std::ofstream fill(disk / "fill", std::ios::binary);
    const std::string block(4096, 'x');
    for (int i = 0; i < 64 && fill; ++i) fill << block << std::flush;
  }
  const CliResult r = run_cli("simulate " + scenario_ + " --trace " + trace.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--trace: cannot write \"" + trace.string() + "\": No space left on device"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(trace), "old\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(disk), fs::directory_iterator()), 2);
}

}  // namespace
}  // namespace splitsim::testing
