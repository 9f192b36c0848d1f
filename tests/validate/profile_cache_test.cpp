// The profile cache of validate: a cached profile is used only while two
// rounds timed now agree with it; one that no longer holds is measured again.
#include "splitsim/validate/profile_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace splitsim {
namespace {

namespace fs = std::filesystem;

ModelSpec resnet20() {
  ModelSpec spec;
  spec.name = "resnet20";
  spec.num_classes = 10;
  spec.image_size = 32;
  return spec;
}

TEST(ProfileCacheTest, ACachedProfileIsCheckedAndMeasuredAgainWhenItNoLongerHolds) {
  const fs::path dir = fs::temp_directory_path() / ("splitsim_pc_" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::string log;
  const auto progress = [&](const std::string& l) { log += l + "\n"; };
  // The tolerances stay far from the machine's noise: beside another test
  // under ctest -j2, two rounds of this small profile have come out about
  // twice as slow as the profile they check.
  const auto profile = [&](double tolerance) {
    return profile_for_validation(resnet20(), ModelProfile{}, 4, 1, 1, OptimizerSpec{},
                                  dir.string(), false, -1, {}, progress, tolerance);
  };
  const CachedProfile first = profile(0.9);
  EXPECT_EQ(first.origin.rfind("measured now", 0), 0u) << first.origin;
  const std::string file = profile_cache_file(dir.string(), resnet20(), 4, 1, 1, OptimizerSpec{},
                                              false);
  ASSERT_TRUE(fs::exists(file));

  const CachedProfile again = profile(1e9);  // any check passes
  EXPECT_EQ(again.origin.rfind("cached " + file + " (checked now: ", 0), 0u) << again.origin;
  EXPECT_EQ(again.device.timings.size(), first.device.timings.size());

  // The file now says the machine was a hundred times slower: it no longer holds.
  nlohmann::json j;
  std::ifstream(file) >> j;
  for (auto& u : j["measured"]["units"]) {
    u["fwd_s"] = u["fwd_s"].get<double>() * 100;
    u["bwd_s"] = u["bwd_s"].get<double>() * 100;
  }
  std::ofstream(file) << j.dump();
  log.clear();
  const CachedProfile remeasured = profile(0.9);
  EXPECT_EQ(remeasured.origin.rfind("measured now", 0), 0u) << remeasured.origin;
  EXPECT_NE(log.find("no longer holds; measuring again"), std::string::npos) << log;
  // ... and the cache holds the new measurement.
  std::ifstream in(file);
  const nlohmann::json back = nlohmann::json::parse(in);
  EXPECT_LT(back["measured"]["units"][0]["fwd_s"].get<double>(),
            j["measured"]["units"][0]["fwd_s"].get<double>() / 10);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace splitsim
