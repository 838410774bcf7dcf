#include "core/busy_verdict.h"

#include <algorithm>
#include <map>
#include <set>

namespace wctmon {
namespace {

/// Fewer samples than this in a window say nothing (the thread barely ran while sampled).
constexpr std::uint32_t kMinSamples = 20;

std::uint32_t total(const std::vector<HotFunction>& window) {
  std::uint32_t n = 0;
  for (const auto& f : window) n += f.samples;
  return n;
}

/// The fewest functions (most sampled first) that hold `coverage` of the window's samples.
std::set<std::string> hotSet(const std::vector<HotFunction>& window, double coverage) {
  auto sorted = window;
  std::sort(sorted.begin(), sorted.end(),
            [](const HotFunction& a, const HotFunction& b) { return a.samples > b.samples; });
  const double wanted = coverage * total(window);
  std::set<std::string> out;
  double held = 0;
  for (const auto& f : sorted) {
    if (held >= wanted) break;
    out.insert(f.module + "!" + f.function);
    held += f.samples;
  }
  return out;
}

}  // namespace

BusyVerdict judgeBusy(const ThreadProfile& profile, std::size_t max_functions, double coverage) {
  BusyVerdict v;
  std::map<std::pair<std::string, std::string>, std::uint32_t> merged;
  for (const auto* window : {&profile.first, &profile.second}) {
    for (const auto& f : *window) merged[{f.module, f.function}] += f.samples;
  }
  for (const auto& [name, samples] : merged) {
    v.hot.push_back(HotFunction{name.second, name.first, samples});
    v.samples += samples;
  }
  std::sort(v.hot.begin(), v.hot.end(), [](const HotFunction& a, const HotFunction& b) {
    return a.samples > b.samples || (a.samples == b.samples && a.function < b.function);
  });
  const auto first = total(profile.first);
  const auto second = total(profile.second);
  if (first < kMinSamples || second < kMinSamples) {
    v.why_not = "too few samples (" + std::to_string(first) + " and " + std::to_string(second) +
                "): it barely ran while sampled";
    return v;
  }
  const auto a = hotSet(profile.first, coverage);
  const auto b = hotSet(profile.second, coverage);
  if (a.size() > max_functions || b.size() > max_functions) {
    v.why_not = "its time is spread over " + std::to_string(std::max(a.size(), b.size())) +
                " functions: it is working, not spinning";
    return v;
  }
  if (a != b) {
    v.why_not = "its hot functions changed from one window to the next: it is making progress";
    return v;
  }
  v.spinning = true;
  return v;
}

std::string hotFunctionsText(const std::vector<HotFunction>& hot, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < hot.size() && i < limit; ++i) {
    out += (out.empty() ? "" : ", ") + hot[i].function +
           (hot[i].module.empty() ? "" : " (" + hot[i].module + ")") + " " +
           std::to_string(hot[i].samples);
  }
  return out;
}

}  // namespace wctmon
