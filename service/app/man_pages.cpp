#include "app/man_pages.h"

#include "core/config.h"

namespace wctmon::app {
namespace {

cli::ManPage common(const std::string& name, const std::string& summary, const std::string& date) {
  cli::ManPage page;
  page.name = name;
  page.section = 8;
  page.summary = summary;
  page.source = "wctmon " WCTMON_VERSION;
  page.date = date;
  return page;
}

}  // namespace

cli::ManPage wctmonManPage(const std::string& date) {
  auto page = common("wctmon", "find which threads wait on what, and the deadlocks", date);
  page.before = {
      {"DESCRIPTION",
       {"**wctmon** reads the wait chains of a process's threads: for each thread, what it waits "
        "on (a mutex, a futex, a file lock, a pipe, a child) and who owns it, and the cycles "
        "among them, which are deadlocks. It runs once on a live process or a core file, writes "
        "a dump of a live process with its diagnosis inside, or runs the monitoring service, "
        "**wctmond**(8).",
        "**wctmon** __command__ **--help** prints the options of a command, with examples."}},
  };
  page.after = {
      {"EXIT STATUS",
       {"0\tDone.", "1\tAn error, said in one line on standard error.",
        "2\tUsage: a wrong option or value, named in one line, with the closest word when it "
        "looks like a slip.",
        "3\t**analyze** found a deadlock."}},
  };
  page.see_also = {"wctmond(8)", "wctctl(1)"};
  return page;
}

cli::ManPage wctmondManPage(const std::string& date) {
  auto page = common("wctmond", "the wctmon hang and deadlock monitoring service", date);
  const std::string state = platformDefaults().state_dir.string();
  page.before = {
      {"DESCRIPTION",
       {"**wctmond** watches the processes that its configuration names, samples the wait chains "
        "of their threads (which thread waits on what, owned by whom), and opens an incident "
        "when a thread hangs past its threshold or when threads wait on each other in a cycle "
        "(a deadlock). Each incident is recorded in a store under the state directory, with its "
        "evidence (stacks, registers) and, for deadlocks, a dump that a debugger opens; an alert "
        "goes to the system log and to the sinks the configuration names.",
        "It serves a gRPC API on a Unix socket and on loopback, used by **wctctl**(1), and "
        "Prometheus metrics over HTTP. Under systemd it is started by **wctmon**(8) as **wctmon "
        "run** from the unit __wctmon.service__, which it notifies when it is ready and while "
        "it is healthy (watchdog)."}},
  };
  page.after = {
      {"EXIT STATUS",
       {"0\tStopped as asked.", "1\tIt could not start: the reasons, one a line.",
        "2\tUsage: a wrong option or value."}},
      {"FILES",
       {"__/etc/wctmon/wctmon.json__\tThe configuration (JSON; its schema is "
        "__/usr/share/doc/wctmon/wctmon.schema.json__).",
        "__" + state +
            "__\tThe state directory: the incident store, dumps, the API's token "
            "files (__api-admin.token__, mode 0600, the service's account; "
            "__api-reader.token__, mode 0640, group wctmon).",
        "__/run/wctmon/api.sock__\tThe API's Unix socket (mode 0660, group wctmon); beside it "
        "__api.sock.token-files__ names the token files for **wctctl**(1)."}},
      {"SIGNALS",
       {"SIGHUP\tRead the configuration again; keys that need a restart keep their running "
        "value, and the log says which.",
        "SIGTERM, SIGINT\tStop: release every stopped thread, close the store, remove the "
        "socket."}},
  };
  page.see_also = {"wctmon(8)", "wctctl(1)", "systemd.exec(5)"};
  return page;
}

}  // namespace wctmon::app
