// `splitsim profile` end to end: a device profile with measured unit timings.
#include <unistd.h>

#include <gtest/gtest.h>

#include "run_cli.h"

namespace splitsim::testing {
namespace {

TEST(ProfileCliTest, WritesAMeasuredProfileWithAFit) {
  const auto out = std::filesystem::temp_directory_path() /
                   ("splitsim_profile_" + std::to_string(::getpid()) + ".json");
  const CliResult r = run_cli(
      "profile --model resnet20 --batch 4 --repeats 3 --warmup 1 --in-flight 3 -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fit error over 22 unit timings"), std::string::npos) << r.out;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "splitsim.device/1");
  EXPECT_EQ(j["measured"]["model"], "resnet20");
  EXPECT_EQ(j["measured"]["batch"], 4);
  EXPECT_EQ(j["measured"]["in_flight"], 3);
  ASSERT_EQ(j["measured"]["units"].size(), 11u);
  for (const auto& u : j["measured"]["units"]) {
    EXPECT_GT(u["fwd_s"].get<double>(), 0) << u["unit"];
    EXPECT_GT(u["bwd_s"].get<double>(), 0) << u["unit"];
  }
  EXPECT_GT(j["peak_flops"].get<double>(), 1e8);
  EXPECT_GE(j["fit"]["rms_rel_error"].get<double>(), 0);
  std::filesystem::remove(out);
}

TEST(ProfileCliTest, BadFlagsExitTwoAndWriteNothing) {
  const auto out = std::filesystem::temp_directory_path() /
                   ("splitsim_profile_bad_" + std::to_string(::getpid()) + ".json");
  CliResult r = run_cli("profile --model resnet21 -o " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
  r = run_cli("profile --model resnet20 --seq-len 5 -o " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--seq-len"), std::string::npos) << r.err;
  r = run_cli("profile --model resnet20 --threads 0 -o " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli("profile --model resnet20 --in-flight 0 -o " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--in-flight"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace splitsim::testing
