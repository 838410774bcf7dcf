#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.h"
#include "model/snapshot.h"
#include "platform/linux/pg_wire.h"
#include "platform/linux/unix_stream.h"

namespace wctmon::linux_platform {

/// A PostgreSQL server (its postmaster), asked about the lock waits of its backends.
struct PgCluster {
  Pid postmaster;
  std::uint64_t start_time = 0;
  /// The user and group it runs as: asked as them, its peer authentication lets them in.
  Credentials credentials;
  /// Whether it runs in a PID namespace of its own (a container): the pids it names are then
  /// mapped to ours through its children.
  bool own_pid_namespace = false;
};

/// The server of backend `backend`: its parent, when that is a PostgreSQL postmaster.
[[nodiscard]] Result<PgCluster> findPgCluster(Pid backend);

/// Whether `process` is a PostgreSQL backend that says, in its title, that it waits for a lock
/// ("postgres: app db [local] UPDATE waiting", set as the wait begins).
[[nodiscard]] bool isPgLockWaiter(const ProcessSample& process);

/// One backend's wait for a heavyweight lock, as the server's lock table (pg_locks) says.
struct PgLockWait {
  /// The waiting backend and those that block it (pg_blocking_pids), as our pids.
  std::int32_t pid = 0;
  std::vector<std::int32_t> blockers;
  /// pg_locks' columns of the lock it waits for.
  std::string locktype;
  std::string mode;
  std::string database;
  /// The relation's name when it is in the database asked, else its OID.
  std::string relation;
  /// The transaction id (or virtual one) it waits for.
  std::string transaction;
  std::string page;
  std::string tuple;
  std::string classid;
  std::string objid;
  std::string objsubid;
  /// The statement that waits (the start of it).
  std::string query;
};

/// The query that lists every backend's lock wait, one row each.
[[nodiscard]] std::string_view pgLockWaitQuery();
/// Its rows, read; pids still as the server numbers them.
[[nodiscard]] Result<std::vector<PgLockWait>> parsePgLockWaits(const std::vector<PgRow>& rows);

/// The wait a backend's lock wait makes: a lock owned by the main threads of the backends that
/// block it (each backend is one thread), or, when the server names none, a lock whose holder
/// is not recorded.
[[nodiscard]] WaitObject pgLockWaitObject(const PgLockWait& wait);

/// When to ask a server: the query costs it a connection (a process) and a look at its lock
/// table, so it is asked for backends that have waited past a bound, and again within an
/// interval only for a backend its last answer did not list (a wait that began since), never
/// twice within the bound.
struct PgLockPolicy {
  std::chrono::milliseconds min_wait{500};
  std::chrono::milliseconds min_interval{10000};
};

/// What is known of one server: its last answer, and how far it still holds. Pure state; PgLocks
/// keeps one per server.
class PgAnswerState {
 public:
  using Clock = std::chrono::steady_clock;

  /// The wait the last answer gives backend `pid`, while it holds: within the interval, or for
  /// as long as the backend has not run (`runs`, its main thread's schedstat count) since it
  /// was first given it.
  [[nodiscard]] const PgLockWait* covering(std::int32_t pid, std::optional<std::uint64_t> runs,
                                           const PgLockPolicy& policy, Clock::time_point now);
  /// Whether to ask now for backend `pid`, which the answer does not cover: it has waited past
  /// the bound (any time, `on_demand`), and the last ask is older than the interval, or than the
  /// bound when the last answer did not list the backend at all.
  [[nodiscard]] bool shouldAsk(std::int32_t pid, std::optional<std::chrono::milliseconds> waited,
                               bool on_demand, const PgLockPolicy& policy,
                               Clock::time_point now) const;
  void recordAnswer(std::vector<PgLockWait> waits, Clock::time_point now);
  void recordFailure(std::string error, Clock::time_point now);

  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  std::map<std::int32_t, PgLockWait> waits_;
  /// Each covered backend's run count when it was first given its wait.
  std::map<std::int32_t, std::optional<std::uint64_t>> runs_;
  std::optional<Clock::time_point> asked_;
  std::string error_;
};

/// The PostgreSQL lock waits of backends, from their servers' lock tables, kept per server across
/// samples. Shared by every sampling session; safe to call from several threads.
class PgLocks {
 public:
  /// Asks a server; replaced in tests.
  using Request = std::function<Result<std::vector<PgLockWait>>(const PgCluster&)>;

  explicit PgLocks(PgLockPolicy policy = {}, Request request = {});

  /// Gives a backend that waits for a lock (isPgLockWaiter) the lock, and the backends that hold
  /// it, asking its server when the policy says to (`on_demand`: at once). Any other process
  /// costs nothing.
  void apply(ProcessSample& process, bool on_demand);

 private:
  struct Entry {
    std::uint64_t start_time = 0;
    PgAnswerState state;
    bool asking = false;
  };

  PgLockPolicy policy_;
  Request request_;
  std::mutex mutex_;
  std::map<std::int32_t, Entry> entries_;
};

}  // namespace wctmon::linux_platform
