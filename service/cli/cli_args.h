#pragma once

// Command-line checks shared by wctmon, wctmond and wctctl: option values whose errors say what
// is allowed, and every parse error as one line that names the option or the command, with the
// closest word when it looks like a slip ("did you mean 'status'?"). The command-line tools link
// none of the service's code: this room depends on CLI11 alone.

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace wctmon::cli {

/// The largest process id Linux hands out on 64-bit (PID_MAX_LIMIT).
inline constexpr std::int64_t kMaxPid = 4194304;

/// What the user gave, quoted, for an error message ("nothing" for an empty value).
inline std::string givenText(const std::string& text) {
  return text.empty() ? "nothing" : "'" + text + "'";
}

/// The edit distance between `a` and `b`, case ignored: each letter inserted, removed, changed,
/// or two neighbours swapped ("stauts" for "status") counts one.
inline std::size_t editDistance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  // Optimal string alignment: three rows of the Damerau-Levenshtein table are enough.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

/// The word of `candidates` closest to `given` when `given` looks like a slip of it: at most one
/// edit in three letters (at least one edit), the first of equally close ones; nothing otherwise.
/// Leading dashes do not count as letters ("--limt" is one edit from "--limit").
inline std::optional<std::string> closestWord(const std::string& given,
                                              const std::vector<std::string>& candidates) {
  const std::size_t letters = given.size() - std::min(given.find_first_not_of('-'), given.size());
  const std::size_t most = std::max<std::size_t>(1, letters / 3);
  std::optional<std::string> best;
  std::size_t best_distance = most + 1;
  for (const auto& candidate : candidates) {
    const auto d = editDistance(given, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

/// " (did you mean 'status'?)" when `given` looks like a slip of one of `candidates`, else "".
inline std::string didYouMean(const std::string& given,
                              const std::vector<std::string>& candidates) {
  const auto closest = closestWord(given, candidates);
  return closest ? " (did you mean '" + *closest + "'?)" : "";
}

/// The name of the validators of ours: describeUsageError asks them what a value should be.
inline constexpr const char* kExpectedValidator = "expected";
/// The validator name of oneOf, followed by its words separated by '|': completion scripts offer
/// them.
inline constexpr std::string_view kChoicesValidator = "expected one of:";

/// Accepts a decimal whole number from `min` to `max`; `what` names what it stands for ("a
/// process id"). The error reads "expected a process id, a whole number from 1 to 4194304; got
/// 'abc'", never the range of the C++ type behind it.
inline CLI::Validator wholeNumber(const std::string& what, std::int64_t min, std::int64_t max) {
  const std::string expected = "expected " + what + ", a whole number from " + std::to_string(min) +
                               " to " + std::to_string(max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        // Decimal digits only (from_chars alone would take "12abc" as 12); a leading '-' only
        // where negative numbers are allowed.
        const std::size_t sign = !text.empty() && text[0] == '-' && min < 0 ? 1 : 0;
        bool ok = text.size() > sign;
        for (std::size_t i = sign; ok && i < text.size(); ++i) {
          ok = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
        }
        std::int64_t value = 0;
        if (ok) {
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
          ok =
              ec == std::errc() && end == text.data() + text.size() && value >= min && value <= max;
        }
        return ok ? std::string() : expected + "; got " + givenText(text);
      },
      "", kExpectedValidator);
}

/// Accepts one of `allowed`; the error lists them and names the closest when the value looks like
/// a slip of one.
inline CLI::Validator oneOf(const std::vector<std::string>& allowed) {
  std::string expected = "expected ";
  std::string name(kChoicesValidator);
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    expected += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
    name += (i == 0 ? "" : "|") + allowed[i];
  }
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        for (const auto& a : allowed) {
          if (text == a) return {};
        }
        return expected + "; got " + givenText(text) + didYouMean(text, allowed);
      },
      "", name);
}

/// The words an option accepts when a oneOf checks it (for completion); empty otherwise.
inline std::vector<std::string> choicesOf(const CLI::Option& option) {
  auto& mutable_option = const_cast<CLI::Option&>(option);  // CLI11 2.1 has no const lookup
  for (int i = 0;; ++i) {
    const CLI::Validator* validator = nullptr;
    try {
      validator = mutable_option.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return {};
    }
    const std::string& name = validator->get_name();
    if (name.rfind(kChoicesValidator, 0) != 0) continue;
    std::vector<std::string> words;
    std::string rest = name.substr(kChoicesValidator.size());
    for (std::size_t at = 0; at <= rest.size();) {
      const auto bar = std::min(rest.find('|', at), rest.size());
      words.push_back(rest.substr(at, bar - at));
      at = bar + 1;
    }
    return words;
  }
}

/// The validator of ours on `option` (wholeNumber, oneOf, or one named kExpectedValidator), or
/// null.
inline CLI::Validator* expectedValidatorOf(CLI::Option& option) {
  for (int i = 0;; ++i) {
    CLI::Validator* validator = nullptr;
    try {
      validator = option.get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return nullptr;
    }
    if (validator->get_name().rfind(kExpectedValidator, 0) == 0) return validator;
  }
}

namespace detail {

/// How an option is written in a message: "--config FILE", "FILE" for a positional.
inline std::string optionText(const CLI::Option& option, bool with_value) {
  std::string name = !option.get_lnames().empty()   ? "--" + option.get_lnames().front()
                     : !option.get_snames().empty() ? "-" + option.get_snames().front()
                                                    : option.get_type_name();
  if (with_value && option.nonpositional() && option.get_type_size() > 0) {
    name += " " + option.get_type_name();
  }
  return name;
}

inline std::string optionList(const CLI::App& command) {
  std::string out;
  for (const CLI::Option* option : command.get_options()) {
    out += (out.empty() ? "" : ", ") + optionText(*option, false);
  }
  return out;
}

/// The commands under `parent` that --help lists (hidden ones, in no group, left out).
inline std::vector<std::string> commandNames(CLI::App& parent) {
  std::vector<std::string> names;
  for (const CLI::App* command : parent.get_subcommands([](CLI::App*) { return true; })) {
    if (!command->get_group().empty()) names.push_back(command->get_name());
  }
  return names;
}

inline std::string commandList(CLI::App& parent) {
  std::string out;
  for (const auto& name : commandNames(parent)) out += (out.empty() ? "" : ", ") + name;
  return out;
}

/// Every spelling of the options `command` takes ("--limit", "-o"), those of the commands above
/// it included when they fall through to it.
inline std::vector<std::string> optionSpellings(CLI::App& command) {
  std::vector<std::string> out;
  // A command that falls through passes the options it does not know to the one above it.
  for (CLI::App* at = &command; at != nullptr;
       at = at->get_fallthrough() ? at->get_parent() : nullptr) {
    for (const CLI::Option* option : at->get_options()) {
      for (const auto& l : option->get_lnames()) out.push_back("--" + l);
      for (const auto& s : option->get_snames()) out.push_back("-" + s);
    }
  }
  return out;
}

}  // namespace detail

/// One line that says what is wrong with a command line and what is allowed, with the closest
/// word when the wrong one looks like a slip of it ("did you mean 'status'?"), without the
/// program's "name: " prefix. `program` is how the command is called ("wctmon").
inline std::string describeUsageError(CLI::App& root, const std::string& program,
                                      const CLI::ParseError& error) {
  CLI::App* active = &root;
  std::string path;  // "targets add": the commands given, as they are typed
  while (!active->get_subcommands().empty()) {
    active = active->get_subcommands().front();
    path += (path.empty() ? "" : " ") + active->get_name();
  }
  // "for analyze"; nothing at the top, where the program's name prefixes the line already.
  const std::string where = active == &root ? "" : " for " + path;
  const std::string message = error.what();

  std::vector<std::string> extras = active->remaining();
  if (extras.empty()) extras = root.remaining();
  const bool has_commands = !detail::commandNames(*active).empty();
  const bool is_required = dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  const bool word_first = !extras.empty() && extras.front().rfind('-', 0) != 0;
  // A word where a command was expected: "wctctl stauts", "wctctl targets lst".
  if (has_commands && word_first &&
      (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr || is_required)) {
    const auto names = detail::commandNames(*active);
    const std::string prefix = path.empty() ? "" : path + " ";
    const auto closest = closestWord(extras.front(), names);
    return "unknown command '" + prefix + extras.front() + "'" +
           (closest ? " (did you mean '" + prefix + *closest + "'?)" : "") + "; the commands" +
           (path.empty() ? "" : " of " + path) + " are " + detail::commandList(*active);
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr ||
      (is_required && active == &root && has_commands)) {
    if (extras.empty()) {
      return "a command is required: " + detail::commandList(root) + " (" + program +
             " --help tells more)";
    }
    const std::string& first = extras.front();
    const bool is_option = first.rfind('-', 0) == 0;
    // "--limt=5" is a slip of "--limit" all the same.
    const std::string spelled = first.substr(0, first.find('='));
    return std::string(is_option ? "unknown option '" : "unexpected argument '") + first + "'" +
           where + (is_option ? didYouMean(spelled, detail::optionSpellings(*active)) : "") +
           "; its options are " + detail::optionList(*active) +
           (active == &root && has_commands ? "; the commands are " + detail::commandList(root)
                                            : "");
  }
  if (is_required && active != &root && has_commands && active->get_subcommands().empty()) {
    return path + " needs a command: " + detail::commandList(*active);
  }
  if (is_required) {
    for (const CLI::Option* option : active->get_options()) {
      if (option->get_required() && option->count() == 0) {
        return (active == &root ? program : path) + " needs " + detail::optionText(*option, true);
      }
    }
    return message;
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    const std::string name = message.substr(0, message.find(':'));
    CLI::Option* option = active->get_option_no_throw(name);
    if (option == nullptr) return message;
    if (message.ends_with(" missing")) {
      // "--pid: 1 required PID missing": say what the value should have been.
      if (CLI::Validator* validator = expectedValidatorOf(*option)) {
        std::string nothing;
        const std::string expected = (*validator)(nothing);
        if (!expected.empty()) return name + ": " + expected;
      }
      // An option without a check of ours: its value's name says what it takes.
      return name + ": expected " + option->get_type_name() + "; got nothing";
    }
    return name + ": given " + std::to_string(option->count()) + " times; give it once";
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr) {
    const auto at = message.find(" excludes ");
    if (at != std::string::npos) {
      return message.substr(0, at) + " and " + message.substr(at + 10) + " cannot be used together";
    }
  }
  return message;
}

/// The exit status of a command line that cannot be run.
inline constexpr int kUsageExit = 2;

/// Parses `argv` into `app`: nothing when the command is to run; otherwise its exit status, with
/// the help or the version printed (0), or the error as one line "PREFIX: ..." on stderr
/// (kUsageExit). `program` is how the command is called in messages ("wctmon").
inline std::optional<int> parseCommandLine(CLI::App& app, int argc, char** argv,
                                           const std::string& prefix, const std::string& program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << prefix << ": " << describeUsageError(app, program, e) << "\n";
    return kUsageExit;
  }
  return std::nullopt;
}

/// The exit status of a command whose output could not be written.
inline constexpr int kOutputErrorExit = 1;

/// `exit`, unless what the command wrote did not reach its standard output (a full disk, a
/// closed pipe): then one line "PREFIX: cannot write the output[: REASON]" on stderr and
/// kOutputErrorExit. Streams buffer their writes, so without this check a lost output would
/// still exit 0. Called once, as the command ends.
inline int checkedOutput(int exit, const char* prefix) {
  errno = 0;
  std::cout.flush();
  const bool lost = std::cout.fail() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!lost) return exit;
  // The reason is known when this flush failed; an earlier write that failed left only the
  // stream's error flag.
  std::cerr << prefix << ": cannot write the output"
            << (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
  return kOutputErrorExit;
}

}  // namespace wctmon::cli
