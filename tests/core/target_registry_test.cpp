// The targets of the file and of run time: what selects processes, what the store keeps, and
// what a store that refuses a write leaves unchanged.
#include "core/target_registry.h"

#include <gtest/gtest.h>

#include "fakes/fake_incident_repository.h"

namespace wctmon {
namespace {

TargetConfig target(const std::string& name, const std::string& exe) {
  TargetConfig t;
  t.name = name;
  t.exe = exe;
  return t;
}

std::vector<std::string> names(const std::vector<TargetConfig>& targets) {
  std::vector<std::string> out;
  for (const auto& t : targets) out.push_back(t.name);
  return out;
}

TEST(TargetRegistry, RuntimeTargetsFollowTheFilesAndAreKeptInTheStore) {
  testing::FakeIncidentRepository store;
  Config config;
  config.targets = {target("web", "nginx")};
  TargetRegistry registry(&store, config);
  ASSERT_TRUE(registry.add(target("db", "postgres")).ok());
  ASSERT_TRUE(registry.add(target("db", "mysqld")).ok());  // replaced by name
  EXPECT_EQ(names(registry.all()), (std::vector<std::string>{"web", "db"}));
  EXPECT_EQ(registry.runtime().at(0).exe, "mysqld");
  EXPECT_EQ(names(store.targets(config).value()), std::vector<std::string>{"db"});

  // Another registry on the same store (the next start) has them.
  TargetRegistry again(&store, config);
  EXPECT_EQ(names(again.all()), (std::vector<std::string>{"web", "db"}));
  EXPECT_EQ(*again.remove("db"), true);
  EXPECT_EQ(*again.remove("db"), false);
  EXPECT_TRUE(store.targets(config)->empty());
}

TEST(TargetRegistry, AMatcherHandedOutStaysAsItWasWhenTargetsChange) {
  Config config;
  config.targets = {target("web", "nginx")};
  TargetRegistry registry(nullptr, config);
  const auto before = registry.matcher();
  config.targets.push_back(target("cache", "redis-server"));
  registry.reconfigure(config);
  EXPECT_EQ(before->targets().size(), 1U);
  EXPECT_EQ(registry.matcher()->targets().size(), 2U);
}

ProcessInfo process(int pid, const std::string& comm, const std::string& cmdline) {
  ProcessInfo p;
  p.identity = ProcessIdentity{Pid{pid}, 1000};
  p.comm = comm;
  p.exe_name = comm;
  p.cmdline = cmdline;
  return p;
}

TEST(TargetMatchMemo, AVerdictIsKeptUntilTheProcessOrTheTargetsChange) {
  Config config;
  TargetConfig web = target("web", "python3");
  web.exe.reset();
  web.cmdline = "serve --port [0-9]+";
  config.targets = {web};
  TargetRegistry registry(nullptr, config);
  TargetMatchMemo memo;
  auto p = process(10, "python3", "python3 serve --port 80");
  const TargetConfig* first = memo.match(registry.matcher(), p);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->name, "web");
  EXPECT_EQ(memo.match(registry.matcher(), p), first);  // the same verdict, not matched again

  // An exec: another command line, decided again.
  p.cmdline = "python3 idle";
  EXPECT_EQ(memo.match(registry.matcher(), p), nullptr);
  p.cmdline = "python3 serve --port 81";
  EXPECT_EQ(memo.match(registry.matcher(), p), first);

  // Other targets: every verdict is decided again, by them.
  config.targets = {target("none", "postgres")};
  registry.reconfigure(config);
  EXPECT_EQ(memo.match(registry.matcher(), p), nullptr);

  // A process gone is forgotten; another with its pid (a later start) is matched for itself.
  memo.keepOnly({});
  auto reused = process(10, "postgres", "postgres -D /var/lib");
  reused.identity.start_time = 2000;
  const TargetConfig* other = memo.match(registry.matcher(), reused);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->name, "none");
}

TEST(TargetRegistry, ATargetTheStoreRefusesIsNotAdded) {
  testing::FakeIncidentRepository store;
  TargetRegistry registry(&store, Config{});
  store.failWrites(true);
  EXPECT_FALSE(registry.add(target("db", "postgres")).ok());
  EXPECT_TRUE(registry.all().empty());
}

}  // namespace
}  // namespace wctmon
