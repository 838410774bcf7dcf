// What the API's own listeners read of a client's HTTP/2: the preface, frame headers split
// anywhere, streams opened and cancelled, and the budgets that bound the cancellations.
#include "api/http2_guard.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wctmon::api {
namespace {

using namespace std::chrono_literals;
using Clock = Http2Guard::Clock;
using Verdict = Http2Guard::Verdict;

std::string frame(std::uint8_t type, std::uint32_t stream, const std::string& payload = "") {
  std::string out;
  const auto length = payload.size();
  out += static_cast<char>((length >> 16) & 0xff);
  out += static_cast<char>((length >> 8) & 0xff);
  out += static_cast<char>(length & 0xff);
  out += static_cast<char>(type);
  out += '\0';  // flags
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((stream >> shift) & 0xff);
  return out + payload;
}

std::string headers(std::uint32_t stream) { return frame(0x1, stream, std::string(30, 'h')); }
std::string reset(std::uint32_t stream) { return frame(0x3, stream, std::string(4, '\0')); }

Verdict feed(Http2Guard& guard, const std::string& bytes, Clock::time_point now) {
  return guard.feed(std::as_bytes(std::span(bytes.data(), bytes.size())), now);
}

TEST(Http2Guard, ACallerThatSpeaksHttp2IsLetThroughByteByByteAsWhole) {
  const auto now = Clock::now();
  const std::string bytes = std::string(Http2Guard::kPreface) + frame(0x4, 0) + headers(1) +
                            frame(0x0, 1, std::string(70000, 'd')) + headers(3) + reset(3) +
                            headers(5);
  Http2Guard whole(10, 1);
  EXPECT_EQ(feed(whole, bytes, now), Verdict::kOk);
  Http2Guard bytewise(10, 1);
  for (char c : bytes) ASSERT_EQ(feed(bytewise, std::string(1, c), now), Verdict::kOk);
  for (const auto* guard : {&whole, &bytewise}) {
    EXPECT_TRUE(guard->prefaceDone());
    EXPECT_EQ(guard->streams(), 3U);
    EXPECT_EQ(guard->resets(), 1U);
  }
  EXPECT_EQ(whole.takeNewResets(), 1U);
  EXPECT_EQ(whole.takeNewResets(), 0U);
}

TEST(Http2Guard, BytesThatAreNotHttp2AreRefusedForGood) {
  const auto now = Clock::now();
  Http2Guard http1(10, 1);
  EXPECT_EQ(feed(http1, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", now), Verdict::kNotHttp2);
  EXPECT_EQ(feed(http1, std::string(Http2Guard::kPreface), now), Verdict::kNotHttp2);
  Http2Guard late(10, 1);
  const std::string preface(Http2Guard::kPreface);
  EXPECT_EQ(feed(late, preface.substr(0, 10), now), Verdict::kOk);
  EXPECT_FALSE(late.prefaceDone());
  EXPECT_EQ(feed(late, "X", now), Verdict::kNotHttp2);
}

TEST(Http2Guard, StreamsCancelledFasterThanTheBudgetCloseTheConnection) {
  auto now = Clock::now();
  Http2Guard guard(3, 2);  // 3 at once, then 2 a second
  std::string bytes(Http2Guard::kPreface);
  for (std::uint32_t s = 1; s <= 5; s += 2) bytes += headers(s) + reset(s);
  EXPECT_EQ(feed(guard, bytes, now), Verdict::kOk);
  // One more now is one too many; a second later, two more are fine.
  Http2Guard patient(3, 2);
  EXPECT_EQ(feed(patient, bytes, now), Verdict::kOk);
  now += 1s;
  EXPECT_EQ(feed(patient, headers(7) + reset(7) + headers(9) + reset(9), now), Verdict::kOk);
  EXPECT_EQ(feed(patient, headers(11) + reset(11), now), Verdict::kRapidReset);
  EXPECT_EQ(feed(guard, headers(7) + reset(7), now - 1s), Verdict::kRapidReset);
  EXPECT_EQ(feed(guard, headers(9), now + 10s), Verdict::kRapidReset);  // for good
}

TEST(Http2Guard, OnlyNewStreamsCountAndAFrameLengthIsSkippedWhole) {
  const auto now = Clock::now();
  Http2Guard guard(10, 1);
  // HEADERS again on stream 1 (trailers) is no new stream; a payload that looks like frames is
  // payload.
  const std::string fake = reset(1) + reset(3);
  const std::string bytes = std::string(Http2Guard::kPreface) + headers(1) + headers(1) +
                            frame(0x0, 1, fake) + headers(3);
  EXPECT_EQ(feed(guard, bytes, now), Verdict::kOk);
  EXPECT_EQ(guard.streams(), 2U);
  EXPECT_EQ(guard.resets(), 0U);
}

TEST(RefillingBudget, TakesWhatIsLeftAndRefillsAtItsRateUpToItsCeiling) {
  auto now = Clock::now();
  RefillingBudget budget(2, 10);
  EXPECT_TRUE(budget.take(now));
  EXPECT_TRUE(budget.take(now));
  EXPECT_FALSE(budget.take(now));
  now += 100ms;  // one more
  EXPECT_TRUE(budget.take(now));
  EXPECT_FALSE(budget.take(now));
  now += 1h;  // no more than the ceiling
  EXPECT_TRUE(budget.take(now));
  EXPECT_TRUE(budget.take(now));
  EXPECT_FALSE(budget.take(now));
  // A clock read late by another thread takes nothing back.
  EXPECT_FALSE(budget.take(now - 1s));
}

TEST(RefillingBudget, SpendingPastItIsADebtToWaitForAndTooLongAWaitIsRefused) {
  const auto now = Clock::now();
  RefillingBudget budget(10, 100);
  EXPECT_EQ(budget.spend(10, now, 1s), Clock::duration::zero());
  const auto wait = budget.spend(50, now, 1s);  // 50 owed at 100 a second
  ASSERT_TRUE(wait.has_value());
  EXPECT_NEAR(std::chrono::duration<double>(*wait).count(), 0.5, 1e-6);
  EXPECT_FALSE(budget.spend(60, now, 1s).has_value());   // 110 owed: more than 1 s
  const auto after = budget.spend(10, now + 500ms, 1s);  // the debt repaid, 10 more owed
  ASSERT_TRUE(after.has_value());
  EXPECT_NEAR(std::chrono::duration<double>(*after).count(), 0.1, 1e-6);
}

}  // namespace
}  // namespace wctmon::api
