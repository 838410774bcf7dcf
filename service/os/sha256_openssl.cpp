// SHA-256 by libcrypto, which uses the CPU's SHA instructions where it has them.
#include <openssl/evp.h>

#include <new>

#include "os/sha256.h"

namespace wctmon {

struct Sha256::State {
  State() : context(EVP_MD_CTX_new()) {
    if (context == nullptr || EVP_DigestInit_ex(context, EVP_sha256(), nullptr) != 1) {
      EVP_MD_CTX_free(context);
      throw std::bad_alloc();
    }
  }
  ~State() { EVP_MD_CTX_free(context); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  EVP_MD_CTX* context;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {}
Sha256::~Sha256() = default;

void Sha256::update(std::span<const std::byte> bytes) {
  (void)EVP_DigestUpdate(state_->context, bytes.data(), bytes.size());
}

std::array<std::uint8_t, 32> Sha256::finishBytes() {
  std::array<std::uint8_t, 32> out{};
  unsigned int size = 0;
  (void)EVP_DigestFinal_ex(state_->context, out.data(), &size);
  return out;
}

}  // namespace wctmon
