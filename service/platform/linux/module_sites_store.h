#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "platform/linux/code_map.h"

namespace wctmon::linux_platform {

/// Which file a module's sites were read from: its identity as the file system gives it, and
/// its build id. A file replaced, rewritten or touched is another file.
struct ModuleIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  /// The GNU build id note, as bytes; empty when the file has none.
  std::string build_id;
  friend bool operator==(const ModuleIdentity&, const ModuleIdentity&) = default;
};

/// The identity of the ELF file open as `fd`; nullopt when it cannot be told.
[[nodiscard]] std::optional<ModuleIdentity> identifyModule(int fd);

/// The call sites of modules, kept on disk from one run to the next: reading a module's symbols
/// and code is most of what a one-shot analysis spends beyond /proc. One file per module, named
/// by its identity, checked whole on every load (the identity, the build of wctmon that wrote
/// it, a checksum) and written by rename, so that a writer that dies, two that write at once or
/// a damaged file cost a read of the module, never a wrong site.
class ModuleSitesStore {
 public:
  /// The store in `directory`, created (mode 0700) if missing, with the entries of this build
  /// of wctmon in a directory of their own; nullopt when it cannot be used: not creatable, not
  /// owned by this user, writable by others, or no build id of our own to tell our entries from
  /// another build's.
  [[nodiscard]] static std::optional<ModuleSitesStore> open(const std::string& directory);
  /// The store in the user's cache directory ($XDG_CACHE_HOME or ~/.cache, then
  /// wctmon/modules); nullopt when there is none.
  [[nodiscard]] static std::optional<ModuleSitesStore> openDefault();

  /// The sites kept for module `id`; nullopt when none are, or what is kept does not check.
  [[nodiscard]] std::optional<ModuleSites> load(const ModuleIdentity& id) const;
  /// Keeps `sites` for module `id`; failures are ignored (the module is read again next time).
  void save(const ModuleIdentity& id, const ModuleSites& sites) const;

 private:
  /// The builds whose entries are kept, this one's included.
  static constexpr std::size_t kKeptBuilds = 4;

  ModuleSitesStore(std::string directory, std::string writer)
      : directory_(std::move(directory)), writer_(std::move(writer)) {}
  /// Removes the entries of the builds but the kKeptBuilds - 1 written last, besides `own`.
  static void pruneBuilds(const std::string& directory, const std::string& own);
  [[nodiscard]] std::string pathOf(const ModuleIdentity& id) const;

  std::string directory_;
  /// The build id of this program: sites are what its rules make of a module.
  std::string writer_;
};

}  // namespace wctmon::linux_platform
