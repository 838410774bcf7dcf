#pragma once

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/cmdline_pattern.h"
#include "core/config.h"
#include "model/process_info.h"

namespace wctmon {

/// Decides which targets watch a process. Command-line expressions are compiled once; one that
/// does not compile (the configuration refuses it first) selects nothing.
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
  std::vector<std::unique_ptr<CmdlinePattern>> cmdline_;
};

/// The targets' verdicts on the processes of the last discovery: a process seen again under the
/// same names and command line, by the same matcher, is not matched again. With many targets,
/// their command-line expressions run over every process were most of what a discovery cost.
/// Not thread-safe: its owner guards it.
class TargetMatchMemo {
 public:
  /// What `matcher` says of `process`: its verdict of the last discovery when nothing it decides
  /// by changed. The target stays valid as long as the memo keeps `matcher`.
  [[nodiscard]] const TargetConfig* match(const std::shared_ptr<const TargetMatcher>& matcher,
                                          const ProcessInfo& process);
  /// Forgets the processes that are not in `alive`.
  void keepOnly(const std::set<ProcessIdentity>& alive);

 private:
  struct Verdict {
    ProcessInfo process;
    const TargetConfig* target = nullptr;
  };
  std::shared_ptr<const TargetMatcher> matcher_;
  std::map<ProcessIdentity, Verdict> verdicts_;
};

}  // namespace wctmon
