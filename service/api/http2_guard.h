#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace wctmon::api {

/// A budget that refills at a steady rate up to a ceiling. Thread-safe, so that one budget can be
/// shared by every connection.
class RefillingBudget {
 public:
  using Clock = std::chrono::steady_clock;
  RefillingBudget(double ceiling, double per_second);
  /// Spends one unit when there is one.
  [[nodiscard]] bool take(Clock::time_point now);
  /// Spends `units` even beyond what is left, as a debt repaid at the refill rate: how long the
  /// spender should wait before going on. Refused (nullopt, nothing spent) when the debt would
  /// take longer than `most` to repay.
  [[nodiscard]] std::optional<Clock::duration> spend(double units, Clock::time_point now,
                                                     Clock::duration most);

 private:
  void refill(Clock::time_point now);

  std::mutex mutex_;
  double ceiling_;
  double per_second_;
  double left_;
  Clock::time_point last_{};
};

/// Reads what a client sends on an HTTP/2 connection, frame header by frame header (the payloads
/// are skipped, never decoded), and says when the connection must be closed:
///  - it does not open with the HTTP/2 client preface (random bytes, an HTTP/1.1 request);
///  - it cancels streams (RST_STREAM) faster than its budget allows: the "rapid reset" of
///    CVE-2023-44487, which the gRPC of Debian 12 (1.51) does not bound. Each cancelled stream
///    costs the server a call it may not even have started: cancelled in a loop, they starve
///    every other client and pile up in memory.
/// It also counts the cancellations since it was last asked, for a budget all connections share.
class Http2Guard {
 public:
  using Clock = RefillingBudget::Clock;
  enum class Verdict { kOk, kNotHttp2, kRapidReset };

  Http2Guard(double ceiling, double per_second);

  /// Takes the next bytes the client sent. Once a verdict other than kOk is given, it stays.
  Verdict feed(std::span<const std::byte> bytes, Clock::time_point now);
  /// The cancellations read since the last call.
  [[nodiscard]] std::uint64_t takeNewResets() { return std::exchange(new_resets_, 0); }

  /// Whether the client preface has been read in full.
  [[nodiscard]] bool prefaceDone() const { return preface_read_ == kPreface.size(); }
  [[nodiscard]] std::uint64_t streams() const { return streams_; }
  [[nodiscard]] std::uint64_t resets() const { return resets_; }

  static constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

 private:
  void frame(Clock::time_point now);

  RefillingBudget budget_;
  Verdict verdict_ = Verdict::kOk;
  std::size_t preface_read_ = 0;
  std::array<std::uint8_t, 9> header_{};
  std::size_t header_read_ = 0;
  std::uint64_t payload_left_ = 0;
  std::uint32_t last_stream_ = 0;
  std::uint64_t streams_ = 0;
  std::uint64_t resets_ = 0;
  std::uint64_t new_resets_ = 0;
};

}  // namespace wctmon::api
