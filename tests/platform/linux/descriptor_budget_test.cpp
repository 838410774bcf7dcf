// The process-wide budget of kept-open descriptors, with its limits given by the test.
#include "platform/linux/descriptor_budget.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace wctmon::linux_platform {
namespace {

bool isOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(DescriptorBudget, LeavesRoomForEverythingElseTheProcessOpens) {
  EXPECT_EQ(DescriptorBudget::forLimit(20000), 17952);  // this machine's limit: all but 2048
  EXPECT_EQ(DescriptorBudget::forLimit(65536), 63488);
  EXPECT_EQ(DescriptorBudget::forLimit(4096), 2048);
  EXPECT_EQ(DescriptorBudget::forLimit(1024), 512);  // a small limit: half of it
  EXPECT_EQ(DescriptorBudget::forLimit(0), 0);
  const long unlimited = DescriptorBudget::forLimit(RLIM_INFINITY);
  EXPECT_GT(unlimited, 0);
  EXPECT_LE(unlimited, 1L << 30);
}

TEST(DescriptorBudget, TheProcessBudgetComesFromTheSoftLimit) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  auto& budget = DescriptorBudget::process();
  EXPECT_EQ(&budget, &DescriptorBudget::process());
  // Nothing of this test binary keeps descriptors in it.
  EXPECT_EQ(budget.left(), DescriptorBudget::forLimit(limit.rlim_cur));
}

TEST(DescriptorBudget, APlaceIsTakenOnlyWhileOneIsLeft) {
  DescriptorBudget budget(2);
  EXPECT_TRUE(budget.take());
  EXPECT_TRUE(budget.take());
  EXPECT_FALSE(budget.take());
  EXPECT_FALSE(budget.take());
  EXPECT_EQ(budget.left(), 0);
  budget.give();
  EXPECT_EQ(budget.left(), 1);
  EXPECT_TRUE(budget.take());
  EXPECT_EQ(budget.left(), 0);
}

TEST(DescriptorBudget, ManyThreadsTakingAndGivingNeverOverspend) {
  DescriptorBudget budget(3);
  std::atomic<int> held{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!budget.take()) continue;
        const int now = ++held;
        int seen = most;
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --held;
        budget.give();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most, 3);
  EXPECT_EQ(budget.left(), 3);
}

TEST(BudgetedFd, HoldsItsPlaceUntilClosedAndGivesItBack) {
  DescriptorBudget budget(1);
  auto first = BudgetedFd::openAt(budget, AT_FDCWD, "/dev/null");
  ASSERT_TRUE(first.valid());
  EXPECT_EQ(budget.left(), 0);
  const int fd = first.get();
  EXPECT_TRUE(isOpen(fd));

  // The budget is spent: no descriptor, and nothing taken.
  const auto second = BudgetedFd::openAt(budget, AT_FDCWD, "/dev/null");
  EXPECT_FALSE(second.valid());
  EXPECT_EQ(budget.left(), 0);

  // Moved, it is still one place.
  BudgetedFd moved(std::move(first));
  EXPECT_FALSE(first.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(moved.get(), fd);
  BudgetedFd assigned;
  assigned = std::move(moved);
  EXPECT_EQ(budget.left(), 0);
  assigned.reset();
  EXPECT_FALSE(isOpen(fd));
  EXPECT_EQ(budget.left(), 1);
  assigned.reset();  // once only
  EXPECT_EQ(budget.left(), 1);

  {
    const auto scoped = BudgetedFd::openAt(budget, AT_FDCWD, "/dev/null");
    EXPECT_TRUE(scoped.valid());
    EXPECT_EQ(budget.left(), 0);
  }
  EXPECT_EQ(budget.left(), 1);
}

TEST(BudgetedFd, AFailedOpenTakesNoPlace) {
  DescriptorBudget budget(1);
  const auto missing = BudgetedFd::openAt(budget, AT_FDCWD, "/nonexistent/wctmon");
  EXPECT_FALSE(missing.valid());
  EXPECT_EQ(budget.left(), 1);
}

}  // namespace
}  // namespace wctmon::linux_platform
