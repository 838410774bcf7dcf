// wctctl's verbs, options and examples: one table for --help, the man page and completion.
#include "client/command_line.h"

#include <limits>
#include <sstream>

#include "cli/cli_args.h"
#include "cli/completion.h"
#include "client/defaults.h"
#include "client/output.h"
#include "client/time_args.h"
#include "model/incident.h"

namespace wctmon::client {
namespace {

namespace cli = wctmon::cli;

/// `text` as lines of at most `width` columns, broken between words.
std::string wrapped(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t line = 0;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (line > 0 && line + 1 + word.size() > width) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
  }
  return out;
}

/// Where wctctl looks for the server and the token on this platform, in a sentence.
std::string whereText() {
  const auto& d = defaults();
  std::string where = "Server: --server, else $WCTMON_SERVER, else ";
  if (!d.socket.empty()) where += "unix:" + d.socket.string() + " when it exists, else ";
  return where + d.tcp + ". Token: --token-file, else $WCTMON_TOKEN_FILE, else the admin token " +
         "of the service on that server when readable, else its reader token: the files it " +
         "names in SOCKET.token-files beside its socket, or for the default server " +
         (d.state_dir / kAdminTokenName).string() + " and " +
         (d.state_dir / kReaderTokenName).string() +
         "; another server gets no token of the defaults (the reader token allows status, "
         "targets list, ps, incidents, incident, watch, health; the admin token everything).";
}

/// What the exit statuses mean, for --help.
constexpr const char* kExitText =
    R"(Exit status: 0 ok; 1 error (the server's reason is printed); 2 usage; 3 analyze found a deadlock;
4 server unavailable (nothing answers, or not within --timeout); 5 unauthenticated or permission
denied.)";

/// The help's footer.
std::string footer() { return wrapped(whereText(), 100) + "\n\n" + kExitText; }

/// Accepts what `parse` accepts; the error says what was expected.
template <typename Parse>
CLI::Validator accepting(const std::string& expected, Parse parse) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        return parse(text) ? std::string()
                           : "expected " + expected + "; got " + cli::givenText(text);
      },
      "", cli::kExpectedValidator);
}

/// -o: one of outputWords(), "jsonpath=" with its template. Named as oneOf's validators are, so
/// that completion offers the words.
CLI::Validator outputFormat() {
  std::string name(cli::kChoicesValidator);
  std::vector<std::string> words = outputWords();
  for (std::size_t i = 0; i < words.size(); ++i) name += (i == 0 ? "" : "|") + words[i];
  return CLI::Validator(
      [words](std::string& text) -> std::string {
        std::string why;
        if (parseOutput(text, why)) return {};
        if (why.rfind("jsonpath: ", 0) == 0) return why;
        return why + "; got " + cli::givenText(text) + cli::didYouMean(text, words);
      },
      "", name);
}

void addGlobalOptions(CommandLine& c) {
  auto& app = c.app;
  app.add_option("-o,--output", c.output,
                 "table (fits the terminal; nothing cut when piped), wide (more columns, nothing "
                 "cut), json, yaml, name (incident/42), jsonpath=TEMPLATE ({.incidents[*].id}) "
                 "or protojson (the API's exact proto3 JSON)")
      ->type_name("FORMAT")
      ->check(outputFormat());
  app.add_flag("--no-headers", c.no_headers, "Tables without their header line");
  app.add_option("-s,--server", c.connection.server,
                 "unix:/path, host:port or [::1]:port (default: the local socket, else loopback)")
      ->type_name("ADDRESS")
      ->envname("WCTMON_SERVER");
  app.add_option("--token-file", c.connection.token_file,
                 "Bearer token file (default: the admin token of the service on --server when "
                 "readable, else its reader's)")
      ->type_name("FILE")
      ->envname("WCTMON_TOKEN_FILE");
  c.timeout_option =
      app.add_option("--timeout", c.timeout,
                     "Deadline of each call (default 10s, dump 5m; watch has none)")
          ->type_name("DURATION")
          ->check(accepting("a duration such as 10s, 500ms or 2m",
                            [](const std::string& t) { return parseDuration(t).has_value(); }));
  app.add_flag("--tls", c.connection.tls, "TLS to a TCP server");
  app.add_option("--ca-file", c.connection.ca_file, "CA certificates to verify the server (PEM)")
      ->type_name("FILE");
  app.add_option("--cert-file", c.connection.cert_file, "Client certificate for mutual TLS (PEM)")
      ->type_name("FILE");
  app.add_option("--key-file", c.connection.key_file, "Client private key for mutual TLS (PEM)")
      ->type_name("FILE");
  app.add_option("--tls-server-name", c.connection.tls_server_name,
                 "Name to verify in the server's certificate (default: the host of --server)")
      ->type_name("NAME");
}

void addTargets(CommandLine& c) {
  c.targets = c.app.add_subcommand("targets", "The targets: which processes are watched");
  c.targets->require_subcommand(1);
  c.targets_list = c.targets->add_subcommand("list", "List the targets");
  auto& t = c.target;
  auto* add = c.targets_add =
      c.targets->add_subcommand("add", "Add a runtime target (or replace the one of that name)");
  auto* exe = add->add_option("--exe", t.exe, "Executable name or glob")->type_name("NAME");
  auto* cmdline = add->add_option("--cmdline", t.cmdline,
                                  "Regular expression (RE2) searched in the command line")
                      ->type_name("REGEX");
  auto* pid = add->add_option("--pid", t.pid, "One process")
                  ->type_name("PID")
                  ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));
  exe->excludes(cmdline)->excludes(pid);
  cmdline->excludes(pid);
  add->add_option("--name", t.name, "Its name (default: the selector)")->type_name("NAME");
  add->add_option("--interval-ms", t.interval_ms, "Sampling interval")
      ->type_name("MS")
      ->check(cli::wholeNumber("milliseconds", 10, std::numeric_limits<std::int32_t>::max()));
  add->add_option("--hang-threshold-ms", t.hang_threshold_ms,
                  "How long a thread waits before it is a hang")
      ->type_name("MS")
      ->check(cli::wholeNumber("milliseconds", 100, std::numeric_limits<std::int32_t>::max()));
  auto* capture = add->add_flag(
      "--capture", t.capture,
      "Capture registers and stacks on deadlock (default: the configuration's capture.enabled)");
  add->add_flag("--no-capture", t.no_capture, "Capture nothing on deadlock")->excludes(capture);
  auto* out_of_proc =
      add->add_flag("--out-of-proc", t.out_of_proc, "Follow chains into other processes");
  add->add_option("--wct", t.wct,
                  "Windows, with --out-of-proc: WCT's flags, comma-separated, or none "
                  "(default: com,critical_sections,network_io)")
      ->type_name("FLAGS")
      ->delimiter(',')
      ->check(CLI::IsMember({"com", "critical_sections", "network_io", "none"}))
      ->needs(out_of_proc);
  c.targets_remove = c.targets->add_subcommand("remove", "Remove a runtime target");
  c.targets_remove->add_option("name", c.remove_name, "The target's name")
      ->type_name("NAME")
      ->required();
}

void addProcessVerbs(CommandLine& c) {
  c.ps = c.app.add_subcommand("ps", "The processes being watched");
  auto& a = c.analyze_args;
  c.analyze = c.app.add_subcommand(
      "analyze", "Analyse a process's wait chains now (exit 3 when it is deadlocked)");
  c.analyze->add_option("pid", a.pid, "The process")
      ->type_name("PID")
      ->required()
      ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));
  c.analyze->add_flag("--capture", a.capture, "Capture registers and stacks of deadlocked threads");
  c.analyze->add_flag("--out-of-proc", a.out_of_proc, "Follow chains into other processes");
  c.analyze->add_option("--max-nodes", a.max_nodes, "Most nodes per chain (default 64)")
      ->type_name("N")
      ->check(cli::wholeNumber("a node count", 1, std::numeric_limits<std::uint32_t>::max() / 2));
  c.analyze->add_flag("--brief", a.brief, "Only the chains that lead somewhere");

  c.dump = c.app.add_subcommand(
      "dump", "Write a dump of a process now under the service's state directory (dumps/)");
  c.dump->add_option("pid", c.dump_pid, "The process")
      ->type_name("PID")
      ->required()
      ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));
}

void addIncidentVerbs(CommandLine& c) {
  auto& a = c.incidents_args;
  c.incidents = c.app.add_subcommand("incidents", "Incidents, newest first");
  c.incidents->add_option("--state", a.state, "open, resolved or all (default all)")
      ->type_name("STATE")
      ->check(cli::oneOf({"open", "resolved", "all"}));
  std::vector<std::string> kinds;
  for (const auto kind : kIncidentKinds) kinds.emplace_back(toString(kind));
  kinds.emplace_back("all");
  c.incidents
      ->add_option("--kind", a.kind,
                   "deadlock, hang, unresponsive, busy, stall, service-hung, window-hung or all "
                   "(default all)")
      ->type_name("KIND")
      ->check(cli::oneOf(kinds));
  c.incidents
      ->add_option("--since", c.since,
                   "Opened since: a duration back (1h, 30m) or a time (2026-11-23T10:00:00Z)")
      ->type_name("WHEN")
      ->check(accepting("a duration back such as 1h or 30m, or an RFC 3339 time such as "
                        "2026-11-23T10:00:00Z",
                        [](const std::string& t) {
                          return parseSince(t, std::chrono::system_clock::now()).has_value();
                        }));
  c.incidents->add_option("--pid", a.pid, "Of this process")
      ->type_name("PID")
      ->check(cli::wholeNumber("a process id", 1, cli::kMaxPid));
  c.incidents->add_option("--target", a.target, "Of this target")->type_name("NAME");
  c.incidents->add_option("--limit", a.limit, "At most N, newest first (default 100; 0: all)")
      ->type_name("N")
      ->check(cli::wholeNumber("a count", 0, std::numeric_limits<std::int32_t>::max()));

  c.incident = c.app.add_subcommand(
      "incident", "One incident whole: chains as trees, registers and stacks of its threads");
  c.incident->add_option("id", c.incident_id, "The incident's id (wctctl incidents lists them)")
      ->type_name("ID")
      ->required()
      ->check(cli::wholeNumber("an incident id", 1, std::numeric_limits<std::int64_t>::max()));

  c.watch = c.app.add_subcommand(
      "watch", "The open incidents, then each change as it happens, until Ctrl+C");
  c.watch->add_flag("--reconnect", c.watch_args.reconnect,
                    "When the service stops or cannot be reached, connect again (with backoff) "
                    "and go on where the stream ended, instead of exiting");
}

void addServiceVerbs(CommandLine& c) {
  c.reload = c.app.add_subcommand("reload", "Make the service read its configuration again");
  c.health = c.app.add_subcommand("health", "The standard gRPC health check (no token needed)");
  c.health
      ->add_option("--service", c.health_service, "One service's health (default: the server's)")
      ->type_name("NAME");
  c.version = c.app.add_subcommand("version", "wctctl's version, and the server's");
  c.version->add_flag("--client", c.client_only, "Only wctctl's; ask no server");
  c.completion = c.app.add_subcommand(
      "completion", "A completion script for a shell, written from these option tables");
  c.completion->add_option("shell", c.shell, "bash, zsh, fish or powershell")
      ->type_name("SHELL")
      ->required()
      ->check(cli::oneOf(cli::shellNames()));
  c.man = c.app.add_subcommand("__man", "The man page wctctl(1), in roff");
  c.man->group("");
  c.man->add_option("--date", c.man_date, "The date of the release")->type_name("DATE");
}

void addExamples(CommandLine& c) {
  auto& h = *c.help;
  h.setExamples(
      &c.app,
      {{"wctctl status", "what the service is, does and has found"},
       {"wctctl incidents --state open", "the open incidents, newest first"},
       {"wctctl watch --reconnect", "every change as it happens, across restarts of the service"},
       {"wctctl incidents -o jsonpath='{.incidents[*].id}'", "the ids alone, for a script"},
       {"source <(wctctl completion bash)", "completion in this shell"}});
  h.setExamples(c.status,
                {{"wctctl status", "version, uptime, health, wait source, alerts"},
                 {"wctctl status -o jsonpath='{.healthy}'", "true or false, for a check"}});
  h.setExamples(c.targets, {{"wctctl targets list", "what is watched"},
                            {"wctctl targets add --exe nginx", "watch every nginx as well"}});
  h.setExamples(c.targets_list, {{"wctctl targets list -o wide",
                                  "with WCT's flags and the "
                                  "waits ignored"},
                                 {"wctctl targets list -o name", "target/NAME, one a line"}});
  h.setExamples(c.targets_add, {{"wctctl targets add --exe nginx --hang-threshold-ms 5000",
                                 "watch every nginx; a wait of 5 s is a hang"},
                                {"wctctl targets add --name db --pid 4242 --no-capture",
                                 "watch one process, capturing nothing of it"}});
  h.setExamples(c.targets_remove, {{"wctctl targets remove db", "stop watching what db selects"}});
  h.setExamples(c.ps, {{"wctctl ps", "the processes watched, their state and probe"},
                       {"wctctl ps -o wide", "with when each process started"}});
  h.setExamples(c.analyze, {{"wctctl analyze 4242", "its chains now; exit 3 when deadlocked"},
                            {"wctctl analyze 4242 --capture -o yaml",
                             "with the registers and stacks of a deadlock"}});
  h.setExamples(c.dump, {{"wctctl dump 4242", "a core (Linux) or a minidump (Windows) of it now"}});
  h.setExamples(c.incidents,
                {{"wctctl incidents --state open --kind deadlock", "the open deadlocks"},
                 {"wctctl incidents --since 1h -o wide", "the last hour, with times and threads"},
                 {"wctctl incidents --no-headers --limit 5", "five rows, no header line"},
                 {"wctctl incidents -o name --state open", "incident/ID, one a line"}});
  h.setExamples(c.incident, {{"wctctl incident 42", "chains as trees, stacks, registers, dump"},
                             {"wctctl incident 42 -o yaml", "the same as data"}});
  h.setExamples(c.watch, {{"wctctl watch", "until Ctrl+C; ends when the service stops"},
                          {"wctctl watch --reconnect -o json",
                           "one JSON object a line, across restarts of the service"}});
  h.setExamples(c.reload, {{"wctctl reload", "as SIGHUP: what was applied, what needs a restart"}});
  h.setExamples(c.health, {{"wctctl health", "SERVING, or NOT_SERVING (exit 1)"},
                           {"wctctl health --service wctmon.v1.Monitor", "the API's own"}});
  h.setExamples(c.version, {{"wctctl version", "wctctl's and the server's"},
                            {"wctctl version --client", "wctctl's alone, asking no server"}});
  h.setExamples(c.completion,
                {{"source <(wctctl completion bash)", "bash, now; in ~/.bashrc for good"},
                 {"wctctl completion zsh > \"${fpath[1]}/_wctctl\"", "zsh"},
                 {"wctctl completion fish | source", "fish"},
                 {"wctctl completion powershell | Out-String | Invoke-Expression", "PowerShell"}});
}

}  // namespace

std::unique_ptr<CommandLine> makeCommandLine() {
  auto c = std::make_unique<CommandLine>();
  auto& app = c->app;
  // Before the verbs: each takes its parent's formatter when made.
  c->help = cli::useHelpFormatter(app);
  app.set_version_flag("--version", "wctctl " WCTMON_VERSION);
  app.require_subcommand(1);
  // Global options may come after the verb too: "wctctl incidents -o json".
  app.fallthrough();
  app.footer(footer());
  addGlobalOptions(*c);
  c->status = app.add_subcommand("status", "What the service is, does and has found");
  addTargets(*c);
  addProcessVerbs(*c);
  addIncidentVerbs(*c);
  addServiceVerbs(*c);
  addExamples(*c);
  return c;
}

cli::ManPage wctctlManPage(const std::string& date) {
  const auto& d = defaults();
  cli::ManPage page;
  page.name = "wctctl";
  page.section = 1;
  page.summary = "ask and steer a running wctmon service";
  page.source = "wctmon " WCTMON_VERSION;
  page.date = date;
  const std::string socket = d.socket.empty() ? "" : "__unix:" + d.socket.string() + "__";
  page.before = {
      {"DESCRIPTION",
       {"**wctctl** talks to **wctmond**(8) over its gRPC API: what the service is and does, the "
        "processes it watches, the incidents it found, and the changes it is asked to make.",
        "Tables fit the terminal and cut long names and summaries with an ellipsis; piped or "
        "redirected, nothing is cut. Notices about the output (how many incidents were left "
        "out, none found, a reconnection) go to standard error. Times are shown in UTC with "
        "their age (2026-11-27 10:00:01 UTC (3m ago)).",
        "**-o json**, **-o yaml** and **-o jsonpath** show the API's messages with the .proto "
        "field names and enum values as the flags spell them (\"kind\": \"deadlock\"); lists "
        "leave out the empty lists of objects of their items. **-o protojson** is the exact "
        "proto3 JSON mapping (INCIDENT_KIND_DEADLOCK) for API clients. A jsonpath template "
        "takes fields (.status.healthy), elements ([0], [-1], [1:3], [*]), fields at any depth "
        "(..pid), filters ([?(@.kind==\"deadlock\")]), {range ...}{end} and strings "
        "({\"\\n\"}).",
        "Every string from the service may hold bytes a monitored process chose: control "
        "characters, bidirectional overrides and ill-formed UTF-8 are shown visibly, never "
        "written raw to the terminal."}},
  };
  page.after = {
      {"EXIT STATUS",
       {"0\tDone.", "1\tAn error: the service's reason is printed.",
        "2\tUsage: a wrong option or value, named in one line, with the closest word when it "
        "looks like a slip.",
        "3\t**analyze** found a deadlock.",
        "4\tServer unavailable: nothing answers at the address, or not within **--timeout**.",
        "5\tUnauthenticated, or permission denied (the reader token on an admin call)."}},
      {"ENVIRONMENT",
       {"WCTMON_SERVER\tThe server, when **--server** is not given.",
        "WCTMON_TOKEN_FILE\tThe token file, when **--token-file** is not given."}},
      {"FILES",
       {(socket.empty() ? "" : socket + "\t") +
            (socket.empty() ? std::string()
                            : "The service's socket, tried first; beside it "
                              "__SOCKET.token-files__ names the service's token files."),
        "__" + (d.state_dir / kAdminTokenName).string() +
            "__\tThe admin token of the default "
            "service: every call.",
        "__" + (d.state_dir / kReaderTokenName).string() + "__\tIts reader token (" +
            d.token_readers + "): status, targets list, ps, incidents, incident, watch."}},
  };
  // A platform without a socket has no line for it.
  auto& files = page.after.back().paragraphs;
  if (files.front().empty()) files.erase(files.begin());
  page.see_also = {"wctmond(8)", "wctmon(8)"};
  return page;
}

}  // namespace wctmon::client
