// What only Linux reports of the service's own process (/proc/self, getrlimit): every
// descriptor it opens, its limit, and its threads.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "api/process_figures.h"

namespace wctmon::api {
namespace {

TEST(ProcessFiguresLinux, DescriptorsAndThreadsAreCountedAndTheLimitIsTheSoftOne) {
  const auto before = readProcessFigures();
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_TRUE(before->open_fds && before->threads && before->max_fds);

  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(::dup(STDERR_FILENO));
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return done; });
    });
  }
  const auto during = readProcessFigures();
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  for (const int fd : fds) ::close(fd);

  ASSERT_TRUE(during && during->open_fds && during->threads);
  EXPECT_EQ(*during->open_fds, *before->open_fds + 5);
  EXPECT_EQ(*during->threads, *before->threads + 3);
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(*before->max_fds, limit.rlim_cur);
}

}  // namespace
}  // namespace wctmon::api
