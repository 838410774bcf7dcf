#include "core/frozen_session.h"

#include <utility>
#include <vector>

namespace wctmon {
namespace {

class FrozenSession final : public WaitChainSession {
 public:
  explicit FrozenSession(Snapshot snapshot) : snapshot_(std::move(snapshot)) {}

  void asyncSample(SampleScope /*scope*/, Executor executor, SampleHandler done) override {
    executor.post(
        [snapshot = snapshot_, done = std::move(done)]() mutable { done(std::move(snapshot)); });
  }

  void asyncResample(std::vector<ThreadRef> threads, Executor executor,
                     ThreadsHandler done) override {
    std::vector<ThreadSample> again;
    for (const auto& process : snapshot_.processes) {
      for (const auto& thread : process.threads) {
        for (const auto& wanted : threads) {
          if (thread.id == wanted) again.push_back(thread);
        }
      }
    }
    executor.post(
        [again = std::move(again), done = std::move(done)]() mutable { done(std::move(again)); });
  }

  void cancel() override {}

 private:
  Snapshot snapshot_;
};

}  // namespace

std::unique_ptr<WaitChainSession> makeFrozenSession(Snapshot snapshot) {
  return std::make_unique<FrozenSession>(std::move(snapshot));
}

}  // namespace wctmon
