// What matching a target's command-line expression costs per process and line length: RE2
// (CmdlinePattern, the service's) next to std::regex (ECMAScript, what the service used before),
// in one run. std::regex overflows an 8 MiB stack somewhere past 20,000 characters with
// "java.*-Dapp=foo" and backtracks exponentially with "(a+)+$": its rows stop where it still
// returns.
//
//   build/default/scripts/bench/wctmon-match-bench [--benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>

#include <regex>
#include <string>

#include "core/cmdline_pattern.h"

namespace {

/// "java " and `n` more characters, with no "-Dapp=foo" in them.
std::string javaLine(std::int64_t n) {
  return "java " + std::string(static_cast<std::size_t>(n), 'x');
}

/// `n` 'a's and a character that makes "(a+)+$" fail.
std::string nestedLine(std::int64_t n) {
  return std::string(static_cast<std::size_t>(n), 'a') + "!";
}

void re2Java(benchmark::State& state) {
  const auto pattern = wctmon::CmdlinePattern::compile("java.*-Dapp=foo").value();
  const auto line = javaLine(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(pattern.search(line));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void stdRegexJava(benchmark::State& state) {
  const std::regex pattern("java.*-Dapp=foo", std::regex::ECMAScript);
  const auto line = javaLine(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(std::regex_search(line, pattern));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void re2Nested(benchmark::State& state) {
  const auto pattern = wctmon::CmdlinePattern::compile("(a+)+$").value();
  const auto line = nestedLine(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(pattern.search(line));
}

void stdRegexNested(benchmark::State& state) {
  const std::regex pattern("(a+)+$", std::regex::ECMAScript);
  const auto line = nestedLine(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(std::regex_search(line, pattern));
}

BENCHMARK(re2Java)->Arg(1000)->Arg(10000)->Arg(20000)->Arg(40000)->Arg(128 * 1024);
BENCHMARK(stdRegexJava)->Arg(1000)->Arg(10000)->Arg(20000);
BENCHMARK(re2Nested)->Arg(16)->Arg(20)->Arg(24)->Arg(41)->Arg(40000);
BENCHMARK(stdRegexNested)->Arg(16)->Arg(20)->Arg(24)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
