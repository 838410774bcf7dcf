// wctmon-release-wait FILE [TIMEOUT_MS]: waits until FILE can be opened for writing and deletion
// with no sharing, that is until no process runs it any more, up to TIMEOUT_MS (10 s by
// default). Carried in the MSI (its Binary table) and run right after StopServices: a service
// reports STOPPED before its process is gone (under Wine a second later), and replacing or
// removing wctmond.exe while it is still mapped would fail the installation. A file that does not
// exist (a first installation) needs no wait. Exit code 0 when free, 1 at the timeout.
#include <windows.h>

#include <cwchar>

int wmain(int argc, wchar_t** argv) {
  if (argc < 2) return 2;
  const DWORD timeout_ms = argc > 2 ? std::wcstoul(argv[2], nullptr, 10) : 10000;
  const ULONGLONG deadline = ::GetTickCount64() + timeout_ms;
  for (;;) {
    HANDLE file = ::CreateFileW(argv[1], GENERIC_WRITE | DELETE, 0, nullptr, OPEN_EXISTING,
                                FILE_ATTRIBUTE_NORMAL, nullptr);
    if (file != INVALID_HANDLE_VALUE) {
      ::CloseHandle(file);
      return 0;
    }
    const DWORD error = ::GetLastError();
    if (error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND) return 0;
    if (::GetTickCount64() >= deadline) return 1;
    ::Sleep(50);
  }
}
