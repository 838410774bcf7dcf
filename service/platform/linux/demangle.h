#pragma once

#include <string>

namespace wctmon::linux_platform {

/// The demangled form of a C++ (or legacy Rust) symbol name; the name itself when it is not
/// mangled; empty for nullptr.
[[nodiscard]] std::string demangle(const char* name);

}  // namespace wctmon::linux_platform
