#include "cli/help_formatter.h"

#include <sstream>

namespace wctmon::cli {

void HelpFormatter::setExamples(const CLI::App* command, std::vector<Example> examples) {
  examples_[command] = std::move(examples);
}

const std::vector<Example>& HelpFormatter::examplesOf(const CLI::App* command) const {
  static const std::vector<Example> kNone;
  const auto found = examples_.find(command);
  return found == examples_.end() ? kNone : found->second;
}

std::vector<const CLI::Option*> inheritedOptions(const CLI::App& command) {
  std::vector<const CLI::Option*> out;
  for (const CLI::App* at = &command; at->get_fallthrough() && at->get_parent() != nullptr;) {
    at = at->get_parent();
    for (const CLI::Option* option : at->get_options()) {
      if (option == at->get_help_ptr() || option == at->get_help_all_ptr()) continue;
      if (option->get_group().empty() || !option->nonpositional()) continue;
      out.push_back(option);
    }
  }
  return out;
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name,
                                     CLI::AppFormatMode mode) const {
  if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
  std::ostringstream out;
  out << make_description(app);
  out << make_usage(app, name);
  out << make_positionals(app);
  out << make_groups(app, mode);
  // The subcommands that --help lists, hidden ones left out.
  std::vector<const CLI::App*> listed;
  for (const CLI::App* sub : app->get_subcommands({})) {
    if (!sub->get_name().empty() && !isHidden(*sub)) listed.push_back(sub);
  }
  if (!listed.empty()) {
    out << "\n" << get_label("Subcommands") << ":\n";
    for (const CLI::App* sub : listed) out << make_subcommand(sub);
  }
  // A command's help is whole: what it takes from above ("-o json" after the verb) too.
  if (const auto inherited = inheritedOptions(*app); !inherited.empty()) {
    out << make_group("Global options (before or after the command)", false, inherited);
  }
  if (const auto& examples = examplesOf(app); !examples.empty()) {
    out << "\nExamples:\n";
    for (const auto& e : examples) out << "  " << e.command << "\n      " << e.what << "\n";
  }
  const std::string footer = make_footer(app);
  out << (footer.empty() ? "" : "\n" + footer);
  return out.str();
}

std::shared_ptr<HelpFormatter> useHelpFormatter(CLI::App& app) {
  auto formatter = std::make_shared<HelpFormatter>();
  app.formatter(formatter);
  return formatter;
}

}  // namespace wctmon::cli
