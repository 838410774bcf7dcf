#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace wctmon {

/// A process identifier, distinct from a thread identifier at compile time.
struct Pid {
  std::int32_t value = 0;
  friend auto operator<=>(const Pid&, const Pid&) = default;
};

/// A thread identifier (on Linux the kernel TID, on Windows the thread id).
struct Tid {
  std::int32_t value = 0;
  friend auto operator<=>(const Tid&, const Tid&) = default;
};

/// A thread named by its process and its own id.
struct ThreadRef {
  Pid pid;
  Tid tid;
  friend auto operator<=>(const ThreadRef&, const ThreadRef&) = default;
};

}  // namespace wctmon

template <>
struct std::hash<wctmon::Pid> {
  std::size_t operator()(wctmon::Pid p) const noexcept {
    return std::hash<std::int32_t>{}(p.value);
  }
};

template <>
struct std::hash<wctmon::Tid> {
  std::size_t operator()(wctmon::Tid t) const noexcept {
    return std::hash<std::int32_t>{}(t.value);
  }
};

template <>
struct std::hash<wctmon::ThreadRef> {
  std::size_t operator()(const wctmon::ThreadRef& r) const noexcept {
    return (static_cast<std::size_t>(static_cast<std::uint32_t>(r.pid.value)) << 32) ^
           static_cast<std::uint32_t>(r.tid.value);
  }
};
