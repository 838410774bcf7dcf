#include "platform/windows/wct_wait_chain_source.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/completion.h"
#include "platform/windows/toolhelp.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {

DWORD wctFlagsOf(const SampleScope& scope) {
  if (!scope.out_of_proc) return 0;
  DWORD flags = kWctOutOfProcFlag;
  if (scope.wct.com) flags |= kWctOutOfProcComFlag;
  if (scope.wct.critical_sections) flags |= kWctOutOfProcCsFlag;
  if (scope.wct.network_io) flags |= kWctNetworkIoFlag;
  return flags;
}

namespace {

Error openError(DWORD code) {
  if (code == ERROR_NOT_SUPPORTED) {
    return makeError(ErrorCode::kUnsupported,
                     "Wait Chain Traversal is not supported on this system "
                     "(OpenThreadWaitChainSession: ERROR_NOT_SUPPORTED)");
  }
  return makeError(ErrorCode::kInternal,
                   "OpenThreadWaitChainSession failed: " + lastErrorText(code));
}

class WctJob;

/// One GetThreadWaitChain in flight: the buffers WCT writes, which live until its callback ran.
struct ChainRequest {
  WctJob* job = nullptr;
  DWORD tid = 0;
  DWORD count = kWctMaxNodeCount;
  WAITCHAIN_NODE_INFO nodes[kWctMaxNodeCount] = {};
  BOOL is_cycle = FALSE;
  DWORD status = ERROR_IO_PENDING;
};

/// The WCT work of one operation: its own asynchronous session, a request per thread, and the
/// chains once WCT has answered every request (or the session was closed under them).
class WctJob : public std::enable_shared_from_this<WctJob> {
 public:
  using Done = std::function<void(Result<std::vector<WctThreadChain>>)>;

  WctJob(std::shared_ptr<WctApi> api, Executor work)
      : api_(std::move(api)), work_(std::move(work)) {}

  /// On a worker: opens the session and asks for every thread's chain; `done` runs once, on a
  /// worker, when WCT has answered all of them.
  void start(const std::vector<DWORD>& tids, DWORD flags, Done done) {
    done_ = std::move(done);
    self_ = shared_from_this();
    {
      std::lock_guard lock(session_mutex_);
      if (cancelled_) {
        finishLater(cancelledError("the WCT request"));
        return;
      }
      session_ = api_->open(kWctAsyncOpenFlag, &WctJob::onChain);
      if (session_ == nullptr) {
        finishLater(openError(::GetLastError()));
        return;
      }
      if ((flags & kWctOutOfProcComFlag) != 0 && !api_->registerComCallbacks()) {
        flags &= ~kWctOutOfProcComFlag;  // COM waits stay unresolved; the rest still works
      }
      requests_ = std::make_unique<ChainRequest[]>(tids.size());
      count_ = tids.size();
      // One for each request and one for this loop, so that the job cannot end while requests
      // are still being made.
      pending_ = static_cast<long>(count_) + 1;
      for (std::size_t i = 0; i < count_; ++i) {
        auto& r = requests_[i];
        r.job = this;
        r.tid = tids[i];
        const auto context = reinterpret_cast<DWORD_PTR>(&r);
        if (api_->getChain(session_, context, flags, r.tid, &r.count, r.nodes, &r.is_cycle) !=
            FALSE) {
          r.status = ERROR_SUCCESS;  // answered at once after all
          requestEnded();
          continue;
        }
        const DWORD error = ::GetLastError();
        if (error != ERROR_IO_PENDING) {
          r.status = error;
          requestEnded();
        }
      }
    }
    requestEnded();
  }

  /// From any thread: closes the session (on a worker), so that WCT ends the pending requests.
  void cancel() {
    cancelled_ = true;
    work_([self = shared_from_this()] { self->closeSession(); });
  }

 private:
  static void CALLBACK onChain(HWCT /*session*/, DWORD_PTR context, DWORD status, LPDWORD /*count*/,
                               PWAITCHAIN_NODE_INFO /*nodes*/, LPBOOL /*is_cycle*/) {
    // On WCT's thread. The count, nodes and cycle flag are the request's own buffers.
    auto* request = reinterpret_cast<ChainRequest*>(context);
    request->status = status;
    request->job->requestEnded();  // last: the job may be released from here on
  }

  void requestEnded() {
    if (--pending_ != 0) return;
    // Every request has its answer; the rest is done on a worker, off WCT's thread (which must
    // not close its own session). The job goes with it: it is never released on WCT's thread.
    work_([self = std::move(self_)] { self->finish(); });
  }

  void finish() {
    closeSession();
    if (cancelled_) {
      deliver(cancelledError("the WCT request"));
      return;
    }
    std::vector<WctThreadChain> chains;
    chains.reserve(count_);
    for (std::size_t i = 0; i < count_; ++i) {
      const auto& r = requests_[i];
      if (r.status == ERROR_CANCELLED) {
        deliver(cancelledError("the WCT request"));
        return;
      }
      WctThreadChain chain;
      chain.tid = r.tid;
      chain.status = r.status;
      chain.is_cycle = r.is_cycle != FALSE;
      // Valid nodes come with success and with the two "cut short" answers.
      if (r.status == ERROR_SUCCESS || r.status == ERROR_MORE_DATA ||
          r.status == kErrorTooManyThreads) {
        const auto n = std::min<DWORD>(r.count, kWctMaxNodeCount);
        chain.nodes.assign(r.nodes, r.nodes + n);
      }
      chains.push_back(std::move(chain));
    }
    deliver(std::move(chains));
  }

  void finishLater(Error error) {
    work_([self = std::move(self_), error = std::move(error)] { self->deliver(error); });
  }

  void deliver(Result<std::vector<WctThreadChain>> result) {
    if (auto done = std::exchange(done_, nullptr)) done(std::move(result));
  }

  void closeSession() {
    std::lock_guard lock(session_mutex_);
    if (session_ == nullptr || closed_) return;
    closed_ = true;
    api_->close(session_);
  }

  std::shared_ptr<WctApi> api_;
  Executor work_;
  Done done_;
  /// Keeps the job, and the buffers WCT writes, alive until the last request has ended.
  std::shared_ptr<WctJob> self_;
  std::mutex session_mutex_;
  HWCT session_ = nullptr;
  bool closed_ = false;
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<ChainRequest[]> requests_;
  std::size_t count_ = 0;
  std::atomic<long> pending_{0};
};

/// What a session keeps between its operations.
struct SessionState {
  Pid pid;
  /// The flags of the last sample, which its re-reads use too (one operation at a time).
  std::atomic<DWORD> flags{0};
  std::shared_ptr<WctApi> api;
  Executor work;
  WctWaitChainSource::ThreadLister lister;
  OperationSlot slot;
  std::mutex times_mutex;
  /// How long each thread had waited when last read, for waitTimes().
  std::map<ThreadRef, std::chrono::milliseconds> wait_times;

  /// A sample replaces what was known (threads come and go); a re-read adds to it.
  void remember(const Snapshot& snapshot) {
    std::lock_guard lock(times_mutex);
    wait_times.clear();
    for (const auto& p : snapshot.processes) rememberLocked(p.threads);
  }

  void remember(const std::vector<ThreadSample>& threads) {
    std::lock_guard lock(times_mutex);
    rememberLocked(threads);
  }

  void rememberLocked(const std::vector<ThreadSample>& threads) {
    for (const auto& t : threads) {
      if (t.wait_time) wait_times[t.id] = *t.wait_time;
    }
  }
};

auto operationOf(const char* operation, Pid pid) {
  return
      [operation, pid] { return std::string(operation) + " of pid " + std::to_string(pid.value); };
}

/// Starts `job` on the session's slot: a second operation while one is in flight is refused
/// (kBusy); cancelling completes the caller now and closes the WCT session.
template <typename T>
bool beginJob(SessionState& state, const std::shared_ptr<Completion<T>>& completion,
              const std::shared_ptr<WctJob>& job, const char* operation) {
  const auto what = operationOf(operation, state.pid);
  if (state.slot.begin([completion, job, what] {
        completion->complete(cancelledError(what()));
        job->cancel();
      })) {
    return true;
  }
  completion->complete(busyError(what()));
  return false;
}

class WctWaitChainSession final : public WaitChainSession {
 public:
  explicit WctWaitChainSession(std::shared_ptr<SessionState> state) : state_(std::move(state)) {}
  ~WctWaitChainSession() override { state_->slot.cancel(); }
  WctWaitChainSession(const WctWaitChainSession&) = delete;
  WctWaitChainSession& operator=(const WctWaitChainSession&) = delete;

  void asyncSample(SampleScope scope, Executor executor, SampleHandler done) override {
    auto completion = Completion<Snapshot>::make(std::move(executor), std::move(done));
    auto job = std::make_shared<WctJob>(state_->api, state_->work);
    if (!beginJob(*state_, completion, job, "sample")) return;
    const bool out_of_proc = scope.out_of_proc;
    const bool threads_alone = scope.threads_alone;
    state_->flags = wctFlagsOf(scope);  // the operation is ours: nobody else reads them now
    state_->work([state = state_, completion, job, out_of_proc, threads_alone] {
      if (completion->completed()) {  // cancelled before it began
        state->slot.end();
        return;
      }
      auto process = state->lister(state->pid);
      if (!process) {
        state->slot.end();
        completion->completeFromWork(process.error());
        return;
      }
      const auto tids = process->tids;
      job->start(tids, state->flags,
                 [state, completion, process = std::move(*process), out_of_proc,
                  threads_alone](Result<std::vector<WctThreadChain>> chains) {
                   state->slot.end();
                   if (!chains && chains.error().code == ErrorCode::kUnsupported && threads_alone) {
                     // A system without WCT (Wine's is a stub): a periodic sample still
                     // brings the threads and their CPU time, which busy threads are found
                     // from. Any other sample fails instead, saying why: it would show no
                     // wait where waits cannot be seen.
                     auto snapshot = snapshotWithoutChains(
                         process, "no wait chains: " + chains.error().message +
                                      "; only the threads and their CPU time were read");
                     completion->completeFromWork(std::move(snapshot));
                     return;
                   }
                   if (!chains) {
                     completion->completeFromWork(chains.error());
                     return;
                   }
                   auto snapshot = snapshotFromChains(process, *chains, out_of_proc);
                   state->remember(snapshot);
                   completion->completeFromWork(std::move(snapshot));
                 });
    });
  }

  void asyncResample(std::vector<ThreadRef> threads, Executor executor,
                     ThreadsHandler done) override {
    auto completion =
        Completion<std::vector<ThreadSample>>::make(std::move(executor), std::move(done));
    auto job = std::make_shared<WctJob>(state_->api, state_->work);
    if (!beginJob(*state_, completion, job, "re-read")) return;
    state_->work([state = state_, completion, job, threads = std::move(threads)] {
      if (completion->completed()) {
        state->slot.end();
        return;
      }
      // Thread ids are unique across the system: a thread of another process is read the same.
      std::vector<DWORD> tids;
      tids.reserve(threads.size());
      for (const auto& t : threads) tids.push_back(static_cast<DWORD>(t.tid.value));
      job->start(tids, state->flags,
                 [state, completion, threads](Result<std::vector<WctThreadChain>> chains) {
                   state->slot.end();
                   if (!chains) {
                     completion->completeFromWork(chains.error());
                     return;
                   }
                   std::vector<std::string> warnings;  // a re-read reports only the threads
                   std::vector<ThreadSample> out;
                   out.reserve(threads.size());
                   for (std::size_t i = 0; i < threads.size(); ++i) {
                     out.push_back(threadFromChain(threads[i].pid, (*chains)[i], warnings));
                     if (!isExited(out.back())) {
                       out.back().cpu_time =
                           threadCpuTime(static_cast<DWORD>(threads[i].tid.value));
                     }
                   }
                   state->remember(out);
                   completion->completeFromWork(std::move(out));
                 });
    });
  }

  void cancel() override { state_->slot.cancel(); }

  std::vector<std::optional<std::chrono::milliseconds>> waitTimes(
      std::span<const ThreadRef> threads) override {
    std::vector<std::optional<std::chrono::milliseconds>> out;
    out.reserve(threads.size());
    std::lock_guard lock(state_->times_mutex);
    for (const auto& t : threads) {
      auto it = state_->wait_times.find(t);
      out.push_back(it == state_->wait_times.end()
                        ? std::nullopt
                        : std::optional<std::chrono::milliseconds>(it->second));
    }
    return out;
  }

 private:
  std::shared_ptr<SessionState> state_;
};

}  // namespace

WctWaitChainSource::WctWaitChainSource(Executor work, std::shared_ptr<WctApi> api,
                                       ThreadLister lister)
    : work_(std::move(work)), api_(std::move(api)), lister_(std::move(lister)) {}

Result<std::unique_ptr<WaitChainSession>> WctWaitChainSource::open(Pid pid) {
  auto state = std::make_shared<SessionState>();
  state->pid = pid;
  state->api = api_;
  state->work = work_;
  state->lister = lister_;
  return std::unique_ptr<WaitChainSession>(std::make_unique<WctWaitChainSession>(std::move(state)));
}

Result<std::unique_ptr<WaitChainSession>> WctWaitChainSource::openSystem() {
  return makeError(ErrorCode::kUnsupported,
                   "Wait Chain Traversal reads one process at a time: name a process");
}

WaitChainSource::Availability WctWaitChainSource::availability() const {
  Availability out{"windows-wct", true, {}};
  // A synchronous session, opened and closed at once: whether WCT works here at all.
  HWCT probe = api_->open(0, nullptr);
  if (probe == nullptr) {
    out.available = false;
    out.reason = openError(::GetLastError()).message;
    return out;
  }
  api_->close(probe);
  return out;
}

}  // namespace wctmon::windows_platform
