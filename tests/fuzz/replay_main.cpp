// The driver of a fuzz target where libFuzzer is not there (GCC, MinGW under Wine): runs the
// target on every file of the directories given (its seeds and every input that once broke it),
// so that each stays a regression test in every build, sanitized or not. With --mutate SECONDS
// it then runs the target on random mutations of those inputs for that long: blind fuzzing, with
// no coverage to guide it, for the targets libFuzzer cannot build (the Windows ones). An input
// that breaks the target is written to --artifact PATH before the process dies.
//   TARGET [--mutate SECONDS] [--seed N] [--artifact PATH] CORPUS_DIR_OR_FILE...
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "fuzz/fuzz_input.h"

namespace {

using Input = std::vector<std::uint8_t>;

/// The input being run and where to keep it if it breaks the target (signal handlers read them).
Input current;
std::string artifact = "mutate-crash";

extern "C" void keepInputAndDie(int signal) {
  if (std::FILE* f = std::fopen(artifact.c_str(), "wb")) {
    std::fwrite(current.data(), 1, current.size(), f);
    std::fclose(f);
    std::fprintf(stderr, "the input that broke the target is in %s\n", artifact.c_str());
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void run(const Input& input) {
  current = input;
  LLVMFuzzerTestOneInput(current.data(), current.size());
}

/// One to four of libFuzzer's simplest mutations: flip a bit, set a byte to a random or a
/// boundary value, insert or erase bytes, copy a range over another, splice in another input.
Input mutate(const std::vector<Input>& inputs, std::mt19937_64& random) {
  const auto below = [&](std::size_t n) { return n == 0 ? 0 : random() % n; };
  Input out = inputs[below(inputs.size())];
  constexpr std::size_t kMaxSize = 4096;
  for (std::size_t round = 0, rounds = 1 + below(4); round < rounds; ++round) {
    const std::size_t at = below(out.size() + 1);
    switch (below(7)) {
      case 0:
        if (at < out.size()) out[at] ^= static_cast<std::uint8_t>(1U << below(8));
        break;
      case 1:
        if (at < out.size()) out[at] = static_cast<std::uint8_t>(random());
        break;
      case 2: {
        static constexpr std::uint8_t kBoundaries[] = {0, 1, 0x7f, 0x80, 0xfe, 0xff};
        if (at < out.size()) out[at] = kBoundaries[below(std::size(kBoundaries))];
        break;
      }
      case 3:
        if (out.size() < kMaxSize) {
          out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), 1 + below(8),
                     static_cast<std::uint8_t>(random()));
        }
        break;
      case 4: {
        const std::size_t n = std::min(out.size() - at, 1 + below(16));
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(at),
                  out.begin() + static_cast<std::ptrdiff_t>(at + n));
        break;
      }
      case 5:
        if (!out.empty()) {
          const std::size_t from = below(out.size());
          const std::size_t n =
              std::min({out.size() - from, out.size() - std::min(at, out.size()), 1 + below(32)});
          std::copy_n(out.begin() + static_cast<std::ptrdiff_t>(from), n,
                      out.begin() + static_cast<std::ptrdiff_t>(std::min(at, out.size())));
        }
        break;
      default: {
        const Input& other = inputs[below(inputs.size())];
        const std::size_t from = below(other.size() + 1);
        out.resize(at);
        out.insert(out.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
        if (out.size() > kMaxSize) out.resize(kMaxSize);
      }
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double mutate_seconds = 0;
  std::uint64_t seed =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mutate" && i + 1 < argc) {
      mutate_seconds = std::atof(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--artifact" && i + 1 < argc) {
      artifact = argv[++i];
    } else {
      paths.emplace_back(arg);
    }
  }
  std::vector<std::filesystem::path> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (std::filesystem::is_regular_file(path, ec)) {
      files.push_back(path);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", path.string().c_str());
      return 2;
    }
  }
  // A corpus that went missing would make a test that checks nothing.
  if (files.empty()) {
    std::fprintf(stderr, "no inputs: give the target's corpus\n");
    return 1;
  }
  std::sort(files.begin(), files.end());
  for (const int signal : {SIGABRT, SIGSEGV, SIGFPE, SIGILL}) std::signal(signal, keepInputAndDie);

  std::vector<Input> inputs;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    // Named before it runs: a sanitizer's report of a crash then follows its input's name.
    std::printf("%s\n", file.string().c_str());
    std::fflush(stdout);
    run(inputs.back());
  }
  std::printf("%zu inputs replayed\n", inputs.size());
  if (mutate_seconds <= 0) return 0;

  std::printf("mutating them for %.0f s, seed %llu\n", mutate_seconds,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::mt19937_64 random(seed);
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(mutate_seconds);
  std::uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 100; ++i, ++runs) run(mutate(inputs, random));
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu mutated inputs in %.1f s (%.0f/s), none broke the target\n",
              static_cast<unsigned long long>(runs), took, static_cast<double>(runs) / took);
  return 0;
}
