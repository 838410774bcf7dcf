#include "client/watch_memory.h"

#include <gtest/gtest.h>

namespace wctmon::client {
namespace {

v1::IncidentEvent event(v1::IncidentEvent::Type type, std::int64_t id, std::int64_t changed) {
  v1::IncidentEvent e;
  e.set_type(type);
  e.mutable_incident()->set_id(id);
  e.mutable_incident()->mutable_updated_at()->set_seconds(changed);
  return e;
}

TEST(WatchMemory, AStreamOpenedAgainPrintsOnlyWhatChanged) {
  WatchMemory memory;
  auto first = event(v1::IncidentEvent::TYPE_EXISTING, 1, 100);
  EXPECT_TRUE(memory.admit(first));
  auto opened = event(v1::IncidentEvent::TYPE_OPENED, 2, 200);
  EXPECT_TRUE(memory.admit(opened));
  EXPECT_EQ(memory.shownOpen(), (std::vector<std::int64_t>{1, 2}));

  // The next stream: 1 as it was (no news), 2 changed meanwhile (an update), 3 new.
  auto again = event(v1::IncidentEvent::TYPE_EXISTING, 1, 100);
  EXPECT_FALSE(memory.admit(again));
  auto changed = event(v1::IncidentEvent::TYPE_EXISTING, 2, 250);
  EXPECT_TRUE(memory.admit(changed));
  EXPECT_EQ(changed.type(), v1::IncidentEvent::TYPE_UPDATED);
  auto fresh = event(v1::IncidentEvent::TYPE_EXISTING, 3, 300);
  EXPECT_TRUE(memory.admit(fresh));
  EXPECT_EQ(fresh.type(), v1::IncidentEvent::TYPE_EXISTING);
  auto repeat = event(v1::IncidentEvent::TYPE_EXISTING, 2, 250);
  EXPECT_FALSE(memory.admit(repeat));
}

TEST(WatchMemory, AResolutionIsPrintedOnce) {
  WatchMemory memory;
  auto open = event(v1::IncidentEvent::TYPE_OPENED, 5, 1);
  EXPECT_TRUE(memory.admit(open));
  auto resolved = event(v1::IncidentEvent::TYPE_RESOLVED, 5, 2);
  EXPECT_TRUE(memory.admit(resolved));
  EXPECT_TRUE(memory.shownOpen().empty());
  // Found by the catch-up after a reconnection, then sent by the stream too.
  auto twice = event(v1::IncidentEvent::TYPE_RESOLVED, 5, 2);
  EXPECT_FALSE(memory.admit(twice));
}

}  // namespace
}  // namespace wctmon::client
