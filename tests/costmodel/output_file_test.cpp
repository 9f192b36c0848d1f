// write_output_file (costmodel/core/include/splitsim/costmodel/output_file.h):
// an output replaces only a regular file, never follows a planted link, and
// a failed write leaves the old file whole with no temporary file behind.
#include "splitsim/costmodel/output_file.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "splitsim/costmodel/errors.h"

namespace splitsim::testing {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("splitsim_output_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }
  // write_output_file throws an InputError at `flag` naming `path` with `phrase`.
  static void expect_refused(const fs::path& path, const std::string& phrase) {
    try {
      write_output_file(path.string(), "new\n", "--out");
      ADD_FAILURE() << path << " written";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "--out");
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
  bool mounted_ = false;
};

TEST_F(OutputFileTest, CreatesAndReplacesARegularFile) {
  const fs::path file = dir_ / "r.json";
  write_output_file(file.string(), "{}\n", "--out");
  EXPECT_EQ(read_text(file), "{}\n");
  write_output_stream(file.string(), "--out", [](std::ostream& out) {
    for (int i = 0; i < 100000; ++i) out << i << "\n";  // several buffers
  });
  EXPECT_EQ(read_text(file).substr(0, 4), "0\n1\n");
  EXPECT_EQ(fs::file_size(file), 588890u);
  EXPECT_EQ(names(), std::vector<std::string>{"r.json"});  // no temporary left
}

TEST_F(OutputFileTest, RefusesWhatIsNotARegularFileAndLeavesIt) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  expect_refused(dir_ / "fifo", "is a FIFO");
  EXPECT_TRUE(fs::is_fifo(dir_ / "fifo"));
  fs::create_directory(dir_ / "folder");
  expect_refused(dir_ / "folder", "is a directory");
  EXPECT_TRUE(fs::is_directory(dir_ / "folder"));
  // A link is neither followed nor replaced, even to a regular file.
  std::ofstream(dir_ / "target") << "kept\n";
  fs::create_symlink(dir_ / "target", dir_ / "link");
  expect_refused(dir_ / "link", "is a symbolic link");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_EQ(read_text(dir_ / "target"), "kept\n");
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = (dir_ / "sock").string();
  ASSERT_LT(sock_path.size(), sizeof addr.sun_path);
  std::copy(sock_path.begin(), sock_path.end(), addr.sun_path);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  expect_refused(dir_ / "sock", "is a socket");
  EXPECT_TRUE(fs::is_socket(dir_ / "sock"));
  ::close(sock);
  expect_refused(dir_ / "missing" / "r.json", "No such file or directory");
  expect_refused(dir_ / "target" / "r.json", "Not a directory");
  EXPECT_THROW(check_output_path("", "--out"), InputError);
  // A device node of our own (the numbers of /dev/null), never the real one.
  if (::mknod((dir_ / "null").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    expect_refused(dir_ / "null", "is a character device");
    struct stat st {};
    ASSERT_EQ(::lstat((dir_ / "null").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  for (const std::string& name : names())  // no temporary left
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
}

// The temporary file is created exclusively and never through a link: a
// link planted at a predictable temporary name is not followed.
TEST_F(OutputFileTest, DoesNotFollowALinkPlantedAtTheTemporaryName) {
  const fs::path victim = dir_ / "victim", report = dir_ / "r.json";
  std::ofstream(victim) << "keep";
  fs::create_symlink(victim, report.string() + ".tmp." + std::to_string(::getpid()) + ".0");
  write_output_file(report.string(), "{}\n", "--report");
  EXPECT_EQ(read_text(victim), "keep");
  EXPECT_EQ(read_text(report), "{}\n");
  EXPECT_FALSE(fs::is_symlink(report));
}

TEST_F(OutputFileTest, AWriterThatThrowsLeavesTheOldFile) {
  const fs::path file = dir_ / "r.json";
  std::ofstream(file) << "old\n";
  EXPECT_THROW(write_output_stream(file.string(), "--out",
                                   [](std::ostream& out) {
                                     out << "half";
                                     throw std::runtime_error("writer failed");
                                   }),
               std::runtime_error);
  EXPECT_EQ(read_text(file), "old\n");
  EXPECT_EQ(names(), std::vector<std::string>{"r.json"});
}

// A full disk: a tmpfs of 64 KiB, filled (root only; skipped where mount
// is not allowed). The old file stays whole and no temporary is left.
TEST_F(OutputFileTest, AFullDiskFailsAndLeavesTheOldFile) {
  if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (root only): " << std::strerror(errno);
  mounted_ = true;
  const fs::path file = dir_ / "r.json";
  std::ofstream(file) << "old\n";
  {
    std::ofstream fill(dir_ / "fill", std::ios::binary);
    const std::string block(4096, 'x');
    for (int i = 0; i < 64 && fill; ++i) fill << block << std::flush;
  }
  try {
    write_output_file(file.string(), std::string(8192, 'y'), "--out");
    ADD_FAILURE() << "written to a full disk";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text(file), "old\n");
  EXPECT_EQ(names(), (std::vector<std::string>{"fill", "r.json"}));
}

}  // namespace
}  // namespace splitsim::testing
