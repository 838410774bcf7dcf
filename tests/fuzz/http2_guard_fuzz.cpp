// What a client sends to the API's own listeners, read frame header by frame header: the first
// byte picks where the bytes are cut into reads, the rest are the bytes. However they are cut,
// the guard must come to the same verdict and counts, and stay within what it was given.
#include <cstddef>
#include <span>

#include "api/http2_guard.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using wctmon::api::Http2Guard;
  wctmon::fuzz::FuzzInput in(data, size);
  const std::size_t cut = in.take<std::uint8_t>() % 32 + 1;
  const auto bytes = std::as_bytes(in.rest());
  const auto now = Http2Guard::Clock::now();
  Http2Guard whole(100, 1);
  Http2Guard pieces(100, 1);
  const auto verdict = whole.feed(bytes, now);
  auto last = Http2Guard::Verdict::kOk;
  for (std::size_t at = 0; at < bytes.size(); at += cut) {
    last = pieces.feed(bytes.subspan(at, std::min(cut, bytes.size() - at)), now);
  }
  WCTMON_FUZZ_CHECK(last == verdict);
  WCTMON_FUZZ_CHECK(whole.streams() == pieces.streams());
  WCTMON_FUZZ_CHECK(whole.resets() == pieces.resets());
  WCTMON_FUZZ_CHECK(whole.resets() <= bytes.size() / 9);
  WCTMON_FUZZ_CHECK(whole.streams() <= bytes.size() / 9);
  WCTMON_FUZZ_CHECK(verdict != Http2Guard::Verdict::kRapidReset || whole.resets() > 100);
  return 0;
}
