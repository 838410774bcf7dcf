#pragma once

// wctctl's exit statuses as its documentation gives them (client/README.md, wctctl --help),
// written out here rather than taken from the client, so that a change to them fails a test.
namespace wctmon::testing::wctctl_status {

inline constexpr int kOk = 0;
inline constexpr int kError = 1;
inline constexpr int kUsage = 2;
inline constexpr int kDeadlock = 3;
inline constexpr int kUnavailable = 4;
inline constexpr int kDenied = 5;

}  // namespace wctmon::testing::wctctl_status
