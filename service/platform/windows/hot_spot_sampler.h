#pragma once

#include <atomic>
#include <chrono>
#include <functional>

#include "core/ports/hot_spot_sampler.h"
#include "core/profile_queue.h"

namespace wctmon::windows_platform {

/// Where a running thread of another process spends its time, sampled by holding it for a
/// register read: at kInterval, the thread is suspended (through RecordedSuspension, so that
/// no death of this process leaves it suspended), its instruction pointer read
/// (GetThreadContext with CONTEXT_CONTROL, Wow64GetThreadContext for a 32-bit process) and it
/// is resumed at once. Windows has no other way to read where a running thread is: perf's
/// per-thread sampling has no user-mode counterpart there, and the kernel's (ETW's stack
/// sampling) needs a system-wide trace session, which Wine does not have. The hold is a few
/// microseconds per sample; nothing is allocated or named while the thread is held (the
/// addresses are named afterwards, by DbgHelp's symbols, else the module's exports, else
/// "module+0xOFFSET" with the offset rounded down to its 4 KiB page). A sample finds the thread
/// wherever it is, running or waiting (a busy thread, the one profiled, mostly runs); one that
/// someone else holds suspended is not counted. The profiles run one after the other
/// (core/profile_queue.h).
class SuspendingHotSpotSampler final : public HotSpotSampler {
 public:
  /// About 100 samples a second (Windows's default timer makes it about 64 there; Wine's
  /// sleeps are exact).
  static constexpr std::chrono::milliseconds kInterval{10};

  void asyncProfile(ThreadRef thread, std::chrono::milliseconds window,
                    std::function<void(Result<ThreadProfile>)> done) override;

  /// Profiles `thread` now, on the calling thread; gives up (kCancelled) once `stop` is set.
  /// Fails with kNoSuchThread when the thread is gone or exits during the profile.
  [[nodiscard]] static Result<ThreadProfile> profile(ThreadRef thread,
                                                     std::chrono::milliseconds window,
                                                     const std::atomic<bool>& stop);

 private:
  ProfileQueue queue_{&SuspendingHotSpotSampler::profile};
};

}  // namespace wctmon::windows_platform
