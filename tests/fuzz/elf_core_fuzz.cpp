// A core file's headers and notes, and the process its notes describe: a core comes from
// anyone (a crash of any program, a file handed over), so every byte of it is untrusted.
#include <string>

#include "fuzz/fuzz_input.h"
#include "platform/linux/core_notes.h"
#include "platform/linux/core_snapshot.h"
#include "wire/elf_core.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const auto core = wire::parseElfCore(bytes, "fuzz");
  if (!core) {
    WCTMON_FUZZ_CHECK(!core.error().message.empty());
    return 0;
  }
  WCTMON_FUZZ_CHECK(core->file_size == size);
  for (const auto& note : core->notes) WCTMON_FUZZ_CHECK(note.desc.size() <= size);
  const auto process = linux_platform::readCoreProcess(core->notes);
  if (!process) return 0;
  WCTMON_FUZZ_CHECK(!process->threads.empty());
  for (const auto& file : process->files) {
    WCTMON_FUZZ_CHECK(file.path.find('\0') == std::string::npos);
  }
  for (const auto& thread : process->threads) {
    const auto sc = linux_platform::syscallStateOf(thread.regs);
    if (const auto wait = linux_platform::waitNotKnowableFromCore(sc)) {
      WCTMON_FUZZ_CHECK(wait->status == ObjectStatus::kUnknown && wait->owner_processes.empty());
    }
  }
  return 0;
}
