#include "os/sha256.h"

#include <fstream>
#include <vector>

namespace wctmon {

std::string Sha256::finishHex() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (const auto byte : finishBytes()) {
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

std::optional<std::string> fileSha256(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Sha256 digest;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    digest.update(std::as_bytes(std::span(buffer.data(), got)));
  }
  if (in.bad()) return std::nullopt;
  return digest.finishHex();
}

}  // namespace wctmon
