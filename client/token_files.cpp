#include "client/token_files.h"

#include <fstream>
#include <sstream>

#include "client/connection.h"
#include "client/defaults.h"

namespace wctmon::client {
namespace {

constexpr std::string_view kUnix = "unix:";

/// The default state directory's token files, admin first.
std::vector<std::filesystem::path> defaultTokenFiles() {
  return {defaults().state_dir / kAdminTokenName, defaults().state_dir / kReaderTokenName};
}

/// The token files published beside `socket`, when a trusted user published them.
std::vector<std::filesystem::path> publishedFor(const std::filesystem::path& socket) {
  const auto published = publishedTokenFiles(socket);
  if (!publishedByTrustedOwner(published, socket)) return {};
  std::ifstream in(published);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? parseTokenFiles(text.str()) : std::vector<std::filesystem::path>{};
}

}  // namespace

std::filesystem::path publishedTokenFiles(const std::filesystem::path& socket) {
  return socket.string() + ".token-files";
}

std::vector<std::filesystem::path> parseTokenFiles(std::string_view text) {
  std::filesystem::path admin;
  std::filesystem::path reader;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto equals = line.find('=');
    if (equals == std::string::npos) continue;
    const std::filesystem::path value = line.substr(equals + 1);
    // A relative name would be read from wherever wctctl runs: not the service's file.
    if (!value.is_absolute()) continue;
    const auto key = std::string_view(line).substr(0, equals);
    if (key == "admin_token_file") admin = value;
    if (key == "reader_token_file") reader = value;
  }
  std::vector<std::filesystem::path> files;
  for (auto* file : {&admin, &reader}) {
    if (!file->empty()) files.push_back(*file);
  }
  return files;
}

std::vector<std::filesystem::path> tokenFilesFor(const std::string& server) {
  const auto& d = defaults();
  if (server.starts_with(kUnix)) {
    const std::filesystem::path socket = server.substr(kUnix.size());
    if (auto files = publishedFor(socket); !files.empty()) return files;
    // A service of an earlier version publishes nothing; on the default socket it is the
    // default service.
    if (!d.socket.empty() && socket == d.socket) return defaultTokenFiles();
    return {};
  }
  if (server == d.tcp) {
    // The default configuration serves the same service on the socket and on loopback; one
    // with a state directory of its own says where its tokens are beside the socket.
    if (!d.socket.empty()) {
      if (auto files = publishedFor(d.socket); !files.empty()) return files;
    }
    return defaultTokenFiles();
  }
  return {};
}

}  // namespace wctmon::client
