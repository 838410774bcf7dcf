#pragma once

// Man pages written from the same CLI11 tables as --help: the synopsis, every command with its
// options and examples, the options; the prose around them (what the program is, its files, its
// exit status) comes with the page.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/help_formatter.h"

namespace wctmon::cli {

/// A section of prose. Each paragraph is text with `**bold**` and `__italic__` marks; a
/// paragraph "TERM\tTEXT" is a tagged one (TERM above its indented TEXT).
struct ManSection {
  std::string title;
  std::vector<std::string> paragraphs;
};

/// What a man page holds beyond the option tables.
struct ManPage {
  /// "wctctl"; the page's name and the program's.
  std::string name;
  /// 1 (user commands) or 8 (system administration).
  int section = 1;
  /// The NAME line after the dash: "ask and steer a running wctmon service".
  std::string summary;
  /// "wctmon 0.1.0".
  std::string source;
  /// "2026-11-27": the date of the release, so that every build writes the same page.
  std::string date;
  /// Before COMMANDS and OPTIONS: DESCRIPTION, usually.
  std::vector<ManSection> before;
  /// After them: EXIT STATUS, ENVIRONMENT, FILES, SIGNALS.
  std::vector<ManSection> after;
  /// Other pages: "wctmond(8)".
  std::vector<std::string> see_also;
};

/// The page in roff (man(7) macros): NAME, SYNOPSIS (one line per command), `page.before`,
/// COMMANDS (each with its options and examples), OPTIONS, `page.after`, EXAMPLES (those of
/// the program itself), SEE ALSO. Hidden commands are left out.
[[nodiscard]] std::string manPage(const CLI::App& app, const HelpFormatter& help,
                                  const ManPage& page);

/// `text` for roff: backslashes, dashes and characters outside ASCII escaped, `**bold**` and
/// `__italic__` as fonts; a line never begins with a control character.
[[nodiscard]] std::string roffText(const std::string& text);

}  // namespace wctmon::cli
