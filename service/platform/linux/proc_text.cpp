#include "platform/linux/proc_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

namespace wctmon::linux_platform {
namespace {

/// Whether each character separates tokens: a space, a tab or a newline.
constexpr auto kSeparator = [] {
  std::array<bool, 256> separator{};
  separator[' '] = separator['\t'] = separator['\n'] = true;
  return separator;
}();

std::string_view nextToken(std::string_view& text) {
  // Every field of the stat and syscall files of every thread is skipped or taken here.
  const auto separates = [](char c) { return kSeparator[static_cast<unsigned char>(c)]; };
  std::size_t i = 0;
  while (i < text.size() && separates(text[i])) ++i;
  std::size_t j = i;
  while (j < text.size() && !separates(text[j])) ++j;
  auto token = text.substr(i, j - i);
  text.remove_prefix(j);
  return token;
}

/// The value of hex digit `c`; 16 for any other character.
constexpr std::uint8_t hexDigit(char c) {
  if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<std::uint8_t>(c - 'A' + 10);
  return 16;
}

template <typename T>
std::optional<T> parseNumber(std::string_view token, int base) {
  if (base == 16 && token.starts_with("0x")) token.remove_prefix(2);
  if constexpr (std::is_unsigned_v<T>) {
    // Eight hex numbers a thread in every syscall file: a loop of its own instead of
    // from_chars' for any base. The same answers: every character a digit, none missing, and
    // the value in range.
    if (base == 16) {
      static constexpr auto kDigits = [] {
        std::array<std::uint8_t, 256> digits{};
        for (int c = 0; c < 256; ++c) digits[c] = hexDigit(static_cast<char>(c));
        return digits;
      }();
      if (token.empty()) return std::nullopt;
      T value = 0;
      for (const char c : token) {
        const auto digit = kDigits[static_cast<unsigned char>(c)];
        if (digit > 15 || value > (std::numeric_limits<T>::max() >> 4)) return std::nullopt;
        value = static_cast<T>((value << 4) | digit);
      }
      return value;
    }
    if (base == 10) {
      // The same for the decimal numbers of every stat file.
      if (token.empty()) return std::nullopt;
      T value = 0;
      for (const char c : token) {
        const auto digit = static_cast<unsigned>(static_cast<unsigned char>(c) - '0');
        if (digit > 9 || value > (std::numeric_limits<T>::max() - digit) / 10) return std::nullopt;
        value = static_cast<T>(value * 10 + digit);
      }
      return value;
    }
  }
  T value{};
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value, base);
  if (ec != std::errc{} || ptr != token.data() + token.size()) return std::nullopt;
  return value;
}

RunState toRunState(char c) {
  switch (c) {
    case 'R':
      return RunState::kRunning;
    case 'S':
      return RunState::kSleeping;
    case 'D':
      return RunState::kDiskSleep;
    case 'T':
      return RunState::kStopped;
    case 't':
      return RunState::kTraced;
    case 'Z':
      return RunState::kZombie;
    case 'X':
    case 'x':
      return RunState::kDead;
    case 'I':
      return RunState::kIdle;
    default:
      return RunState::kUnknown;
  }
}

}  // namespace

long readSmallFile(int dirfd, const char* path, std::span<char> buf) {
  const int fd = ::openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  std::size_t total = 0;
  while (total < buf.size()) {
    const ssize_t n = ::read(fd, buf.data() + total, buf.size() - total);
    if (n < 0) {
      if (errno == EINTR) continue;
      const long err = -errno;
      ::close(fd);
      return err;
    }
    total += static_cast<std::size_t>(n);
    // procfs fills the buffer as far as the file goes: a short read is the end, and asking again
    // for the 0 that says so would cost a system call per file.
    if (n == 0 || total < buf.size()) break;
  }
  ::close(fd);
  return static_cast<long>(total);
}

std::optional<std::int64_t> parseInt(std::string_view text) {
  return parseNumber<std::int64_t>(text, 10);
}

std::optional<MapsRange> parseMapsLine(std::string_view line) {
  const auto range = nextToken(line);
  const auto perms = nextToken(line);
  const auto dash = range.find('-');
  if (dash == std::string_view::npos || perms.size() != 4) return std::nullopt;
  const auto begin = parseNumber<std::uint64_t>(range.substr(0, dash), 16);
  const auto end = parseNumber<std::uint64_t>(range.substr(dash + 1), 16);
  if (!begin || !end || *end <= *begin) return std::nullopt;
  MapsRange out{*begin, *end, perms[2] == 'x'};
  out.readable = perms[0] == 'r';
  out.writable = perms[1] == 'w';
  out.shared = perms[3] == 's';
  out.offset = parseNumber<std::uint64_t>(nextToken(line), 16).value_or(0);
  nextToken(line);  // device
  out.inode = parseNumber<std::uint64_t>(nextToken(line), 10).value_or(0);
  const auto path = line.find_first_not_of(' ');
  if (path != std::string_view::npos) out.path = line.substr(path);
  return out;
}

std::string processTitle(std::string_view text) {
  const auto nul = text.find('\0');
  auto first = text.substr(0, nul);
  // Titles are padded with spaces or NULs to the length of the arguments they replaced.
  while (!first.empty() && (first.back() == ' ' || first.back() == '\n')) first.remove_suffix(1);
  if (first.empty()) return {};
  const auto rest = nul == std::string_view::npos ? std::string_view() : text.substr(nul);
  const bool alone = rest.find_first_not_of('\0') == std::string_view::npos;
  const bool program_colon = first.find(": ") != std::string_view::npos;
  // A lone argument with spaces that is no path (a program under "/opt/My App/").
  const bool spaced_alone =
      alone && first.find(' ') != std::string_view::npos && !first.starts_with('/');
  if (!program_colon && !spaced_alone) return {};
  std::string out(first.substr(0, 256));
  for (auto& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

std::string_view statusValue(std::string_view status, std::string_view key) {
  while (!status.empty()) {
    const auto nl = status.find('\n');
    auto line = status.substr(0, nl);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
      return line;
    }
    if (nl == std::string_view::npos) break;
    status.remove_prefix(nl + 1);
  }
  return {};
}

std::optional<std::int64_t> numberAt(std::string_view fields, int n) {
  std::optional<std::int64_t> last;
  for (int i = 0;; ++i) {
    const auto word = nextToken(fields);
    if (word.empty()) return n < 0 ? last : std::nullopt;
    if (i == n) return parseInt(word);
    if (n < 0) last = parseInt(word);
  }
}

std::optional<std::int64_t> parseStatusField(std::string_view status, std::string_view key) {
  return numberAt(statusValue(status, key), 0);
}

std::optional<std::int64_t> readStatusField(int dirfd, const std::string& path,
                                            std::string_view key) {
  std::array<char, 4096> buf{};
  const long n = readSmallFile(dirfd, path.c_str(), buf);
  if (n <= 0) return std::nullopt;
  return parseStatusField(std::string_view(buf.data(), static_cast<std::size_t>(n)), key);
}

std::string readAll(int fd, std::size_t limit) {
  std::string out;
  std::array<char, 65536> buf{};
  while (out.size() < limit) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  return out;
}

std::string procPath(Pid pid, std::string_view rest) {
  return "/proc/" + std::to_string(pid.value) + "/" + std::string(rest);
}

std::optional<std::string> readWholeFile(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto text = readAll(fd, limit);
  ::close(fd);
  return text;
}

std::optional<StatFields> parseStat(std::string_view text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  StatFields out;
  out.comm = std::string(text.substr(open + 1, close - open - 1));
  std::string_view rest = text.substr(close + 1);
  // Fields after the name, numbered as in proc(5): 3 state, 4 ppid, 5 pgrp, ... 22 starttime.
  const auto state = nextToken(rest);
  if (state.size() != 1) return std::nullopt;
  out.state = toRunState(state[0]);
  auto ppid = parseNumber<std::int32_t>(nextToken(rest), 10);
  auto pgrp = parseNumber<std::int32_t>(nextToken(rest), 10);
  if (!ppid || !pgrp) return std::nullopt;
  out.ppid = *ppid;
  out.pgrp = *pgrp;
  for (int field = 6; field < 9; ++field) nextToken(rest);
  auto flags = parseNumber<std::uint32_t>(nextToken(rest), 10);
  if (!flags) return std::nullopt;
  out.flags = *flags;
  for (int field = 10; field < 20; ++field) nextToken(rest);
  auto threads = parseNumber<std::uint32_t>(nextToken(rest), 10);
  if (!threads) return std::nullopt;
  out.num_threads = *threads;
  nextToken(rest);  // 21 itrealvalue
  auto start = parseNumber<std::uint64_t>(nextToken(rest), 10);
  if (!start) return std::nullopt;
  out.start_time = *start;
  return out;
}

std::optional<int> parseStatProcessor(std::string_view text) {
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(close + 1);
  for (int field = 3; field < 39; ++field) nextToken(rest);
  // A CPU number: digits only, never a sign (found by the proc_stat fuzz target).
  const auto cpu = parseNumber<std::uint32_t>(nextToken(rest), 10);
  if (!cpu || *cpu > 1U << 20) return std::nullopt;
  return static_cast<int>(*cpu);
}

std::optional<SyscallState> parseSyscall(std::string_view text) {
  SyscallState out;
  auto first = nextToken(text);
  if (first == "running") return out;
  auto nr = parseNumber<long>(first, 10);
  if (!nr) return std::nullopt;
  if (*nr < 0) {
    out.kind = SyscallState::Kind::kNotInSyscall;
    return out;
  }
  out.kind = SyscallState::Kind::kInSyscall;
  out.number = *nr;
  for (auto& arg : out.args) {
    auto value = parseNumber<std::uint64_t>(nextToken(text), 16);
    if (!value) return std::nullopt;
    arg = *value;
  }
  auto sp = parseNumber<std::uint64_t>(nextToken(text), 16);
  auto pc = parseNumber<std::uint64_t>(nextToken(text), 16);
  if (!sp || !pc) return std::nullopt;
  out.sp = *sp;
  out.pc = *pc;
  return out;
}

std::optional<std::uint64_t> parseSchedstatRuns(std::string_view text) {
  const auto times = parseSchedstat(text);
  return times ? std::optional<std::uint64_t>(times->runs) : std::nullopt;
}

std::optional<SchedTimes> parseSchedstat(std::string_view text) {
  const auto cpu = parseNumber<std::uint64_t>(nextToken(text), 10);
  const auto queued = parseNumber<std::uint64_t>(nextToken(text), 10);
  const auto runs = parseNumber<std::uint64_t>(nextToken(text), 10);
  if (!cpu || !runs || !queued) return std::nullopt;
  return SchedTimes{*cpu, *runs, *queued};
}

std::optional<LockEntry> parseLockLine(std::string_view line) {
  if (line.starts_with("lock:")) line.remove_prefix(5);
  LockEntry e;
  auto id_token = nextToken(line);
  if (id_token.empty() || id_token.back() != ':') return std::nullopt;
  id_token.remove_suffix(1);
  auto id = parseNumber<int>(id_token, 10);
  if (!id) return std::nullopt;
  e.id = *id;
  auto token = nextToken(line);
  if (token == "->") {
    e.waiter = true;
    token = nextToken(line);
  }
  e.kind = std::string(token);
  nextToken(line);  // ADVISORY / MANDATORY / ACTIVE / BREAKING
  const auto mode = nextToken(line);
  e.write = mode == "WRITE";
  auto pid = parseNumber<std::int32_t>(nextToken(line), 10);
  if (!pid) return std::nullopt;
  e.pid = *pid;
  // major:minor:inode, the first two in hex.
  auto dev = nextToken(line);
  const auto c1 = dev.find(':');
  const auto c2 = dev.rfind(':');
  if (c1 == std::string_view::npos || c1 == c2) return std::nullopt;
  auto major = parseNumber<std::uint32_t>(dev.substr(0, c1), 16);
  auto minor = parseNumber<std::uint32_t>(dev.substr(c1 + 1, c2 - c1 - 1), 16);
  auto inode = parseNumber<std::uint64_t>(dev.substr(c2 + 1), 10);
  if (!major || !minor || !inode) return std::nullopt;
  e.dev_major = *major;
  e.dev_minor = *minor;
  e.inode = *inode;
  auto start = parseNumber<std::uint64_t>(nextToken(line), 10);
  if (!start) return std::nullopt;
  e.start = *start;
  const auto end = nextToken(line);
  if (end != "EOF") {
    auto value = parseNumber<std::uint64_t>(end, 10);
    // A range that ends before it starts is no lock: overlap tests on it would be wrong.
    if (!value || *value < e.start) return std::nullopt;
    e.end = *value;
  }
  return e;
}

std::vector<LockEntry> parseLocks(std::string_view text) {
  std::vector<LockEntry> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto line = text.substr(0, nl);
    if (auto e = parseLockLine(line)) out.push_back(std::move(*e));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

namespace {

/// The value of a "key:\tvalue" line of an fdinfo file; the key must start a line.
std::optional<std::string_view> fdinfoValue(std::string_view text, std::string_view key) {
  for (std::size_t at = 0; at < text.size();) {
    const auto nl = text.find('\n', at);
    auto line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      return nextToken(line);
    }
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<unsigned> parseFdinfoFlags(std::string_view text) {
  const auto value = fdinfoValue(text, "flags");
  return value ? parseNumber<unsigned>(*value, 8) : std::nullopt;
}

std::optional<std::uint64_t> parseFdinfoPos(std::string_view text) {
  const auto value = fdinfoValue(text, "pos");
  return value ? parseNumber<std::uint64_t>(*value, 10) : std::nullopt;
}

std::optional<double> parseSchedExecStart(std::string_view text) {
  constexpr std::string_view kKey = "se.exec_start";
  const auto at = text.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = text.substr(at + kKey.size());
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const auto end = rest.find_first_not_of("0123456789.");
  const std::string number(rest.substr(0, end));
  if (number.empty()) return std::nullopt;
  char* parsed_end = nullptr;
  const double value = std::strtod(number.c_str(), &parsed_end);
  // Hundreds of digits make infinity, which compares equal to itself and would say "did not run".
  if (parsed_end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace wctmon::linux_platform
