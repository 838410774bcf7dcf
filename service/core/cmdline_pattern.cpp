#include "core/cmdline_pattern.h"

#include <re2/re2.h>

#include <algorithm>

namespace wctmon {

Result<CmdlinePattern> CmdlinePattern::compile(const std::string& expression) {
  RE2::Options options;
  options.set_log_errors(false);  // the reason is the caller's to report
  auto compiled = std::make_unique<RE2>(expression, options);
  if (!compiled->ok()) return makeError(ErrorCode::kInvalidArgument, compiled->error());
  return CmdlinePattern(std::move(compiled));
}

CmdlinePattern::CmdlinePattern(std::unique_ptr<re2::RE2> compiled)
    : compiled_(std::move(compiled)) {}

CmdlinePattern::CmdlinePattern(CmdlinePattern&&) noexcept = default;
CmdlinePattern& CmdlinePattern::operator=(CmdlinePattern&&) noexcept = default;
CmdlinePattern::~CmdlinePattern() = default;

bool CmdlinePattern::search(std::string_view cmdline) const {
  // The whole line is the match's context: "$" holds at its end only, not where the search
  // stops.
  return compiled_->Match(re2::StringPiece(cmdline.data(), cmdline.size()), 0,
                          std::min(cmdline.size(), kMaxMatchedCmdline), RE2::UNANCHORED, nullptr,
                          0);
}

}  // namespace wctmon
