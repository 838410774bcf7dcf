#include "platform/linux/pg_locks.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "model/format.h"
#include "os/unique_fd.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"

namespace wctmon::linux_platform {
namespace {

/// How long a server may take to answer before it is given up on for this sample.
constexpr std::chrono::milliseconds kQueryTimeout{3000};
/// At most this many servers are remembered; those gone are forgotten first.
constexpr std::size_t kMaxEntries = 64;
/// The title PostgreSQL gives a backend ("postgres: ..."), and the word it adds while the
/// backend waits for a lock.
constexpr std::string_view kTitlePrefix = "postgres: ";
constexpr std::string_view kWaitingSuffix = " waiting";

constexpr std::string_view kLockWaitQuery =
    "SELECT l.pid, array_to_string(pg_blocking_pids(l.pid), ' '), l.locktype, l.mode, "
    "coalesce(d.datname, ''), "
    "coalesce(CASE WHEN d.datname = current_database() THEN l.relation::regclass::text END, "
    "l.relation::text, ''), "
    "coalesce(l.transactionid::text, l.virtualxid, ''), coalesce(l.page::text, ''), "
    "coalesce(l.tuple::text, ''), coalesce(l.classid::text, ''), coalesce(l.objid::text, ''), "
    "coalesce(l.objsubid::text, ''), coalesce(left(a.query, 300), '') "
    "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "LEFT JOIN pg_database d ON d.oid = l.database WHERE NOT l.granted";
constexpr std::size_t kLockWaitColumns = 13;

/// The pids of `text`, space-separated.
std::vector<std::int32_t> pidList(std::string_view text) {
  std::vector<std::int32_t> out;
  for (int i = 0;; ++i) {
    const auto pid = numberAt(text, i);
    if (!pid) return out;
    out.push_back(static_cast<std::int32_t>(*pid));
  }
}

/// A statement on one line: runs of blanks and line breaks as one space.
std::string oneLine(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool blank = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out.push_back(blank ? ' ' : c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

/// What the lock is, in the words of pg_locks: "transaction 742", "relation accounts".
std::string lockTarget(const PgLockWait& w) {
  if (w.locktype == "relation") return "relation " + w.relation;
  if (w.locktype == "transactionid") return "transaction " + w.transaction;
  if (w.locktype == "virtualxid") return "virtual transaction " + w.transaction;
  if (w.locktype == "tuple") {
    return "row (" + w.page + "," + w.tuple + ") of relation " + w.relation;
  }
  if (w.locktype == "advisory") {
    // One bigint key is split into classid (high half) and objid; two int4 keys are the two.
    if (w.objsubid == "1") {
      const auto high = parseInt(w.classid).value_or(0);
      const auto low = parseInt(w.objid).value_or(0);
      return "advisory lock " +
             std::to_string(static_cast<std::int64_t>((static_cast<std::uint64_t>(high) << 32) |
                                                      static_cast<std::uint64_t>(low)));
    }
    return "advisory lock (" + w.classid + ", " + w.objid + ")";
  }
  std::string out = w.locktype + " lock";
  if (!w.relation.empty()) out += " of relation " + w.relation;
  return out;
}

/// Our pids of the server's children, by the pids its namespace gives them.
std::map<std::int32_t, std::int32_t> childrenByNamespacePid(Pid postmaster) {
  std::map<std::int32_t, std::int32_t> out;
  const auto children = readWholeFile(
      procPath(postmaster, "task/" + std::to_string(postmaster.value) + "/children"), 1 << 20);
  if (!children) return out;
  for (const auto child : pidList(*children)) {
    const auto status = readWholeFile(procPath(Pid{child}, "status"), 16384);
    if (!status) continue;
    if (const auto inner = numberAt(statusValue(*status, "NSpid"), -1)) {
      out[static_cast<std::int32_t>(*inner)] = child;
    }
  }
  return out;
}

/// The name of user `uid` in the server's own /etc/passwd (a container has its own); a cluster's
/// first role is named after the user that made it.
std::string userName(Pid postmaster, std::uint32_t uid) {
  const auto passwd = readWholeFile(procPath(postmaster, "root/etc/passwd"), 1 << 20);
  if (passwd) {
    std::size_t at = 0;
    while (at < passwd->size()) {
      const auto eol = std::min(passwd->find('\n', at), passwd->size());
      const std::string_view line(passwd->data() + at, eol - at);
      // name:password:uid:...
      const auto first = line.find(':');
      const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
      const auto third = second == std::string_view::npos ? second : line.find(':', second + 1);
      if (third != std::string_view::npos &&
          parseInt(line.substr(second + 1, third - second - 1)) == std::int64_t{uid}) {
        return std::string(line.substr(0, first));
      }
      at = eol + 1;
    }
  }
  return "postgres";
}

/// The server's Unix socket, from the postmaster.pid file in its data directory (its working
/// directory): line 4 is the port, line 5 the first socket directory.
Result<std::string> socketPath(Pid postmaster) {
  const auto lock_file = readWholeFile(procPath(postmaster, "cwd/postmaster.pid"), 4096);
  if (!lock_file) {
    return makeError(ErrorCode::kIo, "cannot read postmaster.pid in the data directory of " +
                                         std::to_string(postmaster.value));
  }
  std::vector<std::string_view> lines;
  std::size_t at = 0;
  while (at <= lock_file->size() && lines.size() < 5) {
    const auto eol = std::min(lock_file->find('\n', at), lock_file->size());
    lines.emplace_back(lock_file->data() + at, eol - at);
    at = eol + 1;
  }
  if (lines.size() < 5 || !parseInt(lines[3])) {
    return makeError(ErrorCode::kIo, "postmaster.pid of " + std::to_string(postmaster.value) +
                                         " does not name its port and socket directory");
  }
  const auto directory = lines[4];
  if (directory.empty() || directory.front() != '/') {
    return makeError(ErrorCode::kUnsupported,
                     "the PostgreSQL server listens on no Unix socket in a directory");
  }
  return procPath(postmaster, "root") + std::string(directory) + "/.s.PGSQL." +
         std::string(lines[3]);
}

/// Asks the server for its lock waits, in a thread that runs as the server's user.
Result<std::vector<PgLockWait>> askServer(const PgCluster& cluster) {
  return runAs<std::vector<PgLockWait>>(
      cluster.credentials, "the PostgreSQL server's", [&]() -> Result<std::vector<PgLockWait>> {
        auto path = socketPath(cluster.postmaster);
        if (!path) return path.error();
        const auto deadline = std::chrono::steady_clock::now() + kQueryTimeout;
        PgEndpoint endpoint{*path, userName(cluster.postmaster, cluster.credentials.uid),
                            "postgres"};
        auto rows = pgQuery(endpoint, kLockWaitQuery, deadline);
        if (!rows && rows.error().code == ErrorCode::kNotFound) {
          endpoint.database = "template1";
          rows = pgQuery(endpoint, kLockWaitQuery, deadline);
        }
        if (!rows) return rows.error();
        auto waits = parsePgLockWaits(*rows);
        if (!waits || !cluster.own_pid_namespace) return waits;
        const auto ours = childrenByNamespacePid(cluster.postmaster);
        const auto map = [&](std::int32_t pid) {
          const auto it = ours.find(pid);
          return it == ours.end() ? 0 : it->second;
        };
        for (auto& w : *waits) {
          w.pid = map(w.pid);
          std::transform(w.blockers.begin(), w.blockers.end(), w.blockers.begin(), map);
          std::erase(w.blockers, 0);
        }
        std::erase_if(*waits, [](const PgLockWait& w) { return w.pid == 0; });
        return waits;
      });
}

/// The main thread of a backend: a backend is one thread.
ThreadSample* mainThread(ProcessSample& process) {
  for (auto& t : process.threads) {
    if (t.id.tid.value == process.pid.value) return &t;
  }
  return nullptr;
}

}  // namespace

bool isPgLockWaiter(const ProcessSample& process) {
  return process.name == "postgres" && process.title.starts_with(kTitlePrefix) &&
         process.title.ends_with(kWaitingSuffix);
}

Result<PgCluster> findPgCluster(Pid backend) {
  const auto stat = readProcessStat(backend);
  if (!stat) return makeError(ErrorCode::kNoSuchProcess, "the backend has exited");
  const Pid postmaster{stat->ppid};
  const auto parent = readProcessStat(postmaster);
  if (!parent || parent->comm != "postgres") {
    return makeError(ErrorCode::kNotFound, "its parent is not a PostgreSQL server");
  }
  const auto status = readWholeFile(procPath(postmaster, "status"), 16384);
  const auto uid = status ? numberAt(statusValue(*status, "Uid"), 1) : std::nullopt;
  const auto gid = status ? numberAt(statusValue(*status, "Gid"), 1) : std::nullopt;
  const auto namespace_pid = status ? numberAt(statusValue(*status, "NSpid"), -1) : std::nullopt;
  if (!uid || !gid || !namespace_pid) {
    return makeError(ErrorCode::kIo, "cannot read the status of the PostgreSQL server " +
                                         std::to_string(postmaster.value));
  }
  PgCluster cluster;
  cluster.postmaster = postmaster;
  cluster.start_time = parent->start_time;
  cluster.credentials = {static_cast<std::uint32_t>(*uid), static_cast<std::uint32_t>(*gid)};
  cluster.own_pid_namespace = *namespace_pid != postmaster.value;
  return cluster;
}

std::string_view pgLockWaitQuery() { return kLockWaitQuery; }

Result<std::vector<PgLockWait>> parsePgLockWaits(const std::vector<PgRow>& rows) {
  std::vector<PgLockWait> out;
  for (const auto& row : rows) {
    if (row.size() != kLockWaitColumns) {
      return makeError(ErrorCode::kIo, "the PostgreSQL server's answer has " +
                                           std::to_string(row.size()) + " columns, not " +
                                           std::to_string(kLockWaitColumns));
    }
    const auto column = [&](std::size_t i) { return row[i].value_or(""); };
    const auto pid = parseInt(column(0));
    if (!pid) return makeError(ErrorCode::kIo, "the PostgreSQL server named no backend");
    PgLockWait w;
    w.pid = static_cast<std::int32_t>(*pid);
    w.blockers = pidList(column(1));
    w.locktype = column(2);
    w.mode = column(3);
    w.database = column(4);
    w.relation = column(5);
    w.transaction = column(6);
    w.page = column(7);
    w.tuple = column(8);
    w.classid = column(9);
    w.objid = column(10);
    w.objsubid = column(11);
    w.query = oneLine(column(12));
    out.push_back(std::move(w));
  }
  return out;
}

WaitObject pgLockWaitObject(const PgLockWait& wait) {
  WaitObject w;
  const auto target = lockTarget(wait);
  w.name = "PostgreSQL " + target + " (" + wait.mode + ")";
  w.key = std::hash<std::string>{}(w.name + wait.database);
  std::string detail = wait.mode + " wanted on " + target;
  if (!wait.database.empty()) detail += " in database " + wait.database;
  if (!wait.query.empty()) detail += " by \"" + wait.query + "\"";
  if (wait.blockers.empty()) {
    w.type = ObjectType::kUnownedLock;
    w.status = ObjectStatus::kUnknown;
    w.detail = detail +
               ": the server names no backend holding it (a prepared transaction holds its "
               "locks without one)";
    return w;
  }
  w.type = ObjectType::kMutex;
  w.status = ObjectStatus::kOwned;
  std::string holders;
  for (const auto pid : wait.blockers) {
    w.owner_threads.push_back(ThreadRef{Pid{pid}, Tid{pid}});
    holders += (holders.empty() ? "" : ", ") + std::to_string(pid);
  }
  w.detail = detail + "; held by backend " + holders + ", as the server's lock table says";
  return w;
}

const PgLockWait* PgAnswerState::covering(std::int32_t pid, std::optional<std::uint64_t> runs,
                                          const PgLockPolicy& policy, Clock::time_point now) {
  const auto it = waits_.find(pid);
  if (it == waits_.end() || !asked_) return nullptr;
  // The count when the backend was first given this wait: a backend that has not run since
  // waits where the answer saw it.
  const auto first = runs_.try_emplace(pid, runs).first->second;
  if (now - *asked_ < policy.min_interval) return &it->second;
  return runs && first == runs ? &it->second : nullptr;
}

bool PgAnswerState::shouldAsk(std::int32_t pid, std::optional<std::chrono::milliseconds> waited,
                              bool on_demand, const PgLockPolicy& policy,
                              Clock::time_point now) const {
  if (asked_) {
    const auto since = now - *asked_;
    // A server that failed is not asked again before the interval, whoever waits.
    const bool listed = waits_.contains(pid) || !error_.empty();
    if (since < policy.min_wait || (listed && since < policy.min_interval)) return false;
  }
  return on_demand || (waited && *waited >= policy.min_wait);
}

void PgAnswerState::recordAnswer(std::vector<PgLockWait> waits, Clock::time_point now) {
  waits_.clear();
  runs_.clear();
  for (auto& w : waits) waits_.emplace(w.pid, std::move(w));
  asked_ = now;
  error_.clear();
}

void PgAnswerState::recordFailure(std::string error, Clock::time_point now) {
  waits_.clear();
  runs_.clear();
  asked_ = now;
  error_ = std::move(error);
}

PgLocks::PgLocks(PgLockPolicy policy, Request request)
    : policy_(policy), request_(request ? std::move(request) : Request(askServer)) {}

void PgLocks::apply(ProcessSample& process, bool on_demand) {
  if (!isPgLockWaiter(process)) return;
  auto* backend = mainThread(process);
  if (backend == nullptr || backend->status != ObjectStatus::kBlocked || !backend->wait) return;
  const auto cluster = findPgCluster(process.pid);
  if (!cluster) return;
  const std::int32_t pid = process.pid.value;
  const auto task_path = procPath(process.pid, "task");
  UniqueFd task_fd(::open(task_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const auto runs = task_fd.valid() ? readRunCount(task_fd.get(), pid) : std::nullopt;
  const auto key = cluster->postmaster.value;

  const auto now = PgAnswerState::Clock::now();
  bool covered = false;
  {
    std::lock_guard lock(mutex_);
    auto& entry = entries_[key];
    if (entry.start_time != cluster->start_time) entry = Entry{cluster->start_time, {}, false};
    covered = entry.asking || entry.state.covering(pid, runs, policy_, now) != nullptr;
    if (entries_.size() > kMaxEntries) {
      // Forget servers that are gone; no one asks about them again.
      std::erase_if(entries_, [&](const auto& e) {
        return e.first != key && !e.second.asking &&
               ::access(("/proc/" + std::to_string(e.first)).c_str(), F_OK) != 0;
      });
    }
  }
  bool ask = false;
  if (!covered) {
    // How long it has not run: a sample does not read it for every wait.
    const ThreadRef self{process.pid, Tid{pid}};
    const auto waited = readWaitTimes(std::span(&self, 1)).front();
    std::lock_guard lock(mutex_);
    auto& entry = entries_[key];
    ask = !entry.asking && entry.state.shouldAsk(pid, waited, on_demand, policy_, now);
    entry.asking = ask;
  }
  if (ask) {
    auto answer = request_(*cluster);
    std::lock_guard lock(mutex_);
    auto& entry = entries_[key];
    entry.asking = false;
    if (entry.start_time == cluster->start_time) {
      if (answer) {
        entry.state.recordAnswer(std::move(answer).value(), now);
      } else {
        entry.state.recordFailure(answer.error().message, now);
      }
    }
  }

  std::lock_guard lock(mutex_);
  auto& state = entries_[key].state;
  // A wait that can close a cycle carries the times its thread ran: a deadlock is confirmed by
  // a second read in which it has not run.
  if (!backend->context_switches) backend->context_switches = runs;
  if (const auto* wait = state.covering(pid, runs, policy_, now)) {
    backend->wait = pgLockWaitObject(*wait);
    return;
  }
  // Its title says it waits for a lock; which one, and whose, is not known (yet).
  WaitObject w;
  w.type = ObjectType::kUnownedLock;
  w.status = ObjectStatus::kUnknown;
  w.name = "PostgreSQL lock";
  w.detail =
      "its title says it waits for a lock; " +
      (state.error().empty() ? "the server's lock table is asked once a backend has waited " +
                                   durationText(policy_.min_wait)
                             : "the server's lock table cannot be read: " + state.error());
  backend->wait = std::move(w);
}

}  // namespace wctmon::linux_platform
