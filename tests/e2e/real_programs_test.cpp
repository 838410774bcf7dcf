// `wctmon analyze` on programs written outside this repository (Python, flock(1), cat), the way
// a new user would run it: verdicts, exit codes and both outputs agree, and evidence capture
// changes nothing the programs do.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/api_service.h"
#include "support/programs.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using testing::CommandResult;
using testing::FixtureProcess;
using testing::runCommand;
using testing::wctmonPath;
using namespace std::chrono_literals;

/// Runs a Python program that prints its report line (JSON) once it is in place: with the
/// first python3 on PATH, or with `interpreter`.
std::unique_ptr<FixtureProcess> python(const std::string& code,
                                       const std::string& interpreter = "python3") {
  return std::make_unique<FixtureProcess>(std::vector<std::string>{interpreter, "-c", code}, 20s);
}

/// Debian's CPython 3.11, whose interpreter state wctmon reads.
constexpr const char* kDebianPython = "/usr/bin/python3.11";

/// Runs a shell script that prints its report line the same way.
std::unique_ptr<FixtureProcess> shell(const std::string& script) {
  return std::make_unique<FixtureProcess>(std::vector<std::string>{"bash", "-c", script}, 20s);
}

struct Analysis {
  int exit_code = -1;  // of the JSON run
  int text_exit_code = -1;
  nlohmann::json json;
  std::string text;
  std::string err;
};

/// `wctmon analyze --pid PID [extra]` twice, as JSON and as text.
Analysis analyze(int pid, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{wctmonPath(), "analyze", "--pid", std::to_string(pid)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto json_argv = argv;
  json_argv.push_back("--json");
  const CommandResult j = runCommand(json_argv);
  const CommandResult t = runCommand(argv);
  Analysis out;
  out.exit_code = j.exit_code;
  out.text_exit_code = t.exit_code;
  out.json = nlohmann::json::parse(j.out.empty() ? "{}" : j.out);
  out.text = t.out;
  out.err = j.err;
  return out;
}

/// Analyses until `done` holds (programs settle at their own pace), at most a few seconds.
Analysis analyzeUntil(int pid, const std::function<bool(const Analysis&)>& done,
                      std::vector<std::string> extra = {}) {
  Analysis a;
  for (int i = 0; i < 30; ++i) {
    a = analyze(pid, extra);
    if (done(a)) return a;
    std::this_thread::sleep_for(200ms);
  }
  return a;
}

/// Both runs found the deadlock (a program may still be settling into it).
bool deadlocked(const Analysis& a) { return a.exit_code == 3 && a.text_exit_code == 3; }

std::size_t deadlocks(const Analysis& a) {
  return a.json.value("deadlocks", nlohmann::json::array()).size();
}

/// Every cycle mark agrees with the verdict: marks only with a deadlock, exit 3 only with one,
/// and the text run said the same as the JSON run.
void expectVerdictsAgree(const Analysis& a) {
  std::size_t cycles = 0;
  for (const auto& c : a.json.value("chains", nlohmann::json::array())) {
    cycles += c.value("is_cycle", false) ? 1 : 0;
  }
  const bool found = deadlocks(a) > 0;
  EXPECT_EQ(a.exit_code, found ? 3 : 0) << a.err;
  EXPECT_EQ(a.text_exit_code, a.exit_code);
  if (!found) {
    EXPECT_EQ(cycles, 0U);
    EXPECT_EQ(a.text.find("CYCLE"), std::string::npos) << a.text;
  }
  EXPECT_NE(a.text.find(found ? "DEADLOCK" : "0 deadlocks"), std::string::npos) << a.text;
}

std::vector<int> deadlockPids(const Analysis& a) {
  std::vector<int> out;
  for (const auto& d : a.json.value("deadlocks", nlohmann::json::array())) {
    for (const auto& t : d.at("threads")) out.push_back(t.at("pid").get<int>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

TEST(RealPrograms, PythonSubprocessPipeDeadlockIsCapturedWithoutCuttingItsWriteShort) {
  // The classic: a parent writes a child's stdin without reading its stdout. cat blocks writing
  // its stdout, Python blocks writing cat's stdin; both writes have moved bytes already.
  auto p = python(R"(
import json, os, subprocess, sys, threading, time
child = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def report():
    time.sleep(0.5)
    print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {"cat": child.pid}}), flush=True)
threading.Thread(target=report).start()
n = os.write(child.stdin.fileno(), b"x" * (1 << 20))
print("wrote", n, flush=True)
time.sleep(60)
)");
  const int pid = p->pid(), cat = p->child("cat");
  const auto a = analyzeUntil(pid, deadlocked, {"--out-of-proc", "--capture"});
  expectVerdictsAgree(a);
  ASSERT_EQ(deadlockPids(a), (std::vector<int>{pid, cat}));
  const auto& captures = a.json.at("captures");
  ASSERT_EQ(captures.size(), 2U);
  for (const auto& c : captures) {
    EXPECT_TRUE(c.value("captured", false)) << c.dump();
    EXPECT_EQ(c.value("method", ""), "CAPTURE_METHOD_NOT_STOPPED") << c.dump();
    EXPECT_FALSE(c.value("note", "").empty());
    EXPECT_FALSE(c.at("frames").empty()) << c.dump();
  }
  EXPECT_NE(a.text.find("not stopped"), std::string::npos) << a.text;
  // Still the same deadlock afterwards: the capture resolved nothing.
  EXPECT_EQ(analyze(pid, {"--out-of-proc"}).exit_code, 3);
  // Drain cat's stdout: both writes go on, and Python's write returns all of its 1 MiB.
  testing::drainPipe(cat, 1, 1 << 20);
  EXPECT_EQ(p->nextLine(10s), "wrote 1048576");
}

TEST(RealPrograms, OfdLockAbbaBetweenTwoPythonProcessesIsOneTwoProcessCycle) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("wctmon-ofd-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto p = python(R"(
import fcntl, json, os, struct, sys, time
path = sys.argv[1] if len(sys.argv) > 1 else ")" +
                  (dir / "lock").string() + R"("
open(path, "a").close()
def lock(fd, start):
    fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, struct.pack("hhqqi", fcntl.F_WRLCK, 0, start, 10, 0))
r, w = os.pipe()
child = os.fork()
fd = os.open(path, os.O_RDWR)
if child == 0:
    lock(fd, 100); os.write(w, b"x"); time.sleep(0.3); lock(fd, 0); os._exit(0)
lock(fd, 0); os.read(r, 1)
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {"child": child}}), flush=True)
lock(fd, 100)
)");
  const int pid = p->pid(), child = p->child("child");
  const auto a = analyzeUntil(pid, deadlocked, {"--out-of-proc"});
  expectVerdictsAgree(a);
  ASSERT_EQ(deadlocks(a), 1U) << a.text;
  EXPECT_EQ(deadlockPids(a), (std::vector<int>{pid, child})) << a.text;
  EXPECT_NE(a.text.find("[0-9]"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("[100-109]"), std::string::npos) << a.text;
  p.reset();
  std::filesystem::remove_all(dir);
}

TEST(RealPrograms, FlockOneAbbaBetweenTwoCommandsIsADeadlock) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("wctmon-flock-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto a_file = (dir / "a").string(), b_file = (dir / "b").string();
  auto p =
      shell("flock " + a_file + " -c 'sleep 0.3; exec flock " + b_file + " true' & first=$!;" +
            "flock " + b_file + " -c 'sleep 0.3; exec flock " + a_file + " true' & second=$!;" +
            "sleep 1; echo \"{\\\"pid\\\":$$,\\\"threads\\\":{},\\\"processes\\\":" +
            "{\\\"first\\\":$first,\\\"second\\\":$second}}\"; wait");
  const int first = p->child("first"), second = p->child("second");
  const auto a = analyzeUntil(first, deadlocked, {"--out-of-proc"});
  expectVerdictsAgree(a);
  ASSERT_GE(deadlocks(a), 1U) << a.text;
  const auto pids = deadlockPids(a);
  EXPECT_TRUE(std::find(pids.begin(), pids.end(), first) != pids.end()) << a.text;
  EXPECT_TRUE(std::find(pids.begin(), pids.end(), second) != pids.end()) << a.text;
  p.reset();
  std::filesystem::remove_all(dir);
}

TEST(RealPrograms, AWriterBlockedOnAStoppedReaderIsAHangNotADeadlock) {
  auto p = shell(R"(dir=$(mktemp -d); mkfifo $dir/fifo; trap 'rm -rf $dir' EXIT
cat $dir/fifo >/dev/null & reader=$!; yes >$dir/fifo & writer=$!; sleep 0.5; kill -STOP $reader
sleep 0.2; echo "{\"pid\":$$,\"threads\":{},\"processes\":{\"writer\":$writer,\"reader\":$reader}}"
wait)");
  const int writer = p->child("writer"), reader = p->child("reader");
  const auto a = analyze(writer, {"--out-of-proc"});
  expectVerdictsAgree(a);
  EXPECT_EQ(deadlocks(a), 0U) << a.text;
  EXPECT_NE(a.text.find("stopped"), std::string::npos) << a.text;
  ::kill(reader, SIGCONT);
}

TEST(RealPrograms, APipeReadWhoseProcessCanStillWriteIsNoCycle) {
  // The main thread reads a pipe its own process holds the write end of; a second thread sleeps.
  auto p = python(R"(
import json, os, threading, time
r, w = os.pipe()
threading.Thread(target=lambda: time.sleep(600), daemon=True).start()
print(json.dumps({"pid": os.getpid(), "threads": {}, "processes": {}}), flush=True)
os.read(r, 1)
)");
  std::this_thread::sleep_for(300ms);
  const auto a = analyze(p->pid());
  expectVerdictsAgree(a);
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_NE(a.text.find("holder " + std::to_string(p->pid())), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("2 threads"), std::string::npos) << a.text;
  const auto cut = analyze(p->pid(), {"--max-nodes", "1"});
  expectVerdictsAgree(cut);
  EXPECT_NE(cut.text.find("truncated"), std::string::npos) << cut.text;
}

TEST(RealPrograms, AKernelThreadAndEnglishCounts) {
  const auto a = analyze(2);
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_NE(a.text.find("1 thread, 0 deadlocks"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("kernel thread"), std::string::npos) << a.text;
  EXPECT_EQ(a.text.find("Error"), std::string::npos) << a.text;
}

/// Each chain's first wait, by the name of the thread that waits: its type and name.
std::map<std::string, std::pair<std::string, std::string>> waitsByThread(const Analysis& a) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& c : a.json.value("chains", nlohmann::json::array())) {
    const auto& nodes = c.at("nodes");
    if (nodes.size() < 2) continue;
    out[nodes[0].value("thread_name", "")] = {nodes[1].value("object_type", ""),
                                              nodes[1].value("name", "")};
  }
  return out;
}

/// Expects no thread to wait on anything a hang could be opened on under the default
/// configuration (no lock, no rwlock, no unknown futex when `futex_too`); the waits by thread.
std::map<std::string, std::pair<std::string, std::string>> expectNoLockWaits(const Analysis& a,
                                                                             bool futex_too) {
  const auto waits = waitsByThread(a);
  for (const auto& [thread, wait] : waits) {
    for (const char* type : {"OBJECT_TYPE_RW_LOCK", "OBJECT_TYPE_MUTEX", "OBJECT_TYPE_UNOWNED_LOCK",
                             futex_too ? "OBJECT_TYPE_FUTEX" : ""}) {
      EXPECT_NE(wait.first, type) << thread << " " << wait.second;
    }
  }
  return waits;
}

TEST(RealPrograms, RustMutexAbbaIsNamedAndCountedAsLocksWithoutOwner) {
  // Debian's rustc (1.63): std::sync::Mutex is a futex word that records no owner.
  auto p = testing::builtProgram("abba.rs", R"(
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
fn tid() -> String {
    std::fs::read_link("/proc/thread-self").unwrap().to_str().unwrap().rsplit('/').next().unwrap().to_string()
}
fn main() {
    let (m1, m2) = (Arc::new(Mutex::new(0)), Arc::new(Mutex::new(0)));
    let ready = Arc::new(Barrier::new(3));
    let (a1, a2, ar) = (m1.clone(), m2.clone(), ready.clone());
    let a = thread::Builder::new().name("a".into()).spawn(move || {
        let _x = a1.lock().unwrap(); ar.wait(); let _y = a2.lock().unwrap();
    }).unwrap();
    let (b1, b2, br) = (m1.clone(), m2.clone(), ready.clone());
    let b = thread::Builder::new().name("b".into()).spawn(move || {
        let _x = b2.lock().unwrap(); br.wait(); let _y = b1.lock().unwrap();
    }).unwrap();
    ready.wait();
    thread::sleep(std::time::Duration::from_millis(300));
    println!("{{\"pid\":{},\"threads\":{{\"main\":{}}},\"processes\":{{}}}}", std::process::id(), tid());
    a.join().unwrap(); b.join().unwrap();
}
)",
                                 "/usr/bin/rustc -O -o abba abba.rs", "./abba");
  const auto a = analyze(p->pid());
  expectVerdictsAgree(a);
  const auto waits = waitsByThread(a);
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(waits.contains(name)) << a.text;
    EXPECT_EQ(waits.at(name).first, "OBJECT_TYPE_UNOWNED_LOCK") << a.text;
    EXPECT_NE(waits.at(name).second.find("Rust std::sync::Mutex"), std::string::npos) << a.text;
  }
  EXPECT_NE(a.text.find("0 deadlocks; 2 threads wait on locks whose owner is not recorded"),
            std::string::npos)
      << a.text;
  EXPECT_EQ(a.text.find("Futex"), std::string::npos) << a.text;
}

/// The Go program `a` shows for its process, or null.
const nlohmann::json* goProgramOf(const Analysis& a) {
  const auto& programs = a.json.value("go_programs", nlohmann::json::array());
  return programs.size() == 1 ? &a.json.at("go_programs").at(0) : nullptr;
}

/// The version of the Go that builds the tests' programs ("go1.19.8").
std::string goVersion() {
  const auto r = runCommand({"go", "env", "GOVERSION"});
  return r.out.substr(0, r.out.find('\n'));
}

/// The functions of a goroutine's frames.
std::vector<std::string> goFrames(const nlohmann::json& goroutine) {
  std::vector<std::string> out;
  for (const auto& f : goroutine.at("frames")) out.push_back(f.value("function", ""));
  return out;
}

bool hasFrame(const nlohmann::json& goroutine, const std::string& function) {
  const auto frames = goFrames(goroutine);
  return std::find(frames.begin(), frames.end(), function) != frames.end();
}

TEST(RealPrograms, GoMutexAbbaBetweenGoroutinesIsNamedWithFramesAndCounted) {
  // Goroutines are not OS threads: the OS threads idle in the Go scheduler say nothing, the
  // runtime's goroutine list says which goroutine waits on what, from where.
  auto p = testing::goProgram("abba", R"(
package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var m1, m2 sync.Mutex

func first(ready *sync.WaitGroup) {
	m1.Lock()
	ready.Done()
	ready.Wait()
	m2.Lock()
}

func second(ready *sync.WaitGroup) {
	m2.Lock()
	ready.Done()
	ready.Wait()
	m1.Lock()
}

func receiver(ch chan int) { fmt.Println(<-ch) }

func main() {
	var ready sync.WaitGroup
	ready.Add(2)
	go first(&ready)
	go second(&ready)
	go receiver(make(chan int))
	time.Sleep(300 * time.Millisecond)
	fmt.Printf("{\"pid\":%d,\"threads\":{},\"processes\":{}}\n", os.Getpid())
	time.Sleep(600 * time.Second)
}
)");
  const auto a = analyzeUntil(p->pid(), [](const Analysis& got) {
    return got.text.find("2 goroutines wait on locks") != std::string::npos;
  });
  expectVerdictsAgree(a);
  const auto* program = goProgramOf(a);
  ASSERT_NE(program, nullptr) << a.text;
  EXPECT_TRUE(program->value("visible", false)) << a.text;
  EXPECT_TRUE(program->value("version", "").starts_with("go1.19")) << a.text;
  EXPECT_EQ(program->value("pid", 0), p->pid());
  std::set<std::string> lockers;
  bool receiver = false;
  for (const auto& g : program->at("blocked")) {
    if (g.value("waits_on", "") == "sync.Mutex.Lock") {
      EXPECT_TRUE(g.value("lock_wait", false)) << g.dump();
      EXPECT_EQ(g.value("wait_reason", ""), "semacquire");
      EXPECT_TRUE(hasFrame(g, "sync.(*Mutex).lockSlow")) << g.dump();
      for (const char* f : {"main.first", "main.second"}) {
        if (hasFrame(g, f)) lockers.insert(f);
      }
    } else if (g.value("waits_on", "") == "chan receive") {
      EXPECT_FALSE(g.value("lock_wait", true));
      receiver = hasFrame(g, "main.receiver");
    } else {
      EXPECT_FALSE(g.value("lock_wait", true)) << g.dump();
    }
  }
  EXPECT_EQ(lockers, (std::set<std::string>{"main.first", "main.second"})) << a.text;
  EXPECT_TRUE(receiver) << a.text;
  EXPECT_NE(a.text.find("0 deadlocks; 2 goroutines wait on locks whose owner is not recorded"),
            std::string::npos)
      << a.text;
  EXPECT_NE(a.text.find("waits on sync.Mutex.Lock (semacquire): a lock that records no owner"),
            std::string::npos)
      << a.text;
  EXPECT_NE(a.text.find("waits on chan receive"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("main.first"), std::string::npos) << a.text;
}

TEST(RealPrograms, AnIdleGoHttpServerHasNoLockWaitNorHangCandidate) {
  auto p = testing::goProgram("server", R"(
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	fmt.Printf("{\"pid\":%d,\"threads\":{},\"processes\":{}}\n", os.Getpid())
	http.Serve(listener, nil)
}
)");
  const auto a = analyzeUntil(p->pid(), [](const Analysis& got) {
    const auto* program = goProgramOf(got);
    return program != nullptr && !program->at("blocked").empty();
  });
  expectVerdictsAgree(a);
  expectNoLockWaits(a, true);
  const auto* program = goProgramOf(a);
  ASSERT_NE(program, nullptr) << a.text;
  EXPECT_TRUE(program->value("visible", false)) << a.text;
  bool accepting = false;
  for (const auto& g : program->at("blocked")) {
    EXPECT_FALSE(g.value("lock_wait", true)) << g.dump();
    if (g.value("waits_on", "") == "IO wait" && hasFrame(g, "main.main")) accepting = true;
  }
  EXPECT_TRUE(accepting) << a.text;
  EXPECT_EQ(a.text.find("whose owner is not recorded"), std::string::npos) << a.text;
  // Nothing the analysis shows leads anywhere a hang is opened on.
  std::size_t shown = 0;
  for (const auto& c : a.json.value("chains", nlohmann::json::array())) {
    const auto& nodes = c.at("nodes");
    if (nodes.size() >= 2) {
      const auto type = nodes[1].value("object_type", "");
      EXPECT_TRUE(type == "OBJECT_TYPE_CONDITION" || type == "OBJECT_TYPE_POLL" ||
                  type == "OBJECT_TYPE_SLEEP")
          << type << " " << nodes[1].value("name", "");
      ++shown;
    }
  }
  EXPECT_GE(shown, 1U);
}

TEST(RealPrograms, AStrippedGoProgramIsSaidToBeOneWhoseGoroutinesAreNotVisible) {
  auto p = testing::goProgram("stripped", R"(
package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

func main() {
	var m sync.Mutex
	m.Lock()
	go func() { m.Lock() }()
	time.Sleep(300 * time.Millisecond)
	fmt.Printf("{\"pid\":%d,\"threads\":{},\"processes\":{}}\n", os.Getpid())
	time.Sleep(600 * time.Second)
}
)",
                              "-ldflags=-s");
  const auto a = analyze(p->pid());
  expectVerdictsAgree(a);
  const auto* program = goProgramOf(a);
  ASSERT_NE(program, nullptr) << a.text;
  EXPECT_FALSE(program->value("visible", true));
  EXPECT_EQ(program->value("version", ""), goVersion());
  EXPECT_TRUE(program->at("blocked").empty());
  EXPECT_NE(a.text.find("is a Go program whose goroutines are not visible (Go version " +
                        goVersion() + ")"),
            std::string::npos)
      << a.text;
}

/// A Java program, compiled with Debian's javac and run with HotSpot (`options` before the
/// class, `as` a command that runs it as another user: "setpriv --reuid=nobody ...").
std::unique_ptr<FixtureProcess> java(const std::string& name, const std::string& source,
                                     const std::string& options = "", const std::string& as = "") {
  return testing::builtProgram(name + ".java", source, "javac " + name + ".java && chmod -R a+rX .",
                               as + " java -Xss512k " + options + " -cp . " + name);
}

/// Line `marker` is on in `source`, counting from 1.
std::uint32_t lineOf(const std::string& source, const std::string& marker) {
  const auto at = source.find(marker);
  return static_cast<std::uint32_t>(std::count(source.begin(), source.begin() + at, '\n') + 1);
}

/// The threads named in the "Found one Java-level deadlock" sections of `jstack -l PID`.
std::set<std::string> jstackDeadlockedThreads(int pid) {
  const auto r = runCommand({"jstack", "-l", std::to_string(pid)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> out;
  bool in_report = false;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Found one Java-level deadlock")) in_report = true;
    if (line.starts_with("Java stack information")) in_report = false;
    if (in_report && line.starts_with('"') && line.ends_with("\":")) {
      out.insert(line.substr(1, line.size() - 3));
    }
  }
  return out;
}

/// The names of the threads in `a`'s deadlocks.
std::set<std::string> deadlockedThreadNames(const Analysis& a) {
  std::map<int, std::string> names;
  for (const auto& c : a.json.value("chains", nlohmann::json::array())) {
    for (const auto& n : c.at("nodes")) {
      if (n.contains("tid")) names[n.value("tid", 0)] = n.value("thread_name", "");
    }
  }
  std::set<std::string> out;
  for (const auto& d : a.json.value("deadlocks", nlohmann::json::array())) {
    for (const auto& t : d.at("threads")) out.insert(names[t.at("tid").get<int>()]);
  }
  return out;
}

/// No `.attach_pid` file left in `dir` or in /tmp.
void expectNoAttachFileLeft(const std::filesystem::path& dir) {
  for (const auto& d : {dir, std::filesystem::path("/tmp")}) {
    for (const auto& entry : std::filesystem::directory_iterator(d)) {
      EXPECT_FALSE(entry.path().filename().string().starts_with(".attach_pid")) << entry.path();
    }
  }
}

TEST(RealPrograms, AnIdleHotSpotPoolAfterABurstWaitsOnConditionsOnly) {
  auto p = java("IdlePool", R"(
import java.util.concurrent.*;
public class IdlePool {
    public static void main(String[] a) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        for (int i = 0; i < 5001; i++) { final int n = i; pool.submit(() -> Math.sqrt(n)); }
        Thread.sleep(1200);
        System.out.println("{\"pid\":" + ProcessHandle.current().pid() + ",\"threads\":{},\"processes\":{}}");
        Thread.sleep(600000);
    }
}
)");
  const auto a = analyze(p->pid());
  expectVerdictsAgree(a);
  int pool = 0;
  for (const auto& [thread, wait] : expectNoLockWaits(a, false)) {
    if (thread.starts_with("pool-1-thread")) {
      ++pool;
      EXPECT_EQ(wait.first, "OBJECT_TYPE_CONDITION");
      // The JVM's thread dump says on what: the pool queue's condition.
      EXPECT_NE(wait.second.find("AbstractQueuedSynchronizer$ConditionObject"), std::string::npos)
          << wait.second;
    }
  }
  EXPECT_EQ(pool, 8) << a.text;
  EXPECT_EQ(a.text.find("RwLock"), std::string::npos) << a.text;
}

/// A synchronized ABBA, a ReentrantLock ABBA and one of a monitor and a ReentrantLock, in one JVM.
const std::string kJavaAbba = R"(
import java.util.concurrent.locks.ReentrantLock;
public class JavaAbba {
    static final Object A = new Object(), B = new Object();
    static final Object C = new Object();
    static final ReentrantLock L1 = new ReentrantLock(), L2 = new ReentrantLock(), L3 = new ReentrantLock();
    public static void main(String[] args) throws Exception {
        new Thread(() -> { synchronized (A) { nap(); synchronized (B) { nap(); } } }, "monitor-1").start(); // ENTER-B
        new Thread(() -> { synchronized (B) { nap(); synchronized (A) { nap(); } } }, "monitor-2").start();
        new Thread(() -> { L1.lock(); nap(); L2.lock(); }, "lock-1").start();
        new Thread(() -> { L2.lock(); nap(); L1.lock(); }, "lock-2").start();
        new Thread(() -> { synchronized (C) { nap(); L3.lock(); } }, "mixed-1").start();
        new Thread(() -> { L3.lock(); nap(); synchronized (C) {} }, "mixed-2").start();
        Thread.sleep(1500);
        System.out.println("{\"pid\":" + ProcessHandle.current().pid() + ",\"threads\":{},\"processes\":{}}");
        Thread.sleep(600000);
    }
    static void nap() { try { Thread.sleep(300); } catch (InterruptedException e) {} }
}
)";

TEST(RealPrograms, JavaMonitorAndReentrantLockAbbasAreDeadlocksAsJstackSays) {
  auto p = java("JavaAbba", kJavaAbba);
  const auto a =
      analyzeUntil(p->pid(), [](const Analysis& x) { return deadlocks(x) == 3; }, {"--capture"});
  expectVerdictsAgree(a);
  ASSERT_EQ(deadlocks(a), 3U) << a.text;
  const std::set<std::string> expected{"monitor-1", "monitor-2", "lock-1",
                                       "lock-2",    "mixed-1",   "mixed-2"};
  EXPECT_EQ(deadlockedThreadNames(a), expected) << a.text;
  EXPECT_EQ(jstackDeadlockedThreads(p->pid()), expected);

  const auto waits = waitsByThread(a);
  EXPECT_EQ(waits.at("monitor-1").first, "OBJECT_TYPE_MUTEX");
  EXPECT_NE(waits.at("monitor-1").second.find("Java monitor"), std::string::npos);
  EXPECT_NE(waits.at("lock-1").second.find("Java ReentrantLock"), std::string::npos);
  EXPECT_NE(a.text.find("held by \"monitor-2\""), std::string::npos) << a.text;

  // The evidence carries the Java frames, as the source has them.
  bool found = false;
  for (const auto& c : a.json.value("captures", nlohmann::json::array())) {
    if (!c.contains("runtime_stack")) continue;
    const auto& frames = c.at("runtime_stack").at("frames");
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(c.at("runtime_stack").value("runtime", ""), "Java");
    if (frames[0].value("function", "") == "JavaAbba.lambda$main$0") {
      found = true;
      EXPECT_EQ(frames[0].value("file", ""), "JavaAbba.java");
      EXPECT_EQ(frames[0].value("line", 0U), lineOf(kJavaAbba, "ENTER-B"));
    }
  }
  EXPECT_TRUE(found) << a.json.dump();
  EXPECT_NE(a.text.find("Java frames (the JVM's thread dump)"), std::string::npos);
  EXPECT_EQ(::kill(p->pid(), 0), 0);
}

TEST(RealPrograms, AJvmOfAnotherUserIsAskedAsThatUserAndNoFileIsLeftBehind) {
  auto p = java("JavaAbba", kJavaAbba, "", "setpriv --reuid=nobody --regid=nogroup --clear-groups");
  const auto a = analyzeUntil(p->pid(), [](const Analysis& x) { return deadlocks(x) == 3; });
  ASSERT_EQ(deadlocks(a), 3U) << a.text;
  // Its working directory is not writable by it: the attach file went to its /tmp, and away.
  const auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(p->pid()) + "/cwd");
  expectNoAttachFileLeft(cwd);
  struct stat st {};
  const auto socket = "/tmp/.java_pid" + std::to_string(p->pid());
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_NE(st.st_uid, 0U);  // the JVM's own listener, not one made for root
}

TEST(RealPrograms, AJvmThatDisablesAttachIsSaidUnreadableAndIsNotSignalled) {
  auto p = java("JavaAbba", kJavaAbba, "-XX:+DisableAttachMechanism");
  const auto a = analyze(p->pid());
  expectVerdictsAgree(a);
  EXPECT_EQ(deadlocks(a), 0U);
  EXPECT_NE(a.text.find("-XX:+DisableAttachMechanism: its threads' Java locks cannot be read"),
            std::string::npos)
      << a.text;
  EXPECT_NE(a.text.find("threads wait on locks whose owner is not recorded"), std::string::npos);
  // A SIGQUIT would have made it print a thread dump on its output.
  EXPECT_EQ(p->nextLine(500ms), "");
  EXPECT_EQ(::kill(p->pid(), 0), 0);
  expectNoAttachFileLeft(
      std::filesystem::read_symlink("/proc/" + std::to_string(p->pid()) + "/cwd"));
}

TEST(RealPrograms, AJvmStartedWithXrsIsReadWithoutASignalThatWouldEndIt) {
  auto p = java("JavaAbba", kJavaAbba, "-Xrs");
  const auto a = analyzeUntil(p->pid(), [](const Analysis& x) { return deadlocks(x) == 3; });
  EXPECT_EQ(deadlocks(a), 3U) << a.text;
  EXPECT_EQ(::kill(p->pid(), 0), 0);
}

/// Each chain's first wait, by the TID of the thread that waits: its type and name.
std::map<int, std::pair<std::string, std::string>> waitsByTid(const Analysis& a) {
  std::map<int, std::pair<std::string, std::string>> out;
  for (const auto& c : a.json.value("chains", nlohmann::json::array())) {
    const auto& nodes = c.at("nodes");
    if (nodes.size() < 2) continue;
    out[nodes[0].value("tid", 0)] = {nodes[1].value("object_type", ""), nodes[1].value("name", "")};
  }
  return out;
}

TEST(RealPrograms, AnIdlePythonPoolHasNoHangCandidate) {
  // CPython's lock serves threading.Lock and every Condition, Event and queue wait alike: the
  // object on each waiter's stack and its Python frames say these are idle pool workers and
  // waits on an event, a queue, a SimpleQueue, a semaphore, a barrier and a condition (whose
  // lock is an RLock), none of them a lock. Debian's interpreter and the one first on PATH.
  for (const char* interpreter : {kDebianPython, "python3"}) {
    SCOPED_TRACE(interpreter);
    auto p = python(R"(
import concurrent.futures, json, os, queue, threading, time
pool = concurrent.futures.ThreadPoolExecutor(4)
for i in range(101): pool.submit(pow, i, 2)
pool.submit(time.sleep, 0.2).result()
ids = {}
def start(name, wait):
    def body():
        ids[name] = threading.get_native_id()
        wait()
    threading.Thread(target=body, name=name, daemon=True).start()
start("event", threading.Event().wait)
start("queue", queue.Queue().get)
start("simple", queue.SimpleQueue().get)
start("semaphore", threading.Semaphore(0).acquire)
start("barrier", threading.Barrier(3).wait)
condition = threading.Condition(threading.RLock())
def wait_on_condition():
    with condition: condition.wait()
start("condition", wait_on_condition)
time.sleep(0.5)
workers = [t.native_id for t in pool._threads]
print(json.dumps({"pid": os.getpid(), "threads": ids, "processes": {}, "workers": workers}),
      flush=True)
time.sleep(600)
)",
                    interpreter);
    const auto a = analyze(p->pid());
    expectVerdictsAgree(a);
    expectNoLockWaits(a, true);
    const auto waits = waitsByTid(a);
    const std::map<std::string, std::string> expected{
        {"event", "Python threading.Condition.wait"},
        {"queue", "Python threading.Condition.wait"},
        {"simple", "Python queue.SimpleQueue.get"},
        {"semaphore", "Python threading.Condition.wait"},
        {"barrier", "Python threading.Condition.wait"},
        {"condition", "Python threading.Condition.wait"}};
    for (const auto& [name, kind] : expected) {
      ASSERT_TRUE(waits.contains(p->tid(name))) << name << "\n" << a.text;
      const auto& wait = waits.at(p->tid(name));
      EXPECT_EQ(wait.first, "OBJECT_TYPE_CONDITION") << name << " " << wait.second;
      EXPECT_TRUE(wait.second.starts_with(kind)) << name << " " << wait.second;
    }
    const auto& workers = p->report().at("workers");
    ASSERT_EQ(workers.size(), 4U);
    for (const auto& worker : workers) {
      ASSERT_TRUE(waits.contains(worker.get<int>())) << a.text;
      const auto& wait = waits.at(worker.get<int>());
      EXPECT_EQ(wait.first, "OBJECT_TYPE_CONDITION") << wait.second;
      EXPECT_TRUE(wait.second.starts_with("Python queue.SimpleQueue.get")) << wait.second;
    }
    EXPECT_EQ(a.text.find("whose owner is not recorded"), std::string::npos) << a.text;
    EXPECT_EQ(a.text.find("Python lock"), std::string::npos) << a.text;
  }
}

/// A Python program in which thread "first" holds `a` and wants `b`, thread "second" the other
/// way round (KIND is RLock or Lock). Each reports where it blocks as Python itself sees it:
/// its frames, innermost first, as [file, line, qualified name].
const std::string kPythonAbba = R"(
import json, os, sys, threading, time
a, b = threading.KIND(), threading.KIND()
ready = threading.Barrier(3)
stacks = {}
def frames(f, line):
    out = []
    while f is not None:
        out.append([f.f_code.co_filename, line, f.f_code.co_qualname])
        f = f.f_back
        line = f.f_lineno if f is not None else 0
    return out
def first():
    with a:
        ready.wait()
        stacks["first"] = frames(sys._getframe(), sys._getframe().f_lineno + 1)
        with b: pass
def second():
    with b:
        ready.wait()
        stacks["second"] = frames(sys._getframe(), sys._getframe().f_lineno + 1)
        with a: pass
threads = [threading.Thread(target=f, name=f.__name__, daemon=True) for f in (first, second)]
for t in threads: t.start()
ready.wait()
time.sleep(0.3)
print(json.dumps({"pid": os.getpid(), "processes": {}, "stacks": stacks,
                  "threads": {t.name: t.native_id for t in threads}}), flush=True)
time.sleep(600)
)";

std::string pythonAbba(const std::string& kind) {
  auto code = kPythonAbba;
  code.replace(code.find("KIND"), 4, kind);
  code.replace(code.find("KIND"), 4, kind);
  return code;
}

TEST(RealPrograms, PythonRLockAbbaIsADeadlockWithThePythonFramesThePythonProgramSees) {
  auto p = python(pythonAbba("RLock"), kDebianPython);
  const auto a = analyzeUntil(p->pid(), deadlocked, {"--capture"});
  expectVerdictsAgree(a);
  ASSERT_EQ(deadlocks(a), 1U) << a.text;
  std::set<int> in_cycle;
  for (const auto& t : a.json.at("deadlocks")[0].at("threads"))
    in_cycle.insert(t.at("tid").get<int>());
  EXPECT_EQ(in_cycle, (std::set<int>{p->tid("first"), p->tid("second")})) << a.text;
  const auto waits = waitsByTid(a);
  for (const char* name : {"first", "second"}) {
    const auto& wait = waits.at(p->tid(name));
    EXPECT_EQ(wait.first, "OBJECT_TYPE_MUTEX") << wait.second;
    EXPECT_TRUE(wait.second.starts_with("Python threading.RLock 0x")) << wait.second;
  }
  // The evidence of each thread carries its Python frames, as the program sees them itself.
  std::set<int> checked;
  for (const auto& c : a.json.value("captures", nlohmann::json::array())) {
    const int tid = c.at("thread").value("tid", 0);
    const std::string name = tid == p->tid("first") ? "first" : "second";
    ASSERT_TRUE(c.contains("runtime_stack")) << c.dump(1);
    EXPECT_EQ(c.at("runtime_stack").value("runtime", ""), "Python");
    const auto& expected = p->report().at("stacks").at(name);
    const auto& frames = c.at("runtime_stack").at("frames");
    ASSERT_EQ(frames.size(), expected.size()) << c.dump(1) << "\n" << expected.dump();
    for (std::size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(frames[i].value("file", ""), expected[i][0].get<std::string>()) << i;
      EXPECT_EQ(frames[i].value("line", 0), expected[i][1].get<int>()) << i;
      EXPECT_EQ(frames[i].value("function", ""), expected[i][2].get<std::string>()) << i;
    }
    checked.insert(tid);
  }
  EXPECT_EQ(checked, in_cycle) << a.json.dump();
  EXPECT_NE(a.text.find("Python frames (the CPython interpreter's state"), std::string::npos)
      << a.text;
  EXPECT_NE(a.text.find("#0 first at <string>:"), std::string::npos) << a.text;
}

TEST(RealPrograms, PythonLockAbbaIsNamedAndCountedAsLocksWithoutOwner) {
  // threading.Lock records no owner: the cycle cannot be seen, and the summary says so.
  auto p = python(pythonAbba("Lock"), kDebianPython);
  const auto a = analyze(p->pid());
  expectVerdictsAgree(a);
  EXPECT_EQ(deadlocks(a), 0U);
  const auto waits = waitsByTid(a);
  for (const char* name : {"first", "second"}) {
    const auto& wait = waits.at(p->tid(name));
    EXPECT_EQ(wait.first, "OBJECT_TYPE_UNOWNED_LOCK") << wait.second;
    EXPECT_TRUE(wait.second.starts_with("Python threading.Lock 0x")) << wait.second;
  }
  EXPECT_NE(a.text.find("0 deadlocks; 2 threads wait on locks whose owner is not recorded"),
            std::string::npos)
      << a.text;
  EXPECT_EQ(a.text.find("Futex"), std::string::npos) << a.text;
  // Where each waits, as its innermost Python frame says.
  EXPECT_NE(a.text.find("innermost Python frame: first at <string>:" +
                        std::to_string(p->report()["stacks"]["first"][0][1].get<int>())),
            std::string::npos)
      << a.text;
}

/// The chain that starts at thread `tid`, from an analysis's JSON.
nlohmann::json chainOf(const Analysis& a, int tid) {
  for (const auto& c : a.json.value("chains", nlohmann::json::array())) {
    if (c.at("nodes").at(0).value("tid", 0) == tid) return c;
  }
  return {};
}

TEST(RealPrograms, APostgresRowLockWaitNamesTheTransactionAndTheBackendThatHoldsIt) {
  // One session changes a row and stays idle in its transaction; another wants the same row.
  // PostgreSQL's own tools (pg_locks, pg_blocking_pids) name the holder; so must the chain.
  testing::TempDir dir("postgres");
  auto p = shell(testing::postgresScript(dir, "") +
                 "q -c 'create table t(id int primary key, v int); insert into t values (1, 0)'\n"
                 "(echo 'begin; update t set v = 1 where id = 1;'; sleep 600) | q &\n"
                 "until [ -n \"$(q -c \"select pid from pg_stat_activity where state = 'idle in "
                 "transaction'\")\" ]; do sleep 0.1; done\n"
                 "q -c 'update t set v = 2 where id = 1' &\n"
                 "waiter=$(waiters 1); holder=$(q -c \"select pg_blocking_pids($waiter)\" | tr -d "
                 "'{}')\n"
                 "echo \"{\\\"pid\\\":$$,\\\"threads\\\":{},\\\"processes\\\":"
                 "{\\\"waiter\\\":$waiter,\\\"holder\\\":$holder}}\"\n"
                 "wait");
  const int waiter = p->child("waiter"), holder = p->child("holder");
  const auto a = analyze(waiter, {"--out-of-proc"});
  expectVerdictsAgree(a);
  EXPECT_EQ(deadlocks(a), 0U) << a.text;
  EXPECT_NE(a.text.find("(postgres [postgres: postgres postgres [local] UPDATE waiting])"),
            std::string::npos)
      << a.text;
  EXPECT_EQ(a.json.value("process_title", ""),
            "postgres: postgres postgres [local] UPDATE waiting");
  const auto chain = chainOf(a, waiter);
  ASSERT_GE(chain["nodes"].size(), 3U) << a.text;
  const auto& lock = chain["nodes"][1];
  EXPECT_EQ(lock.value("object_type", ""), "OBJECT_TYPE_MUTEX") << lock.dump(1);
  const auto name = lock.value("name", "");
  EXPECT_TRUE(name.starts_with("PostgreSQL transaction ") && name.ends_with(" (ShareLock)"))
      << name;
  EXPECT_NE(lock.value("detail", "").find("update t set v = 2 where id = 1"), std::string::npos)
      << lock.dump(1);
  EXPECT_EQ(chain["nodes"][2].value("tid", 0), holder) << a.text;
  // The holder waits for its client, idle in its transaction.
  EXPECT_NE(a.text.find("idle in transaction"), std::string::npos) << a.text;
}

TEST(RealPrograms, APostgresDeadlockIsADeadlockThroughBothBackends) {
  // PostgreSQL ends a deadlock itself once deadlock_timeout has passed (1 s by default); this
  // one waits for ten minutes.
  testing::TempDir dir("postgres");
  auto p = shell(testing::postgresDeadlockScript(dir, ""));
  const int first = p->child("first"), second = p->child("second");
  const auto a = analyzeUntil(first, deadlocked, {"--out-of-proc"});
  expectVerdictsAgree(a);
  ASSERT_EQ(deadlocks(a), 1U) << a.text;
  EXPECT_EQ(deadlockPids(a), (std::vector<int>{std::min(first, second), std::max(first, second)}))
      << a.text;
  EXPECT_NE(a.text.find("DEADLOCK #1 (across processes)"), std::string::npos) << a.text;
  // Without following chains out of the process, the backend still names the one it waits for.
  const auto alone = analyze(first);
  EXPECT_EQ(chainOf(alone, first)["nodes"][2].value("tid", 0), second) << alone.text;
}

/// Our pids of the processes whose title (command line) starts with `prefix` and ends with
/// `suffix`, sorted.
std::vector<int> pidsTitled(const std::string& prefix, const std::string& suffix) {
  std::vector<int> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto title = testing::readFile((entry.path() / "cmdline").string());
    title = title.substr(0, title.find('\0'));
    if (title.starts_with(prefix) && title.ends_with(suffix)) out.push_back(std::stoi(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RealPrograms, APostgresDeadlockInAPidNamespaceOfItsOwnNamesOurPids) {
  // As in a container: the server numbers its backends in its own namespace, and pg_locks says
  // those numbers.
  testing::TempDir dir("postgres");
  const auto cluster = "ns-" + dir.name();
  testing::FixtureProcess p(
      std::vector<std::string>{"unshare", "-p", "-f", "--mount-proc", "bash", "-c",
                               testing::postgresDeadlockScript(dir, "-c cluster_name=" + cluster)},
      30s);
  const auto backends = pidsTitled("postgres: " + cluster + ": ", "UPDATE waiting");
  ASSERT_EQ(backends.size(), 2U);
  EXPECT_NE(backends[0], p.child("first")) << "the script says the namespace's pids";
  const auto a = analyzeUntil(backends[0], deadlocked, {"--out-of-proc"});
  ASSERT_EQ(deadlocks(a), 1U) << a.text;
  EXPECT_EQ(deadlockPids(a), backends) << a.text;
}

TEST(RealPrograms, APostgresServerThatAsksForAPasswordIsSaidToBeUnreadable) {
  // A cluster with password authentication on its socket: the server is not asked with a
  // guess, and the wait says which lock kind it is and why its holder is not known.
  testing::TempDir dir("postgres");
  const auto pw = (dir / "pw").string();
  auto p = shell("echo secret >" + pw + "; chmod 644 " + pw + "; export PGPASSWORD=secret\n" +
                 testing::postgresScript(dir, "", "-A scram-sha-256 --pwfile=" + pw) +
                 "q -c 'create table t(id int primary key, v int); insert into t values (1, 0)'\n"
                 "q -c 'begin; update t set v = 1 where id = 1; select pg_sleep(600)' &\n"
                 "sleep 0.3; q -c 'update t set v = 2 where id = 1' &\n"
                 "echo \"{\\\"pid\\\":$$,\\\"threads\\\":{},\\\"processes\\\":"
                 "{\\\"waiter\\\":$(waiters 1)}}\"\n"
                 "wait");
  const int waiter = p->child("waiter");
  const auto a = analyze(waiter);
  expectVerdictsAgree(a);
  const auto chain = chainOf(a, waiter);
  ASSERT_GE(chain.value("nodes", nlohmann::json::array()).size(), 2U) << a.text;
  const auto& lock = chain["nodes"][1];
  EXPECT_EQ(lock.value("object_type", ""), "OBJECT_TYPE_UNOWNED_LOCK") << a.text;
  EXPECT_EQ(lock.value("name", ""), "PostgreSQL lock") << a.text;
  EXPECT_NE(lock.value("detail", "").find("asks user postgres for a password"), std::string::npos)
      << a.text;
  EXPECT_NE(a.text.find("1 thread waits on locks whose owner is not recorded"), std::string::npos)
      << a.text;
}

TEST(RealPrograms, TheServiceItselfAGrpcAndAbslProcessHasNoLockWaitWhenIdle) {
  // Every idle absl::CondVar waiter of a gRPC process once read as a rwlock held by hundreds of
  // millions of readers.
  testing::ApiService service;
  std::this_thread::sleep_for(1500ms);
  const auto a = analyze(service.pid());
  expectVerdictsAgree(a);
  int conditions = 0;
  for (const auto& [thread, wait] : expectNoLockWaits(a, true)) {
    conditions += wait.first == "OBJECT_TYPE_CONDITION" ? 1 : 0;
  }
  EXPECT_GT(conditions, 0) << a.text;
}

}  // namespace
}  // namespace wctmon
