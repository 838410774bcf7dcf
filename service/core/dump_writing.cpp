#include "core/dump_writing.h"

#include <fstream>
#include <system_error>

#include "os/sha256.h"

namespace wctmon {

std::filesystem::path sidecarOf(const std::filesystem::path& dump) {
  auto sidecar = dump;
  sidecar += ".json";
  return sidecar;
}

Result<DumpRecord> writeDump(ProcessDumper& dumper, Pid pid, const DumpRequest& request) {
  auto written = dumper.dump(pid, request);
  if (!written) return written.error();
  std::error_code ignored;
  const auto sidecar = sidecarOf(request.path);
  {
    std::ofstream out(sidecar, std::ios::binary | std::ios::trunc);
    out << request.diagnosis;
    out.flush();
    if (!out) {
      std::filesystem::remove(sidecar, ignored);
      std::filesystem::remove(request.path, ignored);
      return makeError(ErrorCode::kIo, "cannot write " + sidecar.string());
    }
  }
  std::filesystem::permissions(
      sidecar, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ignored);
  // Read back from the disk: the digest is of what a debugger will open.
  auto sha256 = fileSha256(request.path);
  if (!sha256) {
    std::filesystem::remove(sidecar, ignored);
    std::filesystem::remove(request.path, ignored);
    return makeError(ErrorCode::kIo, "cannot read back " + request.path.string());
  }
  return DumpRecord{.path = request.path.string(),
                    .bytes = written->bytes,
                    .sha256 = std::move(*sha256),
                    .format = written->format,
                    .method = written->method,
                    .error = {}};
}

}  // namespace wctmon
