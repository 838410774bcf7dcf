// A fixture program (tests/fixtures/windows/wct_fixture.cpp) started by a test: its stdin and
// stdout are pipes, its report line is read at start, and it is terminated when this goes out
// of scope.
#pragma once

#include <windows.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace wctmon::windows_platform::testing {

/// The path of `name` beside this test's executable (a Windows path: under Wine a Unix path given
/// by CMake would not resolve).
inline std::wstring besideThisTest(const std::wstring& name) {
  std::wstring path(32768, L'\0');
  const DWORD n = ::GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size()));
  path.resize(n);
  path.resize(path.find_last_of(L"\\/") + 1);
  return path + name;
}

/// The fixture's path: WCTMON_WCT_FIXTURE when set, else wctmon-wct-fixture.exe beside the test.
inline std::wstring wctFixturePath() {
  std::wstring path(32768, L'\0');
  const DWORD n = ::GetEnvironmentVariableW(L"WCTMON_WCT_FIXTURE", path.data(),
                                            static_cast<DWORD>(path.size()));
  if (n > 0 && n < path.size()) {
    path.resize(n);
    return path;
  }
  return besideThisTest(L"wctmon-wct-fixture.exe");
}

/// The 32-bit build of the fixture (i686), beside the test: a WOW64 process on 64-bit Windows.
inline std::wstring wctFixture32Path() { return besideThisTest(L"wctmon-wct-fixture32.exe"); }

class WctFixture {
 public:
  /// Starts the fixture (`program`, the 64-bit build by default) with `args` ("cs-abba",
  /// "idle 3") and waits for its "ready" line.
  explicit WctFixture(const std::wstring& args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30),
                      const std::wstring& program = wctFixturePath()) {
    SECURITY_ATTRIBUTES inherit{sizeof(SECURITY_ATTRIBUTES), nullptr, TRUE};
    HANDLE child_out = nullptr;
    HANDLE child_in = nullptr;
    if (::CreatePipe(&out_, &child_out, &inherit, 0) == FALSE ||
        ::CreatePipe(&child_in, &in_, &inherit, 0) == FALSE) {
      if (child_out != nullptr) ::CloseHandle(child_out);
      close();
      throw std::runtime_error("CreatePipe failed");
    }
    // Our ends stay ours: a child holding the write end of its own stdout would keep the pipe
    // open after it dies.
    ::SetHandleInformation(out_, HANDLE_FLAG_INHERIT, 0);
    ::SetHandleInformation(in_, HANDLE_FLAG_INHERIT, 0);
    STARTUPINFOW startup{};
    startup.cb = sizeof(startup);
    startup.dwFlags = STARTF_USESTDHANDLES;
    startup.hStdInput = child_in;
    startup.hStdOutput = child_out;
    startup.hStdError = child_out;
    std::wstring command = L"\"" + program + L"\" " + args;
    PROCESS_INFORMATION info{};
    const BOOL started = ::CreateProcessW(nullptr, command.data(), nullptr, nullptr, TRUE, 0,
                                          nullptr, nullptr, &startup, &info);
    const DWORD error = ::GetLastError();
    ::CloseHandle(child_out);
    ::CloseHandle(child_in);
    if (started == FALSE) {
      close();
      throw std::runtime_error("cannot start the fixture (error " + std::to_string(error) + ")");
    }
    process_ = info.hProcess;
    ::CloseHandle(info.hThread);
    pid_ = info.dwProcessId;
    const std::string line = readLine(timeout);
    std::istringstream words(line);
    std::string word;
    DWORD pid = 0;
    if (!(words >> word >> pid) || word != "ready" || pid != pid_) {
      close();
      throw std::runtime_error("the fixture said \"" + line + "\" instead of its ready line");
    }
    for (DWORD tid = 0; words >> tid;) tids_.push_back(tid);
  }
  WctFixture(const WctFixture&) = delete;
  WctFixture& operator=(const WctFixture&) = delete;
  ~WctFixture() { close(); }

  [[nodiscard]] DWORD pid() const { return pid_; }
  /// The threads the fixture named, in its order.
  [[nodiscard]] const std::vector<DWORD>& tids() const { return tids_; }
  [[nodiscard]] HANDLE process() const { return process_; }

  /// Writes a line to the fixture's stdin and reads one line back ("" after `timeout`).
  [[nodiscard]] std::string ask(const std::string& line,
                                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const std::string text = line + "\n";
    DWORD written = 0;
    if (::WriteFile(in_, text.data(), static_cast<DWORD>(text.size()), &written, nullptr) ==
        FALSE) {
      return {};
    }
    return readLine(timeout);
  }

  /// Terminates the fixture and waits until it is gone.
  void kill() {
    if (process_ == nullptr) return;
    ::TerminateProcess(process_, 9);
    ::WaitForSingleObject(process_, 10000);
    ::CloseHandle(process_);
    process_ = nullptr;
  }

 private:
  /// Terminates the fixture and closes the pipes (a constructor that throws does it too).
  void close() {
    kill();
    for (HANDLE* pipe : {&in_, &out_}) {
      if (*pipe != nullptr) ::CloseHandle(*pipe);
      *pipe = nullptr;
    }
  }

  /// One line of the fixture's stdout without its line break; anonymous pipes have no
  /// timeouts, so the pipe is peeked until a whole line is there.
  std::string readLine(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto end = buffered_.find('\n'); end != std::string::npos) {
        std::string line = buffered_.substr(0, end);
        buffered_.erase(0, end + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
      }
      DWORD available = 0;
      if (::PeekNamedPipe(out_, nullptr, 0, nullptr, &available, nullptr) == FALSE) return {};
      if (available > 0) {
        std::string chunk(available, '\0');
        DWORD read = 0;
        if (::ReadFile(out_, chunk.data(), available, &read, nullptr) == FALSE) return {};
        buffered_.append(chunk.data(), read);
        continue;
      }
      if (std::chrono::steady_clock::now() > deadline) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  HANDLE process_ = nullptr;
  HANDLE in_ = nullptr;
  HANDLE out_ = nullptr;
  DWORD pid_ = 0;
  std::vector<DWORD> tids_;
  std::string buffered_;
};

}  // namespace wctmon::windows_platform::testing
