#include "core/target_registry.h"

#include <spdlog/spdlog.h>

namespace wctmon {

TargetRegistry::TargetRegistry(IncidentRepository* store, const Config& config) : store_(store) {
  auto runtime = readRuntime(config).value_or(std::vector<TargetConfig>{});
  MutexLock lock(mutex_);
  file_ = config.targets;
  runtime_ = std::move(runtime);
  rebuild();
}

std::optional<std::vector<TargetConfig>> TargetRegistry::readRuntime(const Config& config) const {
  if (store_ == nullptr) return std::vector<TargetConfig>{};
  auto targets = store_->targets(config);
  if (!targets) {
    spdlog::warn("cannot read runtime targets: {}", targets.error().message);
    return std::nullopt;
  }
  return std::move(targets).value();
}

void TargetRegistry::reconfigure(const Config& config) {
  // A store read: outside the lock.
  auto runtime = readRuntime(config);
  MutexLock lock(mutex_);
  if (runtime) runtime_ = std::move(*runtime);
  file_ = config.targets;
  rebuild();
}

Status TargetRegistry::add(const TargetConfig& target) {
  MutexLock lock(mutex_);
  if (store_ != nullptr) {
    if (auto s = store_->putTarget(target); !s) return s;
  }
  std::erase_if(runtime_, [&](const TargetConfig& t) { return t.name == target.name; });
  runtime_.push_back(target);
  rebuild();
  return std::monostate{};
}

Result<bool> TargetRegistry::remove(const std::string& name) {
  MutexLock lock(mutex_);
  if (store_ != nullptr) {
    auto removed = store_->removeTarget(name);
    if (!removed) return removed;
  }
  const auto erased =
      std::erase_if(runtime_, [&](const TargetConfig& t) { return t.name == name; });
  rebuild();
  return erased > 0;
}

std::vector<TargetConfig> TargetRegistry::all() const { return matcher()->targets(); }

std::vector<TargetConfig> TargetRegistry::runtime() const {
  MutexLock lock(mutex_);
  return runtime_;
}

std::shared_ptr<const TargetMatcher> TargetRegistry::matcher() const {
  MutexLock lock(mutex_);
  return matcher_;
}

void TargetRegistry::rebuild() {
  auto all = file_;
  all.insert(all.end(), runtime_.begin(), runtime_.end());
  matcher_ = std::make_shared<const TargetMatcher>(std::move(all));
}

}  // namespace wctmon
