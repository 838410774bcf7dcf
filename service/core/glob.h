#pragma once

#include <string_view>

namespace wctmon {

/// Shell-style match of `text` against `pattern`: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`.
[[nodiscard]] bool globMatch(std::string_view pattern, std::string_view text);

/// Whether `pattern` holds any glob metacharacter.
[[nodiscard]] bool isGlob(std::string_view pattern);

}  // namespace wctmon
