#pragma once

#include <filesystem>

#include "model/result.h"
#include "model/snapshot.h"

namespace wctmon {

/// What a dump is read with: the dump, and where its executable is now when the path the dump
/// names for it is no longer that file (empty: the path the dump names).
struct DumpToRead {
  std::filesystem::path dump;
  std::filesystem::path executable = {};
};

/// Reads the threads of a dump, and what each waits on and who owns that, into a snapshot as a
/// sample of the live process reads them: what the dump cannot tell (who holds a pipe, a socket
/// or a file lock) is said in the wait, not guessed.
class DumpReader {
 public:
  virtual ~DumpReader() = default;

  /// The snapshot of the dump's process. Fails with kNotFound when the dump cannot be read,
  /// kUnsupported when it is no dump this platform reads, kDamaged when it is cut short.
  [[nodiscard]] virtual Result<Snapshot> read(const DumpToRead& what) = 0;
};

}  // namespace wctmon
