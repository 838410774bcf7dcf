#include "platform/windows/hot_spot_sampler.h"

#include <windows.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "platform/windows/dbghelp_symbolizer.h"
#include "platform/windows/handle.h"
#include "platform/windows/suspension_record.h"
#include "platform/windows/win_text.h"
#include "platform/windows/windows_thread_inspector.h"

namespace wctmon::windows_platform {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr DWORD kThreadAccess =
    THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_QUERY_LIMITED_INFORMATION | SYNCHRONIZE;
constexpr DWORD kSuspendFailed = static_cast<DWORD>(-1);
constexpr std::uint64_t kPageMask = ~std::uint64_t{0xfff};

/// What one sample found.
enum class Taken { kSampled, kHeldElsewhere, kFailed };

/// One sample: the thread held for the read of its control registers, and resumed. Nothing in
/// here allocates, logs or names: the thread pays for every microsecond of the hold, and the
/// heap's lock or DbgHelp's loading of a module's symbols can take milliseconds.
Taken sampleOnce(HANDLE thread, bool wow64, std::vector<std::uint64_t>& ips) {
  // Zeroed before the hold, not during it.
  CONTEXT context{};
  WOW64_CONTEXT wow64_context{};
  context.ContextFlags = CONTEXT_CONTROL;
  wow64_context.ContextFlags = WOW64_CONTEXT_CONTROL;
  BOOL got = FALSE;
  DWORD previous = 0;
  {
    RecordedSuspension hold;
    previous = hold.hold(thread, wow64);
    if (previous == kSuspendFailed) return Taken::kFailed;
    // GetThreadContext waits until the suspension has taken effect.
    got = wow64 ? ::Wow64GetThreadContext(thread, &wow64_context)
                : ::GetThreadContext(thread, &context);
  }  // resumed here
  if (got == FALSE) return Taken::kFailed;
  // A thread someone else holds suspended does not run: where it stands says nothing of where
  // it spends its time.
  if (previous > 0) return Taken::kHeldElsewhere;
  // The room was reserved for every sample of the window: this does not allocate.
  ips.push_back(wow64 ? wow64_context.Eip : context.Rip);
  return Taken::kSampled;
}

bool hasExited(HANDLE thread) { return ::WaitForSingleObject(thread, 0) == WAIT_OBJECT_0; }

Error exitedError(const std::string& name) {
  return makeError(ErrorCode::kNoSuchThread, name + " exited while it was being profiled");
}

/// Samples `thread` every kInterval for `window` into `ips`.
Result<std::monostate> sampleWindow(HANDLE thread, bool wow64, std::chrono::milliseconds window,
                                    const std::string& name, const std::atomic<bool>& stop,
                                    std::vector<std::uint64_t>& ips) {
  constexpr auto kInterval = SuspendingHotSpotSampler::kInterval;
  ips.reserve(static_cast<std::size_t>(window / kInterval) + 2);
  const auto end = SteadyClock::now() + window;
  std::size_t failed = 0;
  // A sampler that woke late (this thread was not scheduled) goes on from then, rather than
  // catch up with samples taken back to back.
  for (auto next = SteadyClock::now(); next < end;
       next = std::max(next + kInterval, SteadyClock::now() + kInterval / 2)) {
    std::this_thread::sleep_until(next);
    if (stop) return makeError(ErrorCode::kCancelled, "the service is stopping");
    if (ips.size() == ips.capacity()) break;  // a clock that ran late: the window is full
    if (sampleOnce(thread, wow64, ips) == Taken::kFailed) {
      if (hasExited(thread)) return exitedError(name);
      ++failed;
    }
  }
  if (hasExited(thread)) return exitedError(name);
  if (ips.empty() && failed > 0) {
    return makeError(ErrorCode::kUnsupported, "cannot read where " + name +
                                                  " runs: " + std::to_string(failed) +
                                                  " suspensions or register reads failed (last: " +
                                                  lastErrorText(::GetLastError()) + ")");
  }
  return std::monostate{};
}

/// "name+0x1000" / "0x7ff6a1230000": an address no symbol or export names, by the page it is in
/// (its function's samples then count together, as nearly as can be told).
std::string unnamed(const std::string& module, std::uint64_t offset) {
  char text[32];
  std::snprintf(text, sizeof(text), "%s0x%llx", module.empty() ? "" : "+",
                static_cast<unsigned long long>(offset & kPageMask));
  return module + text;
}

/// Samples counted by function, most first.
std::vector<HotFunction> byFunction(
    Symbolizer* symbolizer, const std::vector<std::uint64_t>& ips,
    std::map<std::uint64_t, std::pair<std::string, std::string>>& named) {
  std::map<std::pair<std::string, std::string>, std::uint32_t> counts;
  for (const auto ip : ips) {
    auto it = named.find(ip);
    if (it == named.end()) {
      std::string module = "?";
      std::string function;
      if (symbolizer != nullptr) {
        // The instruction pointer of an interrupted thread is where it stands, not a return
        // address: looked up as it is.
        auto frame = symbolizer->frameAt(ip, true);
        if (!frame.module.empty()) module = std::move(frame.module);
        if (!frame.function.empty()) {
          function = std::move(frame.function);
        } else if (const auto base = symbolizer->moduleBase(ip); base != 0) {
          function = unnamed(module, ip - base);
        }
      }
      if (function.empty()) function = unnamed({}, ip);
      it = named.emplace(ip, std::make_pair(std::move(module), std::move(function))).first;
    }
    ++counts[it->second];
  }
  std::vector<HotFunction> out;
  out.reserve(counts.size());
  for (const auto& [name, n] : counts) out.push_back(HotFunction{name.second, name.first, n});
  std::sort(out.begin(), out.end(), [](const HotFunction& a, const HotFunction& b) {
    return a.samples > b.samples || (a.samples == b.samples && a.function < b.function);
  });
  return out;
}

}  // namespace

Result<ThreadProfile> SuspendingHotSpotSampler::profile(ThreadRef ref,
                                                        std::chrono::milliseconds window,
                                                        const std::atomic<bool>& stop) {
  const std::string name =
      "thread " + std::to_string(ref.tid.value) + " of process " + std::to_string(ref.pid.value);
  if (static_cast<DWORD>(ref.pid.value) == ::GetCurrentProcessId()) {
    // A thread of ours held while this one allocates could hold the heap's lock.
    return makeError(ErrorCode::kUnsupported,
                     name + " is a thread of this process: it is not sampled by suspending it");
  }
  installSuspensionGuards();
  Handle thread(::OpenThread(kThreadAccess, FALSE, static_cast<DWORD>(ref.tid.value)));
  if (!thread.valid()) {
    const DWORD error = ::GetLastError();
    if (error == ERROR_INVALID_PARAMETER)
      return makeError(ErrorCode::kNoSuchThread, name + " is gone");
    return makeError(error == ERROR_ACCESS_DENIED ? ErrorCode::kAccessDenied : ErrorCode::kIo,
                     "cannot open " + name + ": " + lastErrorText(error));
  }
  // Thread ids are reused: the id may name a thread of another process now.
  if (::GetProcessIdOfThread(thread.get()) != static_cast<DWORD>(ref.pid.value)) {
    return makeError(ErrorCode::kNoSuchThread, name + " is gone (its id is another's now)");
  }
  if (hasExited(thread.get())) return makeError(ErrorCode::kNoSuchThread, name + " has exited");
  // The process's memory is read to name the addresses (DbgHelp); without that right the
  // samples are still taken, and stay unnamed.
  const auto pid = static_cast<DWORD>(ref.pid.value);
  Handle process(::OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE, pid));
  const bool readable = process.valid();
  if (!readable) process.reset(::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid));
  BOOL wow64 = FALSE;
  if (!process.valid() || ::IsWow64Process(process.get(), &wow64) == FALSE) {
    return makeError(ErrorCode::kAccessDenied,
                     "cannot tell whether the process of " + name +
                         " is 32-bit: " + lastErrorText(::GetLastError()));
  }

  ThreadProfile out;
  out.window = window;
  std::vector<std::uint64_t> first;
  std::vector<std::uint64_t> second;
  for (auto* ips : {&first, &second}) {
    auto sampled = sampleWindow(thread.get(), wow64 != FALSE, window, name, stop, *ips);
    if (!sampled) return sampled.error();
  }

  std::map<std::uint64_t, std::pair<std::string, std::string>> named;
  std::lock_guard lock(dbgHelpMutex());
  std::optional<SymbolSession> symbols;
  std::optional<Symbolizer> symbolizer;
  if (readable) {
    symbols.emplace(process.get());
    if (symbols->ok()) symbolizer.emplace(process.get());
  }
  Symbolizer* names = symbolizer ? &*symbolizer : nullptr;
  out.first = byFunction(names, first, named);
  out.second = byFunction(names, second, named);
  return out;
}

void SuspendingHotSpotSampler::asyncProfile(ThreadRef thread, std::chrono::milliseconds window,
                                            std::function<void(Result<ThreadProfile>)> done) {
  queue_.push(thread, window, std::move(done));
}

}  // namespace wctmon::windows_platform
