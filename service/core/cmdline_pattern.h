#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "model/result.h"

namespace re2 {
class RE2;
}

namespace wctmon {

/// A target's `cmdline` expression (RE2 syntax), searched in a command line in time linear in
/// its length, with no recursion a long line could overflow, and over its first
/// kMaxMatchedCmdline bytes only: no process can make matching it cost the service more than
/// that, however long its command line. "$" still means the end of the whole line.
class CmdlinePattern {
 public:
  static constexpr std::size_t kMaxMatchedCmdline = 32 * 1024;

  /// The expression compiled, or why it cannot be (kInvalidArgument, RE2's reason).
  [[nodiscard]] static Result<CmdlinePattern> compile(const std::string& expression);

  CmdlinePattern(CmdlinePattern&&) noexcept;
  CmdlinePattern& operator=(CmdlinePattern&&) noexcept;
  ~CmdlinePattern();

  /// Whether the expression occurs in `cmdline` (its first kMaxMatchedCmdline bytes).
  [[nodiscard]] bool search(std::string_view cmdline) const;

 private:
  explicit CmdlinePattern(std::unique_ptr<re2::RE2> compiled);
  std::unique_ptr<re2::RE2> compiled_;
};

}  // namespace wctmon
