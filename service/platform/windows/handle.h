#pragma once

#include <windows.h>

namespace wctmon::windows_platform {

/// Owns one kernel handle and closes it once, when replaced or when it goes out of scope.
class Handle {
 public:
  Handle() = default;
  explicit Handle(HANDLE h) : h_(h) {}
  Handle(Handle&& other) noexcept : h_(other.h_) { other.h_ = nullptr; }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset(other.h_);
      other.h_ = nullptr;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  /// Neither null nor INVALID_HANDLE_VALUE (what CreateFile and CreateToolhelp32Snapshot fail
  /// with).
  [[nodiscard]] bool valid() const { return h_ != nullptr && h_ != INVALID_HANDLE_VALUE; }
  [[nodiscard]] HANDLE get() const { return h_; }
  void reset(HANDLE h = nullptr) {
    if (valid()) ::CloseHandle(h_);
    h_ = h;
  }

 private:
  HANDLE h_ = nullptr;
};

}  // namespace wctmon::windows_platform
