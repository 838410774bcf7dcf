#include "platform/linux/taskstats.h"

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

namespace wctmon::linux_platform {
namespace {

constexpr std::size_t align4(std::size_t n) { return (n + 3U) & ~std::size_t{3}; }

/// Builds one generic-netlink request: header, genl header, attributes.
class Request {
 public:
  Request(std::uint16_t type, std::uint8_t command, std::uint32_t sequence) {
    nlmsghdr header{};
    header.nlmsg_type = type;
    header.nlmsg_flags = NLM_F_REQUEST;
    header.nlmsg_seq = sequence;
    append(&header, sizeof(header));
    genlmsghdr genl{};
    genl.cmd = command;
    genl.version = 1;
    append(&genl, sizeof(genl));
  }

  void attribute(std::uint16_t type, const void* data, std::size_t size) {
    nlattr attr{};
    attr.nla_type = type;
    attr.nla_len = static_cast<std::uint16_t>(sizeof(nlattr) + size);
    append(&attr, sizeof(attr));
    append(data, size);
    bytes_.resize(align4(bytes_.size()));
  }

  [[nodiscard]] bool send(int fd) {
    const auto length = static_cast<std::uint32_t>(bytes_.size());
    std::memcpy(bytes_.data(), &length, sizeof(length));  // nlmsg_len comes first
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    return ::sendto(fd, bytes_.data(), bytes_.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                    sizeof(kernel)) == static_cast<ssize_t>(bytes_.size());
  }

 private:
  void append(const void* data, std::size_t size) {
    const auto* p = static_cast<const std::byte*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }
  std::vector<std::byte> bytes_;
};

/// Calls `visit(type, payload)` for each attribute in [begin, end) of `buf`.
template <typename Visit>
void forEachAttribute(std::string_view buf, Visit&& visit) {
  std::size_t offset = 0;
  while (offset + sizeof(nlattr) <= buf.size()) {
    nlattr attr{};
    std::memcpy(&attr, buf.data() + offset, sizeof(attr));
    if (attr.nla_len < sizeof(nlattr) || offset + attr.nla_len > buf.size()) return;
    visit(static_cast<std::uint16_t>(attr.nla_type & NLA_TYPE_MASK),
          buf.substr(offset + sizeof(nlattr), attr.nla_len - sizeof(nlattr)));
    offset += align4(attr.nla_len);
  }
}

/// Receives one reply and returns its attributes area, or an empty view on error.
std::string_view receive(int fd, std::array<char, 4096>& buf) {
  const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
  if (n < static_cast<ssize_t>(sizeof(nlmsghdr) + sizeof(genlmsghdr))) return {};
  nlmsghdr header{};
  std::memcpy(&header, buf.data(), sizeof(header));
  if (header.nlmsg_type == NLMSG_ERROR || header.nlmsg_len > static_cast<std::uint32_t>(n))
    return {};
  const std::size_t start = align4(sizeof(nlmsghdr)) + align4(sizeof(genlmsghdr));
  return std::string_view(buf.data() + start, header.nlmsg_len - start);
}

}  // namespace

TaskstatsClient::TaskstatsClient() {
  socket_ = UniqueFd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC));
  if (!socket_.valid()) return;
  timeval timeout{1, 0};
  ::setsockopt(socket_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  Request request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, ++sequence_);
  request.attribute(CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME));
  if (!request.send(socket_.get())) return;
  std::array<char, 4096> buf{};
  forEachAttribute(receive(socket_.get(), buf), [&](std::uint16_t type, std::string_view payload) {
    if (type == CTRL_ATTR_FAMILY_ID && payload.size() >= sizeof(std::uint16_t)) {
      std::memcpy(&family_, payload.data(), sizeof(family_));
    }
  });
  // One trial request tells whether we may ask (CAP_NET_ADMIN).
  if (family_ != 0 && !activity(Pid{static_cast<std::int32_t>(::getpid())})) family_ = 0;
}

std::optional<ProcessActivity> TaskstatsClient::activity(Pid pid) {
  std::lock_guard lock(mutex_);
  if (family_ == 0) return std::nullopt;
  Request request(family_, TASKSTATS_CMD_GET, ++sequence_);
  const auto tgid = static_cast<std::uint32_t>(pid.value);
  request.attribute(TASKSTATS_CMD_ATTR_TGID, &tgid, sizeof(tgid));
  if (!request.send(socket_.get())) return std::nullopt;
  std::array<char, 4096> buf{};
  std::optional<ProcessActivity> out;
  forEachAttribute(
      receive(socket_.get(), buf), [&](std::uint16_t type, std::string_view aggregate) {
        if (type != TASKSTATS_TYPE_AGGR_TGID) return;
        forEachAttribute(aggregate, [&](std::uint16_t inner, std::string_view payload) {
          // The kernel's struct only grows at its end: the fields read here are at the same place
          // in every version that has them.
          if (inner != TASKSTATS_TYPE_STATS || payload.size() < offsetof(taskstats, nivcsw) + 8)
            return;
          taskstats stats{};
          std::memcpy(&stats, payload.data(), std::min(payload.size(), sizeof(stats)));
          out = ProcessActivity{stats.nvcsw, stats.nivcsw, stats.ac_utime, stats.ac_stime};
        });
      });
  return out;
}

}  // namespace wctmon::linux_platform
