#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"

namespace wctmon::app {

/// How a change of a configuration key reaches the running service.
enum class KeyChange {
  /// Applied by a reload (SIGHUP), without stopping anything.
  kLive,
  /// Read once at start: a reload keeps the running value and says that it needs a restart.
  kRestart,
};

/// One key of the configuration file ("sampling.threads"), as a reload treats it. Every field of
/// Config is covered by exactly one key; `targets` is one key for the whole list.
struct ConfigKey {
  /// Dotted path of the key in the file, as the README and the log name it.
  std::string_view name;
  KeyChange change;
  /// Why a restart is needed (restart keys only), for the log.
  std::string_view why;
  /// Whether `a` and `b` hold the same value for this key.
  bool (*same)(const Config& a, const Config& b);
  /// Copies this key's value from `from` into `to`.
  void (*copy)(Config& to, const Config& from);
  /// The value, in a few words, for the log.
  std::string (*show)(const Config& config);
};

/// Every key of the configuration, in the order of the file.
[[nodiscard]] std::span<const ConfigKey> configKeys();

/// What a reload does with a new configuration.
struct ReloadPlan {
  /// The configuration to run: the new one, with the running value of every restart key.
  Config next;
  /// Live keys whose value changed, in table order.
  std::vector<const ConfigKey*> live;
  /// Restart keys whose value changed in the file, in table order (`next` keeps the running
  /// value).
  std::vector<const ConfigKey*> restart;
};

/// Compares `loaded` (the file just read) with `running` key by key.
[[nodiscard]] ReloadPlan planReload(const Config& running, const Config& loaded);

/// Whether one of `keys` is named `name`.
[[nodiscard]] bool containsKey(const std::vector<const ConfigKey*>& keys, std::string_view name);

}  // namespace wctmon::app
