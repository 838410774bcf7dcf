#pragma once

#include <string>
#include <utility>
#include <variant>

namespace wctmon {

/// Why an operation failed, as a value the caller can act on.
enum class ErrorCode {
  kNoSuchProcess,
  kNoSuchThread,
  /// What was asked for (an incident, a target) does not exist.
  kNotFound,
  kAccessDenied,
  kInvalidArgument,
  kIo,
  /// What is stored is damaged: a file that is not what it must be (unreadable pages, a table of
  /// its schema missing).
  kDamaged,
  kUnsupported,
  /// Cancelled before it completed (a sample past its deadline).
  kCancelled,
  /// Refused because the previous operation on the same object has not ended yet.
  kBusy,
  kInternal,
};

/// A failure: a code to branch on and a one-line message for people.
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

/// Either a value or an error: an Error, or what a failure of its own kind says (every problem
/// of a configuration). Expected failures travel as values, never as exceptions.
template <typename T, typename E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(E error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  [[nodiscard]] const E& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, E> state_;
};

/// Success without a value.
using Status = Result<std::monostate>;

/// Builds an Error in one expression.
inline Error makeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

}  // namespace wctmon
