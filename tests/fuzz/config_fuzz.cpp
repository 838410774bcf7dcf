// The configuration file and a target added through the API: JSON and every rule of the schema.
// A configuration the loader accepts must also accept each of its targets as written back.
#include "core/config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = wctmon::fuzz::asText(data, size);
  const auto parsed = wctmon::parseConfig(text);
  if (parsed.config) {
    for (const auto& target : parsed.config->targets) {
      std::vector<wctmon::ConfigError> errors;
      const auto again = wctmon::parseTarget(wctmon::targetToJson(target), *parsed.config, errors);
      WCTMON_FUZZ_CHECK(again.has_value());
      WCTMON_FUZZ_CHECK(again->name == target.name);
    }
  }
  std::vector<wctmon::ConfigError> errors;
  static_cast<void>(wctmon::parseTarget(text, wctmon::Config{}, errors));
  return 0;
}
