#pragma once

// --help as operators expect it of kubectl: a command's help shows its options, then the global
// options it also takes, then examples; the same examples go into the man page.

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wctmon::cli {

/// A command line and what it does ("wctctl incidents --state open", "the open incidents").
struct Example {
  std::string command;
  std::string what;
};

/// CLI11's help with two more sections: the options a command takes from the commands above it
/// (global options, when it falls through to them) and its examples.
class HelpFormatter : public CLI::Formatter {
 public:
  /// Sets the examples of `command`, shown by its --help and in the man page.
  void setExamples(const CLI::App* command, std::vector<Example> examples);
  /// The examples of `command`, none when it has none.
  [[nodiscard]] const std::vector<Example>& examplesOf(const CLI::App* command) const;

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;

 private:
  std::map<const CLI::App*, std::vector<Example>> examples_;
};

/// Installs a HelpFormatter on `app` and returns it. Call it before adding subcommands: they
/// take their parent's formatter when they are made.
std::shared_ptr<HelpFormatter> useHelpFormatter(CLI::App& app);

/// The options `command` takes from the commands above it (those it falls through to), the help
/// flags left out: wctctl's global options under "wctctl incidents".
[[nodiscard]] std::vector<const CLI::Option*> inheritedOptions(const CLI::App& command);

/// Whether `command` is hidden: in no group, so that --help does not list it ("__man").
[[nodiscard]] inline bool isHidden(const CLI::App& command) { return command.get_group().empty(); }

}  // namespace wctmon::cli
