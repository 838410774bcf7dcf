// A PostgreSQL server's answer read into lock waits, the waits they make, and when the server is
// asked again.
#include "platform/linux/pg_locks.h"

#include <gtest/gtest.h>

namespace wctmon::linux_platform {
namespace {

using namespace std::chrono_literals;

/// A row of the lock-wait query: pid, blockers, then pg_locks' columns and the statement.
PgRow row(std::vector<std::optional<std::string>> columns) { return columns; }

PgLockWait transactionWait(std::vector<std::int32_t> blockers) {
  PgLockWait w;
  w.pid = 101;
  w.blockers = std::move(blockers);
  w.locktype = "transactionid";
  w.mode = "ShareLock";
  w.transaction = "742";
  w.query = "update t set v = 2 where id = 1";
  return w;
}

TEST(PgLocks, RowsBecomeWaitsWithTheirBlockersAndOneLineStatements) {
  const auto waits =
      parsePgLockWaits({row({"101", "202 203", "transactionid", "ShareLock", "", "", "742", "", "",
                             "", "", "", "update t\n   set v = 2\twhere id = 1  "}),
                        row({"104", "", "relation", "AccessExclusiveLock", "app", "accounts", "",
                             "", "", "", "", "", std::nullopt})});
  ASSERT_TRUE(waits.ok()) << waits.error().message;
  ASSERT_EQ(waits->size(), 2U);
  EXPECT_EQ((*waits)[0].pid, 101);
  EXPECT_EQ((*waits)[0].blockers, (std::vector<std::int32_t>{202, 203}));
  EXPECT_EQ((*waits)[0].query, "update t set v = 2 where id = 1");
  EXPECT_EQ((*waits)[1].relation, "accounts");
  EXPECT_TRUE((*waits)[1].blockers.empty());
  EXPECT_TRUE((*waits)[1].query.empty());
}

TEST(PgLocks, AnAnswerOfAnotherShapeIsAnError) {
  EXPECT_FALSE(parsePgLockWaits({row({"101", "202"})}).ok());
  EXPECT_FALSE(parsePgLockWaits({row({"x", "", "", "", "", "", "", "", "", "", "", "", ""})}).ok());
}

TEST(PgLocks, AWaitForATransactionIsALockOwnedByTheBlockingBackendsMainThreads) {
  const auto w = pgLockWaitObject(transactionWait({202, 203}));
  EXPECT_EQ(w.type, ObjectType::kMutex);
  EXPECT_EQ(w.status, ObjectStatus::kOwned);
  EXPECT_EQ(w.name, "PostgreSQL transaction 742 (ShareLock)");
  EXPECT_EQ(w.owner_threads, (std::vector<ThreadRef>{{Pid{202}, Tid{202}}, {Pid{203}, Tid{203}}}));
  EXPECT_NE(std::string(w.detail).find("by \"update t set v = 2 where id = 1\"; held by backend "
                                       "202, 203"),
            std::string::npos)
      << std::string(w.detail);
  // The same lock read again is the same wait.
  EXPECT_EQ(w.key, pgLockWaitObject(transactionWait({202, 203})).key);
}

TEST(PgLocks, ALockNoBackendHoldsIsALockWithoutARecordedOwner) {
  const auto w = pgLockWaitObject(transactionWait({}));
  EXPECT_EQ(w.type, ObjectType::kUnownedLock);
  EXPECT_EQ(w.status, ObjectStatus::kUnknown);
  EXPECT_TRUE(w.owner_threads.empty());
  EXPECT_NE(std::string(w.detail).find("prepared transaction"), std::string::npos);
}

TEST(PgLocks, EachKindOfLockIsNamedAsPgLocksNamesIt) {
  auto w = transactionWait({202});
  w.locktype = "relation";
  w.mode = "AccessExclusiveLock";
  w.relation = "accounts";
  w.database = "app";
  EXPECT_EQ(pgLockWaitObject(w).name, "PostgreSQL relation accounts (AccessExclusiveLock)");
  EXPECT_NE(std::string(pgLockWaitObject(w).detail).find("in database app"), std::string::npos);
  w.locktype = "tuple";
  w.page = "0";
  w.tuple = "1";
  EXPECT_EQ(pgLockWaitObject(w).name,
            "PostgreSQL row (0,1) of relation accounts (AccessExclusiveLock)");
  w.locktype = "advisory";
  w.mode = "ExclusiveLock";
  w.classid = "1";
  w.objid = "2";
  w.objsubid = "1";
  EXPECT_EQ(pgLockWaitObject(w).name, "PostgreSQL advisory lock 4294967298 (ExclusiveLock)");
  w.objsubid = "2";
  EXPECT_EQ(pgLockWaitObject(w).name, "PostgreSQL advisory lock (1, 2) (ExclusiveLock)");
  w.locktype = "virtualxid";
  w.transaction = "3/7";
  EXPECT_EQ(pgLockWaitObject(w).name, "PostgreSQL virtual transaction 3/7 (ExclusiveLock)");
  w.locktype = "extend";
  EXPECT_EQ(pgLockWaitObject(w).name,
            "PostgreSQL extend lock of relation accounts (ExclusiveLock)");
}

TEST(PgLocks, AnAnswerCoversItsBackendsForTheIntervalAndWhileTheyDoNotRun) {
  const PgLockPolicy policy;
  const auto t0 = PgAnswerState::Clock::now();
  PgAnswerState state;
  EXPECT_EQ(state.covering(101, 5, policy, t0), nullptr);
  state.recordAnswer({transactionWait({202})}, t0);
  ASSERT_NE(state.covering(101, 5, policy, t0 + 1s), nullptr);
  EXPECT_EQ(state.covering(101, 5, policy, t0 + 1s)->transaction, "742");
  EXPECT_EQ(state.covering(303, 5, policy, t0 + 1s), nullptr) << "not in the answer";
  // Within the interval the answer holds even for a backend that ran.
  EXPECT_NE(state.covering(101, 6, policy, t0 + 5s), nullptr);
  // Past it, only while the backend has not run since it was first given the wait.
  EXPECT_NE(state.covering(101, 5, policy, t0 + 60s), nullptr);
  EXPECT_EQ(state.covering(101, 6, policy, t0 + 60s), nullptr);
  EXPECT_EQ(state.covering(101, std::nullopt, policy, t0 + 60s), nullptr);
}

TEST(PgLocks, TheServerIsAskedForBackendsThatWaitedPastTheBoundOncePerIntervalEach) {
  const PgLockPolicy policy;
  const auto t0 = PgAnswerState::Clock::now();
  PgAnswerState state;
  EXPECT_FALSE(state.shouldAsk(101, 200ms, false, policy, t0));
  EXPECT_FALSE(state.shouldAsk(101, std::nullopt, false, policy, t0));
  EXPECT_TRUE(state.shouldAsk(101, 600ms, false, policy, t0));
  EXPECT_TRUE(state.shouldAsk(101, std::nullopt, true, policy, t0)) << "a person asks: at once";
  state.recordAnswer({transactionWait({202})}, t0);
  // A backend the answer listed (which ran since): not before the interval.
  EXPECT_FALSE(state.shouldAsk(101, 600ms, false, policy, t0 + 9s));
  EXPECT_TRUE(state.shouldAsk(101, 600ms, false, policy, t0 + 10s));
  // One whose wait began after the answer: once the bound has passed since it.
  EXPECT_FALSE(state.shouldAsk(303, 600ms, true, policy, t0 + 100ms));
  EXPECT_TRUE(state.shouldAsk(303, 600ms, false, policy, t0 + 1s));
  // A server that failed: not before the interval, whoever waits.
  state.recordFailure("the server asks for a password", t0 + 1s);
  EXPECT_EQ(state.error(), "the server asks for a password");
  EXPECT_FALSE(state.shouldAsk(404, 600ms, true, policy, t0 + 10s));
  EXPECT_TRUE(state.shouldAsk(404, 600ms, false, policy, t0 + 11s));
  state.recordAnswer({}, t0 + 11s);
  EXPECT_TRUE(state.error().empty());
}

}  // namespace
}  // namespace wctmon::linux_platform
