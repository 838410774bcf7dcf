#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace wctmon {

// The directories and files the service keeps its state in, made and checked so that no other
// local user can read them or put anything in them, one implementation per platform, chosen by
// CMake (owned_files_posix.cpp, owned_files_windows.cpp). Each answer is empty when all is well,
// else why not, in words that follow the path's name.

/// Makes the directory `dir` (its missing parents too) with the mode `mode`, and checks the one
/// it finds: it must be a directory, not a symbolic link, owned by the service's account or root,
/// and writable by nobody else (a directory others may write is one they may plant files in).
/// When the directory is the account's, read and search permission beyond `mode` are taken away
/// (a state directory made 0755 by an older version, or under umask 000) and it is given to the
/// group `group` if one is named (the group whose members `mode` lets in; when the account may
/// not give it to that group, the group bits of `mode` are dropped). On Windows: a
/// directory, not a link or junction.
[[nodiscard]] std::string prepareOwnedDirectory(const std::filesystem::path& dir, unsigned mode,
                                                std::optional<unsigned> group = std::nullopt);

/// Checks the directory `dir` as prepareOwnedDirectory does, without making it or changing it:
/// for the directory of the API socket, which others must be able to search.
[[nodiscard]] std::string checkOwnedDirectory(const std::filesystem::path& dir);

/// Which file a name stood for when it was checked: its device and inode (volume serial and file
/// index on Windows).
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

/// Makes the file `file` with the mode `mode` (0640, say) less the umask if it is not there,
/// without following a link at its name, and checks the one it finds: a regular file, of one name
/// (not a hard link to another file), the service's account's or root's, writable by nobody else;
/// bits beyond `mode` are taken away when it is the account's.
/// Its identity on success, so that whoever opens it next can tell it is still that file.
struct OwnedFile {
  std::optional<FileIdentity> identity;
  std::string why_not;
};
[[nodiscard]] OwnedFile prepareOwnedFile(const std::filesystem::path& file, unsigned mode);

/// Checks the file `file` as prepareOwnedFile does, if there is one; nothing is made.
[[nodiscard]] std::string checkOwnedFile(const std::filesystem::path& file, unsigned mode);

/// The identity of the file open as the C descriptor `fd` (fileno of a FILE*); none if it cannot
/// be read.
[[nodiscard]] std::optional<FileIdentity> openFileIdentity(int fd);

}  // namespace wctmon
