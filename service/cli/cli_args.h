#pragma once

// Command-line checks shared by wctmon, wctmond and wctctl: option values whose errors say what
// is allowed, and every parse error as one line that names the option or the command.
// Header-only: the command-line tools link none of the service's code.

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
#include <system_error>
#include <vector>

namespace wctmon::cli {

/// The largest process id Linux hands out on 64-bit (PID_MAX_LIMIT).
inline constexpr std::int64_t kMaxPid = 4194304;

/// What the user gave, quoted, for an error message ("nothing" for an empty value).
inline std::string givenText(const std::string& text) {
  return text.empty() ? "nothing" : "'" + text + "'";
}

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
      "", "expected");
}

/// Accepts one of `allowed`; the error lists them.
inline CLI::Validator oneOf(const std::vector<std::string>& allowed) {
  std::string expected = "expected ";
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    expected += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  }
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        for (const auto& a : allowed) {
          if (text == a) return {};
        }
        return expected + "; got " + givenText(text);
      },
      "", "expected");
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

inline std::string commandList(CLI::App& parent) {
  std::string out;
  for (const CLI::App* command : parent.get_subcommands([](CLI::App*) { return true; })) {
    out += (out.empty() ? "" : ", ") + command->get_name();
  }
  return out;
}

}  // namespace detail

/// One line that says what is wrong with a command line and what is allowed, without the
/// program's "name: " prefix. `program` is how the command is called ("wctmon").
inline std::string describeUsageError(CLI::App& root, const std::string& program,
                                      const CLI::ParseError& error) {
  CLI::App* active = &root;
  while (!active->get_subcommands().empty()) active = active->get_subcommands().front();
  // "for analyze"; nothing at the top, where the program's name prefixes the line already.
  const std::string where = active == &root ? "" : " for " + active->get_name();
  const std::string message = error.what();

  std::vector<std::string> extras = active->remaining();
  if (extras.empty()) extras = root.remaining();
  const bool has_commands = !root.get_subcommands([](CLI::App*) { return true; }).empty();
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr ||
      (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && active == &root &&
       has_commands)) {
    if (extras.empty()) {
      return "a command is required: " + detail::commandList(root) + " (" + program +
             " --help tells more)";
    }
    const std::string& first = extras.front();
    if (first.rfind('-', 0) != 0 && active == &root && has_commands) {
      return "unknown command '" + first + "'; the commands are " + detail::commandList(root);
    }
    return std::string(first.rfind('-', 0) == 0 ? "unknown option '" : "unexpected argument '") +
           first + "'" + where + "; its options are " + detail::optionList(*active) +
           (active == &root && has_commands ? "; the commands are " + detail::commandList(root)
                                            : "");
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && active != &root &&
      active->get_subcommands().empty() &&
      !active->get_subcommands([](CLI::App*) { return true; }).empty()) {
    return active->get_name() + " needs a command: " + detail::commandList(*active);
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    for (const CLI::Option* option : active->get_options()) {
      if (option->get_required() && option->count() == 0) {
        return (active == &root ? program : active->get_name()) + " needs " +
               detail::optionText(*option, true);
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
      try {
        std::string nothing;
        const std::string expected = (*option->get_validator("expected"))(nothing);
        if (!expected.empty()) return name + ": " + expected;
      } catch (const CLI::OptionNotFound&) {
        // An option without a check of ours: its value's name says what it takes.
      }
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
