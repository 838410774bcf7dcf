// The platform's probes on Windows: a command in a job object, killed with the job past its
// deadline. Unix sockets (AF_UNIX) exist on Windows 10 and later, but no service of this
// platform is reached that way: the probe says so rather than guess.
#include <windows.h>

#include <chrono>
#include <string>

#include "platform/service_factory.h"
#include "platform/windows/handle.h"
#include "platform/windows/hot_spot_sampler.h"
#include "platform/windows/win_text.h"

namespace wctmon {
namespace {

using windows_platform::Handle;
using windows_platform::toWide;
using SteadyClock = std::chrono::steady_clock;

class WindowsLocalProber final : public LocalProber {
 public:
  ProbeOutcome connectUnix(const std::string& /*path*/,
                           std::chrono::milliseconds /*timeout*/) override {
    return ProbeOutcome{false, {}, "unix socket probes are not available on Windows"};
  }

  ProbeOutcome runCommand(const ProbeConfig& probe) override {
    const auto start = SteadyClock::now();
    const auto took = [&] {
      return std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
    };
    std::wstring line;
    if (probe.shell) {
      line = L"cmd.exe /d /s /c \"" + toWide(probe.command.front()) + L"\"";
    } else {
      for (const auto& a : probe.command) windows_platform::appendQuotedArgument(line, toWide(a));
    }
    // A job that kills what it holds when closed: the command and whatever it starts end with
    // the probe, whether it finished, timed out, or the service stops.
    Handle job(::CreateJobObjectW(nullptr, nullptr));
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    if (job.valid()) {
      ::SetInformationJobObject(job.get(), JobObjectExtendedLimitInformation, &limits,
                                sizeof(limits));
    }
    STARTUPINFOW startup{};
    startup.cb = sizeof(startup);
    PROCESS_INFORMATION created{};
    if (!::CreateProcessW(nullptr, line.data(), nullptr, nullptr, FALSE,
                          CREATE_NO_WINDOW | CREATE_SUSPENDED, nullptr, nullptr, &startup,
                          &created)) {
      return ProbeOutcome{false, took(),
                          "cannot run the command: error " + std::to_string(::GetLastError())};
    }
    Handle process(created.hProcess);
    Handle thread(created.hThread);
    if (job.valid()) ::AssignProcessToJobObject(job.get(), process.get());
    ::ResumeThread(thread.get());
    const auto waited =
        ::WaitForSingleObject(process.get(), static_cast<DWORD>(probe.timeout.count()));
    if (waited != WAIT_OBJECT_0) {
      if (job.valid()) ::TerminateJobObject(job.get(), 1);
      ::TerminateProcess(process.get(), 1);
      return ProbeOutcome{
          false, took(),
          "timed out after " + std::to_string(probe.timeout.count()) + " ms (killed)"};
    }
    DWORD code = 1;
    ::GetExitCodeProcess(process.get(), &code);
    return ProbeOutcome{code == 0, took(), "exit status " + std::to_string(code)};
  }
};

}  // namespace

std::unique_ptr<LocalProber> makeLocalProber() { return std::make_unique<WindowsLocalProber>(); }

// Windows reads a running thread's instruction pointer for no one but a kernel tracer (ETW):
// busy threads are sampled by holding them for the microseconds of a register read
// (hot_spot_sampler.h).
std::unique_ptr<HotSpotSampler> makeHotSpotSampler() {
  return std::make_unique<windows_platform::SuspendingHotSpotSampler>();
}

}  // namespace wctmon
