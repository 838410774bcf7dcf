// A dump file of any origin (`wctmon dump info FILE`, `analyze --core`): its magic, the minidump's
// stream directory and the diagnosis stream, the ELF core's notes. Every byte is untrusted; the
// reader answers a format and a diagnosis from inside the file, or an error, and nothing else.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "fuzz/fuzz_input.h"
#include "wire/dump_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon;
  // In memory, named as a file: the reader opens a path.
  static const int fd = ::memfd_create("dump", 0);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) return 0;
  if (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  const auto info = wire::readDumpFile("/proc/self/fd/" + std::to_string(fd));
  if (!info) {
    WCTMON_FUZZ_CHECK(!info.error().message.empty());
    return 0;
  }
  WCTMON_FUZZ_CHECK(info->format == "elf-core" || info->format == "minidump");
  WCTMON_FUZZ_CHECK(info->diagnosis.size() <= size);
  return 0;
}
