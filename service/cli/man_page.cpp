#include "cli/man_page.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <sstream>

namespace wctmon::cli {
namespace {

/// The code point of the UTF-8 sequence at `text[at]`, and its length; U+FFFD for a broken one.
std::pair<std::uint32_t, std::size_t> decode(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const unsigned char lead = byte(0);
  const std::size_t length = lead < 0xc0 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
  if (lead < 0x80) return {lead, 1};
  if (at + length > text.size() || lead < 0xc0) return {0xfffd, 1};
  std::uint32_t code = lead & (0x7f >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xc0) != 0x80) return {0xfffd, 1};
    code = (code << 6) | (byte(k) & 0x3f);
  }
  return {code, length};
}

/// Escapes one run of text without marks.
std::string escaped(const std::string& text) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    const auto [code, length] = decode(text, at);
    at += length;
    if (code == '\\') {
      out += "\\e";
    } else if (code == '-') {
      out += "\\-";  // a minus sign, as options are typed, not a hyphen
    } else if (code == '\n' || code == '\t') {
      out += ' ';
    } else if (code >= 0x80) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "\\[u%04X]", code);
      out += buf;
    } else if (code >= 0x20 && code != 0x7f) {
      out += static_cast<char>(code);
    }
  }
  return out;
}

/// "\fBwctctl incidents\fR".
std::string bold(const std::string& text) { return "\\fB" + escaped(text) + "\\fR"; }
std::string italic(const std::string& text) { return "\\fI" + escaped(text) + "\\fR"; }

/// A line of roff text that starts with no control character.
std::string textLine(const std::string& roff) {
  return (!roff.empty() && (roff[0] == '.' || roff[0] == '\'')) ? "\\&" + roff : roff;
}

std::string optionName(const CLI::Option& option) {
  std::string out;
  for (const auto& s : option.get_snames()) out += (out.empty() ? "" : ", ") + bold("-" + s);
  for (const auto& l : option.get_lnames()) out += (out.empty() ? "" : ", ") + bold("--" + l);
  if (!option.nonpositional()) return italic(option.get_type_name());
  if (option.get_expected_max() > 0 && !option.get_type_name().empty()) {
    out += " " + italic(option.get_type_name());
  }
  return out;
}

void writeOption(std::ostringstream& out, const CLI::Option& option) {
  out << ".TP\n" << textLine(optionName(option)) << "\n";
  std::string text = option.get_description();
  if (!option.get_envname().empty()) text += "; also $" + option.get_envname();
  out << textLine(roffText(text.empty() ? "." : text)) << "\n";
}

bool listed(const CLI::Option* option) { return !option->get_group().empty(); }

/// "incidents", "targets add": the commands from the top to `command`.
std::string pathOf(const CLI::App& command) {
  std::string path;
  for (const CLI::App* at = &command; at->get_parent() != nullptr; at = at->get_parent()) {
    path = at->get_name() + (path.empty() ? "" : " " + path);
  }
  return path;
}

std::string positionalsOf(const CLI::App& command) {
  std::string out;
  for (const CLI::Option* option : command.get_options()) {
    if (option->nonpositional() || !listed(option)) continue;
    const auto name = italic(option->get_type_name());
    out += " " + (option->get_required() ? name : "[" + name + "]");
  }
  return out;
}

std::vector<const CLI::App*> visibleCommands(const CLI::App& parent) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* sub : parent.get_subcommands({})) {
    if (!sub->get_name().empty() && !isHidden(*sub)) out.push_back(sub);
  }
  return out;
}

bool hasOwnOptions(const CLI::App& command) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->nonpositional() && listed(option) && option != command.get_help_ptr()) return true;
  }
  return false;
}

void writeSynopsis(std::ostringstream& out, const CLI::App& app, const std::string& name) {
  bool first = true;
  const auto line = [&](const std::string& text) {
    if (!first) out << ".br\n";
    out << textLine(text) << "\n";
    first = false;
  };
  const bool needs_command = app.get_require_subcommand_min() > 0;
  if (!needs_command || visibleCommands(app).empty()) {
    line(bold(name) + " [" + italic("options") + "]" + positionalsOf(app));
  } else {
    line(bold(name) + " [" + italic("options") + "] " + italic("command") + " [" +
         italic("arguments") + "]");
  }
  const auto walk = [&](const auto& self, const CLI::App& command) -> void {
    const auto children = visibleCommands(command);
    if (children.empty() || command.get_require_subcommand_min() == 0) {
      if (&command != &app) {
        line(bold(name + " " + pathOf(command)) +
             (hasOwnOptions(command) ? " [" + italic("options") + "]" : "") +
             positionalsOf(command));
      }
    }
    for (const CLI::App* child : children) self(self, *child);
  };
  walk(walk, app);
}

void writeExamples(std::ostringstream& out, const std::vector<Example>& examples) {
  for (const auto& e : examples) {
    out << ".TP\n" << textLine(bold(e.command)) << "\n" << textLine(roffText(e.what)) << "\n";
  }
}

void writeCommands(std::ostringstream& out, const CLI::App& parent, const HelpFormatter& help) {
  for (const CLI::App* command : visibleCommands(parent)) {
    out << ".TP\n" << textLine(bold(pathOf(*command)) + positionalsOf(*command)) << "\n";
    out << textLine(roffText(command->get_description())) << "\n";
    std::vector<const CLI::Option*> options;
    for (const CLI::Option* option : command->get_options()) {
      if (listed(option) && option != command->get_help_ptr() &&
          option != command->get_help_all_ptr()) {
        options.push_back(option);
      }
    }
    const auto& examples = help.examplesOf(command);
    if (!options.empty() || !examples.empty()) {
      out << ".RS\n";
      for (const CLI::Option* option : options) writeOption(out, *option);
      if (!examples.empty()) {
        out << ".PP\nExamples:\n";
        writeExamples(out, examples);
      }
      out << ".RE\n";
    }
    writeCommands(out, *command, help);
  }
}

void writeSection(std::ostringstream& out, const ManSection& section) {
  out << ".SH " << section.title << "\n";
  bool first = true;
  for (const auto& paragraph : section.paragraphs) {
    const auto tab = paragraph.find('\t');
    if (tab != std::string::npos) {
      out << ".TP\n"
          << textLine(roffText(paragraph.substr(0, tab))) << "\n"
          << textLine(roffText(paragraph.substr(tab + 1))) << "\n";
    } else {
      if (!first) out << ".PP\n";
      out << textLine(roffText(paragraph)) << "\n";
    }
    first = false;
  }
}

std::string upper(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::string roffText(const std::string& text) {
  std::string out;
  bool in_bold = false;
  bool in_italic = false;
  std::string run;
  const auto flush = [&] {
    out += escaped(run);
    run.clear();
  };
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (text.compare(at, 2, "**") == 0) {
      flush();
      out += in_bold ? "\\fR" : "\\fB";
      in_bold = !in_bold;
      ++at;
    } else if (text.compare(at, 2, "__") == 0) {
      flush();
      out += in_italic ? "\\fR" : "\\fI";
      in_italic = !in_italic;
      ++at;
    } else {
      run += text[at];
    }
  }
  flush();
  if (in_bold || in_italic) out += "\\fR";
  return out;
}

std::string manPage(const CLI::App& app, const HelpFormatter& help, const ManPage& page) {
  std::ostringstream out;
  out << ".TH " << upper(page.name) << " " << page.section << " \"" << page.date << "\" \""
      << escaped(page.source) << "\" \""
      << (page.section == 8 ? "System Administration" : "User Commands") << "\"\n";
  // Generated from tables: no hyphenation of option names, lines left-aligned.
  out << ".nh\n.ad l\n";
  out << ".SH NAME\n" << escaped(page.name) << " \\- " << escaped(page.summary) << "\n";
  out << ".SH SYNOPSIS\n";
  writeSynopsis(out, app, page.name);
  for (const auto& section : page.before) writeSection(out, section);
  if (!visibleCommands(app).empty()) {
    out << ".SH COMMANDS\n";
    writeCommands(out, app, help);
  }
  out << ".SH OPTIONS\n";
  if (!visibleCommands(app).empty() && app.get_fallthrough()) {
    out << "Before or after the command.\n";
  }
  for (const CLI::Option* option : app.get_options()) {
    if (listed(option)) writeOption(out, *option);
  }
  for (const auto& section : page.after) writeSection(out, section);
  if (const auto& examples = help.examplesOf(&app); !examples.empty()) {
    out << ".SH EXAMPLES\n";
    writeExamples(out, examples);
  }
  if (!page.see_also.empty()) {
    out << ".SH SEE ALSO\n";
    for (std::size_t i = 0; i < page.see_also.size(); ++i) {
      const auto& ref = page.see_also[i];
      const auto paren = ref.find('(');
      out << ".BR " << escaped(ref.substr(0, paren)) << " " << ref.substr(paren)
          << (i + 1 < page.see_also.size() ? "," : "") << "\n";
    }
  }
  return out.str();
}

}  // namespace wctmon::cli
