#pragma once
// Opening a live process's modules (its executable and libraries) for elfutils as the process
// itself sees them.

#include <elfutils/libdwfl.h>
#include <sys/types.h>

namespace wctmon::linux_platform {

/// While it lives, findTargetModule on this thread opens the modules of process `pid`.
class TargetModules {
 public:
  explicit TargetModules(pid_t pid);
  ~TargetModules();
  TargetModules(const TargetModules&) = delete;
  TargetModules& operator=(const TargetModules&) = delete;

 private:
  pid_t previous_;
};

/// A `find_elf` callback for modules reported from /proc/PID/maps: each path is opened through
/// /proc/PID/root, in the process's own mount namespace, so that a process in a container, or one
/// run from a directory the service's namespace hides (ProtectHome= of its unit), has its
/// frames named; elfutils' dwfl_linux_proc_find_elf (the path as this process sees it, or the
/// process's memory for a deleted file) where that fails or no TargetModules is in scope.
int findTargetModule(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                     char** file_name, Elf** elfp);

}  // namespace wctmon::linux_platform
