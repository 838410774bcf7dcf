#include "support/programs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

namespace wctmon::testing {

std::unique_ptr<FixtureProcess> builtProgram(const std::string& file, const std::string& source,
                                             const std::string& compile, const std::string& run) {
  static TempDir dir("wctmon-real");
  std::ofstream(dir / file) << source;
  const auto result = runCommand({"bash", "-c", "cd " + dir.path().string() + " && " + compile});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return std::make_unique<FixtureProcess>(
      std::vector<std::string>{"bash", "-c", "cd " + dir.path().string() + " && exec " + run},
      std::chrono::seconds(30));
}

std::unique_ptr<FixtureProcess> goProgram(const std::string& name, const std::string& source,
                                          const std::string& flags) {
  return builtProgram(name + ".go", source,
                      "GOCACHE=$PWD/.gocache GOPATH=$PWD/.gopath go build " + flags + " -o " +
                          name + " " + name + ".go",
                      "./" + name);
}

std::string postgresScript(const TempDir& dir, const std::string& settings,
                           const std::string& initdb_options) {
  // The postgres user makes the cluster in the directory and its socket beside it.
  (void)::chown(dir.path().c_str(), 0, 0);
  (void)::chmod(dir.path().c_str(), 0777);
  const auto d = dir.path().string();
  return "set -e; bin=/usr/lib/postgresql/15/bin; as() { runuser -u postgres -- \"$@\"; }\n"
         "as $bin/initdb -D " +
         d + "/data " + initdb_options + " >/dev/null\n" + "as $bin/postgres -D " + d +
         "/data -k " + d + " -c listen_addresses= " + settings + " >" + d +
         "/server.log 2>&1 &\n"
         "q() { psql -h " +
         d +
         " -U postgres -qAt postgres \"$@\"; }\n"
         "for i in $(seq 100); do q -c 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done\n"
         "waiters() { for i in $(seq 100); do\n"
         "  w=$(q -c \"select pid from pg_stat_activity where wait_event_type = 'Lock' order by "
         "pid\")\n"
         "  [ $(echo \"$w\" | grep -c .) -ge $1 ] && { echo $w; return; }; sleep 0.1; done; }\n";
}

std::string postgresDeadlockScript(const TempDir& dir, const std::string& settings) {
  return postgresScript(dir, "-c deadlock_timeout=10min " + settings) +
         "q -c 'create table t(id int primary key, v int); insert into t values (1, 0), (2, 0)'\n"
         "for k in 1 2; do (echo \"begin; update t set v = $k where id = $k;\"; sleep 0.5;\n"
         "  echo \"update t set v = $k where id = $((3 - k));\"; sleep 600) | q & done\n"
         "set -- $(waiters 2)\n"
         "echo \"{\\\"pid\\\":$$,\\\"threads\\\":{},\\\"processes\\\":"
         "{\\\"first\\\":$1,\\\"second\\\":$2}}\"\n"
         "wait";
}

}  // namespace wctmon::testing
