// The transport's waiter threads: reused from one transfer to the next, and
// never one for two transfers in flight (a blocked transfer must not hold
// back another's completion stamp).
#include "waiter_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <vector>

namespace splitsim::exec_internal {
namespace {

using std::chrono::seconds;

TEST(WaiterPoolTest, TransfersOneAfterAnotherReuseAThread) {
  WaiterPool& pool = WaiterPool::instance();
  const size_t before = pool.threads();
  for (int i = 0; i < 200; ++i) {
    auto done = std::make_shared<std::promise<int>>();
    std::future<int> result = done->get_future();
    pool.run([done, i] { done->set_value(i); });
    ASSERT_EQ(result.wait_for(seconds(30)), std::future_status::ready);
    EXPECT_EQ(result.get(), i);
  }
  // A thread per job (std::async) would have started 200. A waiter that
  // has stamped its transfer is idle again only a moment later, so the
  // next transfer may find none idle and start one: a few, not one a job.
  EXPECT_LE(pool.threads() - before, 8u);
}

TEST(WaiterPoolTest, EveryTransferInFlightHasItsOwnWaiter) {
  WaiterPool& pool = WaiterPool::instance();
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  constexpr int kBlocked = 12;
  std::vector<std::future<void>> blocked;
  for (int i = 0; i < kBlocked; ++i) {
    auto done = std::make_shared<std::promise<void>>();
    blocked.push_back(done->get_future());
    pool.run([done, open] {
      open.wait();
      done->set_value();
    });
  }
  // Every waiter above is held; this one still completes at once.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> free_one = done->get_future();
  pool.run([done] { done->set_value(); });
  EXPECT_EQ(free_one.wait_for(seconds(30)), std::future_status::ready);
  EXPECT_GE(pool.threads(), static_cast<size_t>(kBlocked + 1));
  for (const auto& b : blocked) EXPECT_NE(b.wait_for(seconds(0)), std::future_status::ready);
  gate.set_value();
  for (auto& b : blocked) EXPECT_EQ(b.wait_for(seconds(30)), std::future_status::ready);
  // Once they are done, the same threads serve what comes next.
  const size_t after = pool.threads();
  for (int i = 0; i < kBlocked; ++i) {
    auto again = std::make_shared<std::promise<void>>();
    std::future<void> f = again->get_future();
    pool.run([again] { again->set_value(); });
    ASSERT_EQ(f.wait_for(seconds(30)), std::future_status::ready);
  }
  EXPECT_EQ(pool.threads(), after);
}

}  // namespace
}  // namespace splitsim::exec_internal
