// What names each alert kind: its MESSAGE_ID, its name for machines, and the journal catalog
// entry that explains it (installer/linux/wctmon.catalog), one of each per kind.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/ports/alert_sink.h"

namespace wctmon {
namespace {

TEST(AlertKinds, EachHasItsOwnIdAndNameAndAnEntryInTheJournalCatalog) {
  std::ifstream in(WCTMON_SOURCE_DIR "/installer/linux/wctmon.catalog");
  ASSERT_TRUE(in) << "installer/linux/wctmon.catalog";
  std::stringstream text;
  text << in.rdbuf();
  const std::string catalog = text.str();
  std::set<std::string> ids;
  std::set<std::string> names;
  for (int k = 0; k <= static_cast<int>(AlertKind::kStoreRecovered); ++k) {
    const auto kind = static_cast<AlertKind>(k);
    const std::string id = messageId(kind);
    EXPECT_EQ(id.size(), 32U) << id;
    EXPECT_NE(id, std::string(32, '0')) << "kind " << k << " has no id";
    EXPECT_TRUE(ids.insert(id).second) << id << " is given twice";
    EXPECT_TRUE(names.insert(alertKindName(kind)).second) << alertKindName(kind);
    // An entry: its header line, then a Subject.
    const auto entry = catalog.find("\n-- " + id + "\nSubject: ");
    EXPECT_NE(entry, std::string::npos) << "no catalog entry for " << alertKindName(kind);
  }
  // And no entry for an id that is not one of them.
  std::istringstream lines(catalog);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("-- ")) {
      EXPECT_TRUE(ids.count(line.substr(3))) << line;
    }
  }
}

}  // namespace
}  // namespace wctmon
