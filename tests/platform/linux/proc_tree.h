// A temporary directory laid out as /proc, filled with canned text: what the readers of /proc
// read in unit tests. The files are plain files, so a descriptor kept open on one sees it change.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "support/temp_dir.h"

namespace wctmon::linux_platform::testing {

/// A /proc of canned files in a temporary directory of its own.
class ProcTree {
 public:
  ProcTree() : root_(dir_.path().string()) {}

  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] std::string path(std::string_view relative) const {
    return root_ + "/" + std::string(relative);
  }

  /// Writes `text` to `relative`, making its directories; an existing file is rewritten in
  /// place (same inode), as /proc files change under a descriptor kept open on them.
  void write(std::string_view relative, std::string_view text) const {
    const auto full = path(relative);
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    const int fd = ::open(full.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write " + full);
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) throw std::runtime_error("short write to " + full);
  }

  void mkdir(std::string_view relative) const {
    std::filesystem::create_directories(path(relative));
  }

  void remove(std::string_view relative) const { std::filesystem::remove_all(path(relative)); }

  /// Opens `relative` as a directory; the caller closes it.
  [[nodiscard]] int openDirectory(std::string_view relative) const {
    return ::open(path(relative).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }

 private:
  wctmon::testing::TempDir dir_{"proc"};
  std::string root_;
};

/// A stat line as /proc prints it, with the fields the readers use.
inline std::string statLine(int id, std::string_view comm, char state,
                            std::uint64_t start_time = 500, unsigned flags = 0x400040, int ppid = 1,
                            int pgrp = 0) {
  return std::to_string(id) + " (" + std::string(comm) + ") " + state + " " + std::to_string(ppid) +
         " " + std::to_string(pgrp == 0 ? id : pgrp) + " 0 0 -1 " + std::to_string(flags) +
         " 0 0 0 0 0 0 0 0 20 0 1 0 " + std::to_string(start_time) +
         " 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
}

/// A schedstat line: time on the CPU, time waiting, and times scheduled in.
inline std::string schedstatLine(std::uint64_t runs) {
  return "1000 200 " + std::to_string(runs) + "\n";
}

}  // namespace wctmon::linux_platform::testing
