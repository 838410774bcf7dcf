// Who may use the API on the machine (api.group): the socket and the reader token given to the
// group, the admin token root's alone; wctctl run by a member of the group with no token flag;
// wctctl sending only the token of the service it talks to, never another one's.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/api_service.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/wctctl_status.h"

namespace wctmon {
namespace {

using testing::ApiService;
using testing::CommandResult;
using testing::readFile;
using testing::runCommand;

using namespace testing::wctctl_status;

/// A group every Debian system has and whose only user is unprivileged: the tests need no group
/// of their own, and add none to the machine.
constexpr const char* kGroup = "nogroup";
constexpr const char* kNobody = "65534";

/// The mode bits (permissions) and owner of `path`, not following a link.
struct stat statOf(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

gid_t gidOf(const char* name) {
  const group* g = ::getgrnam(name);
  EXPECT_NE(g, nullptr) << name;
  return g != nullptr ? g->gr_gid : static_cast<gid_t>(-1);
}

/// A copy of wctctl that any user can run, whatever the permissions of the build tree.
class WorldWctctl {
 public:
  WorldWctctl() {
    std::filesystem::permissions(dir_.path(), std::filesystem::perms(0755));
    std::filesystem::copy_file(WCTMON_WCTCTL_PATH, path_);
    std::filesystem::permissions(path_, std::filesystem::perms(0755));
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  testing::TempDir dir_{"wctctl-bin"};
  std::string path_ = (dir_ / "wctctl").string();
};

/// `wctctl args` run as nobody with the groups `groups` (setpriv; "" for none).
CommandResult wctctlAs(const WorldWctctl& wctctl, const std::string& gid, const std::string& groups,
                       std::vector<std::string> args) {
  std::vector<std::string> argv{"setpriv", "--reuid", kNobody, "--regid", gid};
  if (groups.empty()) {
    argv.push_back("--clear-groups");
  } else {
    argv.insert(argv.end(), {"--groups", groups});
  }
  argv.push_back(wctctl.path());
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

/// Lets other users pass through the test's directories to the socket and the token, as the
/// unit's RuntimeDirectoryMode and StateDirectoryMode do for /run/wctmon and /var/lib/wctmon.
void letOthersTraverse(const ApiService& service) {
  std::filesystem::permissions(service.dir().path(), std::filesystem::perms(0711));
  std::filesystem::permissions(service.stateDir(), std::filesystem::perms(0711));
}

TEST(LocalAccess, TheSocketAndTheReaderTokenAreTheGroupsTheAdminTokenStaysRoots) {
  ApiService service(std::string(R"("group": ")") + kGroup + R"(", )");
  const gid_t group = gidOf(kGroup);

  const auto socket = statOf(service.socket());
  EXPECT_TRUE(S_ISSOCK(socket.st_mode));
  EXPECT_EQ(socket.st_mode & 07777, 0660u);
  EXPECT_EQ(socket.st_uid, 0u);
  EXPECT_EQ(socket.st_gid, group);

  const auto reader = statOf(service.readerToken());
  EXPECT_EQ(reader.st_mode & 07777, 0640u);
  EXPECT_EQ(reader.st_uid, 0u);
  EXPECT_EQ(reader.st_gid, group);

  const auto admin = statOf(service.adminToken());
  EXPECT_EQ(admin.st_mode & 07777, 0600u);
  EXPECT_EQ(admin.st_uid, 0u);
  EXPECT_NE(admin.st_gid, group);

  // Beside the socket: where its tokens are, readable by all, holding no token.
  const auto published = service.socket() + ".token-files";
  EXPECT_EQ(statOf(published).st_mode & 07777, 0644u);
  EXPECT_EQ(readFile(published).find(readFile(service.readerToken()).substr(0, 64)),
            std::string::npos);
  EXPECT_NE(readFile(published).find("reader_token_file=" + service.readerToken() + "\n"),
            std::string::npos)
      << readFile(published);
  EXPECT_NE(readFile(published).find("admin_token_file=" + service.adminToken() + "\n"),
            std::string::npos);
  EXPECT_NE(readFile(service.log()).find("members of group nogroup use the API"), std::string::npos)
      << readFile(service.log());

  // Stopped, the service leaves neither the socket nor what it published beside it.
  service.terminate();
  EXPECT_FALSE(std::filesystem::exists(published));
}

TEST(LocalAccess, WithoutTheGroupBothStayRootsAndTheLogSaysSo) {
  ApiService service(R"("group": "wctmon-no-such-group", )");
  const auto socket = statOf(service.socket());
  EXPECT_EQ(socket.st_mode & 07777, 0660u);
  EXPECT_EQ(socket.st_gid, ::getegid());
  const auto reader = statOf(service.readerToken());
  EXPECT_EQ(reader.st_mode & 07777, 0600u);
  EXPECT_EQ(reader.st_gid, ::getegid());
  const auto log = readFile(service.log());
  EXPECT_NE(log.find(" info no group named wctmon-no-such-group here (api.group): the API's Unix "
                     "sockets and token files stay root's"),
            std::string::npos)
      << log;
}

TEST(LocalAccess, AMemberOfTheGroupReadsWithNoTokenFlagAndIsAReaderOnly) {
  ApiService service(std::string(R"("group": ")") + kGroup + R"(", )");
  letOthersTraverse(service);
  const WorldWctctl wctctl;
  const std::string gid = std::to_string(gidOf(kGroup));

  // Nobody, in the group as a supplementary group: only the socket is named.
  const auto status = wctctlAs(wctctl, "1", gid, {"--server", service.unixTarget(), "status"});
  EXPECT_EQ(status.exit_code, kOk) << status.err;
  EXPECT_NE(status.out.find("healthy       yes"), std::string::npos) << status.out;
  const auto list = wctctlAs(wctctl, "1", gid, {"--server", service.unixTarget(), "incidents"});
  EXPECT_EQ(list.exit_code, kOk) << list.err;

  // The reader token it found is no admin's.
  const auto add = wctctlAs(wctctl, "1", gid,
                            {"--server", service.unixTarget(), "targets", "add", "--exe", "x"});
  EXPECT_EQ(add.exit_code, kDenied);
  EXPECT_NE(add.err.find("token file " + service.readerToken() + " is the reader's"),
            std::string::npos)
      << add.err;

  // Not in the group: the socket refuses the connection.
  const auto outsider = wctctlAs(wctctl, "1", "", {"--server", service.unixTarget(), "status"});
  EXPECT_EQ(outsider.exit_code, kDenied) << outsider.err;
  EXPECT_NE(outsider.err.find("permission denied: cannot connect to the socket"), std::string::npos)
      << outsider.err;
}

TEST(LocalAccess, WctctlSendsTheTokenOfTheServiceItTalksToNeverAnothers) {
  ApiService a;
  ApiService b;
  // Each found by its socket alone, with its own token (the other's would be refused).
  for (const ApiService* service : {&a, &b}) {
    const auto r = runCommand({WCTMON_WCTCTL_PATH, "--server", service->unixTarget(), "status"});
    EXPECT_EQ(r.exit_code, kOk) << r.err;
  }
  const auto published = b.socket() + ".token-files";
  const auto aims_at_a =
      "admin_token_file=" + a.adminToken() + "\nreader_token_file=" + a.readerToken() + "\n";
  const auto expect_no_token = [&](const std::string& why) {
    const auto r = runCommand({WCTMON_WCTCTL_PATH, "--server", b.unixTarget(), "status"});
    EXPECT_EQ(r.exit_code, kDenied) << why << ": " << r.err;
    // Sent, A's token would be named as the one B refuses.
    EXPECT_EQ(r.err.find(a.adminToken()), std::string::npos) << why << ": " << r.err;
    EXPECT_EQ(r.err.find(a.readerToken()), std::string::npos) << why << ": " << r.err;
    EXPECT_NE(r.err.find("unauthenticated: no token: " + b.unixTarget() +
                         " is not the default service and publishes no token files"),
              std::string::npos)
        << why << ": " << r.err;
  };

  // Another user's file beside B's socket naming A's tokens: not believed.
  std::filesystem::remove(published);
  std::ofstream(published) << aims_at_a;
  ASSERT_EQ(::chown(published.c_str(), 65534, 65534), 0);
  expect_no_token("a file of nobody's");
  // Root's, but anybody in its group may change it: not believed either.
  ASSERT_EQ(::chown(published.c_str(), 0, 0), 0);
  std::filesystem::permissions(published, std::filesystem::perms(0664));
  expect_no_token("a group-writable file");
  // Nothing published (an older service): no token at all, rather than a default one.
  std::filesystem::remove(published);
  expect_no_token("nothing published");

  // A TCP address that is not the default service's gets no token either.
  ASSERT_FALSE(b.tcpTarget().empty());
  const auto tcp = runCommand({WCTMON_WCTCTL_PATH, "--server", b.tcpTarget(), "status"});
  EXPECT_EQ(tcp.exit_code, kDenied) << tcp.err;
  EXPECT_NE(tcp.err.find("no token: " + b.tcpTarget() + " is not the default service"),
            std::string::npos)
      << tcp.err;
}

}  // namespace
}  // namespace wctmon
