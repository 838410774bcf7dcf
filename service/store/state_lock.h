#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "model/result.h"

namespace wctmon {

/// One service per state directory: two would both write the store, and one deadlock would
/// become two incidents. The lock is the file wctmon.lock in the directory, held (flock on POSIX,
/// an open that shares only reading on Windows) for as long as this object lives or, when the
/// process dies, until the system closes it; it holds the holder's pid for the next one's error.
/// One implementation per platform, chosen by CMake (state_lock_posix.cpp, state_lock_windows.cpp).
class StateLock {
 public:
  /// Takes the lock of `dir` for this process. The error (kBusy) names the directory and the
  /// pid of the service that holds it.
  [[nodiscard]] static Result<std::unique_ptr<StateLock>> acquire(const std::filesystem::path& dir);

  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  explicit StateLock(std::intptr_t handle) : handle_(handle) {}
  std::intptr_t handle_;  // the descriptor or HANDLE of the open lock file
};

/// The lock file's name in the state directory.
inline constexpr const char* kStateLockFile = "wctmon.lock";

}  // namespace wctmon
