// WCT, scripted at its API boundary (Wine's own WCT refuses to open a session): every documented
// outcome of GetThreadWaitChain, answers delivered asynchronously on a thread of the script's own
// as WCT does, and requests held pending until released or their session is closed.
#pragma once

#include <windows.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cwchar>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "model/ids.h"
#include "platform/windows/wct_api.h"
#include "platform/windows/wct_translate.h"

namespace wctmon::windows_platform::scripted {

using namespace std::chrono_literals;

inline WAITCHAIN_NODE_INFO threadNode(DWORD pid, DWORD tid, WCT_OBJECT_STATUS status,
                                      DWORD wait_ms = 0, DWORD switches = 0) {
  WAITCHAIN_NODE_INFO n{};
  n.ObjectType = WctThreadType;
  n.ObjectStatus = status;
  n.ThreadObject.ProcessId = pid;
  n.ThreadObject.ThreadId = tid;
  n.ThreadObject.WaitTime = wait_ms;
  n.ThreadObject.ContextSwitches = switches;
  return n;
}

inline WAITCHAIN_NODE_INFO lockNode(WCT_OBJECT_TYPE type, WCT_OBJECT_STATUS status,
                                    const wchar_t* name = L"", LONGLONG timeout = 0) {
  WAITCHAIN_NODE_INFO n{};
  n.ObjectType = type;
  n.ObjectStatus = status;
  std::wcsncpy(n.LockObject.ObjectName, name, WCT_OBJNAME_LENGTH);
  n.LockObject.Timeout.QuadPart = timeout;
  return n;
}

/// What the script answers for one thread.
struct Answer {
  DWORD status = ERROR_SUCCESS;
  std::vector<WAITCHAIN_NODE_INFO> nodes;
  bool is_cycle = false;
  /// Returned by GetThreadWaitChain itself instead of through the callback.
  bool synchronous = false;
  /// Kept pending until release() or the session's close.
  bool hold = false;
};

/// An answer that is a failure of the request: no nodes.
inline Answer failure(DWORD status, bool synchronous = false) {
  Answer a;
  a.status = status;
  a.synchronous = synchronous;
  return a;
}

/// WCT, scripted: answers come on the script's own thread, after GetThreadWaitChain returned
/// ERROR_IO_PENDING, into the caller's buffers, as the reference describes.
class ScriptedWct final : public WctApi {
 public:
  ~ScriptedWct() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void answer(DWORD tid, Answer a) {
    std::lock_guard lock(mutex_);
    answers_[tid] = std::move(a);
  }
  void refuseOpen(DWORD error) { open_error_ = error; }

  HWCT open(DWORD flags, PWAITCHAINCALLBACK callback) override {
    if (open_error_ != ERROR_SUCCESS) {
      ::SetLastError(open_error_);
      return nullptr;
    }
    std::lock_guard lock(mutex_);
    if (flags == kWctAsyncOpenFlag) {
      callback_ = callback;
      if (!thread_.joinable()) thread_ = std::thread([this] { deliverLoop(); });
    }
    ++opened_;
    return reinterpret_cast<HWCT>(static_cast<std::uintptr_t>(opened_));
  }

  void close(HWCT session) override {
    std::lock_guard lock(mutex_);
    ++closed_;
    // Pending requests of the session end with ERROR_CANCELLED.
    for (auto& p : held_) {
      if (p.session == session) {
        p.answer = failure(ERROR_CANCELLED);
        ready_.push_back(p);
      }
    }
    std::erase_if(held_, [session](const Pending& p) { return p.session == session; });
    wake_.notify_all();
  }

  BOOL getChain(HWCT session, DWORD_PTR context, DWORD flags, DWORD tid, LPDWORD count,
                PWAITCHAIN_NODE_INFO nodes, LPBOOL is_cycle) override {
    std::lock_guard lock(mutex_);
    last_flags_ = flags;
    auto it = answers_.find(tid);
    Answer a = it == answers_.end() ? failure(ERROR_OBJECT_NOT_FOUND) : it->second;
    if (a.synchronous) {
      ::SetLastError(a.status);
      return FALSE;
    }
    Pending p{session, context, count, nodes, is_cycle, std::move(a)};
    if (p.answer.hold) {
      held_.push_back(std::move(p));
    } else {
      ready_.push_back(std::move(p));
    }
    wake_.notify_all();
    ::SetLastError(ERROR_IO_PENDING);
    return FALSE;
  }

  bool registerComCallbacks() override { return true; }

  /// Waits until `n` requests are held (made, and not answered).
  bool waitHeld(std::size_t n) {
    std::unique_lock lock(mutex_);
    return wake_.wait_for(lock, 10s, [&] { return held_.size() >= n; });
  }

  void release() {
    std::lock_guard lock(mutex_);
    for (auto& p : held_) {
      p.answer.hold = false;
      ready_.push_back(p);
    }
    held_.clear();
    wake_.notify_all();
  }

  int opened() const { return opened_; }
  int closed() const { return closed_; }
  DWORD lastFlags() const { return last_flags_; }
  std::set<std::thread::id> callbackThreads() {
    std::lock_guard lock(mutex_);
    return callback_threads_;
  }

 private:
  struct Pending {
    HWCT session;
    DWORD_PTR context;
    LPDWORD count;
    PWAITCHAIN_NODE_INFO nodes;
    LPBOOL is_cycle;
    Answer answer;
  };

  void deliverLoop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !ready_.empty(); });
      if (ready_.empty()) return;
      auto p = std::move(ready_.front());
      ready_.pop_front();
      callback_threads_.insert(std::this_thread::get_id());
      const auto& a = p.answer;
      if (a.status == ERROR_SUCCESS || a.status == ERROR_MORE_DATA ||
          a.status == kErrorTooManyThreads) {
        const auto n = std::min<std::size_t>(a.nodes.size(), *p.count);
        std::copy(a.nodes.begin(), a.nodes.begin() + static_cast<std::ptrdiff_t>(n), p.nodes);
        *p.count = static_cast<DWORD>(n);
        *p.is_cycle = a.is_cycle ? TRUE : FALSE;
      }
      auto callback = callback_;
      lock.unlock();
      callback(p.session, p.context, a.status, p.count, p.nodes, p.is_cycle);
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<DWORD, Answer> answers_;
  std::deque<Pending> ready_;
  std::vector<Pending> held_;
  std::set<std::thread::id> callback_threads_;
  PWAITCHAINCALLBACK callback_ = nullptr;
  std::atomic<DWORD> open_error_{ERROR_SUCCESS};
  std::atomic<int> opened_{0};
  std::atomic<int> closed_{0};
  std::atomic<DWORD> last_flags_{0};
  bool stop_ = false;
  std::thread thread_;
};

inline constexpr DWORD kPid = 4242;

/// Two threads deadlocked on two critical sections, and an idle one.
inline void scriptAbba(ScriptedWct& wct) {
  wct.answer(11, {.nodes = {threadNode(kPid, 11, WctStatusBlocked, 5000, 7),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 12, WctStatusBlocked, 5000, 9),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 11, WctStatusBlocked, 5000, 7)},
                  .is_cycle = true});
  wct.answer(12, {.nodes = {threadNode(kPid, 12, WctStatusBlocked, 5000, 9),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 11, WctStatusBlocked, 5000, 7),
                            lockNode(WctCriticalSectionType, WctStatusOwned),
                            threadNode(kPid, 12, WctStatusBlocked, 5000, 9)},
                  .is_cycle = true});
  wct.answer(13, {.nodes = {threadNode(kPid, 13, WctStatusRunning)}});
}

inline ProcessThreads process(std::vector<DWORD> tids) {
  return ProcessThreads{Pid{static_cast<std::int32_t>(kPid)},
                        "demo.exe",
                        1234,
                        std::move(tids),
                        {"main", "", "worker-\xc3\xa9"},
                        {std::chrono::milliseconds(100), std::chrono::milliseconds(200),
                         std::chrono::milliseconds(300)}};
}

}  // namespace wctmon::windows_platform::scripted
