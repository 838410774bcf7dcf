#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "model/wait_model.h"

namespace wctmon {

/// The names of one value of a domain enum.
template <typename Enum>
struct EnumName {
  Enum value;
  /// For people: "RwLock".
  std::string_view display;
  /// On the wire: the proto3 enum value name, "OBJECT_TYPE_RW_LOCK".
  std::string_view wire;
  /// In the configuration: "rw_lock".
  std::string_view config;
};

#define WCTMON_OBJECT_TYPE_NAME(value, display, wire, config) \
  EnumName<ObjectType>{ObjectType::value, display, wire, config},
#define WCTMON_OBJECT_STATUS_NAME(value, display, wire, config) \
  EnumName<ObjectStatus>{ObjectStatus::value, display, wire, config},

/// Every object type with its names, in declaration order (from the list that declares them).
inline constexpr std::array kObjectTypeNames{WCTMON_OBJECT_TYPES(WCTMON_OBJECT_TYPE_NAME)};
/// Every object status with its names, in declaration order.
inline constexpr std::array kObjectStatusNames{WCTMON_OBJECT_STATUSES(WCTMON_OBJECT_STATUS_NAME)};

#undef WCTMON_OBJECT_TYPE_NAME
#undef WCTMON_OBJECT_STATUS_NAME

/// The table of `Enum`: every value, in declaration order.
template <typename Enum>
constexpr std::span<const EnumName<Enum>> enumNames();
template <>
constexpr std::span<const EnumName<ObjectType>> enumNames<ObjectType>() {
  return kObjectTypeNames;
}
template <>
constexpr std::span<const EnumName<ObjectStatus>> enumNames<ObjectStatus>() {
  return kObjectStatusNames;
}

/// Row i of each table is the value i, so that a value finds its names by index.
template <typename Enum>
constexpr bool indexedByValue() {
  const auto names = enumNames<Enum>();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (static_cast<std::size_t>(names[i].value) != i) return false;
  }
  return true;
}
static_assert(indexedByValue<ObjectType>());
static_assert(indexedByValue<ObjectStatus>());

/// The names of `value`; those of kUnknown for a value outside the enum.
template <typename Enum>
constexpr const EnumName<Enum>& namesOf(Enum value) {
  const auto names = enumNames<Enum>();
  const auto i = static_cast<std::size_t>(value);
  return names[i < names.size() ? i : static_cast<std::size_t>(Enum::kUnknown)];
}

/// "OBJECT_TYPE_MUTEX", "OBJECT_STATUS_OWNED": the proto3 enum value name.
template <typename Enum>
constexpr std::string_view wireName(Enum value) {
  return namesOf(value).wire;
}

/// "mutex", "rw_lock": the name in the configuration.
template <typename Enum>
constexpr std::string_view configName(Enum value) {
  return namesOf(value).config;
}

/// The value whose wire name is `name`, if any.
template <typename Enum>
constexpr std::optional<Enum> fromWireName(std::string_view name) {
  for (const auto& n : enumNames<Enum>()) {
    if (n.wire == name) return n.value;
  }
  return std::nullopt;
}

/// The value whose configuration name is `name`, if any.
template <typename Enum>
constexpr std::optional<Enum> fromConfigName(std::string_view name) {
  for (const auto& n : enumNames<Enum>()) {
    if (n.config == name) return n.value;
  }
  return std::nullopt;
}

/// The last object type. Only for code that still loops by value; the table lists them all.
inline constexpr ObjectType kLastObjectType = kObjectTypeNames.back().value;

}  // namespace wctmon
