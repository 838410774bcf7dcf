#include "core/target_matcher.h"

#include "core/glob.h"

namespace wctmon {

TargetMatcher::TargetMatcher(std::vector<TargetConfig> targets) : targets_(std::move(targets)) {
  for (const auto& t : targets_) {
    cmdline_.push_back(t.cmdline ? std::make_unique<std::regex>(*t.cmdline, std::regex::ECMAScript)
                                 : nullptr);
  }
}

const TargetConfig* TargetMatcher::match(const ProcessInfo& process) const {
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const auto& t = targets_[i];
    if (t.all) return &t;
    if (t.pid && *t.pid != process.identity.pid) continue;
    if (t.exe && !globMatch(*t.exe, process.comm) && !globMatch(*t.exe, process.exe_name)) continue;
    if (cmdline_[i] && !std::regex_search(process.cmdline, *cmdline_[i])) continue;
    return &t;
  }
  return nullptr;
}

bool TargetMatcher::needsCmdline() const {
  for (const auto& r : cmdline_) {
    if (r) return true;
  }
  return false;
}

}  // namespace wctmon
