#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_input.h"

namespace wctmon::fuzz {

void fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, what);
  std::abort();
}

}  // namespace wctmon::fuzz
