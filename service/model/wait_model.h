#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/ids.h"

namespace wctmon {

/// What a node of a wait chain is: the WCT object types followed by the Linux ones.
enum class ObjectType {
  kCriticalSection,
  kSendMessage,
  kMutex,
  kAlpc,
  kCom,
  kThreadWait,
  kProcessWait,
  kThread,
  kComActivation,
  kUnknown,
  kSocketIo,
  kSmbIo,
  kFutex,
  kRwLock,
  kFileLock,
  kPipe,
  kUnixSocket,
  kSleep,
  kKernelWait,
  kEventfd,
  kPoll,
  kSignalWait,
  /// Opening a FIFO, waiting for the other end to be opened.
  kFifoOpen,
};

/// The last object type: loops over every type end here.
inline constexpr ObjectType kLastObjectType = ObjectType::kFifoOpen;

/// The state of a node, as WCT_OBJECT_STATUS.
enum class ObjectStatus {
  kNoAccess,
  kRunning,
  kBlocked,
  kPidOnly,
  kPidOnlyRpcss,
  kOwned,
  kNotOwned,
  kAbandoned,
  kUnknown,
  kError,
};

/// Short display name of an object type ("Mutex", "Pipe", ...).
[[nodiscard]] const char* toString(ObjectType type);
/// Short display name of a status ("Blocked", "Owned", ...).
[[nodiscard]] const char* toString(ObjectStatus status);

/// One node of a chain: a thread, or the object a thread waits on.
struct WaitNode {
  ObjectType type = ObjectType::kUnknown;
  ObjectStatus status = ObjectStatus::kUnknown;
  // Thread nodes.
  ThreadRef thread;
  std::string thread_name;
  std::string process_name;
  std::optional<std::chrono::milliseconds> wait_time;
  std::optional<std::uint64_t> context_switches;
  // Object nodes.
  std::string name;
  std::optional<std::chrono::milliseconds> timeout;
  bool alertable = false;
  std::vector<Pid> owner_pids;
  std::string detail;

  [[nodiscard]] bool isThread() const { return type == ObjectType::kThread; }
  friend bool operator==(const WaitNode&, const WaitNode&) = default;
};

/// The chain that starts at one thread: thread -> object -> owning thread -> ...
struct WaitChain {
  ThreadRef start;
  std::vector<WaitNode> nodes;
  bool is_cycle = false;
  /// Cut at the caller's node limit; still valid (WCT's ERROR_MORE_DATA).
  bool truncated = false;
  /// The number of nodes the whole chain needs.
  std::uint32_t node_count = 0;
  friend bool operator==(const WaitChain&, const WaitChain&) = default;
};

/// One cycle of the wait graph and the threads that wait on it from outside.
struct Deadlock {
  std::vector<ThreadRef> threads;
  std::vector<ThreadRef> spurs;
  [[nodiscard]] bool crossProcess() const;
};

/// One register of a captured context.
struct RegisterValue {
  std::string name;
  std::uint64_t value = 0;
  friend bool operator==(const RegisterValue&, const RegisterValue&) = default;
};

/// One frame of a captured stack.
struct StackFrame {
  std::uint64_t pc = 0;
  std::string function;  // demangled; empty when unknown
  std::string module;
  std::uint64_t offset = 0;  // pc - function start
  /// Found by scanning the stack for return addresses, not by unwinding: likely, not certain.
  bool scanned = false;
  friend bool operator==(const StackFrame&, const StackFrame&) = default;
};

/// How a thread's evidence was taken.
enum class CaptureMethod {
  /// Stopped briefly (ptrace, SuspendThread): every register.
  kStopped,
  /// Read without stopping, because a stop would change what the thread's wait returns.
  kNotStopped,
};

/// Evidence taken from one thread: its registers and stack.
struct ThreadCapture {
  ThreadRef thread;
  bool captured = false;
  std::string error;
  std::string architecture;
  std::vector<RegisterValue> registers;
  std::vector<StackFrame> frames;
  std::chrono::nanoseconds stop_time{0};
  std::int32_t tracer_pid = 0;
  CaptureMethod method = CaptureMethod::kStopped;
  /// Why the thread was not stopped, and what that capture could not take.
  std::string note;
  friend bool operator==(const ThreadCapture&, const ThreadCapture&) = default;
};

/// Everything one analysis found.
struct AnalysisResult {
  Pid pid;  // 0 for a whole-system analysis
  /// With the pid, identifies the process across PID reuse.
  std::uint64_t process_start_time = 0;
  std::string process_name;
  std::uint32_t process_count = 0;
  std::uint32_t thread_count = 0;
  std::vector<WaitChain> chains;
  std::vector<Deadlock> deadlocks;
  std::vector<ThreadCapture> captures;
  std::vector<std::string> warnings;
  std::chrono::system_clock::time_point sampled_at;
  std::chrono::microseconds analysis_time{0};
};

}  // namespace wctmon
