// SHA-256 of its own (FIPS 180-4), where no system library is used for it.
#include <algorithm>
#include <bit>
#include <cstring>

#include "os/sha256.h"

namespace wctmon {
namespace {

// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
constexpr std::array<std::uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t bigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

struct Sha256::State {
  // The first 32 bits of the fractional parts of the square roots of the first 8 primes.
  std::array<std::uint32_t, 8> h{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<std::uint8_t, 64> pending{};
  std::size_t pending_size = 0;
  std::uint64_t total_bytes = 0;

  void block(const std::uint8_t* p) {
    std::array<std::uint32_t, 64> w{};
    for (std::size_t i = 0; i < 16; ++i) w[i] = bigEndian32(p + 4 * i);
    for (std::size_t i = 16; i < 64; ++i) {
      const auto s0 = std::rotr(w[i - 15], 7) ^ std::rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const auto s1 = std::rotr(w[i - 2], 17) ^ std::rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, hh] = h;
    for (std::size_t i = 0; i < 64; ++i) {
      const auto s1 = std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25);
      const auto choose = (e & f) ^ (~e & g);
      const auto t1 = hh + s1 + choose + kRound[i] + w[i];
      const auto s0 = std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22);
      const auto majority = (a & b) ^ (a & c) ^ (b & c);
      const auto t2 = s0 + majority;
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    const std::array<std::uint32_t, 8> add{a, b, c, d, e, f, g, hh};
    for (std::size_t i = 0; i < 8; ++i) h[i] += add[i];
  }

  void update(const std::uint8_t* p, std::size_t n) {
    total_bytes += n;
    if (pending_size > 0) {
      const auto take = std::min(n, pending.size() - pending_size);
      std::memcpy(pending.data() + pending_size, p, take);
      pending_size += take;
      p += take;
      n -= take;
      if (pending_size < pending.size()) return;
      block(pending.data());
      pending_size = 0;
    }
    for (; n >= 64; p += 64, n -= 64) block(p);
    std::memcpy(pending.data(), p, n);
    pending_size = n;
  }
};

Sha256::Sha256() : state_(std::make_unique<State>()) {}
Sha256::~Sha256() = default;

void Sha256::update(std::span<const std::byte> bytes) {
  state_->update(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

std::array<std::uint8_t, 32> Sha256::finishBytes() {
  // The message, a 1 bit, zeros up to 56 bytes into a block, and the length in bits.
  const std::uint64_t bits = state_->total_bytes * 8;
  std::array<std::uint8_t, 72> tail{};
  tail[0] = 0x80;
  const std::size_t zeros = (state_->pending_size < 56 ? 56 : 120) - state_->pending_size;
  for (std::size_t i = 0; i < 8; ++i)
    tail[zeros + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
  state_->update(tail.data(), zeros + 8);
  std::array<std::uint8_t, 32> out{};
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t k = 0; k < 4; ++k) {
      out[4 * i + k] = static_cast<std::uint8_t>(state_->h[i] >> (24 - 8 * k));
    }
  }
  return out;
}

}  // namespace wctmon
