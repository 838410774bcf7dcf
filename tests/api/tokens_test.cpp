// Bearer tokens of the API's two roles: made when missing (mode 0600, 256 random bits), read
// back, compared, and what each role may call.
#include "api/tokens.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "support/temp_dir.h"

namespace wctmon::api {
namespace {

TEST(Tokens, AMissingFileIsMadeWithARandomTokenOnlyItsOwnerCanRead) {
  testing::TempDir dir("tokens");
  const auto file = dir / "admin.token";
  auto made = readOrMakeToken(file);
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(made->size(), 64U);
  EXPECT_EQ(made->find_first_not_of("0123456789abcdef"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  EXPECT_EQ(st.st_uid, ::geteuid());
  // Read back, the same; another file gets another token.
  EXPECT_EQ(*readOrMakeToken(file), *made);
  EXPECT_NE(*readOrMakeToken(dir / "reader.token"), *made);
}

/// A token file as an operator writes one: theirs (the service's account here), mode 0600.
void writeToken(const std::filesystem::path& file, const std::string& content) {
  std::ofstream(file) << content;
  std::filesystem::permissions(file, std::filesystem::perms(0600));
}

TEST(Tokens, AWrittenTokenIsReadWithoutItsWhitespaceAndAnEmptyFileIsRefused) {
  testing::TempDir dir("tokens");
  writeToken(dir / "mine.token", "  s3cret-value\n");
  EXPECT_EQ(*readOrMakeToken(dir / "mine.token"), "s3cret-value");
  writeToken(dir / "empty.token", "\n");
  const auto empty = readOrMakeToken(dir / "empty.token");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("empty.token is empty"), std::string::npos);
  const auto nowhere = readOrMakeToken(dir / "no" / "such" / "dir.token");
  ASSERT_FALSE(nowhere);
  EXPECT_NE(nowhere.error().message.find("cannot create it: No such file or directory"),
            std::string::npos)
      << nowhere.error().message;
}

TEST(Tokens, OneTokenForBothRolesIsRefused) {
  testing::TempDir dir("tokens");
  writeToken(dir / "a.token", "same\n");
  writeToken(dir / "r.token", "same\n");
  const auto loaded = Tokens::load(dir / "a.token", dir / "r.token");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("hold the same token"), std::string::npos);
}

TEST(Tokens, EachRoleCallsWhatItMayAndNoTokenNothing) {
  const Tokens tokens("admin-secret", "reader-secret");
  EXPECT_EQ(tokens.roleOf("admin-secret"), Role::kAdmin);
  EXPECT_EQ(tokens.roleOf("reader-secret"), Role::kReader);
  EXPECT_EQ(tokens.roleOf("admin-secre"), std::nullopt);
  EXPECT_EQ(tokens.roleOf("admin-secretX"), std::nullopt);
  EXPECT_EQ(tokens.roleOf(""), std::nullopt);

  EXPECT_EQ(tokens.check("Bearer admin-secret", Role::kAdmin), Refusal::kNone);
  EXPECT_EQ(tokens.check("Bearer admin-secret", Role::kReader), Refusal::kNone);
  EXPECT_EQ(tokens.check("Bearer reader-secret", Role::kReader), Refusal::kNone);
  EXPECT_EQ(tokens.check("Bearer reader-secret", Role::kAdmin), Refusal::kPermissionDenied);
  EXPECT_EQ(tokens.check("Bearer wrong", Role::kReader), Refusal::kUnauthenticated);
  EXPECT_EQ(tokens.check("admin-secret", Role::kReader), Refusal::kUnauthenticated);
  EXPECT_EQ(tokens.check("Basic admin-secret", Role::kReader), Refusal::kUnauthenticated);
  EXPECT_EQ(tokens.check(std::nullopt, Role::kReader), Refusal::kUnauthenticated);
}

}  // namespace
}  // namespace wctmon::api
