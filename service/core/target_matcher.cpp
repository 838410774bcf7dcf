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

const TargetConfig* TargetMatchMemo::match(const std::shared_ptr<const TargetMatcher>& matcher,
                                           const ProcessInfo& process) {
  if (matcher != matcher_) {
    verdicts_.clear();  // other targets
    matcher_ = matcher;
  }
  auto [it, added] = verdicts_.try_emplace(process.identity);
  auto& v = it->second;
  if (added || v.process.comm != process.comm || v.process.exe_name != process.exe_name ||
      v.process.cmdline != process.cmdline) {
    v.process = process;
    v.target = matcher->match(process);
  }
  return v.target;
}

void TargetMatchMemo::keepOnly(const std::set<ProcessIdentity>& alive) {
  std::erase_if(verdicts_, [&alive](const auto& entry) { return !alive.contains(entry.first); });
}

}  // namespace wctmon
