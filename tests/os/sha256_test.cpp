#include "os/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "support/temp_dir.h"

namespace wctmon {
namespace {

std::string digestOf(const std::string& text, std::size_t piece = 0) {
  Sha256 d;
  const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
  if (piece == 0) {
    d.update(bytes);
  } else {
    for (std::size_t at = 0; at < bytes.size(); at += piece) {
      d.update(bytes.subspan(at, std::min(piece, bytes.size() - at)));
    }
  }
  return d.finishHex();
}

TEST(Sha256, TheStandardsExamples) {
  // FIPS 180-4's examples (NIST's "SHA256.pdf" and "SHA2_Additional.pdf").
  EXPECT_EQ(digestOf(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digestOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digestOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(digestOf(std::string(1000000, 'a'), 4093),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesOfAnySizeGiveTheDigestOfTheWhole) {
  std::mt19937 random(7);
  for (const std::size_t size : {55U, 56U, 63U, 64U, 65U, 119U, 120U, 128U, 1000U}) {
    std::string text(size, '\0');
    for (auto& c : text) c = static_cast<char>(random());
    const auto whole = digestOf(text);
    for (const std::size_t piece : {1U, 3U, 63U, 64U, 65U}) {
      EXPECT_EQ(digestOf(text, piece), whole) << size << " in pieces of " << piece;
    }
  }
}

TEST(Sha256, AFilesDigestIsWhatSha256sumSays) {
  testing::TempDir dir("sha256");
  const auto path = dir / "data";
  {
    std::mt19937 random(11);
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 3 * 1024 * 1024 + 17; ++i) out.put(static_cast<char>(random()));
  }
  std::string expected(64, '\0');
  FILE* p = ::popen(("sha256sum " + path.string()).c_str(), "r");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(std::fread(expected.data(), 1, expected.size(), p), expected.size());
  ::pclose(p);
  EXPECT_EQ(fileSha256(path), expected);
  EXPECT_EQ(fileSha256(dir / "missing"), std::nullopt);
}

}  // namespace
}  // namespace wctmon
