// The Windows process catalog against real processes (run under Wine here), and the UTF-16 text
// it is built on.
#include <gtest/gtest.h>
#include <windows.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "platform/windows/wct_fixture_process.h"
#include "platform/windows/win_text.h"
#include "platform/windows/windows_process_catalog.h"

namespace wctmon::windows_platform {
namespace {

using testing::WctFixture;

constexpr const char* kFixtureExe = "wctmon-wct-fixture.exe";

std::optional<ProcessInfo> find(const std::vector<ProcessInfo>& list, DWORD pid) {
  const auto it = std::find_if(list.begin(), list.end(), [&](const ProcessInfo& p) {
    return p.identity.pid.value == static_cast<std::int32_t>(pid);
  });
  if (it == list.end()) return std::nullopt;
  return *it;
}

std::uint64_t now() {
  FILETIME time{};
  ::GetSystemTimeAsFileTime(&time);
  return (static_cast<std::uint64_t>(time.dwHighDateTime) << 32) | time.dwLowDateTime;
}

TEST(WindowsProcessCatalogTest, ListsTheFixtureWithItsNamesAndCommandLine) {
  const std::uint64_t before = now();
  WctFixture fx(L"idle 1 tag-\u00e9t\u00e9");
  WindowsProcessCatalog catalog;
  const auto info = find(catalog.list(true), fx.pid());
  ASSERT_TRUE(info.has_value());
  std::printf("Toolhelp name '%s', image '%s', command line '%s', created %llu\n",
              info->comm.c_str(), info->exe_name.c_str(), info->cmdline.c_str(),
              static_cast<unsigned long long>(info->identity.start_time));
  EXPECT_EQ(info->comm, kFixtureExe);
  EXPECT_EQ(info->exe_name, kFixtureExe);
  EXPECT_NE(info->cmdline.find(kFixtureExe), std::string::npos) << info->cmdline;
  // Non-ASCII arguments come back as UTF-8.
  EXPECT_NE(info->cmdline.find("idle 1 tag-\xc3\xa9t\xc3\xa9"), std::string::npos) << info->cmdline;
  // The creation time is a FILETIME: 100 ns ticks since 1601, taken as the fixture started
  // (within a second of the clock's coarse steps).
  EXPECT_GE(info->identity.start_time + 10'000'000, before);
  EXPECT_LE(info->identity.start_time, now());
}

TEST(WindowsProcessCatalogTest, TheIdentityIsStableAcrossReadsAndBetweenListAndGet) {
  WctFixture fx(L"idle 1");
  WindowsProcessCatalog catalog;
  const Pid pid{static_cast<std::int32_t>(fx.pid())};
  const auto first = catalog.get(pid, true);
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->identity.start_time, 0U);
  const auto second = catalog.get(pid, false);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->identity, first->identity);
  EXPECT_EQ(second->cmdline, "");  // only when asked for
  EXPECT_EQ(second->comm, first->comm);
  for (int i = 0; i < 2; ++i) {  // the second listing answers from what the first read
    const auto listed = find(catalog.list(true), fx.pid());
    ASSERT_TRUE(listed.has_value());
    EXPECT_EQ(listed->identity, first->identity);
    EXPECT_EQ(listed->comm, first->comm);
    EXPECT_EQ(listed->exe_name, first->exe_name);
    EXPECT_EQ(listed->cmdline, first->cmdline);
  }
}

TEST(WindowsProcessCatalogTest, AProcessThatHasExitedIsGone) {
  auto fx = std::make_unique<WctFixture>(L"idle 1");
  const DWORD pid = fx->pid();
  // A handle kept open keeps the process object after it exits: the catalog must still call
  // it gone.
  const HANDLE kept = ::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
  fx.reset();
  WindowsProcessCatalog catalog;
  EXPECT_FALSE(catalog.get(Pid{static_cast<std::int32_t>(pid)}, true).has_value());
  EXPECT_FALSE(find(catalog.list(false), pid).has_value());
  if (kept != nullptr) ::CloseHandle(kept);
  EXPECT_FALSE(catalog.get(Pid{static_cast<std::int32_t>(pid)}, true).has_value());
}

TEST(WindowsProcessCatalogTest, ListsThisProcessAndLeavesOutTheSystemProcesses) {
  WindowsProcessCatalog catalog;
  const auto all = catalog.list(false);
  const auto self = find(all, ::GetCurrentProcessId());
  ASSERT_TRUE(self.has_value());
  EXPECT_TRUE(self->exe_name.ends_with(".exe")) << self->exe_name;
  EXPECT_FALSE(find(all, 0).has_value());
  EXPECT_FALSE(find(all, 4).has_value());
  EXPECT_FALSE(catalog.get(Pid{0}, false).has_value());
  EXPECT_FALSE(catalog.get(Pid{4}, false).has_value());
  for (const auto& p : all) EXPECT_FALSE(p.comm.empty()) << p.identity.pid.value;
}

TEST(WinTextTest, Utf16AndUtf8RoundTrip) {
  const std::wstring wide = L"caf\u00e9 \u65e5\u672c \U0001F600";
  const std::string narrow = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(toUtf8(wide), narrow);
  EXPECT_EQ(toWide(narrow), wide);
  EXPECT_EQ(toUtf8(L""), "");
  EXPECT_EQ(toWide(""), L"");
  // Text with NULs inside keeps them: lengths are explicit.
  EXPECT_EQ(toUtf8(std::wstring_view(L"a\0b", 3)), std::string("a\0b", 3));
  // An unpaired surrogate from another process still gives a name.
  EXPECT_EQ(toUtf8(std::wstring_view(L"x\xd800y", 3)), "x\xef\xbf\xbdy");
}

TEST(WinTextTest, ErrorTextIsOneLineWithItsCode) {
  const std::string text = lastErrorText(ERROR_ACCESS_DENIED);
  std::printf("ERROR_ACCESS_DENIED: '%s'\n", text.c_str());
  EXPECT_TRUE(text.ends_with("(error 5)")) << text;
  EXPECT_GT(text.size(), std::string("(error 5)").size());
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(lastErrorText(0x2fffffff), "error 805306367");
}

TEST(WinTextTest, BaseNameTakesTheLastComponent) {
  EXPECT_EQ(baseName(L"C:\\Windows\\System32\\ntdll.dll"), L"ntdll.dll");
  EXPECT_EQ(baseName(L"\\\\?\\D:\\a/b.exe"), L"b.exe");
  EXPECT_EQ(baseName(L"plain.exe"), L"plain.exe");
}

}  // namespace
}  // namespace wctmon::windows_platform
