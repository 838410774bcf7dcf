#pragma once

#include <string>

namespace wctmon::linux_platform {

/// The name of an x86-64 system call as people know it ("write", "futex"), or "syscall N" for
/// one outside the table (which holds the calls a blocked thread is commonly found in).
[[nodiscard]] std::string syscallName(long number);

}  // namespace wctmon::linux_platform
