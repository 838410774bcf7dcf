#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/snapshot.h"

namespace wctmon::linux_platform {

/// Reads a small /proc file relative to `dirfd` into `buf`. Returns the byte count, or -errno.
[[nodiscard]] long readSmallFile(int dirfd, const char* path, std::span<char> buf);

/// Reads what is left of the file open as `fd`, up to about `limit` bytes (a whole read more).
[[nodiscard]] std::string readAll(int fd, std::size_t limit);

/// "/proc/PID/REST": a file of process `pid`.
[[nodiscard]] std::string procPath(Pid pid, std::string_view rest);

/// The file at `path`, up to about `limit` bytes; nullopt when it cannot be opened.
[[nodiscard]] std::optional<std::string> readWholeFile(const std::string& path, std::size_t limit);

/// The fields of /proc/PID/task/TID/stat that wctmon uses.
struct StatFields {
  std::string comm;
  RunState state = RunState::kUnknown;
  std::int32_t ppid = 0;
  std::int32_t pgrp = 0;
  std::uint32_t flags = 0;  // PF_* flags; PF_KTHREAD marks kernel threads
  std::uint32_t num_threads = 0;
  std::uint64_t start_time = 0;
};

/// Parses a stat line; the command name may hold spaces and parentheses.
[[nodiscard]] std::optional<StatFields> parseStat(std::string_view text);

/// Field 39 of a stat line: the CPU the thread runs on, or last ran on.
[[nodiscard]] std::optional<int> parseStatProcessor(std::string_view text);

/// What /proc/PID/task/TID/syscall says.
struct SyscallState {
  enum class Kind { kRunning, kNotInSyscall, kInSyscall };
  Kind kind = Kind::kRunning;
  long number = -1;
  std::array<std::uint64_t, 6> args{};
  std::uint64_t sp = 0;
  std::uint64_t pc = 0;
};

/// Parses a syscall line ("running", "-1 sp pc" or "nr a0 .. a5 sp pc").
[[nodiscard]] std::optional<SyscallState> parseSyscall(std::string_view text);

/// The `se.exec_start` value of a sched file: the scheduler clock, in milliseconds, when the
/// thread last ran (for our own thread, read while running: now).
[[nodiscard]] std::optional<double> parseSchedExecStart(std::string_view text);

/// The third field of schedstat: how many times the thread was scheduled in.
[[nodiscard]] std::optional<std::uint64_t> parseSchedstatRuns(std::string_view text);

/// What schedstat says of a thread: its CPU time, the time it waited runnable in a run queue,
/// and how many times it was scheduled in.
struct SchedTimes {
  std::uint64_t cpu_ns = 0;
  std::uint64_t runs = 0;
  std::uint64_t queued_ns = 0;
};
[[nodiscard]] std::optional<SchedTimes> parseSchedstat(std::string_view text);

/// One line of /proc/locks (or a "lock:" line of fdinfo).
struct LockEntry {
  int id = 0;
  bool waiter = false;  // a "->" line: blocked on the lock with the same id
  std::string kind;     // POSIX, FLOCK, OFDLCK, LEASE, ...
  bool write = false;
  std::int32_t pid = 0;  // -1 for OFD locks
  std::uint32_t dev_major = 0;
  std::uint32_t dev_minor = 0;
  std::uint64_t inode = 0;
  std::uint64_t start = 0;
  std::optional<std::uint64_t> end;  // nullopt = EOF
};

/// Parses the whole of /proc/locks.
[[nodiscard]] std::vector<LockEntry> parseLocks(std::string_view text);

/// Parses one lock line, with or without the "lock:\t" prefix of fdinfo.
[[nodiscard]] std::optional<LockEntry> parseLockLine(std::string_view line);

/// The "flags:" value of an fdinfo file (octal open flags).
[[nodiscard]] std::optional<unsigned> parseFdinfoFlags(std::string_view text);

/// The "pos:" value of an fdinfo file (the file offset).
[[nodiscard]] std::optional<std::uint64_t> parseFdinfoPos(std::string_view text);

/// The value of a "Key:\tvalue" line of a /proc status file, blanks before it skipped; empty
/// when there is no such line.
[[nodiscard]] std::string_view statusValue(std::string_view status, std::string_view key);

/// The n-th whitespace-separated number of `fields` ("Uid:" has four); the last one for n < 0
/// ("NSpid:" ends with the pid the innermost namespace gives).
[[nodiscard]] std::optional<std::int64_t> numberAt(std::string_view fields, int n);

/// The integer value of a "Key:\tvalue" line of a /proc status file ("Tgid", "TracerPid").
[[nodiscard]] std::optional<std::int64_t> parseStatusField(std::string_view status,
                                                           std::string_view key);

/// The same, read from the status file `path` (relative to `dirfd`); nullopt when unreadable.
[[nodiscard]] std::optional<std::int64_t> readStatusField(int dirfd, const std::string& path,
                                                          std::string_view key);

/// One line of /proc/PID/maps: "BEGIN-END PERMS OFFSET DEV INODE [PATH]", in hex where it is.
struct MapsRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;  // past the last byte; above begin
  bool executable = false;
  /// Where in the file the range starts, and the file's inode (0 for anonymous memory).
  std::uint64_t offset = 0;
  std::uint64_t inode = 0;
  /// The file's path, or "[stack]", "[vdso]" ...; empty for anonymous memory.
  std::string_view path{};
  bool readable = false;
  bool writable = false;
  /// MAP_SHARED ('s'), not private copy-on-write ('p').
  bool shared = false;
};

/// Parses a maps line: its range, permissions, offset, inode and path; nullopt for anything
/// else. The path is a view into `line`.
[[nodiscard]] std::optional<MapsRange> parseMapsLine(std::string_view line);

/// Calls `each` with every range the maps text `maps` lists, in order, until it returns false.
template <typename Each>
void forEachMapsRange(std::string_view maps, Each each) {
  while (!maps.empty()) {
    const auto eol = maps.find('\n');
    const auto line = maps.substr(0, eol);
    maps = eol == std::string_view::npos ? std::string_view() : maps.substr(eol + 1);
    if (const auto range = parseMapsLine(line); range && !each(*range)) return;
  }
}

/// The title a process gave itself by rewriting its command line (`text`, what
/// /proc/PID/cmdline reads): setproctitle's "program: what it does" (PostgreSQL, nginx, sshd),
/// or one argument with spaces where an argument list was. Empty for an ordinary argument list.
[[nodiscard]] std::string processTitle(std::string_view text);

/// Parses a decimal integer at the start of `text`.
[[nodiscard]] std::optional<std::int64_t> parseInt(std::string_view text);

}  // namespace wctmon::linux_platform
