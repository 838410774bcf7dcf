#include "platform/windows/minidump_writer.h"

#include <windows.h>
// dbghelp.h needs windows.h first.
#include <dbghelp.h>

#include <string>

#include "platform/windows/handle.h"
#include "platform/windows/win_text.h"

namespace wctmon::windows_platform {
namespace {

Error dumpError(ErrorCode code, const std::filesystem::path& path, const std::string& what,
                DWORD error) {
  return makeError(
      code, "cannot write the dump " + path.string() + ": " + what + ": " + lastErrorText(error));
}

}  // namespace

Result<DumpWritten> MinidumpWriter::dump(Pid pid, const DumpRequest& request) {
  Handle process(::OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | PROCESS_DUP_HANDLE,
                               FALSE, static_cast<DWORD>(pid.value)));
  if (!process.valid()) {
    const DWORD error = ::GetLastError();
    if (error == ERROR_INVALID_PARAMETER) {
      return makeError(ErrorCode::kNoSuchProcess, "no process " + std::to_string(pid.value));
    }
    return makeError(
        error == ERROR_ACCESS_DENIED ? ErrorCode::kAccessDenied : ErrorCode::kIo,
        "cannot open process " + std::to_string(pid.value) + ": " + lastErrorText(error));
  }
  // CREATE_NEW: an existing file is never replaced. Only the service's account (and the
  // administrators, by the state directory's access list) reads it.
  Handle file(::CreateFileW(request.path.wstring().c_str(), GENERIC_READ | GENERIC_WRITE, 0,
                            nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr));
  if (!file.valid()) {
    return dumpError(ErrorCode::kIo, request.path, "cannot create it", ::GetLastError());
  }
  auto type = static_cast<MINIDUMP_TYPE>(
      MiniDumpWithThreadInfo | MiniDumpWithHandleData | MiniDumpWithUnloadedModules |
      MiniDumpWithIndirectlyReferencedMemory | MiniDumpWithProcessThreadData |
      (request.full_memory ? MiniDumpWithFullMemory | MiniDumpWithFullMemoryInfo : 0));
  std::string diagnosis = request.diagnosis;
  MINIDUMP_USER_STREAM stream{kDumpDiagnosisType, static_cast<ULONG>(diagnosis.size()),
                              diagnosis.data()};
  MINIDUMP_USER_STREAM_INFORMATION streams{1, &stream};
  const BOOL written =
      ::MiniDumpWriteDump(process.get(), static_cast<DWORD>(pid.value), file.get(), type, nullptr,
                          diagnosis.empty() ? nullptr : &streams, nullptr);
  const DWORD error = ::GetLastError();
  LARGE_INTEGER size{};
  const bool sized = written != FALSE && ::GetFileSizeEx(file.get(), &size) != FALSE;
  const bool synced = sized && ::FlushFileBuffers(file.get()) != FALSE;
  file.reset();
  const auto remove = [&] { ::DeleteFileW(request.path.wstring().c_str()); };
  if (written == FALSE) {
    remove();
    return dumpError(ErrorCode::kIo, request.path, "MiniDumpWriteDump", error);
  }
  if (!synced) {
    remove();
    return dumpError(ErrorCode::kIo, request.path, "its size or its flush", ::GetLastError());
  }
  const auto bytes = static_cast<std::uint64_t>(size.QuadPart);
  if (request.max_bytes != 0 && bytes > request.max_bytes) {
    remove();
    return makeError(ErrorCode::kIo, "the dump of process " + std::to_string(pid.value) + " took " +
                                         std::to_string(bytes) + " bytes, over its cap of " +
                                         std::to_string(request.max_bytes) + "; it was deleted");
  }
  std::string method =
      "minidump (thread information, handle data, unloaded modules, the memory the stacks "
      "reference";
  method += request.full_memory ? ", all of the process's memory)" : ")";
  method += "; DbgHelp suspended the process's threads while it wrote and resumed them";
  return DumpWritten{bytes, "minidump", std::move(method)};
}

}  // namespace wctmon::windows_platform
