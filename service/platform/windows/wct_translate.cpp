#include "platform/windows/wct_translate.h"

#include <cwchar>
#include <map>
#include <set>
#include <string_view>

#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

bool isThreadNode(const WAITCHAIN_NODE_INFO& node) { return node.ObjectType == WctThreadType; }

std::string objectName(const WAITCHAIN_NODE_INFO& node) {
  // Not always terminated when the name fills the array.
  const auto* name = node.LockObject.ObjectName;
  return toUtf8(std::wstring_view(name, ::wcsnlen(name, WCT_OBJNAME_LENGTH)));
}

/// Identifies an object across two reads; WCT gives no address, so the type and the name do
/// (two unnamed objects of one type compare by their owners, which the core compares too).
std::uint64_t objectKey(const WAITCHAIN_NODE_INFO& node, const std::string& name) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a
  auto mix = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  };
  mix(static_cast<unsigned char>(node.ObjectType));
  for (char c : name) mix(static_cast<unsigned char>(c));
  return hash;
}

RunState runStateOf(WCT_OBJECT_STATUS status) {
  switch (status) {
    case WctStatusRunning:
      return RunState::kRunning;
    case WctStatusBlocked:
      return RunState::kSleeping;
    default:
      return RunState::kUnknown;
  }
}

/// The sample of the thread at `nodes[0]`, from it and what follows it in a chain.
ThreadSample sampleAt(std::span<const WAITCHAIN_NODE_INFO> nodes) {
  const auto& self = nodes[0];
  ThreadSample out;
  out.id = ThreadRef{Pid{static_cast<std::int32_t>(self.ThreadObject.ProcessId)},
                     Tid{static_cast<std::int32_t>(self.ThreadObject.ThreadId)}};
  out.status = objectStatusOf(self.ObjectStatus);
  out.state = runStateOf(self.ObjectStatus);
  if (out.status == ObjectStatus::kNoAccess) return out;  // nothing else of it is known
  out.context_switches = self.ThreadObject.ContextSwitches;
  out.wait_time = std::chrono::milliseconds(self.ThreadObject.WaitTime);
  if (nodes.size() < 2 || isThreadNode(nodes[1])) return out;
  const auto& object = nodes[1];
  WaitObject wait;
  wait.type = objectTypeOf(object.ObjectType);
  wait.status = objectStatusOf(object.ObjectStatus);
  wait.name = objectName(object);
  wait.key = objectKey(object, wait.name);
  wait.alertable = object.LockObject.Alertable != FALSE;
  // A finite wait: WCT gives its time-out in milliseconds; zero or "infinite" is none.
  const auto timeout = object.LockObject.Timeout.QuadPart;
  if (timeout > 0 && timeout < static_cast<LONGLONG>(INFINITE)) {
    wait.timeout = std::chrono::milliseconds(timeout);
  }
  if (nodes.size() >= 3 && isThreadNode(nodes[2])) {
    const auto& owner = nodes[2].ThreadObject;
    const Pid owner_pid{static_cast<std::int32_t>(owner.ProcessId)};
    if (owner.ThreadId != 0) {
      wait.owner_threads.push_back(
          ThreadRef{owner_pid, Tid{static_cast<std::int32_t>(owner.ThreadId)}});
    } else if (owner.ProcessId != 0) {
      // PidOnly (ALPC, COM): the process that serves the call, not which of its threads.
      wait.owner_processes.push_back(owner_pid);
    }
  }
  out.wait = std::move(wait);
  return out;
}

std::string errorName(DWORD status) {
  switch (status) {
    case ERROR_ACCESS_DENIED:
      return "ERROR_ACCESS_DENIED";
    case ERROR_INVALID_PARAMETER:
      return "ERROR_INVALID_PARAMETER";
    case ERROR_NOT_SUPPORTED:
      return "ERROR_NOT_SUPPORTED";
    case ERROR_CANCELLED:
      return "ERROR_CANCELLED";
    default:
      return "error " + std::to_string(status);
  }
}

}  // namespace

ObjectType objectTypeOf(WCT_OBJECT_TYPE type) {
  switch (type) {
    case WctCriticalSectionType:
      return ObjectType::kCriticalSection;
    case WctSendMessageType:
      return ObjectType::kSendMessage;
    case WctMutexType:
      return ObjectType::kMutex;
    case WctAlpcType:
      return ObjectType::kAlpc;
    case WctComType:
      return ObjectType::kCom;
    case WctThreadWaitType:
      return ObjectType::kThreadWait;
    case WctProcessWaitType:
      return ObjectType::kProcessWait;
    case WctThreadType:
      return ObjectType::kThread;
    case WctComActivationType:
      return ObjectType::kComActivation;
    case WctUnknownType:
      break;
  }
  // WCT_OBJECT_TYPE has more values on newer Windows (SocketIo, SmbIo): by number, since the
  // headers may not name them.
  switch (static_cast<int>(type)) {
    case WctUnknownType + 1:
      return ObjectType::kSocketIo;
    case WctUnknownType + 2:
      return ObjectType::kSmbIo;
    default:
      return ObjectType::kUnknown;
  }
}

ObjectStatus objectStatusOf(WCT_OBJECT_STATUS status) {
  switch (status) {
    case WctStatusNoAccess:
      return ObjectStatus::kNoAccess;
    case WctStatusRunning:
      return ObjectStatus::kRunning;
    case WctStatusBlocked:
      return ObjectStatus::kBlocked;
    case WctStatusPidOnly:
      return ObjectStatus::kPidOnly;
    case WctStatusPidOnlyRpcss:
      return ObjectStatus::kPidOnlyRpcss;
    case WctStatusOwned:
      return ObjectStatus::kOwned;
    case WctStatusNotOwned:
      return ObjectStatus::kNotOwned;
    case WctStatusAbandoned:
      return ObjectStatus::kAbandoned;
    case WctStatusError:
      return ObjectStatus::kError;
    case WctStatusUnknown:
      break;
  }
  return ObjectStatus::kUnknown;
}

ThreadSample threadFromChain(Pid pid, const WctThreadChain& chain,
                             std::vector<std::string>& warnings) {
  const ThreadRef self{pid, Tid{static_cast<std::int32_t>(chain.tid)}};
  ThreadSample out;
  out.id = self;
  switch (chain.status) {
    case ERROR_SUCCESS:
    case ERROR_MORE_DATA:
    case kErrorTooManyThreads:
      break;
    case ERROR_OBJECT_NOT_FOUND:
      // The thread exited between the enumeration and WCT's read: simply no longer there.
      out.name = std::string(kExitedThreadName);
      out.status = ObjectStatus::kError;
      return out;
    case ERROR_ACCESS_DENIED:
      out.status = ObjectStatus::kNoAccess;
      return out;
    default:
      out.status = ObjectStatus::kError;
      warnings.push_back("thread " + std::to_string(chain.tid) +
                         ": GetThreadWaitChain failed with " + errorName(chain.status));
      return out;
  }
  if (chain.nodes.empty() || !isThreadNode(chain.nodes[0]) ||
      chain.nodes[0].ThreadObject.ThreadId != chain.tid) {
    out.status = ObjectStatus::kError;
    warnings.push_back("thread " + std::to_string(chain.tid) +
                       ": WCT returned a chain that does not start at the thread");
    return out;
  }
  if (chain.status != ERROR_SUCCESS) {
    // Still a valid start of the chain: kept, and said to be cut.
    warnings.push_back(
        "thread " + std::to_string(chain.tid) + ": wait chain cut at " +
        std::to_string(chain.nodes.size()) + " nodes (" +
        (chain.status == ERROR_MORE_DATA ? "ERROR_MORE_DATA" : "ERROR_TOO_MANY_THREADS") + ")");
  }
  auto sample = sampleAt(chain.nodes);
  sample.id = self;  // the process id of the first node is the one asked for
  sample.platform_cycle = chain.is_cycle;
  return sample;
}

Snapshot snapshotWithoutChains(const ProcessThreads& process, const std::string& why) {
  Snapshot out;
  ProcessSample own;
  own.pid = process.pid;
  own.name = process.name;
  own.start_time = process.start_time;
  own.threads.reserve(process.tids.size());
  for (std::size_t i = 0; i < process.tids.size(); ++i) {
    ThreadSample thread;
    thread.id = ThreadRef{process.pid, Tid{static_cast<std::int32_t>(process.tids[i])}};
    if (i < process.thread_names.size()) thread.name = process.thread_names[i];
    if (i < process.cpu_times.size()) thread.cpu_time = process.cpu_times[i];
    own.threads.push_back(std::move(thread));
  }
  out.processes.push_back(std::move(own));
  out.warnings.push_back(why);
  return out;
}

Snapshot snapshotFromChains(const ProcessThreads& process, std::span<const WctThreadChain> chains,
                            bool out_of_proc) {
  Snapshot out;
  ProcessSample own;
  own.pid = process.pid;
  own.name = process.name;
  own.start_time = process.start_time;
  std::set<ThreadRef> seen;
  for (std::size_t i = 0; i < chains.size(); ++i) {
    auto thread = threadFromChain(process.pid, chains[i], out.warnings);
    // Chains come in the order of the threads they were asked for.
    const bool listed = i < process.tids.size() && process.tids[i] == chains[i].tid;
    if (listed && thread.name.empty() && i < process.thread_names.size()) {
      thread.name = process.thread_names[i];
    }
    if (listed && i < process.cpu_times.size() && !isExited(thread)) {
      thread.cpu_time = process.cpu_times[i];
    }
    seen.insert(thread.id);
    own.threads.push_back(std::move(thread));
  }
  out.processes.push_back(std::move(own));
  if (!out_of_proc) return out;
  // Threads of other processes that the chains pass through: what WCT said of each from where
  // it appears (its wait and that wait's owner), the first time it appears.
  std::map<Pid, ProcessSample> others;
  for (const auto& chain : chains) {
    if (chain.status != ERROR_SUCCESS && chain.status != ERROR_MORE_DATA &&
        chain.status != kErrorTooManyThreads) {
      continue;
    }
    for (std::size_t i = 1; i < chain.nodes.size(); ++i) {
      const auto& node = chain.nodes[i];
      if (!isThreadNode(node) || node.ThreadObject.ThreadId == 0) continue;
      const Pid pid{static_cast<std::int32_t>(node.ThreadObject.ProcessId)};
      if (pid == process.pid) continue;
      auto sample = sampleAt(std::span(chain.nodes).subspan(i));
      if (!seen.insert(sample.id).second) continue;
      auto& other = others[pid];
      other.pid = pid;
      other.threads.push_back(std::move(sample));
    }
  }
  for (auto& [pid, sample] : others) out.processes.push_back(std::move(sample));
  return out;
}

}  // namespace wctmon::windows_platform
