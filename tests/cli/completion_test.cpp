#include "cli/completion.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/toy_app.h"
#include "support/temp_dir.h"

namespace wctmon::cli {
namespace {

/// What `command` (run by sh) writes, and whether it exits 0.
std::pair<std::string, bool> run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", false};
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  return {out, WIFEXITED(status) && WEXITSTATUS(status) == 0};
}

bool have(const std::string& program) {
  return run("command -v " + program + " >/dev/null 2>&1").second;
}

/// The script for `shell`, saved in `dir`.
std::filesystem::path saved(const testing::TempDir& dir, Shell shell, const std::string& name) {
  ToyApp toy;
  const auto path = dir / name;
  std::ofstream(path) << completionScript(toy.app, "tool", shell);
  return path;
}

/// What bash completes for `words` (the last one being completed), one a line.
std::string bashCompletes(const std::filesystem::path& script,
                          const std::vector<std::string>& words) {
  const auto driver = script.parent_path() / "driver.bash";
  {
    std::ofstream out(driver);
    out << "source '" << script.string() << "'\nCOMP_WORDS=(";
    for (const auto& w : words) out << " '" << w << "'";
    out << ")\nCOMP_CWORD=" << words.size() - 1
        << "\n_tool\n[[ ${#COMPREPLY[@]} -eq 0 ]] || printf '%s\\n' \"${COMPREPLY[@]}\"\n";
  }
  const auto [out, ok] = run("bash " + driver.string() + " 2>&1");
  EXPECT_TRUE(ok) << out;
  return out;
}

TEST(Completion, BashCompletesCommandsOptionsAndTheirWords) {
  testing::TempDir dir("completion");
  const auto script = saved(dir, Shell::kBash, "tool.bash");
  EXPECT_EQ(bashCompletes(script, {"tool", "j"}), "jobs\n");
  EXPECT_EQ(bashCompletes(script, {"tool", ""}), "jobs\ncompletion\n");
  EXPECT_EQ(bashCompletes(script, {"tool", "jobs", "l"}), "list\n");
  EXPECT_EQ(bashCompletes(script, {"tool", "jobs", "list", "--st"}), "--state\n");
  EXPECT_EQ(bashCompletes(script, {"tool", "jobs", "list", "--state", ""}), "open\ndone\n");
  EXPECT_EQ(bashCompletes(script, {"tool", "jobs", "list", "--state", "o"}), "open\n");
  // The global options after the command, and their words.
  EXPECT_EQ(bashCompletes(script, {"tool", "jobs", "list", "--ou"}), "--output\n");
  EXPECT_EQ(bashCompletes(script, {"tool", "jobs", "list", "-o", "j"}), "json\n");
  EXPECT_EQ(bashCompletes(script, {"tool", "-o", "json", "jobs", "list", "--c"}), "--count\n");
  // An option's value is not a command: "jobs" after --token-file is a file name.
  EXPECT_EQ(bashCompletes(script, {"tool", "--token-file", "jobs", "l"}), "");
  // A flag takes no value: the word after it is a command or an option again.
  EXPECT_EQ(bashCompletes(script, {"tool", "jobs", "list", "--verbose", "--s"}), "--state\n");
  // A positional's words; no hidden command.
  EXPECT_EQ(bashCompletes(script, {"tool", "completion", ""}), "bash\nzsh\n");
  EXPECT_EQ(bashCompletes(script, {"tool", "__"}), "");
  // A file name where the value is a FILE.
  std::ofstream(dir / "token-x") << "t";
  EXPECT_EQ(bashCompletes(script, {"tool", "--token-file", (dir / "token-").string()}),
            (dir / "token-x").string() + "\n");
}

TEST(Completion, ZshFishAndPowerShellScriptsHoldTheSameTables) {
  ToyApp toy;
  const auto zsh = completionScript(toy.app, "tool", Shell::kZsh);
  EXPECT_EQ(zsh.rfind("#compdef tool\n", 0), 0U);
  EXPECT_NE(zsh.find("'jobs') echo 'list' ;;"), std::string::npos) << zsh;
  EXPECT_NE(zsh.find("'jobs list|--state') echo 'choices open done' ;;"), std::string::npos);
  EXPECT_NE(zsh.find("compdef _tool tool"), std::string::npos);
  const auto fish = completionScript(toy.app, "tool", Shell::kFish);
  EXPECT_NE(fish.find("complete -c tool -n '__fish_use_subcommand' -a 'jobs' -d 'The jobs'"),
            std::string::npos)
      << fish;
  EXPECT_NE(fish.find("complete -c tool -n '__fish_seen_subcommand_from jobs; and "
                      "__fish_seen_subcommand_from list' -l state -x -a 'open done'"),
            std::string::npos)
      << fish;
  EXPECT_NE(fish.find("-l verbose -d 'Say more, with a \\\\ and a - and a \\'quote\\''"),
            std::string::npos)
      << fish;
  EXPECT_NE(fish.find("complete -c tool -l token-file -r -F"), std::string::npos) << fish;
  const auto powershell = completionScript(toy.app, "tool", Shell::kPowerShell);
  EXPECT_NE(powershell.find("Register-ArgumentCompleter -Native -CommandName 'tool'"),
            std::string::npos);
  EXPECT_NE(powershell.find("'jobs list|--state' = @('open', 'done')"), std::string::npos)
      << powershell;
  EXPECT_NE(powershell.find("'' = @('jobs', 'completion')"), std::string::npos) << powershell;
  for (const auto& script : {zsh, fish, powershell}) {
    EXPECT_EQ(script.find("__man"), std::string::npos);
  }
}

TEST(Completion, ShellsByName) {
  EXPECT_EQ(shellNamed("bash"), Shell::kBash);
  EXPECT_EQ(shellNamed("powershell"), Shell::kPowerShell);
  EXPECT_FALSE(shellNamed("csh").has_value());
  EXPECT_EQ(shellNames(), (std::vector<std::string>{"bash", "zsh", "fish", "powershell"}));
}

/// What zsh completes for `words` (the last one being completed), one a line: the script's
/// function run with compadd and _files standing in for zsh's completion system (compadd filters
/// by the word itself, so the stand-in prints every candidate it is given).
std::string zshCompletes(const std::filesystem::path& script,
                         const std::vector<std::string>& words) {
  const auto driver = script.parent_path() / "driver.zsh";
  {
    std::ofstream out(driver);
    out << "compdef() { :; }\ncompadd() { [[ $1 == -- ]] && shift; print -l -- \"$@\"; }\n"
        << "_files() { print '(files)'; }\nsource '" << script.string() << "'\nwords=(";
    for (const auto& w : words) out << " '" << w << "'";
    out << ")\nCURRENT=" << words.size() << "\n_tool\n";
  }
  const auto [out, ok] = run("zsh " + driver.string() + " 2>&1");
  EXPECT_TRUE(ok) << out;
  return out;
}

TEST(Completion, ZshCompletesCommandsOptionsAndTheirWords) {
  if (!have("zsh")) GTEST_SKIP() << "no zsh here (scripts/bootstrap.sh installs it)";
  testing::TempDir dir("completion");
  const auto script = saved(dir, Shell::kZsh, "_tool");
  EXPECT_TRUE(run("zsh -n " + script.string()).second);
  EXPECT_EQ(zshCompletes(script, {"tool", "j"}), "jobs\ncompletion\n");
  EXPECT_EQ(zshCompletes(script, {"tool", "jobs", "l"}), "list\n");
  EXPECT_EQ(zshCompletes(script, {"tool", "jobs", "list", "--state", ""}), "open\ndone\n");
  EXPECT_EQ(zshCompletes(script, {"tool", "jobs", "list", "-o", ""}), "table\njson\n");
  EXPECT_EQ(zshCompletes(script, {"tool", "--token-file", ""}), "(files)\n");
  EXPECT_EQ(zshCompletes(script, {"tool", "completion", ""}), "bash\nzsh\n");
  const auto options = zshCompletes(script, {"tool", "jobs", "list", "--verbose", "--"});
  EXPECT_NE(options.find("--state\n"), std::string::npos) << options;
  EXPECT_NE(options.find("--output\n"), std::string::npos) << options;
}

/// What fish completes for `line` (complete -C), one candidate a line without its description.
std::string fishCompletes(const std::filesystem::path& script, const std::string& line) {
  const auto [out, ok] =
      run("fish -c \"source '" + script.string() + "'; complete -C'" + line + "'\" 2>&1 | cut -f1");
  EXPECT_TRUE(ok) << out;
  return out;
}

TEST(Completion, FishCompletesCommandsOptionsAndTheirWords) {
  if (!have("fish")) GTEST_SKIP() << "no fish here (scripts/bootstrap.sh installs it)";
  testing::TempDir dir("completion");
  const auto script = saved(dir, Shell::kFish, "tool.fish");
  EXPECT_TRUE(run("fish --no-execute " + script.string()).second);
  EXPECT_EQ(fishCompletes(script, "tool j"), "jobs\n");
  EXPECT_EQ(fishCompletes(script, "tool jobs "), "list\n");
  EXPECT_EQ(fishCompletes(script, "tool jobs list --st"), "--state\n");
  EXPECT_EQ(fishCompletes(script, "tool jobs list --state "), "done\nopen\n");
  EXPECT_EQ(fishCompletes(script, "tool jobs list -o j"), "json\n");
  EXPECT_EQ(fishCompletes(script, "tool completion "), "bash\nzsh\n");
}

}  // namespace
}  // namespace wctmon::cli
