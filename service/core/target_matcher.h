#pragma once

#include <memory>
#include <regex>
#include <vector>

#include "core/config.h"
#include "model/process_info.h"

namespace wctmon {

/// Decides which targets watch a process. Regular expressions are compiled once.
class TargetMatcher {
 public:
  explicit TargetMatcher(std::vector<TargetConfig> targets);

  /// The first target that selects `process`, or nullptr.
  [[nodiscard]] const TargetConfig* match(const ProcessInfo& process) const;

  /// Whether any target needs command lines to decide.
  [[nodiscard]] bool needsCmdline() const;

  [[nodiscard]] const std::vector<TargetConfig>& targets() const { return targets_; }

 private:
  std::vector<TargetConfig> targets_;
  std::vector<std::unique_ptr<std::regex>> cmdline_;
};

}  // namespace wctmon
