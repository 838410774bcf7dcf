#include "platform/linux/jvm_locks.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "model/format.h"
#include "os/unique_fd.h"
#include "platform/linux/call_sites.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {
namespace {

/// A JVM in a container numbers its threads (a dump's `nid`) as its PID namespace does: they are
/// renumbered as the service numbers them, from the NSpid of each of the process's threads
/// (the last number is the innermost namespace's). A thread not found keeps its number: in the
/// service's own namespace the two are the same.
void toHostTids(Pid pid, JavaDump& dump) {
  const UniqueFd task_fd(::open(procPath(pid, "task").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task_fd.valid()) return;
  std::map<std::int32_t, std::int32_t> host_of;
  for (const auto& [inner, host] : namespaceTids(task_fd.get())) {
    if (inner != host) host_of.emplace(inner, host);
  }
  if (host_of.empty()) return;
  for (auto& t : dump.threads) {
    if (auto it = host_of.find(t.tid); it != host_of.end()) t.tid = it->second;
  }
}

/// How long a thread dump may take before the JVM is given up on for this sample.
constexpr std::chrono::milliseconds kDumpTimeout{5000};
/// At most this many JVMs are remembered; the oldest answers go first.
constexpr std::size_t kMaxEntries = 256;

constexpr std::string_view kFromDump = "as the JVM's thread dump says";

/// The java.util.concurrent locks a thread parks on to take (the rest it parks on are
/// conditions, latches, queues and futures, which no thread owns).
struct LockKind {
  std::string_view class_part;
  std::string_view kind;
  ObjectType type;
};
constexpr LockKind kLockKinds[] = {
    {"ReentrantReadWriteLock", "Java ReentrantReadWriteLock", ObjectType::kRwLock},
    {"ReentrantLock", "Java ReentrantLock", ObjectType::kMutex},
    {"StampedLock", "Java StampedLock", ObjectType::kRwLock},
    {"Semaphore", "Java Semaphore", ObjectType::kUnownedLock},
};

const LockKind* lockKindOf(const std::string& class_name) {
  // A ConditionObject is an inner class of a lock's synchronizer: a condition, not the lock.
  if (class_name.find("ConditionObject") != std::string::npos) return nullptr;
  for (const auto& kind : kLockKinds) {
    if (class_name.find(kind.class_part) != std::string::npos) return &kind;
  }
  return nullptr;
}

std::string objectName(std::string_view kind, const JavaObjectRef& object) {
  return std::string(kind) + " " + hexString(object.address) + " (" + object.class_name + ")";
}

std::string quoted(const std::string& name) { return "\"" + name + "\""; }

/// Whether `dump` shows thread `tid` parked to take a java.util.concurrent lock that no thread
/// holds: mostly the moment between the lock's release and its next waiter's wake-up (an idle
/// pool's worker at its queue's lock), which a waiter that ran since has most likely ended by
/// taking it.
bool parkedOnUnheldLock(const JavaDump& dump, std::int32_t tid) {
  for (const auto& t : dump.threads) {
    if (t.tid != tid) continue;
    return t.wait == JavaWaitKind::kPark && t.waits_on &&
           lockKindOf(t.waits_on->class_name) != nullptr &&
           holderOf(dump, t.waits_on->address) == nullptr;
  }
  return false;
}

/// The wait a lock (monitor or java.util.concurrent lock) makes, owned by `holder` when the dump
/// names one.
WaitObject lockWait(Pid pid, std::string_view kind, ObjectType type, const JavaObjectRef& object,
                    const JavaThreadDump* holder, std::string_view what) {
  WaitObject w;
  w.key = object.address;
  w.name = objectName(kind, object);
  if (holder != nullptr && holder->tid != 0) {
    w.type = type == ObjectType::kUnownedLock ? ObjectType::kMutex : type;
    w.status = ObjectStatus::kOwned;
    w.owner_threads.push_back(ThreadRef{pid, Tid{holder->tid}});
    w.detail = std::string(what) + ", held by " + quoted(holder->name) + " (TID " +
               std::to_string(holder->tid) + "), " + std::string(kFromDump);
    return w;
  }
  w.type = ObjectType::kUnownedLock;
  w.status = ObjectStatus::kUnknown;
  w.detail = std::string(what) + (type == ObjectType::kUnownedLock
                                      ? ": it records no owner"
                                      : ": the JVM's thread dump names no holder (a read lock's "
                                        "holders are not recorded)");
  return w;
}

std::optional<WaitObject> javaWait(Pid pid, const JavaDump& dump, const JavaThreadDump& t) {
  if (!t.state.starts_with("BLOCKED") && !t.state.starts_with("WAITING")) return std::nullopt;
  switch (t.wait) {
    case JavaWaitKind::kMonitorEnter:
    case JavaWaitKind::kMonitorReenter: {
      if (!t.waits_on) return std::nullopt;
      const bool reenter = t.wait == JavaWaitKind::kMonitorReenter;
      return lockWait(pid, "Java monitor", ObjectType::kMutex, *t.waits_on,
                      holderOf(dump, t.waits_on->address),
                      reenter ? "taking a Java monitor back after Object.wait"
                              : "entering a Java monitor (synchronized)");
    }
    case JavaWaitKind::kPark: {
      WaitObject w;
      if (t.waits_on) {
        if (const auto* kind = lockKindOf(t.waits_on->class_name)) {
          return lockWait(pid, kind->kind, kind->type, *t.waits_on,
                          holderOf(dump, t.waits_on->address),
                          std::string("taking a ") + std::string(kind->kind.substr(5)));
        }
        w.key = t.waits_on->address;
        w.name = objectName("Java park on", *t.waits_on);
      } else {
        w.name = std::string(kJavaParkKind);
      }
      w.type = ObjectType::kCondition;
      w.status = ObjectStatus::kBlocked;
      w.detail =
          "LockSupport.park for a condition, latch, queue or future to be signalled: "
          "nobody owns it, " +
          std::string(kFromDump);
      return w;
    }
    case JavaWaitKind::kObjectWait:
    case JavaWaitKind::kNone:
      return std::nullopt;
  }
  return std::nullopt;
}

RuntimeStack javaStack(const JavaThreadDump& t) {
  return RuntimeStack{"Java", t.frames, "the JVM's thread dump"};
}

}  // namespace

bool isJavaWaiter(const ThreadSample& thread) {
  const auto& w = thread.wait;
  if (!w) return false;
  // A timed park (parkNanos, a keep-alive) ends by itself; a monitor entry's timeout is
  // HotSpot's retry, not the program's.
  return (w->name.str().starts_with(kJavaParkKind) && !w->timeout) ||
         w->name.str().starts_with(kJavaMonitorKind);
}

void applyJavaDump(ProcessSample& process, const JavaDump& dump,
                   const std::vector<std::int32_t>& covered) {
  std::map<std::int32_t, const JavaThreadDump*> by_tid;
  for (const auto& t : dump.threads) {
    if (t.tid != 0) by_tid.emplace(t.tid, &t);
  }
  std::vector<std::int32_t> holders;
  for (auto& thread : process.threads) {
    const auto tid = thread.id.tid.value;
    if (std::find(covered.begin(), covered.end(), tid) == covered.end()) continue;
    const auto it = by_tid.find(tid);
    if (it == by_tid.end()) continue;
    thread.runtime_stack = javaStack(*it->second);
    if (auto w = javaWait(process.pid, dump, *it->second)) {
      for (const auto& owner : w->owner_threads) holders.push_back(owner.tid.value);
      thread.wait = std::move(*w);
    }
  }
  // The holders' frames too: while their lock is waited on they still hold it.
  for (auto& thread : process.threads) {
    const auto tid = thread.id.tid.value;
    if (thread.runtime_stack || std::find(holders.begin(), holders.end(), tid) == holders.end()) {
      continue;
    }
    if (const auto it = by_tid.find(tid); it != by_tid.end()) {
      thread.runtime_stack = javaStack(*it->second);
    }
  }
}

std::vector<std::int32_t> JvmDumpState::covered(const std::vector<JavaWaiter>& waiters,
                                                const JvmDumpPolicy& policy) const {
  std::vector<std::int32_t> out;
  if (!dump_) return out;
  for (const auto& w : waiters) {
    const auto it = seen_.find(w.tid);
    if (it == seen_.end() || !it->second.runs || !w.runs || *w.runs < *it->second.runs) continue;
    const auto runs = *w.runs - *it->second.runs;
    const auto cpu = w.cpu_ns - std::min(w.cpu_ns, it->second.cpu_ns);
    const bool only_retried = w.monitor == it->second.monitor &&
                              cpu <= runs * static_cast<std::uint64_t>(
                                                std::chrono::nanoseconds(policy.retry_cpu).count());
    // Only retries of a lock someone holds: one no thread held was most likely taken since.
    if (runs == 0 || (only_retried && !parkedOnUnheldLock(*dump_, w.tid))) out.push_back(w.tid);
  }
  return out;
}

void JvmDumpState::observe(const std::vector<JavaWaiter>& waiters,
                           const std::vector<std::optional<std::chrono::milliseconds>>& waited,
                           Clock::time_point now) {
  std::map<std::int32_t, Clock::time_point> since;
  for (std::size_t i = 0; i < waiters.size(); ++i) {
    const auto tid = waiters[i].tid;
    if (const auto it = waiting_since_.find(tid); it != waiting_since_.end()) {
      since[tid] = it->second;
    } else {
      since[tid] =
          now - (i < waited.size() && waited[i] ? *waited[i] : std::chrono::milliseconds(0));
    }
  }
  waiting_since_ = std::move(since);
}

std::vector<std::int32_t> JvmDumpState::unseen(const std::vector<JavaWaiter>& waiters) const {
  std::vector<std::int32_t> out;
  for (const auto& w : waiters) {
    if (!waiting_since_.contains(w.tid)) out.push_back(w.tid);
  }
  return out;
}

bool JvmDumpState::shouldAsk(const std::vector<JavaWaiter>& waiters, const JvmDumpPolicy& policy,
                             bool on_demand, Clock::time_point now) const {
  if (refused_) return false;
  if (asked_ && now - *asked_ < policy.min_interval) return false;
  const auto seen = covered(waiters, policy);
  for (const auto& w : waiters) {
    if (std::find(seen.begin(), seen.end(), w.tid) != seen.end()) continue;
    const auto since = waiting_since_.find(w.tid);
    if (on_demand || (since != waiting_since_.end() && now - since->second >= policy.min_wait)) {
      return true;
    }
  }
  return false;
}

void JvmDumpState::recordDump(std::shared_ptr<const JavaDump> dump,
                              const std::vector<JavaWaiter>& waiters, Clock::time_point now,
                              std::chrono::microseconds took) {
  dump_ = std::move(dump);
  seen_.clear();
  for (const auto& w : waiters) seen_[w.tid] = w;
  asked_ = now;
  took_ = took;
  error_.clear();
}

void JvmDumpState::recordFailure(std::string error, bool permanent, Clock::time_point now) {
  error_ = std::move(error);
  refused_ = refused_ || permanent;
  asked_ = now;
}

JvmLocks::JvmLocks(JvmDumpPolicy policy, DumpRequest request)
    : policy_(policy), request_(std::move(request)) {
  if (!request_) {
    request_ = [](Pid pid, std::uint64_t start_time) -> Result<JvmThreadDumpText> {
      auto facts = readJvmAttachFacts(pid);
      if (!facts) return facts.error();
      return requestJvmThreadDump(pid, start_time, *facts, kDumpTimeout);
    };
  }
}

void JvmLocks::apply(ProcessSample& process, bool on_demand) {
  std::vector<JavaWaiter> waiters;
  for (const auto& thread : process.threads) {
    if (!isJavaWaiter(thread)) continue;
    waiters.push_back(
        {thread.id.tid.value, thread.wait->name.str().starts_with(kJavaMonitorKind), {}, 0});
  }
  if (waiters.empty()) return;
  const auto task_path = "/proc/" + std::to_string(process.pid.value) + "/task";
  UniqueFd task_fd(::open(task_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task_fd.valid()) return;
  for (auto& w : waiters) {
    if (const auto times = readSchedTimes(task_fd.get(), w.tid)) {
      w.runs = times->runs;
      w.cpu_ns = times->cpu_ns;
    }
  }
  // How long a thread has waited is read only for threads not seen waiting before (its sched
  // file is 1.5 KB of text): the others' waits started when they were first seen.
  std::vector<std::int32_t> fresh;
  {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(process.pid.value);
    fresh = it != entries_.end() && it->second.start_time == process.start_time
                ? it->second.state.unseen(waiters)
                : std::vector<std::int32_t>();
    if (it == entries_.end() || it->second.start_time != process.start_time) {
      for (const auto& w : waiters) fresh.push_back(w.tid);
    }
  }
  std::vector<ThreadRef> refs;
  for (const auto tid : fresh) refs.push_back(ThreadRef{process.pid, Tid{tid}});
  const auto fresh_waits = readWaitTimes(refs);
  std::vector<std::optional<std::chrono::milliseconds>> waited(waiters.size());
  for (std::size_t i = 0; i < waiters.size(); ++i) {
    const auto at = std::find(fresh.begin(), fresh.end(), waiters[i].tid);
    if (at != fresh.end()) waited[i] = fresh_waits[static_cast<std::size_t>(at - fresh.begin())];
  }

  const auto now = JvmDumpState::Clock::now();
  bool ask = false;
  {
    std::lock_guard lock(mutex_);
    auto& entry = entries_[process.pid.value];
    if (entry.start_time != process.start_time) entry = Entry{process.start_time, {}, false};
    entry.state.observe(waiters, waited, now);
    ask = !entry.asking && entry.state.shouldAsk(waiters, policy_, on_demand, now);
    entry.asking = ask;
    if (entries_.size() > kMaxEntries) {
      // Forget JVMs that are gone; no one asks about them again.
      std::erase_if(entries_, [&](const auto& e) {
        return e.first != process.pid.value && !e.second.asking &&
               ::access(("/proc/" + std::to_string(e.first)).c_str(), F_OK) != 0;
      });
    }
  }

  if (ask) {
    auto answer = request_(process.pid, process.start_time);
    std::shared_ptr<const JavaDump> dump;
    if (answer) {
      auto parsed = parseJavaThreadDump(answer->text);
      toHostTids(process.pid, parsed);
      dump = std::make_shared<const JavaDump>(std::move(parsed));
    }
    std::lock_guard lock(mutex_);
    auto& entry = entries_[process.pid.value];
    entry.asking = false;
    if (entry.start_time == process.start_time) {
      if (dump) {
        entry.state.recordDump(std::move(dump), waiters, now, answer->took);
      } else {
        const bool permanent = answer.error().code == ErrorCode::kUnsupported;
        entry.state.recordFailure(answer.error().message, permanent, now);
      }
    }
  }

  std::shared_ptr<const JavaDump> dump;
  std::vector<std::int32_t> covered;
  std::string error;
  {
    std::lock_guard lock(mutex_);
    const auto& state = entries_[process.pid.value].state;
    dump = state.dump();
    covered = state.covered(waiters, policy_);
    error = state.error();
  }
  if (dump) applyJavaDump(process, *dump, covered);
  if (error.empty()) return;
  for (auto& thread : process.threads) {
    const bool seen =
        std::find(covered.begin(), covered.end(), thread.id.tid.value) != covered.end();
    if (!seen && isJavaWaiter(thread)) {
      thread.wait->detail += "; " + error;
    }
  }
}

}  // namespace wctmon::linux_platform
