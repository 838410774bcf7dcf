#pragma once

// The bytes of one fuzz input, taken apart into the values a target needs: numbers from the
// front, the rest as text or bytes. Running out is never an error: what is missing reads as 0 or
// empty, so every input is a valid run.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace wctmon::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : rest_(data, size) {}

  /// A value of `T` from the next sizeof(T) bytes (zero-filled when fewer are left).
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  [[nodiscard]] T take() {
    T value{};
    const std::size_t n = std::min(sizeof(T), rest_.size());
    std::memcpy(&value, rest_.data(), n);
    rest_ = rest_.subspan(n);
    return value;
  }

  /// A number in [0, bound) (0 when bound is 0).
  [[nodiscard]] std::size_t below(std::size_t bound) {
    return bound == 0 ? 0 : take<std::uint32_t>() % bound;
  }

  [[nodiscard]] bool flag() { return (take<std::uint8_t>() & 1U) != 0; }

  /// Up to `max` bytes, their count taken first.
  [[nodiscard]] std::span<const std::uint8_t> bytes(std::size_t max) {
    const std::size_t n = std::min({below(max + 1), rest_.size()});
    auto out = rest_.first(n);
    rest_ = rest_.subspan(n);
    return out;
  }

  /// Up to `max` bytes as text.
  [[nodiscard]] std::string text(std::size_t max) {
    const auto b = bytes(max);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

  /// Whatever is left, as text.
  [[nodiscard]] std::string_view restAsText() const {
    return {reinterpret_cast<const char*>(rest_.data()), rest_.size()};
  }
  [[nodiscard]] std::span<const std::uint8_t> rest() const { return rest_; }
  [[nodiscard]] bool empty() const { return rest_.empty(); }

 private:
  std::span<const std::uint8_t> rest_;
};

/// The whole input as text.
[[nodiscard]] inline std::string_view asText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A broken invariant: prints it and aborts, so that libFuzzer keeps the input and the replay
/// test fails.
[[noreturn]] void fail(const char* what, const char* file, int line);

}  // namespace wctmon::fuzz

/// Checks an invariant of a target's result, in every build (unlike assert).
#define WCTMON_FUZZ_CHECK(condition) \
  ((condition) ? static_cast<void>(0) : ::wctmon::fuzz::fail(#condition, __FILE__, __LINE__))

namespace wctmon::fuzz {}  // namespace wctmon::fuzz

/// Every fuzz target defines this (libFuzzer's entry point).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
