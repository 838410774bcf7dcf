#pragma once

#include <memory>
#include <string>

#include "support/subprocess.h"
#include "support/temp_dir.h"

// Programs written outside this repository, built or set up for a test: what a new user runs.

namespace wctmon::testing {

/// Builds `source` (a program of another language, compiled by `compile` into its binary in a
/// temporary directory) and runs `run` there, which prints its report line as a fixture does.
[[nodiscard]] std::unique_ptr<FixtureProcess> builtProgram(const std::string& file,
                                                           const std::string& source,
                                                           const std::string& compile,
                                                           const std::string& run);

/// A Go program, built with Debian's Go (1.19) into `name` (with `flags`) and run.
[[nodiscard]] std::unique_ptr<FixtureProcess> goProgram(const std::string& name,
                                                        const std::string& source,
                                                        const std::string& flags = "");

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
