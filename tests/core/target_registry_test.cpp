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

TEST(TargetRegistry, ATargetTheStoreRefusesIsNotAdded) {
  testing::FakeIncidentRepository store;
  TargetRegistry registry(&store, Config{});
  store.failWrites(true);
  EXPECT_FALSE(registry.add(target("db", "postgres")).ok());
  EXPECT_TRUE(registry.all().empty());
}

}  // namespace
}  // namespace wctmon
