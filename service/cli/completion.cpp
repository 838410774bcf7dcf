#include "cli/completion.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "cli/cli_args.h"
#include "cli/help_formatter.h"

namespace wctmon::cli {
namespace {

/// What an option takes after it.
enum class Takes { kNothing, kAnything, kFile, kChoice };

struct OptionSpec {
  std::vector<std::string> spellings;  // "-o", "--output"
  Takes takes = Takes::kNothing;
  std::vector<std::string> choices;
  std::string description;
};

/// One command of the tree, as a completion script sees it.
struct CommandSpec {
  std::string path;  // "" for the program itself, "targets add"
  std::vector<std::pair<std::string, std::string>> commands;  // name, description
  std::vector<OptionSpec> own;                                // its own options
  /// The path of the command whose options this one inherits (its parent's, when it falls
  /// through to it); nothing when it inherits none.
  std::optional<std::string> inherits;
  std::vector<std::string> positional_choices;
  bool positional_files = false;
};

bool isFile(const CLI::Option& option) {
  const auto& type = option.get_type_name();
  return type == "FILE" || type == "PATH" || type == "DIR";
}

OptionSpec specOf(const CLI::Option& option) {
  OptionSpec spec;
  for (const auto& s : option.get_snames()) spec.spellings.push_back("-" + s);
  for (const auto& l : option.get_lnames()) spec.spellings.push_back("--" + l);
  spec.description = option.get_description();
  // A flag expects no value (CLI11 gives it a type size all the same).
  if (option.get_expected_max() > 0) {
    spec.choices = choicesOf(option);
    spec.takes = !spec.choices.empty() ? Takes::kChoice
                 : isFile(option)      ? Takes::kFile
                                       : Takes::kAnything;
  }
  return spec;
}

void collect(const CLI::App& command, const std::string& path, std::vector<CommandSpec>& out) {
  CommandSpec spec;
  spec.path = path;
  if (command.get_fallthrough() && command.get_parent() != nullptr) {
    const auto space = path.rfind(' ');
    spec.inherits = space == std::string::npos ? "" : path.substr(0, space);
  }
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_group().empty()) continue;
    if (option->nonpositional()) {
      spec.own.push_back(specOf(*option));
    } else {
      const auto choices = choicesOf(*option);
      spec.positional_choices.insert(spec.positional_choices.end(), choices.begin(), choices.end());
      spec.positional_files = spec.positional_files || isFile(*option);
    }
  }
  std::vector<const CLI::App*> children;
  for (const CLI::App* sub : command.get_subcommands({})) {
    if (sub->get_name().empty() || isHidden(*sub)) continue;
    spec.commands.emplace_back(sub->get_name(), sub->get_description());
    children.push_back(sub);
  }
  out.push_back(std::move(spec));
  for (const CLI::App* child : children) {
    collect(*child, path.empty() ? child->get_name() : path + " " + child->get_name(), out);
  }
}

/// Every option `spec` takes: its own, then those it inherits, nearest first.
std::vector<const OptionSpec*> allOptions(const std::vector<CommandSpec>& specs,
                                          const CommandSpec& spec) {
  std::vector<const OptionSpec*> out;
  std::vector<std::string> seen;
  for (const CommandSpec* at = &spec; at != nullptr;) {
    for (const auto& option : at->own) {
      // Each command has its own -h: the one above it is not offered again.
      if (std::find(seen.begin(), seen.end(), option.spellings.front()) != seen.end()) continue;
      seen.insert(seen.end(), option.spellings.begin(), option.spellings.end());
      out.push_back(&option);
    }
    if (!at->inherits) break;
    const auto parent = std::find_if(specs.begin(), specs.end(),
                                     [&](const CommandSpec& s) { return s.path == *at->inherits; });
    at = parent == specs.end() ? nullptr : &*parent;
  }
  return out;
}

std::string joined(const std::vector<std::string>& words, const std::string& separator = " ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

/// `text` in single quotes for a POSIX shell, fish or PowerShell.
std::string quoted(const std::string& text, Shell shell) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\\' && shell == Shell::kFish) {
      out += "\\\\";
    } else if (c != '\'') {
      out += c;
    } else if (shell == Shell::kPowerShell) {
      out += "''";
    } else if (shell == Shell::kFish) {
      out += "\\'";
    } else {
      out += "'\\''";
    }
  }
  return out + "'";
}

/// A function name made of the program's name: "wctctl" -> "__wctctl".
std::string prefixOf(const std::string& program) {
  std::string out = "__";
  for (const char c : program) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::vector<std::string> commandNames(const CommandSpec& spec) {
  std::vector<std::string> out;
  for (const auto& [name, description] : spec.commands) out.push_back(name);
  return out;
}

/// The helpers bash and zsh share (POSIX syntax): the words, options and option values of each
/// command.
std::string shellHelpers(const std::vector<CommandSpec>& specs, const std::string& prefix) {
  std::ostringstream out;
  out << prefix << "_commands() {  # the commands under the command $1 (\"\", \"targets\")\n"
      << "  case $1 in\n";
  for (const auto& spec : specs) {
    if (spec.commands.empty()) continue;
    out << "    " << quoted(spec.path, Shell::kBash) << ") echo "
        << quoted(joined(commandNames(spec)), Shell::kBash) << " ;;\n";
  }
  out << "  esac\n}\n";
  out << prefix << "_positionals() {  # the words its arguments accept; \"files\" for file names\n"
      << "  case $1 in\n";
  for (const auto& spec : specs) {
    if (spec.positional_choices.empty() && !spec.positional_files) continue;
    out << "    " << quoted(spec.path, Shell::kBash) << ") echo "
        << quoted(spec.positional_files ? "files" : joined(spec.positional_choices), Shell::kBash)
        << " ;;\n";
  }
  out << "  esac\n}\n";
  out << prefix << "_options() {  # every option the command $1 takes, those it inherits too\n"
      << "  case $1 in\n";
  for (const auto& spec : specs) {
    std::vector<std::string> spellings;
    for (const auto* option : allOptions(specs, spec)) {
      spellings.insert(spellings.end(), option->spellings.begin(), option->spellings.end());
    }
    out << "    " << quoted(spec.path, Shell::kBash) << ") echo "
        << quoted(joined(spellings), Shell::kBash) << " ;;\n";
  }
  out << "  esac\n}\n";
  out << prefix
      << "_value() {  # what option $2 of the command $1 takes: \"choices WORDS\", \"file\", "
         "\"any\", or nothing\n"
      << "  case \"$1|$2\" in\n";
  for (const auto& spec : specs) {
    for (const auto* option : allOptions(specs, spec)) {
      if (option->takes == Takes::kNothing) continue;
      const std::string value = option->takes == Takes::kChoice
                                    ? "choices " + joined(option->choices)
                                : option->takes == Takes::kFile ? "file"
                                                                : "any";
      std::vector<std::string> patterns;
      for (const auto& s : option->spellings)
        patterns.push_back(quoted(spec.path + "|" + s, Shell::kBash));
      out << "    " << joined(patterns, " | ") << ") echo " << quoted(value, Shell::kBash)
          << " ;;\n";
    }
  }
  out << "  esac\n}\n";
  return out.str();
}

/// The loop bash and zsh share: finds the command being completed in the words before the
/// cursor (`first` to `last`, exclusive), skipping option values ("--output json", "--output=json"
/// split at '=' by bash), and whether the word at the cursor is an option's value.
std::string pathLoop(const std::string& prefix, const std::string& words, const std::string& first,
                     const std::string& last) {
  std::ostringstream out;
  out << "  for ((i = " << first << "; i < " << last << "; i++)); do\n"
      << "    word=${" << words << "[i]}\n"
      << "    if ((skip)); then\n"
      << "      skip=0\n"
      << "      [[ $word == = ]] && skip=1  # \"--output=json\", split at '=' by bash\n"
      << "      continue\n"
      << "    fi\n"
      << "    case $word in\n"
      << "      -*=*) ;;\n"
      << "      -*) if [[ -n $(" << prefix << "_value \"$cmdpath\" \"$word\") ]]; then skip=1; "
      << "opt=$word; fi ;;\n"
      << "      *) case \" $(" << prefix << "_commands \"$cmdpath\") \" in\n"
      << "           *\" $word \"*) cmdpath=${cmdpath:+$cmdpath }$word ;;\n"
      << "         esac ;;\n"
      << "    esac\n"
      << "  done\n";
  return out.str();
}

std::string bashScript(const std::vector<CommandSpec>& specs, const std::string& program) {
  const auto prefix = prefixOf(program);
  std::ostringstream out;
  out << "# bash completion for " << program << ", written from its option tables by `" << program
      << " completion bash`.\n"
      << "# Load it with: source <(" << program << " completion bash)\n"
      << shellHelpers(specs, prefix) << "_" << program << "() {\n"
      << "  local cur=${COMP_WORDS[COMP_CWORD]} cmdpath= word value opt= list i skip=0\n"
      << "  COMPREPLY=()\n"
      << pathLoop(prefix, "COMP_WORDS", "1", "COMP_CWORD") << "  if ((skip)); then\n"
      << "    [[ $cur == = ]] && cur=\n"
      << "    value=$(" << prefix << "_value \"$cmdpath\" \"$opt\")\n"
      << "    case $value in\n"
      << "      choices\\ *) COMPREPLY=($(compgen -W \"${value#choices }\" -- \"$cur\")) ;;\n"
      << "      file) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
      << "    esac\n"
      << "    # \"jsonpath=\" is the start of a value: no space after it.\n"
      << "    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]]; then\n"
      << "      compopt -o nospace 2>/dev/null\n"
      << "    fi\n"
      << "    return 0\n"
      << "  fi\n"
      << "  if [[ $cur == -* ]]; then\n"
      << "    COMPREPLY=($(compgen -W \"$(" << prefix << "_options \"$cmdpath\")\" -- \"$cur\"))\n"
      << "    return 0\n"
      << "  fi\n"
      << "  list=$(" << prefix << "_positionals \"$cmdpath\")\n"
      << "  if [[ $list == files ]]; then\n"
      << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      << "  else\n"
      << "    COMPREPLY=($(compgen -W \"$(" << prefix << "_commands \"$cmdpath\") $list\" -- "
      << "\"$cur\"))\n"
      << "  fi\n"
      << "}\n"
      << "complete -F _" << program << " " << program << "\n";
  return out.str();
}

std::string zshScript(const std::vector<CommandSpec>& specs, const std::string& program) {
  const auto prefix = prefixOf(program);
  std::ostringstream out;
  out << "#compdef " << program << "\n"
      << "# zsh completion for " << program << ", written from its option tables by `" << program
      << " completion zsh`.\n"
      << "# Load it with: source <(" << program << " completion zsh), or save it as _" << program
      << " in a directory of $fpath.\n"
      << shellHelpers(specs, prefix) << "_" << program << "() {\n"
      << "  local cur=${words[CURRENT]} cmdpath= word value opt= list i skip=0\n"
      << pathLoop(prefix, "words", "2", "CURRENT") << "  if ((skip)); then\n"
      << "    value=$(" << prefix << "_value \"$cmdpath\" \"$opt\")\n"
      << "    case $value in\n"
      << "      choices\\ *) list=${value#choices }; compadd -- ${=list} ;;\n"
      << "      file) _files ;;\n"
      << "    esac\n"
      << "    return\n"
      << "  fi\n"
      << "  if [[ $cur == -* ]]; then\n"
      << "    list=$(" << prefix << "_options \"$cmdpath\")\n"
      << "    compadd -- ${=list}\n"
      << "    return\n"
      << "  fi\n"
      << "  list=$(" << prefix << "_positionals \"$cmdpath\")\n"
      << "  if [[ $list == files ]]; then\n"
      << "    _files\n"
      << "  else\n"
      << "    list=\"$(" << prefix << "_commands \"$cmdpath\") $list\"\n"
      << "    compadd -- ${=list}\n"
      << "  fi\n"
      << "}\n"
      << "if [[ ${funcstack[1]} == _" << program << " ]]; then\n"
      << "  _" << program << " \"$@\"\n"
      << "else\n"
      << "  compdef _" << program << " " << program << "\n"
      << "fi\n";
  return out.str();
}

std::string fishScript(const std::vector<CommandSpec>& specs, const std::string& program) {
  std::ostringstream out;
  out << "# fish completion for " << program << ", written from its option tables by `" << program
      << " completion fish`.\n"
      << "# Load it with: " << program << " completion fish | source\n"
      << "complete -c " << program << " -f\n";
  // The condition under which the words of a command apply: its path was typed, and none of its
  // own commands yet.
  const auto condition = [](const CommandSpec& spec) {
    std::vector<std::string> parts;
    std::istringstream words(spec.path);
    for (std::string w; words >> w;) parts.push_back("__fish_seen_subcommand_from " + w);
    if (parts.empty() && !spec.commands.empty()) return std::string("__fish_use_subcommand");
    if (!spec.commands.empty()) {
      parts.push_back("not __fish_seen_subcommand_from " + joined(commandNames(spec)));
    }
    return joined(parts, "; and ");
  };
  for (const auto& spec : specs) {
    const auto when = condition(spec);
    const std::string n = when.empty() ? "" : " -n " + quoted(when, Shell::kFish);
    for (const auto& [name, description] : spec.commands) {
      out << "complete -c " << program << n << " -a " << quoted(name, Shell::kFish) << " -d "
          << quoted(description, Shell::kFish) << "\n";
    }
    if (!spec.positional_choices.empty()) {
      out << "complete -c " << program << n << " -a "
          << quoted(joined(spec.positional_choices), Shell::kFish) << "\n";
    }
    if (spec.positional_files) out << "complete -c " << program << n << " -F\n";
    // Its own options apply once its path is typed; the program's own apply everywhere.
    std::string on_path;
    {
      std::vector<std::string> parts;
      std::istringstream words(spec.path);
      for (std::string w; words >> w;) parts.push_back("__fish_seen_subcommand_from " + w);
      on_path = parts.empty() ? "" : " -n " + quoted(joined(parts, "; and "), Shell::kFish);
    }
    for (const auto& option : spec.own) {
      out << "complete -c " << program << on_path;
      for (const auto& s : option.spellings) {
        out << (s.rfind("--", 0) == 0 ? " -l " + s.substr(2) : " -s " + s.substr(1));
      }
      if (option.takes == Takes::kChoice) {
        out << " -x -a " << quoted(joined(option.choices), Shell::kFish);
      } else if (option.takes == Takes::kFile) {
        out << " -r -F";
      } else if (option.takes == Takes::kAnything) {
        out << " -x";
      }
      out << " -d " << quoted(option.description, Shell::kFish) << "\n";
    }
  }
  return out.str();
}

std::string powerShellScript(const std::vector<CommandSpec>& specs, const std::string& program) {
  const auto list = [](const std::vector<std::string>& words) {
    std::vector<std::string> q;
    for (const auto& w : words) q.push_back(quoted(w, Shell::kPowerShell));
    return "@(" + joined(q, ", ") + ")";
  };
  std::ostringstream out;
  out << "# PowerShell completion for " << program << ", written from its option tables by `"
      << program << " completion powershell`.\n"
      << "# Load it with: " << program << " completion powershell | Out-String | "
      << "Invoke-Expression\n"
      << "Register-ArgumentCompleter -Native -CommandName " << quoted(program, Shell::kPowerShell)
      << " -ScriptBlock {\n"
      << "  param($wordToComplete, $commandAst, $cursorPosition)\n"
      << "  # The commands under each command, the words of its arguments, its options (those it\n"
      << "  # inherits too) and what each option takes: 'choices', 'file', 'any'.\n"
      << "  $commands = @{\n";
  for (const auto& spec : specs) {
    out << "    " << quoted(spec.path, Shell::kPowerShell) << " = " << list(commandNames(spec))
        << "\n";
  }
  out << "  }\n  $positionals = @{\n";
  for (const auto& spec : specs) {
    out << "    " << quoted(spec.path, Shell::kPowerShell) << " = " << list(spec.positional_choices)
        << "\n";
  }
  out << "  }\n  $options = @{\n";
  for (const auto& spec : specs) {
    std::vector<std::string> spellings;
    for (const auto* option : allOptions(specs, spec)) {
      spellings.insert(spellings.end(), option->spellings.begin(), option->spellings.end());
    }
    out << "    " << quoted(spec.path, Shell::kPowerShell) << " = " << list(spellings) << "\n";
  }
  out << "  }\n  $values = @{\n";
  for (const auto& spec : specs) {
    for (const auto* option : allOptions(specs, spec)) {
      if (option->takes == Takes::kNothing) continue;
      const auto value = option->takes == Takes::kChoice ? list(option->choices)
                         : option->takes == Takes::kFile ? std::string("'file'")
                                                         : std::string("'any'");
      for (const auto& s : option->spellings) {
        out << "    " << quoted(spec.path + "|" + s, Shell::kPowerShell) << " = " << value << "\n";
      }
    }
  }
  out << "  }\n"
      << "  $words = @($commandAst.CommandElements | ForEach-Object { $_.ToString() } |\n"
      << "    Where-Object { $_.Length -gt 0 })\n"
      << "  $count = $words.Count\n"
      << "  if ($wordToComplete -ne '') { $count-- }  # the word at the cursor is the last one\n"
      << "  $path = ''; $option = $null\n"
      << "  for ($i = 1; $i -lt $count; $i++) {\n"
      << "    $word = $words[$i]\n"
      << "    if ($option) { $option = $null; continue }\n"
      << "    if ($word.StartsWith('-')) {\n"
      << "      if (-not $word.Contains('=') -and $values.ContainsKey(\"$path|$word\")) "
      << "{ $option = $word }\n"
      << "    } elseif ($commands[$path] -contains $word) {\n"
      << "      $path = if ($path) { \"$path $word\" } else { $word }\n"
      << "    }\n"
      << "  }\n"
      << "  if ($option) {\n"
      << "    $value = $values[\"$path|$option\"]\n"
      << "    if ($value -is [array]) { $candidates = $value } else { return }\n"
      << "  } elseif ($wordToComplete.StartsWith('-')) {\n"
      << "    $candidates = $options[$path]\n"
      << "  } else {\n"
      << "    $candidates = @($commands[$path]) + @($positionals[$path])\n"
      << "  }\n"
      << "  $candidates | Where-Object { $_ -like \"$wordToComplete*\" } | ForEach-Object {\n"
      << "    [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)\n"
      << "  }\n"
      << "}\n";
  return out.str();
}

}  // namespace

std::vector<std::string> shellNames() { return {"bash", "zsh", "fish", "powershell"}; }

std::optional<Shell> shellNamed(std::string_view name) {
  if (name == "bash") return Shell::kBash;
  if (name == "zsh") return Shell::kZsh;
  if (name == "fish") return Shell::kFish;
  if (name == "powershell") return Shell::kPowerShell;
  return std::nullopt;
}

std::string completionScript(const CLI::App& app, const std::string& program, Shell shell) {
  std::vector<CommandSpec> specs;
  collect(app, "", specs);
  switch (shell) {
    case Shell::kBash:
      return bashScript(specs, program);
    case Shell::kZsh:
      return zshScript(specs, program);
    case Shell::kFish:
      return fishScript(specs, program);
    case Shell::kPowerShell:
      return powerShellScript(specs, program);
  }
  return {};
}

}  // namespace wctmon::cli
