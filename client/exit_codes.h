#pragma once

namespace wctmon::client {

// What wctctl's exit status means (client/README.md, wctctl --help).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
/// `analyze` found a deadlock.
inline constexpr int kExitDeadlock = 3;
/// Nothing answers at the server's address, or not in time.
inline constexpr int kExitUnavailable = 4;
/// No valid token, or a token without the right for the call.
inline constexpr int kExitDenied = 5;

}  // namespace wctmon::client
