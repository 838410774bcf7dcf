// Listen addresses as the configuration writes them: Unix socket paths, IPv4 and bracketed IPv6
// literals with a port, what is refused, and which of them only this machine reaches.
#include "core/listen_address.h"

#include <gtest/gtest.h>

#include <string>

namespace wctmon {
namespace {

TEST(ListenAddress, UnixPathsAndIpLiteralsParseAndOnlyLoopbackIsLocal) {
  std::string why;
  auto a = parseListenAddress("unix:/run/wctmon/api.sock", why);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->isUnix());
  EXPECT_EQ(a->unix_path, "/run/wctmon/api.sock");
  a = parseListenAddress("[::1]:7787", why);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 7787);
  EXPECT_TRUE(a->isLocal());
  EXPECT_FALSE(parseListenAddress("[::2]:1", why)->isLocal());
  EXPECT_FALSE(parseListenAddress("128.0.0.1:1", why)->isLocal());
  EXPECT_FALSE(parseListenAddress("[1::2::3]:1", why));
  EXPECT_FALSE(parseListenAddress("256.0.0.1:1", why));
  EXPECT_FALSE(parseListenAddress("unix:/" + std::string(200, 'x'), why));
}

}  // namespace
}  // namespace wctmon
