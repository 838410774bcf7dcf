#include "api/http2_guard.h"

#include <algorithm>

namespace wctmon::api {
namespace {

constexpr std::uint8_t kHeadersFrame = 0x1;
constexpr std::uint8_t kRstStreamFrame = 0x3;

}  // namespace

RefillingBudget::RefillingBudget(double ceiling, double per_second)
    : ceiling_(ceiling), per_second_(per_second), left_(ceiling) {}

void RefillingBudget::refill(Clock::time_point now) {
  if (last_ != Clock::time_point{} && now > last_) {
    left_ = std::min(ceiling_,
                     left_ + std::chrono::duration<double>(now - last_).count() * per_second_);
  }
  last_ = std::max(last_, now);
}

bool RefillingBudget::take(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  refill(now);
  if (left_ < 1) return false;
  left_ -= 1;
  return true;
}

std::optional<RefillingBudget::Clock::duration> RefillingBudget::spend(double units,
                                                                       Clock::time_point now,
                                                                       Clock::duration most) {
  std::lock_guard lock(mutex_);
  refill(now);
  const double debt = std::max(0.0, units - left_);
  const auto wait = std::chrono::duration<double>(debt / per_second_);
  if (wait > most) return std::nullopt;
  left_ -= units;
  return std::chrono::duration_cast<Clock::duration>(wait);
}

Http2Guard::Http2Guard(double ceiling, double per_second) : budget_(ceiling, per_second) {}

Http2Guard::Verdict Http2Guard::feed(std::span<const std::byte> bytes, Clock::time_point now) {
  std::size_t at = 0;
  while (verdict_ == Verdict::kOk && at < bytes.size()) {
    if (preface_read_ < kPreface.size()) {
      if (static_cast<char>(bytes[at]) != kPreface[preface_read_]) {
        verdict_ = Verdict::kNotHttp2;
        break;
      }
      ++preface_read_;
      ++at;
    } else if (payload_left_ > 0) {
      const auto skip = std::min<std::uint64_t>(payload_left_, bytes.size() - at);
      payload_left_ -= skip;
      at += static_cast<std::size_t>(skip);
    } else {
      header_[header_read_++] = static_cast<std::uint8_t>(bytes[at++]);
      if (header_read_ == header_.size()) {
        header_read_ = 0;
        frame(now);
      }
    }
  }
  return verdict_;
}

void Http2Guard::frame(Clock::time_point now) {
  payload_left_ = (std::uint64_t{header_[0]} << 16) | (std::uint64_t{header_[1]} << 8) |
                  std::uint64_t{header_[2]};
  const std::uint8_t type = header_[3];
  const std::uint32_t stream =
      ((std::uint32_t{header_[5]} << 24) | (std::uint32_t{header_[6]} << 16) |
       (std::uint32_t{header_[7]} << 8) | std::uint32_t{header_[8]}) &
      0x7fffffffU;
  if (type == kHeadersFrame && stream > last_stream_) {
    last_stream_ = stream;
    ++streams_;
  } else if (type == kRstStreamFrame) {
    ++resets_;
    ++new_resets_;
    if (!budget_.take(now)) verdict_ = Verdict::kRapidReset;
  }
}

}  // namespace wctmon::api
