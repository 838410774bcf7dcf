#include "model/enum_names.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

namespace wctmon {
namespace {

/// "CriticalSection" -> "critical_section".
std::string snakeCase(std::string_view camel) {
  std::string out;
  for (std::size_t i = 0; i < camel.size(); ++i) {
    const auto c = static_cast<unsigned char>(camel[i]);
    if (i > 0 && std::isupper(c)) out += '_';
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

std::string upper(std::string_view text) {
  std::string out;
  for (const char c : text) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

/// Every value comes back from each of its names, no two values share a name, and the three
/// forms agree: wire = PREFIX + upper-case config, config = the display name in snake case.
template <typename Enum>
void expectEveryValueRoundTrips(std::string_view wire_prefix) {
  std::set<std::string_view> displays, wires, configs;
  for (const auto& n : enumNames<Enum>()) {
    SCOPED_TRACE(n.display);
    EXPECT_EQ(&namesOf(n.value), &n);
    EXPECT_EQ(fromWireName<Enum>(wireName(n.value)), n.value);
    EXPECT_EQ(fromConfigName<Enum>(configName(n.value)), n.value);
    EXPECT_EQ(toString(n.value), n.display);
    EXPECT_EQ(n.config, snakeCase(n.display));
    EXPECT_EQ(n.wire, std::string(wire_prefix) + upper(n.config));
    EXPECT_TRUE(displays.insert(n.display).second);
    EXPECT_TRUE(wires.insert(n.wire).second);
    EXPECT_TRUE(configs.insert(n.config).second);
  }
  EXPECT_FALSE(fromWireName<Enum>("").has_value());
  EXPECT_FALSE(fromConfigName<Enum>("nope").has_value());
}

TEST(EnumNames, EveryObjectTypeRoundTripsThroughEachOfItsNames) {
  expectEveryValueRoundTrips<ObjectType>("OBJECT_TYPE_");
  EXPECT_EQ(kObjectTypeNames.front().value, ObjectType::kCriticalSection);
  EXPECT_EQ(kObjectTypeNames.back().value, ObjectType::kUnownedLock);
  EXPECT_EQ(configName(ObjectType::kUnownedLock), "unowned_lock");
  EXPECT_EQ(wireName(ObjectType::kRwLock), "OBJECT_TYPE_RW_LOCK");
  EXPECT_EQ(configName(ObjectType::kSocketIo), "socket_io");
}

TEST(EnumNames, EveryObjectStatusRoundTripsThroughEachOfItsNames) {
  expectEveryValueRoundTrips<ObjectStatus>("OBJECT_STATUS_");
  EXPECT_EQ(kObjectStatusNames.back().value, ObjectStatus::kError);
  EXPECT_EQ(wireName(ObjectStatus::kPidOnlyRpcss), "OBJECT_STATUS_PID_ONLY_RPCSS");
}

TEST(EnumNames, AValueOutsideTheEnumIsNamedUnknown) {
  EXPECT_EQ(wireName(static_cast<ObjectType>(999)), "OBJECT_TYPE_UNKNOWN");
  EXPECT_EQ(toString(static_cast<ObjectStatus>(-1)), std::string("Unknown"));
}

}  // namespace
}  // namespace wctmon
