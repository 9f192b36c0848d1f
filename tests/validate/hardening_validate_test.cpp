// Regression tests of issue #12 for validate: link rates bounded by what tc
// shapes, exec children that die with their parent, the work directory
// removed on a signal, and the profile cache in a private per-user place.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "splitsim/costmodel/errors.h"
#include "splitsim/validate/netns_link.h"
#include "splitsim/validate/safe_files.h"
#include "splitsim/costmodel/subprocess.h"
#include "splitsim/validate/comparison.h"

namespace splitsim {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("splitsim_hv_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

// True while `pid` exists and is not a zombie.
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST(HardeningValidateTest, LinkRateIsBoundedByWhatTcShapes) {
  EXPECT_DOUBLE_EQ(parse_link_rate("100gbit"), 1e11);
  EXPECT_DOUBLE_EQ(parse_link_rate("8kbit"), 8e3);
  for (const char* bad : {"1e30gbit", "101gbit", "1kbit", "7999bit"}) {
    try {
      parse_link_rate(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "link_rate");
      EXPECT_NE(std::string(e.what()).find("8kbit to 100gbit"), std::string::npos) << e.what();
    }
  }
}

// A validate process killed with SIGKILL runs no handler: its children must
// die by themselves (PR_SET_PDEATHSIG), not train on as orphans.
TEST(HardeningValidateTest, SpawnedChildrenDieWithTheirParent) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t middle = fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {
    close(fds[0]);
    const pid_t child = spawn({"sleep", "60"}, {});
    (void)!write(fds[1], &child, sizeof child);
    pause();  // killed below with SIGKILL, as `kill -9 validate` would
    _exit(0);
  }
  close(fds[1]);
  pid_t child = -1;
  ASSERT_EQ(read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  close(fds[0]);
  ASSERT_TRUE(alive(child));
  kill(middle, SIGKILL);
  waitpid(middle, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (alive(child) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(alive(child)) << "the child of a killed parent kept running";
  if (alive(child)) kill(child, SIGKILL);
}

TEST(HardeningValidateTest, WorkDirectoryIsRemovedOnSignals) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const fs::path dir = fresh_dir("work");
    fs::create_directories(dir);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      NetnsLink::register_work_dir(dir.string(), {"server.out", "server.err"});
      std::ofstream(dir / "server.out") << "partial";
      std::ofstream(dir / "server.err") << "partial";
      raise(sig);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << sig;
    EXPECT_FALSE(fs::exists(dir)) << "signal " << sig << " left " << dir;
    fs::remove_all(dir);
  }
}

TEST(HardeningValidateTest, ProfileCacheIsPerUserAndPrivate) {
  const char* saved_cache = std::getenv("SPLITSIM_PROFILE_CACHE");
  const char* saved_xdg = std::getenv("XDG_CACHE_HOME");
  unsetenv("SPLITSIM_PROFILE_CACHE");
  setenv("XDG_CACHE_HOME", "/somewhere/cache", 1);
  EXPECT_EQ(default_profile_cache_dir(), "/somewhere/cache/splitsim");
  unsetenv("XDG_CACHE_HOME");
  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  if (!home.empty()) {
    EXPECT_EQ(default_profile_cache_dir(), home + "/.cache/splitsim");
  }
  EXPECT_EQ(default_profile_cache_dir().rfind(fs::temp_directory_path().string(), 0),
            std::string::npos);
  setenv("SPLITSIM_PROFILE_CACHE", "/override", 1);
  EXPECT_EQ(default_profile_cache_dir(), "/override");
  if (saved_cache)
    setenv("SPLITSIM_PROFILE_CACHE", saved_cache, 1);
  else
    unsetenv("SPLITSIM_PROFILE_CACHE");
  if (saved_xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);

  const fs::path dir = fresh_dir("cache");
  prepare_cache_dir((dir / "splitsim").string());
  struct stat st {};
  ASSERT_EQ(lstat((dir / "splitsim").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // A group- or world-writable one is made private again.
  chmod((dir / "splitsim").c_str(), 0777);
  prepare_cache_dir((dir / "splitsim").string());
  ASSERT_EQ(lstat((dir / "splitsim").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // A symbolic link planted in its place is refused.
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "link");
  EXPECT_THROW(prepare_cache_dir((dir / "link").string()), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace splitsim
