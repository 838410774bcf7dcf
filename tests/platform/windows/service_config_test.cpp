// What --configure-service applies to the state directory: its own access list, read back as
// the system stores it.
#include "platform/windows/service_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace wctmon::windows_platform {
namespace {

/// Wine answers for files with an access list of its own making and keeps none that is set.
bool underWine() {
  return ::GetProcAddress(::GetModuleHandleW(L"ntdll.dll"), "wine_get_version") != nullptr;
}

TEST(ServiceConfig, TheStateDirectoryKeepsItsOwnAccessListForSystemAndAdministratorsOnly) {
  const auto dir = std::filesystem::temp_directory_path() / "wctmon-acl-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(applyAccessList(dir, kStateDirSddl));
  if (underWine()) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "Wine keeps no access list on files: set, not read back";
  }
  const auto acl = accessList(dir);
  // Protected (nothing inherited from ProgramData, which lets Users read), full control for
  // SYSTEM and Administrators, inherited by files and folders made in it; nobody else.
  EXPECT_EQ(acl.rfind(L"D:P", 0), 0U);
  EXPECT_NE(acl.find(L"(A;OICI;FA;;;SY)"), std::wstring::npos);
  EXPECT_NE(acl.find(L"(A;OICI;FA;;;BA)"), std::wstring::npos);
  EXPECT_EQ(acl.find(L";BU)"), std::wstring::npos);
  EXPECT_EQ(acl.find(L";WD)"), std::wstring::npos);
  // Applying it again changes nothing (--configure-service is idempotent).
  ASSERT_TRUE(applyAccessList(dir, kStateDirSddl));
  EXPECT_EQ(accessList(dir), acl);
  std::filesystem::remove_all(dir);
}

TEST(ServiceConfig, AnAccessListThatCannotBeMadeIsAnErrorNamingThePath) {
  const auto result = applyAccessList("C:\\no\\such\\dir", L"D:P(A;;FA;;;SY)");
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("C:\\no\\such\\dir"), std::string::npos);
}

}  // namespace
}  // namespace wctmon::windows_platform
