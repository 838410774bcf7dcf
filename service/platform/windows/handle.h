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

/// Owns one handle of the service control manager (OpenSCManager, OpenService, CreateService)
/// and closes it once: SC_HANDLEs are closed by CloseServiceHandle, not CloseHandle.
class ServiceHandle {
 public:
  ServiceHandle() = default;
  explicit ServiceHandle(SC_HANDLE h) : h_(h) {}
  ServiceHandle(ServiceHandle&& other) noexcept : h_(other.h_) { other.h_ = nullptr; }
  ServiceHandle& operator=(ServiceHandle&& other) noexcept {
    if (this != &other) {
      reset(other.h_);
      other.h_ = nullptr;
    }
    return *this;
  }
  ServiceHandle(const ServiceHandle&) = delete;
  ServiceHandle& operator=(const ServiceHandle&) = delete;
  ~ServiceHandle() { reset(); }

  [[nodiscard]] bool valid() const { return h_ != nullptr; }
  [[nodiscard]] SC_HANDLE get() const { return h_; }
  void reset(SC_HANDLE h = nullptr) {
    if (h_ != nullptr) ::CloseServiceHandle(h_);
    h_ = h;
  }

 private:
  SC_HANDLE h_ = nullptr;
};

}  // namespace wctmon::windows_platform
