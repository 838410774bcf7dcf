// Listen addresses as the configuration writes them: Unix socket paths, IPv4 and bracketed IPv6
// literals with a port, what is refused, and which of them only this machine reaches.
#include "core/listen_address.h"

#include <gtest/gtest.h>

#include <string>

namespace wctmon {
namespace {

TEST(ListenAddress, UnixPathsAndIpLiteralsParseAndOnlyLoopbackIsLocal) {
  auto a = parseListenAddress("unix:/run/wctmon/api.sock");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->isUnix());
  EXPECT_EQ(a->unix_path, "/run/wctmon/api.sock");
  a = parseListenAddress("[::1]:7787");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 7787);
  EXPECT_TRUE(a->isLocal());
  EXPECT_FALSE(parseListenAddress("[::2]:1")->isLocal());
  EXPECT_FALSE(parseListenAddress("128.0.0.1:1")->isLocal());
  EXPECT_FALSE(parseListenAddress("[1::2::3]:1"));
  EXPECT_FALSE(parseListenAddress("256.0.0.1:1"));
  EXPECT_FALSE(parseListenAddress("unix:/" + std::string(200, 'x')));
  const auto bad = parseListenAddress("localhost:7787");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message,
            "\"localhost:7787\": the host must be an IP address (an IPv6 one in brackets) "
            "(expected \"unix:/PATH\", \"IPV4:PORT\" or \"[IPV6]:PORT\")");
}

}  // namespace
}  // namespace wctmon
