#include "core/glob.h"

#include <gtest/gtest.h>

namespace wctmon {
namespace {

TEST(Glob, Basics) {
  EXPECT_TRUE(globMatch("postgres", "postgres"));
  EXPECT_FALSE(globMatch("postgres", "postgres2"));
  EXPECT_TRUE(globMatch("post*", "postgres"));
  EXPECT_TRUE(globMatch("*gres", "postgres"));
  EXPECT_TRUE(globMatch("p*s*s", "postgres"));
  EXPECT_FALSE(globMatch("p*x", "postgres"));
  EXPECT_TRUE(globMatch("*", ""));
  EXPECT_TRUE(globMatch("", ""));
  EXPECT_FALSE(globMatch("", "a"));
  EXPECT_TRUE(globMatch("java?", "java8"));
  EXPECT_FALSE(globMatch("java?", "java"));
  EXPECT_TRUE(globMatch("worker-[0-9]", "worker-7"));
  EXPECT_FALSE(globMatch("worker-[0-9]", "worker-x"));
  EXPECT_TRUE(globMatch("worker-[!0-9]", "worker-x"));
  EXPECT_TRUE(globMatch("[ab]*", "bash"));
  EXPECT_TRUE(globMatch("a[", "a["));  // an unclosed bracket is a literal
  EXPECT_TRUE(globMatch("**a", "bba"));
  EXPECT_TRUE(isGlob("a*"));
  EXPECT_FALSE(isGlob("nginx"));
}

}  // namespace
}  // namespace wctmon
