#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "model/result.h"
#include "os/unique_fd.h"

namespace wctmon::linux_platform {

/// A user and group to make a request to another process as.
struct Credentials {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
};

/// Takes `credentials` for the calling thread only (the raw system calls, not glibc's, which
/// would change every thread of the process); `whose` names them in the error ("the JVM's").
[[nodiscard]] std::optional<Error> becomeInThisThread(const Credentials& credentials,
                                                      std::string_view whose);

/// Runs `work` in a thread of its own that has taken `credentials` first: a Unix socket peer sees
/// them (SO_PEERCRED), and they die with the thread.
template <typename T>
[[nodiscard]] Result<T> runAs(const Credentials& credentials, std::string_view whose,
                              const std::function<Result<T>()>& work) {
  std::optional<Result<T>> result;
  std::thread worker([&] {
    if (auto refused = becomeInThisThread(credentials, whose)) {
      result.emplace(std::move(*refused));
    } else {
      result.emplace(work());
    }
  });
  worker.join();
  return std::move(*result);
}

/// A connected, non-blocking Unix stream socket whose every step ends by one deadline.
class UnixStream {
 public:
  using Clock = std::chrono::steady_clock;

  /// Connects to the socket at `path`; `peer` names the other end in errors ("the JVM's attach
  /// socket").
  [[nodiscard]] static Result<UnixStream> connect(const std::string& path, std::string_view peer,
                                                  Clock::time_point deadline);

  /// Sends all of `bytes`; fails when the peer does not take them by the deadline.
  [[nodiscard]] std::optional<Error> sendAll(std::string_view bytes);
  /// Appends what arrives to `out`, waiting for it up to the deadline: false at the end of the
  /// stream, an error when nothing came in time.
  [[nodiscard]] Result<bool> receive(std::string& out);

 private:
  UnixStream(UniqueFd fd, std::string peer, Clock::time_point deadline)
      : fd_(std::move(fd)), peer_(std::move(peer)), deadline_(deadline) {}
  /// Milliseconds left until the deadline, for poll.
  [[nodiscard]] int remaining() const;

  UniqueFd fd_;
  std::string peer_;
  Clock::time_point deadline_;
};

}  // namespace wctmon::linux_platform
