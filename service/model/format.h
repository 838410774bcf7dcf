#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/ids.h"

namespace wctmon {

/// An address or register value as operators read it: "0x7f12ab".
[[nodiscard]] std::string hexString(std::uint64_t value);

/// A thread as the WCT sample writes it: "[pid:tid]".
[[nodiscard]] std::string threadLabel(ThreadRef thread);

/// Threads as a compact list: "pid:tid pid:tid" (alert fields, the store).
[[nodiscard]] std::string threadList(const std::vector<ThreadRef>& threads);

/// A count with its noun in English: "1 thread", "3 threads".
[[nodiscard]] std::string countOf(std::size_t n, std::string_view noun);

/// `text` with its ASCII letters in lower case (what configuration words and enum names need;
/// no locale is consulted).
[[nodiscard]] std::string asciiLower(std::string_view text);

/// A duration as people read it: "850ms", "12s", "2m13s", "3h05m", "2d04h".
[[nodiscard]] std::string durationText(std::chrono::milliseconds d);

}  // namespace wctmon
