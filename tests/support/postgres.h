#pragma once

#include <string>

#include "support/temp_dir.h"

namespace wctmon::testing {

/// The start of a bash script that runs a PostgreSQL 15 cluster of its own in `dir`: made by
/// initdb (with `initdb_options`, "-A trust" for no password) and run by the postgres user in the
/// background of the script, so that it dies with it, with `settings` ("-c name=value ...") and
/// listening on a Unix socket in `dir` only. It defines q, which runs psql on database postgres as
/// user postgres (unaligned, tuples only), and waiters, which prints the pids of the backends
/// that wait for a lock once there are `$1` of them.
[[nodiscard]] std::string postgresScript(const TempDir& dir, const std::string& settings,
                                         const std::string& initdb_options = "-A trust");

/// A whole script on such a cluster (deadlock_timeout ten minutes, so that the server does not end
/// it itself): two transactions each change a row the other then wants. It reports the pids of
/// the two backends as processes "first" and "second".
[[nodiscard]] std::string postgresDeadlockScript(const TempDir& dir, const std::string& settings);

}  // namespace wctmon::testing
