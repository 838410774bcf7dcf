#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "os/system_dirs.h"

namespace wctmon {

std::filesystem::path serviceStateDir() { return "/var/lib/wctmon"; }

bool stderrIsJournal() {
  // "DEVICE:INODE" of the stream systemd connected; a child that inherited the variable but
  // not the stream (stderr redirected since) is not writing to the journal.
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long device = 0;
  unsigned long long inode = 0;
  char end = 0;
  if (std::sscanf(stream, "%llu:%llu%c", &device, &inode, &end) != 2) return false;
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == device &&
         static_cast<unsigned long long>(st.st_ino) == inode;
}

}  // namespace wctmon
