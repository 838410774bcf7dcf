#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/ids.h"
#include "platform/linux/call_sites.h"
#include "platform/linux/python_state.h"

namespace wctmon::linux_platform {

/// The call sites (callSiteOfFunction) of one ELF file, by the virtual addresses of its symbol
/// table (.symtab where the file keeps it, else .dynsym), and how its loadable segments map
/// file offsets to those addresses.
struct ModuleSites {
  struct Range {
    std::uint64_t begin = 0;  // ELF virtual address
    std::uint64_t end = 0;
    CallSite site;
    /// The function (demangled) whose call site `site` is: this one's, or for a callee one of
    /// its callers'. callSiteOfFunction gives the site again from it.
    std::string function;
  };
  struct Segment {
    std::uint64_t offset = 0;  // p_offset
    std::uint64_t vaddr = 0;   // p_vaddr
    std::uint64_t size = 0;    // p_filesz
  };
  std::vector<Range> ranges;  // sorted, not overlapping
  std::vector<Segment> segments;
  /// The data symbols from which a runtime's state is read (kAnchorSymbols) that the file
  /// defines, with their ELF virtual addresses.
  std::vector<std::pair<std::string_view, std::uint64_t>> anchors;

  /// The call site at ELF virtual address `vaddr`; nullptr when there is none.
  [[nodiscard]] const CallSite* at(std::uint64_t vaddr) const;
  /// The range that holds ELF virtual address `vaddr`; nullptr when none does.
  [[nodiscard]] const Range* rangeAt(std::uint64_t vaddr) const;
};

/// An executable mapping of a file: its addresses and where in the file it starts.
struct FileMapping {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0;
  friend bool operator==(const FileMapping&, const FileMapping&) = default;
};

/// The executable file mappings a maps file lists (where the kernel cannot be asked for them
/// one by one, before Linux 6.11).
[[nodiscard]] std::vector<FileMapping> executableFileMappings(std::string_view maps);

/// The data symbols whose addresses a code map keeps: CPython's runtime state and version.
inline constexpr std::string_view kAnchorSymbols[] = {"_PyRuntime", "Py_Version"};

/// Reads the call sites of the ELF file open as `fd`; empty when it is no ELF file.
[[nodiscard]] ModuleSites loadModuleSites(int fd);

/// The call sites of a process's code: its executable file mappings, each with the sites of its
/// file. A file is read once for every process that maps it (kept by device, inode, size and
/// modification time), and only names that may be call sites are kept.
class CodeMap {
 public:
  /// The map of process `pid` as its maps file shows it now; empty when it cannot be read.
  [[nodiscard]] static CodeMap read(Pid pid);
  /// A file mapped at a range of addresses, by its path.
  struct MappedFile {
    FileMapping range;
    std::string path;
  };
  /// The map of the code mapped from `files` (a core's executable file mappings, with the paths
  /// where the files are now); a file that cannot be opened, or is no ELF file, adds nothing.
  [[nodiscard]] static CodeMap fromFiles(std::span<const MappedFile> files);
  /// The map of process `pid` (started at `start_time`) as read less than a second ago, by the
  /// sample that the read confirming it follows; read now otherwise (always for start time 0).
  [[nodiscard]] static std::shared_ptr<const CodeMap> recent(Pid pid, std::uint64_t start_time);

  /// The call site of the code at `address`; nullptr when the address is in none (or not code).
  [[nodiscard]] const CallSite* siteAt(std::uint64_t address) const;
  /// Whether any module has a call site that refines a generic one.
  [[nodiscard]] bool hasRefiners() const { return refiners_; }
  /// The run-time address of `symbol` (one of kAnchorSymbols) in the process's code; nullopt
  /// when no module defines it.
  [[nodiscard]] std::optional<std::uint64_t> anchorAddress(std::string_view symbol) const;
  /// Where the process's CPython interpreter keeps its state (0s when no module defines it).
  [[nodiscard]] PythonAnchors pythonAnchors() const {
    return {anchorAddress("_PyRuntime").value_or(0), anchorAddress("Py_Version").value_or(0)};
  }

 private:
  struct Mapping {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    /// Runtime address minus ELF virtual address.
    std::uint64_t bias = 0;
    std::shared_ptr<const ModuleSites> module;
  };
  [[nodiscard]] const Mapping* mappingOf(std::uint64_t address) const;
  /// Adds the mapping `range` of the ELF file open as `fd`.
  void add(const FileMapping& range, int fd);
  /// Adds the executable file mappings that the maps file `maps_fd` of the process at `base`
  /// ("/proc/PID") lists, each file opened by its path in the process's own view.
  void addByPath(const std::string& base, int maps_fd);
  void sortMappings();
  std::vector<Mapping> mappings_;  // sorted by begin
  bool refiners_ = false;
};

}  // namespace wctmon::linux_platform
