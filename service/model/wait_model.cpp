#include "model/wait_model.h"

#include <algorithm>

#include "model/snapshot.h"

namespace wctmon {

const char* toString(ObjectType type) {
  switch (type) {
    case ObjectType::kCriticalSection:
      return "CriticalSection";
    case ObjectType::kSendMessage:
      return "SendMessage";
    case ObjectType::kMutex:
      return "Mutex";
    case ObjectType::kAlpc:
      return "Alpc";
    case ObjectType::kCom:
      return "Com";
    case ObjectType::kThreadWait:
      return "ThreadWait";
    case ObjectType::kProcessWait:
      return "ProcessWait";
    case ObjectType::kThread:
      return "Thread";
    case ObjectType::kComActivation:
      return "ComActivation";
    case ObjectType::kUnknown:
      return "Unknown";
    case ObjectType::kSocketIo:
      return "SocketIo";
    case ObjectType::kSmbIo:
      return "SmbIo";
    case ObjectType::kFutex:
      return "Futex";
    case ObjectType::kRwLock:
      return "RwLock";
    case ObjectType::kFileLock:
      return "FileLock";
    case ObjectType::kPipe:
      return "Pipe";
    case ObjectType::kUnixSocket:
      return "UnixSocket";
    case ObjectType::kSleep:
      return "Sleep";
    case ObjectType::kKernelWait:
      return "KernelWait";
    case ObjectType::kEventfd:
      return "Eventfd";
    case ObjectType::kPoll:
      return "Poll";
    case ObjectType::kSignalWait:
      return "SignalWait";
    case ObjectType::kFifoOpen:
      return "FifoOpen";
  }
  return "Unknown";
}

const char* toString(ObjectStatus status) {
  switch (status) {
    case ObjectStatus::kNoAccess:
      return "NoAccess";
    case ObjectStatus::kRunning:
      return "Running";
    case ObjectStatus::kBlocked:
      return "Blocked";
    case ObjectStatus::kPidOnly:
      return "PidOnly";
    case ObjectStatus::kPidOnlyRpcss:
      return "PidOnlyRpcss";
    case ObjectStatus::kOwned:
      return "Owned";
    case ObjectStatus::kNotOwned:
      return "NotOwned";
    case ObjectStatus::kAbandoned:
      return "Abandoned";
    case ObjectStatus::kUnknown:
      return "Unknown";
    case ObjectStatus::kError:
      return "Error";
  }
  return "Unknown";
}

bool Deadlock::crossProcess() const {
  return std::any_of(threads.begin(), threads.end(),
                     [&](const ThreadRef& t) { return t.pid != threads.front().pid; });
}

bool sameWaitObject(const WaitObject& a, const WaitObject& b) {
  // The time left of a timed wait shrinks between reads of the same wait: it is not compared.
  return a.type == b.type && a.status == b.status && a.key == b.key && a.name == b.name &&
         a.owner_threads == b.owner_threads && a.owner_processes == b.owner_processes &&
         a.timeout.has_value() == b.timeout.has_value();
}

bool sameBlockedWait(const ThreadSample& before, const ThreadSample& after) {
  return before.id == after.id && before.status == ObjectStatus::kBlocked &&
         after.status == ObjectStatus::kBlocked && before.state == after.state &&
         before.context_switches.has_value() && before.context_switches == after.context_switches &&
         before.wait.has_value() == after.wait.has_value() &&
         (!before.wait || sameWaitObject(*before.wait, *after.wait));
}

}  // namespace wctmon
