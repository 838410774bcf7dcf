#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace wctmon::client {

// Which token wctctl sends: the one of the service it talks to, never another service's. The
// service publishes beside each Unix socket the token files of that socket (SOCKET.token-files,
// api/server.cpp); the default addresses fall back to the default state directory.

/// The file beside the Unix socket `socket` where its service names its token files.
[[nodiscard]] std::filesystem::path publishedTokenFiles(const std::filesystem::path& socket);

/// The token files named in a published file's `text` (admin first, then reader); lines other
/// than `admin_token_file=`/`reader_token_file=` and relative paths are ignored.
[[nodiscard]] std::vector<std::filesystem::path> parseTokenFiles(std::string_view text);

/// The token files to try for `server` ("unix:/path", "host:port"), best first: the ones its
/// service published when a trusted user wrote them, else the default state directory's for the
/// default socket and address, else none (another service's token is never sent).
[[nodiscard]] std::vector<std::filesystem::path> tokenFilesFor(const std::string& server);

/// Whether `published` can be believed for `socket`: written by root, by the account wctmon (the
/// packaged service's) or by this user, writable by nobody else, and the socket is of the same
/// owner. One implementation per platform
/// (token_files_posix.cpp; token_files_windows.cpp, where the service has no Unix socket).
[[nodiscard]] bool publishedByTrustedOwner(const std::filesystem::path& published,
                                           const std::filesystem::path& socket);

}  // namespace wctmon::client
