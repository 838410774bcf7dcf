// A NETLINK_SOCK_DIAG reply about a Unix socket: the peer at the other end of a socket a thread
// waits on (wctmon's source for what /proc/net/unix does not say).
#include <cstddef>
#include <span>

#include "fuzz/fuzz_input.h"
#include "platform/linux/fd_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wctmon::fuzz::FuzzInput input(data, size);
  const auto inode = input.take<std::uint32_t>();
  const auto reply = input.rest();
  static_cast<void>(wctmon::linux_platform::unixPeerFromReply(std::as_bytes(reply), inode));
  return 0;
}
