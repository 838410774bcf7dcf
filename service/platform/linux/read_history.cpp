#include "platform/linux/read_history.h"

#include <algorithm>

namespace wctmon::linux_platform {

std::optional<ProcessSample> ReadHistory::recent(Pid pid, TimePoint not_before, TimePoint now) {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(pid.value);
  if (it == entries_.end()) return std::nullopt;
  it->second.followed = now;
  if (it->second.read < not_before) return std::nullopt;
  const Entry& entry = it->second;
  ProcessSample out{.pid = entry.pid,
                    .name = entry.name,
                    .start_time = entry.start_time,
                    .title = entry.title,
                    .threads = {}};
  out.threads.reserve(entry.order.size());
  for (const auto tid : entry.order) out.threads.push_back(entry.threads.at(tid).sample);
  return out;
}

bool ReadHistory::followed(Pid pid, TimePoint now) const {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(pid.value);
  return it != entries_.end() && it->second.followed && now - *it->second.followed <= kKeptFor;
}

ReadHistory::Thread ReadHistory::update(const Thread* before, ThreadSample sample,
                                        TimePoint started, TimePoint ended) {
  Thread out{.sample = std::move(sample), .read = started, .since = std::nullopt};
  if (out.sample.status != ObjectStatus::kBlocked) return out;
  // The same wait, not scheduled since: blocked since the first read that showed it so.
  out.since = before != nullptr && before->since && sameBlockedWait(before->sample, out.sample)
                  ? before->since
                  : std::optional<TimePoint>(ended);
  return out;
}

void ReadHistory::keep(const ProcessSample& process, TimePoint started, TimePoint ended,
                       ReadBy by) {
  std::lock_guard lock(mutex_);
  sweep(ended);
  auto& entry = entries_[process.pid.value];
  // Another process under the same pid: nothing of the old one's threads carries over.
  if (entry.start_time != process.start_time) {
    entry.threads.clear();
    entry.followed.reset();
  }
  if (by == ReadBy::kFollower) entry.followed = ended;
  std::unordered_map<std::int32_t, Thread> threads;
  threads.reserve(process.threads.size());
  entry.order.clear();
  for (const auto& t : process.threads) {
    const auto old = entry.threads.find(t.id.tid.value);
    threads.insert_or_assign(
        t.id.tid.value,
        update(old != entry.threads.end() ? &old->second : nullptr, t, started, ended));
    entry.order.push_back(t.id.tid.value);
  }
  entry.threads = std::move(threads);
  entry.pid = process.pid;
  entry.name = process.name;
  entry.start_time = process.start_time;
  entry.title = process.title;
  entry.read = started;
}

void ReadHistory::keepThreads(const ProcessSample& process, TimePoint started, TimePoint ended) {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(process.pid.value);
  if (it == entries_.end() || it->second.start_time != process.start_time) return;
  for (const auto& t : process.threads) {
    const auto old = it->second.threads.find(t.id.tid.value);
    if (old == it->second.threads.end()) continue;  // kept with its process's next whole read
    old->second = update(&old->second, t, started, ended);
  }
}

std::optional<std::vector<ThreadSample>> ReadHistory::provenBlocked(
    std::span<const ThreadRef> threads) const {
  std::lock_guard lock(mutex_);
  std::vector<ThreadSample> out;
  out.reserve(threads.size());
  std::optional<TimePoint> latest_since;
  std::optional<TimePoint> earliest_read;
  for (const auto& ref : threads) {
    const auto entry = entries_.find(ref.pid.value);
    if (entry == entries_.end()) return std::nullopt;
    const auto t = entry->second.threads.find(ref.tid.value);
    if (t == entry->second.threads.end() || !t->second.since) return std::nullopt;
    latest_since = std::max(latest_since.value_or(*t->second.since), *t->second.since);
    earliest_read = std::min(earliest_read.value_or(t->second.read), t->second.read);
    out.push_back(t->second.sample);
  }
  if (!latest_since || *latest_since > *earliest_read) return std::nullopt;
  return out;
}

std::size_t ReadHistory::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void ReadHistory::sweep(TimePoint now) {
  // At most once a second: a sweep walks every entry.
  if (now - swept_ < std::chrono::seconds(1)) return;
  swept_ = now;
  std::erase_if(entries_, [now](const auto& e) { return now - e.second.read > kKeptFor; });
}

}  // namespace wctmon::linux_platform
