#include "core/target_matcher.h"

#include <algorithm>

#include "core/glob.h"

namespace wctmon {

TargetMatcher::TargetMatcher(std::vector<TargetConfig> targets) : targets_(std::move(targets)) {
  for (const auto& t : targets_) {
    std::unique_ptr<CmdlinePattern> pattern;
    if (t.cmdline) {
      auto compiled = CmdlinePattern::compile(*t.cmdline);
      if (compiled) pattern = std::make_unique<CmdlinePattern>(std::move(compiled).value());
    }
    cmdline_.push_back(std::move(pattern));
  }
}

const TargetConfig* TargetMatcher::match(const ProcessInfo& process) const {
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const auto& t = targets_[i];
    if (t.all) return &t;
    if (t.pid && *t.pid != process.identity.pid) continue;
    if (t.exe && !globMatch(*t.exe, process.comm) && !globMatch(*t.exe, process.exe_name)) continue;
    if (t.cmdline && (!cmdline_[i] || !cmdline_[i]->search(process.cmdline))) continue;
    return &t;
  }
  return nullptr;
}

bool TargetMatcher::needsCmdline() const {
  return std::any_of(targets_.begin(), targets_.end(),
                     [](const TargetConfig& t) { return t.cmdline.has_value(); });
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
