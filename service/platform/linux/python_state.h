#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/wait_model.h"

namespace wctmon::linux_platform {

/// Reads `out.size()` bytes of a process's memory at `addr`; false unless all could be read.
using MemoryReader = std::function<bool(std::uint64_t addr, std::span<std::byte> out)>;

/// Where a CPython interpreter keeps its state in a process: the run-time addresses of its
/// `_PyRuntime` and `Py_Version` symbols (0 when the process has none).
struct PythonAnchors {
  std::uint64_t runtime = 0;
  std::uint64_t version = 0;
};

/// One thread as the interpreter records it (a PyThreadState).
struct PythonThread {
  /// PyThread_get_thread_ident(): the thread's pthread_t, what an RLock records as its owner.
  std::uint64_t thread_id = 0;
  /// Its TID.
  std::int32_t native_id = 0;
  /// Innermost first: function (the code object's qualified name), file and line.
  std::vector<StackFrame> frames;
  /// Not all of its frames could be read (the depth bound, or a frame that did not validate).
  bool truncated = false;
};

/// The threads of a CPython interpreter, read from the process's memory without stopping it.
struct PythonState {
  /// Empty when the state was read; otherwise why it was not, in words for a person.
  std::string error;
  /// Py_Version: 0x030b02f0 for 3.11.2.
  std::uint32_t version = 0;
  std::vector<PythonThread> threads;

  [[nodiscard]] bool readable() const { return error.empty(); }
  /// The thread whose TID is `tid`; nullptr when the interpreter records none.
  [[nodiscard]] const PythonThread* byNativeId(std::int32_t tid) const;
  /// The thread whose pthread_t is `thread_id`; nullptr when the interpreter records none.
  [[nodiscard]] const PythonThread* byThreadId(std::uint64_t thread_id) const;
};

/// Reads the threads and frames of the CPython 3.11 (x86-64) interpreter at `anchors`, as py-spy
/// does: _PyRuntime's interpreters, their PyThreadState lists, each thread's current frame chain
/// and its code objects. The layout is 3.11's; it is used only when Py_Version says 3.11 and the
/// state validates on the process (every thread state's interpreter is the one listing it, its
/// TID is a thread of the process per `is_thread`, its pthread_t points to a TCB), else the
/// answer is an error. Every read is bounded: interpreters, threads, frames and string lengths.
[[nodiscard]] PythonState readPythonState(const PythonAnchors& anchors, const MemoryReader& read,
                                          const std::function<bool(std::int32_t)>& is_thread);

/// readPythonState for a process that may have no interpreter: nullopt when `anchors` are both 0.
[[nodiscard]] std::optional<PythonState> readPythonStateIfAny(
    const PythonAnchors& anchors, const MemoryReader& read,
    const std::function<bool(std::int32_t)>& is_thread);

/// The source line of the instruction at code unit `index` of a 3.11 code object whose first
/// line is `first_line` and whose location table (co_linetable) is `table`; nullopt when the
/// table does not cover the instruction or gives it no line.
[[nodiscard]] std::optional<int> pythonLineOf(std::span<const std::byte> table, int first_line,
                                              std::size_t index);

/// What a thread blocked in CPython's lock waits for, as its innermost Python frame (in the
/// standard library) says: a condition, an event, a queue, a semaphore, a barrier, a join or an
/// idle pool worker, none of which has an owner; nullopt when the frame is not one of those
/// (code that takes a lock itself).
[[nodiscard]] std::optional<std::string> pythonLibraryWait(const StackFrame& innermost);

}  // namespace wctmon::linux_platform
