// The light spawn (posix_spawn) of subprocess.h: exit codes, the environment
// it changes, the stdout it captures, the peak RSS it reports.
#include "splitsim/costmodel/subprocess.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>

namespace splitsim {
namespace {

TEST(SubprocessTest, LightSpawnReportsTheExitCodeAndPeakRss) {
  pid_t pid = -1;
  ASSERT_EQ(spawn_light("/bin/sh", {"sh", "-c", "exit 3"}, {}, &pid), 0);
  int64_t peak_rss_bytes = 0;
  EXPECT_EQ(wait_exit_code(pid, &peak_rss_bytes), 3);
  EXPECT_GT(peak_rss_bytes, 0);
}

TEST(SubprocessTest, LightSpawnSetsTheEnvironmentAndRedirects) {
  ::setenv("SPLITSIM_SUBPROCESS_TEST", "inherited", 1);
  LightSpawnOptions options;
  options.env = {"SPLITSIM_SUBPROCESS_TEST=set"};
  options.discard_stdout = options.discard_stderr = true;
  pid_t pid = -1;
  ASSERT_EQ(spawn_light("/bin/sh",
                        {"sh", "-c",
                         "echo noise; echo noise >&2; test \"$SPLITSIM_SUBPROCESS_TEST\" = set"},
                        options, &pid),
            0);
  EXPECT_EQ(wait_exit_code(pid), 0);
  ::unsetenv("SPLITSIM_SUBPROCESS_TEST");
}

TEST(SubprocessTest, LightSpawnOfAMissingExecutableReturnsTheError) {
  pid_t pid = -1;
  EXPECT_EQ(spawn_light("/nonexistent/splitsim-none", {"none"}, {}, &pid), ENOENT);
}

TEST(SubprocessTest, RunCapturingStdoutKeepsStdoutAndTheExitCode) {
  std::string out;
  EXPECT_EQ(run_capturing_stdout({"/bin/sh", "-c", "echo one; echo two; exit 2"}, &out), 2);
  EXPECT_EQ(out, "one\ntwo\n");
  EXPECT_EQ(run_capturing_stdout({"/nonexistent/splitsim-none"}, &out), -1);
}

}  // namespace
}  // namespace splitsim
