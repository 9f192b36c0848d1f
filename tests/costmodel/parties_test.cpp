// run_parties: the parties of a run, their names, and who runs each stage.
#include "splitsim/costmodel/parties.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace splitsim {
namespace {

Plan plan_on(const std::vector<std::string>& stage_parties, int64_t clients = 1) {
  Plan p;
  p.clients = clients;
  for (const auto& party : stage_parties) {
    PlanStage st;
    st.name = "stage" + std::to_string(p.stages.size());
    st.party = party;
    p.stages.push_back(st);
  }
  return p;
}

std::vector<std::string> names(const RunParties& r) {
  std::vector<std::string> out;
  for (const auto& p : r.parties) out.push_back(p.name);
  return out;
}

// party_of for every stage of client c.
std::vector<int> stages_of(const RunParties& r, int c) {
  std::vector<int> out;
  for (int k = 0; k < r.stages; ++k) out.push_back(r.party_of(k, c));
  return out;
}

TEST(PartiesTest, OneClientKeepsThePlansNames) {
  const RunParties r = run_parties(plan_on({"client", "server"}));
  EXPECT_EQ(r.clients, 1);
  EXPECT_EQ(r.stages, 2);
  EXPECT_EQ(names(r), (std::vector<std::string>{"client", "server"}));
  EXPECT_TRUE(r.parties[0].client_role);
  EXPECT_FALSE(r.parties[1].client_role);
  EXPECT_EQ(r.parties[1].plan_party, "server");
  EXPECT_EQ(stages_of(r, 0), (std::vector<int>{0, 1}));
}

TEST(PartiesTest, SeveralClientsReplicateTheClientRoleAndShareTheRest) {
  const RunParties r = run_parties(plan_on({"client", "server"}, 3));
  EXPECT_EQ(names(r), (std::vector<std::string>{"client0", "client1", "client2", "server"}));
  for (int c = 0; c < 3; ++c) {
    EXPECT_TRUE(r.parties[c].client_role);
    EXPECT_EQ(r.parties[c].plan_party, "client");
    EXPECT_EQ(stages_of(r, c), (std::vector<int>{c, 3})) << c;
  }
  EXPECT_FALSE(r.parties[3].client_role);
  EXPECT_EQ(r.stage_party.size(), 6u);
}

TEST(PartiesTest, OtherPartiesComeInOrderOfFirstAppearance) {
  // Five stages on four parties; "gpu2" is met before "gpu1" and twice.
  const RunParties r = run_parties(plan_on({"edge", "gpu2", "gpu1", "gpu2", "cloud"}));
  EXPECT_EQ(names(r), (std::vector<std::string>{"edge", "gpu2", "gpu1", "cloud"}));
  EXPECT_EQ(stages_of(r, 0), (std::vector<int>{0, 1, 2, 1, 3}));
  EXPECT_TRUE(r.parties[0].client_role);  // the party of stage 0, whatever its name
  for (int p = 1; p < 4; ++p) EXPECT_FALSE(r.parties[p].client_role) << p;
}

TEST(PartiesTest, UShapeRunsFirstAndLastStageOnTheSameClient) {
  const RunParties one = run_parties(plan_on({"client", "server", "client"}));
  EXPECT_EQ(names(one), (std::vector<std::string>{"client", "server"}));
  EXPECT_EQ(stages_of(one, 0), (std::vector<int>{0, 1, 0}));

  const RunParties two = run_parties(plan_on({"client", "server", "client"}, 2));
  EXPECT_EQ(names(two), (std::vector<std::string>{"client0", "client1", "server"}));
  EXPECT_EQ(stages_of(two, 0), (std::vector<int>{0, 2, 0}));
  EXPECT_EQ(stages_of(two, 1), (std::vector<int>{1, 2, 1}));
}

TEST(PartiesTest, AllStagesOnOneParty) {
  const RunParties r = run_parties(plan_on({"solo", "solo"}, 2));
  EXPECT_EQ(names(r), (std::vector<std::string>{"solo0", "solo1"}));
  EXPECT_EQ(stages_of(r, 1), (std::vector<int>{1, 1}));
}

}  // namespace
}  // namespace splitsim
