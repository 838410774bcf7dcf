#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace wctmon::linux_platform {

/// How many descriptors the thread caches of this process may keep open, all together. Beyond it
/// a cache reads through a fresh descriptor each time: a little slower, never failing for want of
/// descriptors. Thread-safe.
class DescriptorBudget {
 public:
  /// A budget of `limit` descriptors.
  explicit DescriptorBudget(long limit) : left_(limit) {}
  DescriptorBudget(const DescriptorBudget&) = delete;
  DescriptorBudget& operator=(const DescriptorBudget&) = delete;

  /// The budget of a process whose soft descriptor limit is `soft_limit`: all but 2048 left to
  /// everything else the process does (one-shot reads, the store, logs), and never more than
  /// half of a small limit.
  [[nodiscard]] static long forLimit(std::uint64_t soft_limit);

  /// The budget of this process, sized from its soft RLIMIT_NOFILE when first used (after the
  /// service has raised it).
  [[nodiscard]] static DescriptorBudget& process();

  /// Takes one place; false, taking nothing, when none is left.
  [[nodiscard]] bool take();
  /// Gives back a place taken.
  void give() { left_.fetch_add(1, std::memory_order_relaxed); }
  /// The places left.
  [[nodiscard]] long left() const { return left_.load(std::memory_order_relaxed); }

 private:
  std::atomic<long> left_;
};

/// A descriptor that holds a place in a budget: closed, and its place given back, when it goes.
class BudgetedFd {
 public:
  BudgetedFd() = default;
  /// Opens `path` relative to `dirfd` for reading, if `budget` has a place left; invalid when it
  /// has none or the open fails (then no place is taken).
  [[nodiscard]] static BudgetedFd openAt(DescriptorBudget& budget, int dirfd, const char* path);

  BudgetedFd(BudgetedFd&& other) noexcept
      : budget_(std::exchange(other.budget_, nullptr)), fd_(std::exchange(other.fd_, -1)) {}
  BudgetedFd& operator=(BudgetedFd&& other) noexcept;
  BudgetedFd(const BudgetedFd&) = delete;
  BudgetedFd& operator=(const BudgetedFd&) = delete;
  ~BudgetedFd() { reset(); }

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  /// Closes the descriptor and gives its place back.
  void reset();

 private:
  BudgetedFd(DescriptorBudget& budget, int fd) : budget_(&budget), fd_(fd) {}

  DescriptorBudget* budget_ = nullptr;
  int fd_ = -1;
};

}  // namespace wctmon::linux_platform
