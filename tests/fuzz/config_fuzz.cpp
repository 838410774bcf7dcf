// The configuration file and a target added through the API: JSON and every rule of the schema.
// A configuration the loader accepts must also accept each of its targets as written back.
#include "core/config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = wctmon::fuzz::asText(data, size);
  const auto parsed = wctmon::parseConfig(text);
  if (parsed) {
    for (const auto& target : parsed->targets) {
      const auto again = wctmon::parseTarget(wctmon::targetToJson(target), *parsed);
      WCTMON_FUZZ_CHECK(again.ok());
      WCTMON_FUZZ_CHECK(again->name == target.name);
    }
  }
  const auto target = wctmon::parseTarget(text, wctmon::Config{});
  WCTMON_FUZZ_CHECK(target.ok() || !target.error().empty());
  return 0;
}
