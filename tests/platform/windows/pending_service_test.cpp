// The SCM status source and the pending-service tracker against a real service (run under
// Wine here): the fixture service reports START_PENDING once and then blocks on a critical
// section another of its threads holds until the test sets an event; then it runs.
#include <gtest/gtest.h>
#include <windows.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/pending_service_tracker.h"
#include "platform/windows/handle.h"
#include "platform/windows/scm_status_source.h"
#include "platform/windows/wct_fixture_process.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

using namespace std::chrono_literals;
using testing::besideThisTest;
using Steady = std::chrono::steady_clock;

constexpr auto kWaitHint = 500ms;

long long msSince(Steady::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - start).count();
}

std::optional<ServiceReading> find(const std::vector<ServiceReading>& readings,
                                   const std::string& name) {
  const auto it = std::find_if(readings.begin(), readings.end(),
                               [&](const ServiceReading& r) { return r.name == name; });
  if (it == readings.end()) return std::nullopt;
  return *it;
}

/// The fixture service, registered for one test and removed after it however the test ends:
/// released, stopped (or its process ended), deleted.
class PendingServiceFixture {
 public:
  PendingServiceFixture() {
    const auto unique =
        std::to_wstring(::GetCurrentProcessId()) + L"-" + std::to_wstring(::GetTickCount64());
    name_ = L"WctmonPendingTest" + unique;
    // Global: the service's process may live in another session than the test (Windows runs
    // services in session 0).
    const std::wstring event = L"Global\\wctmon-pending-release-" + unique;
    release_.reset(::CreateEventW(nullptr, TRUE, FALSE, event.c_str()));
    if (!release_.valid()) throw std::runtime_error("CreateEventW failed");
    scm_.reset(::OpenSCManagerW(nullptr, nullptr, SC_MANAGER_ALL_ACCESS));
    if (!scm_.valid()) throw std::runtime_error("OpenSCManagerW failed");
    const std::wstring command = L"\"" + besideThisTest(L"wctmon-pending-service.exe") + L"\" " +
                                 name_ + L" " + event + L" " + std::to_wstring(kWaitHint.count());
    service_.reset(::CreateServiceW(scm_.get(), name_.c_str(), L"wctmon pending-service fixture",
                                    SERVICE_ALL_ACCESS, SERVICE_WIN32_OWN_PROCESS,
                                    SERVICE_DEMAND_START, SERVICE_ERROR_IGNORE, command.c_str(),
                                    nullptr, nullptr, nullptr, nullptr, nullptr));
    if (!service_.valid()) {
      throw std::runtime_error("CreateServiceW failed: " + lastErrorText(::GetLastError()));
    }
  }
  PendingServiceFixture(const PendingServiceFixture&) = delete;
  PendingServiceFixture& operator=(const PendingServiceFixture&) = delete;
  ~PendingServiceFixture() {
    release();
    const auto start = Steady::now();
    SERVICE_STATUS_PROCESS s{};
    // STOP is refused until it runs (a pending start accepts no control).
    while (query(s) && s.dwCurrentState != SERVICE_STOPPED && Steady::now() - start < 10s) {
      SERVICE_STATUS plain{};
      if (s.dwCurrentState == SERVICE_RUNNING)
        ::ControlService(service_.get(), SERVICE_CONTROL_STOP, &plain);
      std::this_thread::sleep_for(50ms);
    }
    if (query(s) && s.dwCurrentState != SERVICE_STOPPED && s.dwProcessId != 0) {
      Handle process(::OpenProcess(PROCESS_TERMINATE, FALSE, s.dwProcessId));
      if (process.valid()) ::TerminateProcess(process.get(), 1);
    }
    ::DeleteService(service_.get());
  }

  [[nodiscard]] std::string name() const { return toUtf8(name_); }
  [[nodiscard]] bool start() { return ::StartServiceW(service_.get(), 0, nullptr) != FALSE; }
  void release() { ::SetEvent(release_.get()); }

 private:
  bool query(SERVICE_STATUS_PROCESS& s) {
    DWORD needed = 0;
    return ::QueryServiceStatusEx(service_.get(), SC_STATUS_PROCESS_INFO,
                                  reinterpret_cast<BYTE*>(&s), sizeof(s), &needed) != FALSE;
  }

  std::wstring name_;
  Handle release_;
  ServiceHandle scm_;
  ServiceHandle service_;
};

TEST(ScmStatusSourceTest, ListsTheServicesOfThisSystemWithTheirStates) {
  ScmStatusSource source;
  auto readings = source.list();
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  ASSERT_FALSE(readings->empty());
  for (const auto& r : *readings) {
    EXPECT_FALSE(r.name.empty());
    // Only a service with a process has a pid.
    if (r.state == ServiceState::kStopped) {
      EXPECT_EQ(r.pid.value, 0) << r.name;
    }
  }
  // Wine's own services (and Windows's): at least one runs, since services.exe answers.
  EXPECT_TRUE(std::any_of(readings->begin(), readings->end(), [](const ServiceReading& r) {
    return r.state == ServiceState::kRunning && r.pid.value != 0;
  }));
}

TEST(ScmStatusSourceTest, AServiceStuckStartingIsHungPastItsHintAndNotOnceItRuns) {
  PendingServiceFixture fixture;
  const std::string name = fixture.name();
  ASSERT_TRUE(fixture.start()) << lastErrorText(::GetLastError());

  ScmStatusSource source;
  SystemClock clock;
  PendingServiceTracker tracker(clock);
  PendingServiceRules rules;
  rules.names = {name};

  // As another process sees it: START_PENDING at checkpoint 1 with the fixture's hint.
  std::optional<ServiceReading> pending;
  Steady::time_point pending_seen;
  std::optional<Symptom> hung;
  long long hung_ms = 0;
  const auto start = Steady::now();
  while (!hung && Steady::now() - start < 15s) {
    auto readings = source.list();
    ASSERT_TRUE(readings.ok()) << readings.error().message;
    const auto r = find(*readings, name);
    ASSERT_TRUE(r.has_value()) << "the fixture service is not listed";
    if (!pending && r->state == ServiceState::kStartPending) {
      pending = r;
      pending_seen = Steady::now();
      std::printf("seen %lld ms after the start: %s, checkpoint %u, wait hint %lld ms, pid %d\n",
                  msSince(start), toString(r->state), r->checkpoint,
                  static_cast<long long>(r->wait_hint.count()), r->pid.value);
    }
    if (pending) {
      EXPECT_EQ(r->state, ServiceState::kStartPending) << "it cannot leave while blocked";
      EXPECT_EQ(r->checkpoint, 1U);
    }
    auto symptoms = tracker.update(*readings, rules);
    if (!symptoms.empty()) {
      hung = symptoms.front();
      hung_ms = msSince(pending_seen);
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(pending.has_value()) << "never seen START_PENDING";
  EXPECT_EQ(pending->checkpoint, 1U);
  EXPECT_EQ(pending->wait_hint, kWaitHint);
  EXPECT_NE(pending->pid.value, 0);
  EXPECT_EQ(pending->display_name, "wctmon pending-service fixture");
  ASSERT_TRUE(hung.has_value()) << "never reported hung";
  std::printf("reported service-hung %lld ms after START_PENDING was first seen: %s\n", hung_ms,
              hung->summary.c_str());
  EXPECT_GT(hung_ms, kWaitHint.count());
  EXPECT_EQ(hung->kind, IncidentKind::kServiceHung);
  EXPECT_EQ(hung->pid, pending->pid);
  EXPECT_EQ(hung->target, "services");
  EXPECT_EQ(hung->key, "service " + name);
  EXPECT_NE(hung->summary.find("START_PENDING at checkpoint 1"), std::string::npos)
      << hung->summary;

  fixture.release();
  const auto released_at = Steady::now();
  std::optional<ServiceReading> last;
  std::vector<Symptom> after{*hung};
  while (Steady::now() - released_at < 10s) {
    auto readings = source.list();
    ASSERT_TRUE(readings.ok()) << readings.error().message;
    last = find(*readings, name);
    ASSERT_TRUE(last.has_value());
    after = tracker.update(*readings, rules);
    if (last->state == ServiceState::kRunning) break;
    std::this_thread::sleep_for(50ms);
  }
  std::printf("after the release: %s in %lld ms\n", toString(last->state), msSince(released_at));
  EXPECT_EQ(last->state, ServiceState::kRunning);
  EXPECT_EQ(last->pid, pending->pid);
  EXPECT_TRUE(after.empty()) << "still reported once running";
}

}  // namespace
}  // namespace wctmon::windows_platform
