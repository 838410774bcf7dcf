#include "platform/linux/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace wctmon::linux_platform {

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

}  // namespace wctmon::linux_platform
