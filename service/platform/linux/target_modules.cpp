#include "platform/linux/target_modules.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace wctmon::linux_platform {
namespace {

thread_local pid_t target = 0;

}  // namespace

TargetModules::TargetModules(pid_t pid) : previous_(target) { target = pid; }

TargetModules::~TargetModules() { target = previous_; }

int findTargetModule(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                     char** file_name, Elf** elfp) {
  if (target > 0 && module_name[0] == '/') {
    const std::string path = "/proc/" + std::to_string(target) + "/root" + module_name;
    struct stat st {};
    // Only regular files: a device mapped by the process could block an open or a read.
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        // The debug link is looked for beside this name: in the process's namespace too.
        *file_name = ::strdup(path.c_str());
        return fd;
      }
    }
  }
  return dwfl_linux_proc_find_elf(module, userdata, module_name, base, file_name, elfp);
}

}  // namespace wctmon::linux_platform
