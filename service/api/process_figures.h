#pragma once

#include <cstdint>
#include <optional>

#include "model/result.h"

namespace wctmon::api {

/// What the service's own process uses, as the Prometheus clients' standard process_* metrics
/// report it.
struct ProcessFigures {
  /// User and system CPU time, in seconds.
  double cpu_seconds = 0;
  /// Resident memory (Linux: RSS; Windows: the working set).
  std::uint64_t resident_bytes = 0;
  /// Virtual memory (Linux: the address space's size; Windows: the commit charge, private bytes,
  /// as the Go client).
  std::uint64_t virtual_bytes = 0;
  /// When the process started, in seconds since the Unix epoch.
  double start_time_seconds = 0;
  /// Descriptors open (Windows: handles; none under Wine, whose count is a stub) and the most it
  /// may open; none where not known.
  std::optional<std::uint64_t> open_fds;
  std::optional<std::uint64_t> max_fds;
  /// Its threads; none where not cheap to know (Windows).
  std::optional<std::uint64_t> threads;
};

/// Reads the figures of the calling process (one implementation per platform).
[[nodiscard]] Result<ProcessFigures> readProcessFigures();

}  // namespace wctmon::api
