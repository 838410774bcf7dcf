#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/ids.h"

namespace wctmon {

// Each enum below is declared from one list, which also gives each value its names: for people
// (toString), on the wire (the proto3 enum value name) and in the configuration. The name
// tables (model/enum_names.h) come from the same lists, so a value cannot lack a name.
// X(enumerator, display name, wire name, config name)

/// What a node of a wait chain is: the WCT object types followed by the Linux ones.
#define WCTMON_OBJECT_TYPES(X)                                                                \
  X(kCriticalSection, "CriticalSection", "OBJECT_TYPE_CRITICAL_SECTION", "critical_section")  \
  X(kSendMessage, "SendMessage", "OBJECT_TYPE_SEND_MESSAGE", "send_message")                  \
  X(kMutex, "Mutex", "OBJECT_TYPE_MUTEX", "mutex")                                            \
  X(kAlpc, "Alpc", "OBJECT_TYPE_ALPC", "alpc")                                                \
  X(kCom, "Com", "OBJECT_TYPE_COM", "com")                                                    \
  X(kThreadWait, "ThreadWait", "OBJECT_TYPE_THREAD_WAIT", "thread_wait")                      \
  X(kProcessWait, "ProcessWait", "OBJECT_TYPE_PROCESS_WAIT", "process_wait")                  \
  X(kThread, "Thread", "OBJECT_TYPE_THREAD", "thread")                                        \
  X(kComActivation, "ComActivation", "OBJECT_TYPE_COM_ACTIVATION", "com_activation")          \
  X(kUnknown, "Unknown", "OBJECT_TYPE_UNKNOWN", "unknown")                                    \
  X(kSocketIo, "SocketIo", "OBJECT_TYPE_SOCKET_IO", "socket_io")                              \
  X(kSmbIo, "SmbIo", "OBJECT_TYPE_SMB_IO", "smb_io")                                          \
  X(kFutex, "Futex", "OBJECT_TYPE_FUTEX", "futex")                                            \
  X(kRwLock, "RwLock", "OBJECT_TYPE_RW_LOCK", "rw_lock")                                      \
  X(kFileLock, "FileLock", "OBJECT_TYPE_FILE_LOCK", "file_lock")                              \
  X(kPipe, "Pipe", "OBJECT_TYPE_PIPE", "pipe")                                                \
  X(kUnixSocket, "UnixSocket", "OBJECT_TYPE_UNIX_SOCKET", "unix_socket")                      \
  X(kSleep, "Sleep", "OBJECT_TYPE_SLEEP", "sleep")                                            \
  X(kKernelWait, "KernelWait", "OBJECT_TYPE_KERNEL_WAIT", "kernel_wait")                      \
  X(kEventfd, "Eventfd", "OBJECT_TYPE_EVENTFD", "eventfd")                                    \
  X(kPoll, "Poll", "OBJECT_TYPE_POLL", "poll")                                                \
  X(kSignalWait, "SignalWait", "OBJECT_TYPE_SIGNAL_WAIT", "signal_wait")                      \
  /* Opening a FIFO, waiting for the other end to be opened. */                               \
  X(kFifoOpen, "FifoOpen", "OBJECT_TYPE_FIFO_OPEN", "fifo_open")                              \
  /* A condition variable, a thread park, a wait for a condition: no owner, by design. */     \
  X(kCondition, "Condition", "OBJECT_TYPE_CONDITION", "condition")                            \
  /* A lock that records no owner (a semaphore, Rust's or absl's Mutex): named, not owned. */ \
  X(kUnownedLock, "UnownedLock", "OBJECT_TYPE_UNOWNED_LOCK", "unowned_lock")

/// The state of a node, as WCT_OBJECT_STATUS.
#define WCTMON_OBJECT_STATUSES(X)                                                    \
  X(kNoAccess, "NoAccess", "OBJECT_STATUS_NO_ACCESS", "no_access")                   \
  X(kRunning, "Running", "OBJECT_STATUS_RUNNING", "running")                         \
  X(kBlocked, "Blocked", "OBJECT_STATUS_BLOCKED", "blocked")                         \
  X(kPidOnly, "PidOnly", "OBJECT_STATUS_PID_ONLY", "pid_only")                       \
  X(kPidOnlyRpcss, "PidOnlyRpcss", "OBJECT_STATUS_PID_ONLY_RPCSS", "pid_only_rpcss") \
  X(kOwned, "Owned", "OBJECT_STATUS_OWNED", "owned")                                 \
  X(kNotOwned, "NotOwned", "OBJECT_STATUS_NOT_OWNED", "not_owned")                   \
  X(kAbandoned, "Abandoned", "OBJECT_STATUS_ABANDONED", "abandoned")                 \
  X(kUnknown, "Unknown", "OBJECT_STATUS_UNKNOWN", "unknown")                         \
  X(kError, "Error", "OBJECT_STATUS_ERROR", "error")

#define WCTMON_ENUMERATOR(value, display, wire, config) value,

/// What a node of a wait chain is: the WCT object types followed by the Linux ones.
enum class ObjectType { WCTMON_OBJECT_TYPES(WCTMON_ENUMERATOR) };

/// The state of a node, as WCT_OBJECT_STATUS.
enum class ObjectStatus { WCTMON_OBJECT_STATUSES(WCTMON_ENUMERATOR) };

#undef WCTMON_ENUMERATOR

/// Short display name of an object type ("Mutex", "Pipe", ...).
[[nodiscard]] const char* toString(ObjectType type);
/// Short display name of a status ("Blocked", "Owned", ...).
[[nodiscard]] const char* toString(ObjectStatus status);

/// What a sample that follows chains into other processes also asks of Wait Chain Traversal
/// (Windows): WCT_OUT_OF_PROC_COM_FLAG (every thread of an out-of-process MTA COM server is
/// searched for the one serving the call, after RegisterWaitChainCOMCallback),
/// WCT_OUT_OF_PROC_CS_FLAG (critical sections of other processes) and WCT_NETWORK_IO_FLAG. The
/// Linux engine follows every kind of wait across processes and has no use for them.
struct WctFlags {
  bool com = true;
  bool critical_sections = true;
  bool network_io = true;

  friend bool operator==(const WctFlags&, const WctFlags&) = default;
};

/// One node of a chain: a thread, or the object a thread waits on.
struct WaitNode {
  ObjectType type = ObjectType::kUnknown;
  ObjectStatus status = ObjectStatus::kUnknown;
  // Thread nodes.
  ThreadRef thread;
  std::string thread_name;
  std::string process_name;
  /// The title its process gave itself, when it rewrote its command line.
  std::string process_title;
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

/// Whether a chain leads somewhere worth reporting: past its first object, into a cycle, or to an
/// object that is owned (or abandoned) or that only something outside can end (a stopped thread,
/// an uninterruptible wait, a FIFO without its other end), or to a lock whose holder is not
/// recorded. Chains of idle threads parked on ownerless waits do not.
[[nodiscard]] bool leadsSomewhere(const WaitChain& chain);

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
  /// The source file and line of pc, where the module's debug information says; empty and 0
  /// otherwise.
  std::string file{};
  std::uint32_t line = 0;
  friend bool operator==(const StackFrame&, const StackFrame&) = default;
};

/// A thread's frames in the language its runtime runs (Java, Python), as that runtime tells them.
struct RuntimeStack {
  /// "Java", "Python".
  std::string runtime;
  /// Innermost first: function, file and line; module where the runtime names one (the Java
  /// module, "java.base@17"); no pc.
  std::vector<StackFrame> frames;
  /// Where they come from ("the JVM's thread dump"), and what it cost.
  std::string source;
  friend bool operator==(const RuntimeStack&, const RuntimeStack&) = default;
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
  /// Its frames in its runtime's language, where the runtime tells them.
  std::optional<RuntimeStack> runtime_stack{};
  friend bool operator==(const ThreadCapture&, const ThreadCapture&) = default;
};

/// One goroutine of a Go program, as its runtime's memory shows it.
struct Goroutine {
  std::uint64_t id = 0;
  /// As Go's tracebacks say: "waiting", "runnable", "running", "syscall", ...
  std::string status;
  /// The runtime's wait reason ("semacquire", "chan receive", "select"); empty when not waiting.
  std::string wait_reason;
  /// What it waits on, as its reason and frames say ("sync.Mutex.Lock", "chan receive").
  std::string waits_on;
  /// It waits on a lock that records no owner (sync.Mutex, sync.RWMutex, a semaphore).
  bool lock_wait = false;
  /// It has waited at least this long, where its runtime noted since when (a GC saw it waiting).
  std::optional<std::chrono::milliseconds> waited{};
  /// Innermost first, from its saved registers along its frame pointers.
  std::vector<StackFrame> frames;
  friend bool operator==(const Goroutine&, const Goroutine&) = default;
};

/// What the runtime of a Go program says of its goroutines: they are not OS threads, and its OS
/// threads idle in its scheduler say nothing of what the program waits on.
struct GoProgram {
  Pid pid;
  /// runtime.buildVersion ("go1.19.8"); empty when it could not be read.
  std::string version;
  /// Whether its goroutine list was read; when not, `note` says why.
  bool visible = false;
  /// Why the goroutines are not visible, or what of them was left out.
  std::string note;
  /// Goroutines alive (not dead), the runtime's own included.
  std::uint32_t goroutines = 0;
  /// The program's waiting goroutines (not the runtime's own), by id.
  std::vector<Goroutine> blocked;
  friend bool operator==(const GoProgram&, const GoProgram&) = default;
};

/// Another process an analysis read: who it is and what it is called, as far as the platform's
/// sample says (WCT's gives only the pid: start time 0, no name).
struct ProcessSeen {
  Pid pid;
  /// With the pid, identifies the process across PID reuse.
  std::uint64_t start_time = 0;
  std::string name;
  /// The title it gave itself; empty when none.
  std::string title{};
  friend bool operator==(const ProcessSeen&, const ProcessSeen&) = default;
};

/// Everything one analysis found.
struct AnalysisResult {
  Pid pid;  // 0 for a whole-system analysis
  /// With the pid, identifies the process across PID reuse.
  std::uint64_t process_start_time = 0;
  std::string process_name;
  /// The title the process gave itself (see ProcessSample::title); empty when none.
  std::string process_title{};
  /// The other processes the analysis read (of a single-process analysis that followed chains
  /// out of it): those its deadlocks and chains name.
  std::vector<ProcessSeen> other_processes{};
  /// The Go programs among the processes analysed, with their blocked goroutines.
  std::vector<GoProgram> go_programs{};
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
