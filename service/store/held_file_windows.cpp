#include <windows.h>

#include "store/held_file.h"

namespace wctmon {

// SQLite opens its files on Windows without FILE_SHARE_DELETE: the store cannot be deleted or
// renamed while the service holds it, so there is nothing to notice and nothing is held.

std::unique_ptr<HeldFile> HeldFile::open(const std::filesystem::path& /*file*/) { return nullptr; }

HeldFile::~HeldFile() = default;

std::string HeldFile::whyNotAtItsPath() const { return {}; }

}  // namespace wctmon
