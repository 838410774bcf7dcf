#include "platform/linux/descriptor_budget.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace wctmon::linux_platform {

long DescriptorBudget::forLimit(std::uint64_t soft_limit) {
  // No kernel allows more than 2^30 open files (fs.nr_open); RLIM_INFINITY must not wrap.
  const auto soft = static_cast<long>(std::min<std::uint64_t>(soft_limit, std::uint64_t{1} << 30));
  return std::max(soft / 2, soft - 2048);
}

DescriptorBudget& DescriptorBudget::process() {
  static DescriptorBudget budget([] {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0L;
    return forLimit(limit.rlim_cur);
  }());
  return budget;
}

bool DescriptorBudget::take() {
  if (left_.fetch_sub(1, std::memory_order_relaxed) > 0) return true;
  give();
  return false;
}

BudgetedFd BudgetedFd::openAt(DescriptorBudget& budget, int dirfd, const char* path) {
  if (!budget.take()) return {};
  const int fd = ::openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    budget.give();
    return {};
  }
  return BudgetedFd(budget, fd);
}

BudgetedFd& BudgetedFd::operator=(BudgetedFd&& other) noexcept {
  if (this != &other) {
    reset();
    budget_ = std::exchange(other.budget_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void BudgetedFd::reset() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  budget_->give();
  budget_ = nullptr;
}

}  // namespace wctmon::linux_platform
