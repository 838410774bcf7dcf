#include "platform/windows/windows_thread_inspector.h"

// The capture in three steps, each in a file of its own: the threads are held one at a time
// (thread_context_capture.cpp), then their stacks walked from the copies
// (dbghelp_stack_walker.cpp, which names what DbgHelp cannot through pe_export_table.cpp).

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "platform/windows/dbghelp_stack_walker.h"
#include "platform/windows/suspension_record.h"
#include "platform/windows/thread_context_capture.h"

namespace wctmon::windows_platform {

std::mutex& dbgHelpMutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<ThreadCapture> WindowsThreadInspector::capture(std::span<const ThreadRef> threads) {
  installSuspensionGuards();
  std::vector<ThreadCapture> out(threads.size());
  // Threads grouped by process, in the order they come: each process is opened, and its
  // symbols loaded, once per call.
  std::vector<Pid> pids;
  for (const auto& t : threads) {
    if (std::find(pids.begin(), pids.end(), t.pid) == pids.end()) pids.push_back(t.pid);
  }
  for (const Pid pid : pids) {
    const CaptureTarget target = openTarget(pid);
    std::vector<std::size_t> slots;
    std::vector<HeldThread> held;
    for (std::size_t i = 0; i < threads.size(); ++i) {
      if (threads[i].pid != pid) continue;
      slots.push_back(i);
      held.push_back(holdThread(target, threads[i]));
    }
    std::vector<HeldThread*> pointers;
    for (auto& h : held) pointers.push_back(&h);
    walkStacks(target, pointers);
    for (std::size_t k = 0; k < held.size(); ++k) out[slots[k]] = std::move(held[k].capture);
  }
  return out;
}

}  // namespace wctmon::windows_platform
