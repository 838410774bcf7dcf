// The API of a real wctmond as an attacker or a careless client meets it, through an
// independent client (Python's grpcio): TLS and mutual TLS with certificates made here by the
// openssl command line, addresses beyond loopback without TLS refused at start and at reload,
// requests that are too large, malformed, for no method or out of time, and thread names of
// arbitrary bytes read back through every RPC.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/api_service.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ApiService;
using testing::descriptorsOf;
using testing::FixtureProcess;
using testing::httpGet;
using testing::readFile;
using testing::residentBytesOf;
using testing::runCommand;
using testing::TempDir;
using testing::waitFor;
using testing::wctmonPath;

/// Options of api_client.py ("--root-ca=FILE", "--raw=HEX", ...).
using ClientOptions = std::vector<std::string>;

/// One call through the Python client: {"code": ..., "response"/"details": ..., "wire": ...}.
json call(const ApiService& service, const std::string& target, const std::string& token,
          const std::string& method, const json& request = json::object(),
          const ClientOptions& options = {}) {
  std::vector<std::string> argv = {"/usr/bin/python3", WCTMON_API_CLIENT};
  argv.insert(argv.end(), options.begin(), options.end());
  // `{}` as an argument is a JSON null: no request fields either.
  argv.insert(argv.end(), {WCTMON_PROTO_DIR, service.dir().path().string(), target, token, method,
                           request.is_null() ? "{}" : request.dump()});
  const auto r = runCommand(argv);
  if (r.exit_code != 0) throw std::runtime_error("api_client.py failed: " + r.err);
  return json::parse(r.out);
}

json admin(const ApiService& service, const std::string& method,
           const json& request = json::object(), const ClientOptions& options = {}) {
  return call(service, service.unixTarget(), service.adminToken(), method, request, options);
}

/// A certificate authority, a server certificate of it for 127.0.0.1 (subjectAltName
/// IP:127.0.0.1), a client certificate of it, and a client certificate of another CA: P-256
/// keys, made by the openssl command line.
class Certificates {
 public:
  Certificates() {
    makeCa("ca", "wctmon test CA");
    makeCa("other-ca", "someone else's CA");
    makeLeaf("server", "127.0.0.1", "ca",
             "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth");
    makeLeaf("client", "wctmon test client", "ca", "extendedKeyUsage=clientAuth");
    makeLeaf("stranger", "wctmon test client", "other-ca", "extendedKeyUsage=clientAuth");
  }

  [[nodiscard]] std::string pem(const std::string& name) const {
    return (dir_ / (name + ".pem")).string();
  }
  [[nodiscard]] std::string key(const std::string& name) const {
    return (dir_ / (name + ".key")).string();
  }
  /// The api keys of a service that serves TLS with the server certificate (and requires
  /// client certificates of the CA when `mutual`), for ApiService's `api_extra`.
  [[nodiscard]] std::string apiKeys(bool mutual) const {
    json tls = {{"cert_file", pem("server")}, {"key_file", key("server")}};
    if (mutual) tls["client_ca_file"] = pem("ca");
    return "\"tls\": " + tls.dump() + ", ";
  }
  /// Client options: trust the CA; present `client`'s certificate when given.
  [[nodiscard]] ClientOptions client(const std::string& client = "") const {
    ClientOptions options = {"--root-ca=" + pem("ca")};
    if (!client.empty()) {
      options.push_back("--cert=" + pem(client));
      options.push_back("--key=" + key(client));
    }
    return options;
  }

 private:
  static void run(const std::vector<std::string>& argv) {
    const auto r = runCommand(argv);
    if (r.exit_code != 0) throw std::runtime_error(argv[1] + " failed: " + r.err);
  }

  void makeCa(const std::string& name, const std::string& subject) {
    run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key(name), "-out", pem(name), "-days", "2", "-subj",
         "/CN=" + subject});
  }

  void makeLeaf(const std::string& name, const std::string& subject, const std::string& ca,
                const std::string& extensions) {
    const auto csr = (dir_ / (name + ".csr")).string();
    const auto ext = (dir_ / (name + ".ext")).string();
    std::ofstream(ext) << extensions << "\n";
    run({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key(name), "-out", csr, "-subj", "/CN=" + subject});
    run({"openssl", "x509", "-req", "-in", csr, "-CA", pem(ca), "-CAkey", key(ca), "-set_serial",
         std::to_string(++serial_), "-days", "2", "-extfile", ext, "-out", pem(name)});
  }

  TempDir dir_{"certs"};
  int serial_ = 0;
};

/// What a service that crashed, or came close, leaves in its log.
void expectNoCrashIn(const std::string& log) {
  for (const std::string sign :
       {"terminate called", "Segmentation", "Aborted", "core dumped", "FATAL", "Assertion",
        "AddressSanitizer", "runtime error:", "[critical]"}) {
    EXPECT_EQ(log.find(sign), std::string::npos) << sign << " in:\n" << log;
  }
}

/// Still up and answering: healthy status over both listeners, health SERVING.
void expectHealthy(const ApiService& service, const ClientOptions& tcp_options = {}) {
  for (const auto& [target, options] : std::vector<std::pair<std::string, ClientOptions>>{
           {service.unixTarget(), {}}, {service.tcpTarget(), tcp_options}}) {
    SCOPED_TRACE(target);
    const auto status =
        call(service, target, service.readerToken(), "GetStatus", json::object(), options);
    ASSERT_EQ(status["code"], "OK") << status.dump() << "\n" << readFile(service.log());
    EXPECT_EQ(status["response"]["healthy"], true) << status.dump();
  }
  const auto health = call(service, service.unixTarget(), "-", "health");
  EXPECT_EQ(health["response"]["status"], "SERVING") << health.dump();
}

TEST(ApiSecurity, TlsOnTcpServesClientsThatTrustItsCaAndNoPlaintextClient) {
  Certificates certs;
  ApiService service(certs.apiKeys(false));
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  const auto tcp = service.tcpTarget();

  const auto tls = call(service, tcp, service.readerToken(), "GetStatus", {}, certs.client());
  ASSERT_EQ(tls["code"], "OK") << tls.dump() << "\n" << readFile(service.log());
  EXPECT_EQ(tls["response"]["healthy"], true);
  // A client certificate is not asked for, and does no harm.
  EXPECT_EQ(
      call(service, tcp, service.readerToken(), "GetStatus", {}, certs.client("client"))["code"],
      "OK");
  // TLS is no substitute for a token.
  const auto no_token = call(service, tcp, "-", "GetStatus", {}, certs.client());
  EXPECT_EQ(no_token["code"], "UNAUTHENTICATED") << no_token.dump();

  const auto plaintext = call(service, tcp, service.readerToken(), "GetStatus");
  EXPECT_EQ(plaintext["code"], "UNAVAILABLE") << plaintext.dump();
  // The client checks whom it talks to: another CA's trust, or another name, gets nowhere.
  const auto untrusted = call(service, tcp, service.readerToken(), "GetStatus", {},
                              {"--root-ca=" + certs.pem("other-ca")});
  EXPECT_EQ(untrusted["code"], "UNAVAILABLE") << untrusted.dump();
  auto elsewhere = certs.client();
  elsewhere.push_back("--server-name=api.elsewhere.example");
  const auto misnamed = call(service, tcp, service.readerToken(), "GetStatus", {}, elsewhere);
  EXPECT_EQ(misnamed["code"], "UNAVAILABLE") << misnamed.dump();

  // The Unix socket, guarded by its mode, stays plaintext.
  EXPECT_EQ(call(service, service.unixTarget(), service.readerToken(), "GetStatus")["code"], "OK");
  expectHealthy(service, certs.client());
  expectNoCrashIn(readFile(service.log()));
}

TEST(ApiSecurity, MutualTlsTakesOnlyClientsWithACertificateOfTheClientCa) {
  Certificates certs;
  ApiService service(certs.apiKeys(true));
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  const auto tcp = service.tcpTarget();

  const auto accepted =
      call(service, tcp, service.adminToken(), "GetStatus", {}, certs.client("client"));
  ASSERT_EQ(accepted["code"], "OK") << accepted.dump() << "\n" << readFile(service.log());
  EXPECT_EQ(call(service, tcp, "-", "health", {}, certs.client("client"))["response"]["status"],
            "SERVING");

  // Refused in the handshake, before any token is looked at: even health, which needs none.
  for (const auto& [what, options] : std::vector<std::pair<std::string, ClientOptions>>{
           {"no certificate", certs.client()},
           {"another CA's certificate", certs.client("stranger")},
           {"plaintext", {}}}) {
    SCOPED_TRACE(what);
    const auto refused = call(service, tcp, service.adminToken(), "GetStatus", {}, options);
    EXPECT_EQ(refused["code"], "UNAVAILABLE") << refused.dump();
    const auto health = call(service, tcp, "-", "health", {}, options);
    EXPECT_EQ(health["code"], "UNAVAILABLE") << health.dump();
  }
  expectHealthy(service, certs.client("client"));
  expectNoCrashIn(readFile(service.log()));
}

/// A configuration for `wctmon run` in `dir` that listens on the socket and on `address`.
std::string writeConfig(const TempDir& dir, const std::string& address,
                        const std::string& api_extra = "") {
  const auto path = (dir / "wctmon.json").string();
  std::ofstream(path) << R"({"state_dir": ")" << (dir / "state").string()
                      << R"(", "metrics": {"listen": "127.0.0.1:0"}, "api": {)" << api_extra
                      << R"("listen": ["unix:)" << (dir / "api.sock").string() << R"(", ")"
                      << address << R"("]}, "alerts": {"sink": "none"}, "targets": []})";
  return path;
}

/// The lines of `text`, without empty ones.
std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

TEST(ApiSecurity, AnAddressBeyondLoopbackWithoutTlsIsRefusedAtStartWithOneClearLine) {
  Certificates certs;
  for (const std::string address : {"0.0.0.0:47787", "[::]:47787", "192.0.2.10:47787"}) {
    SCOPED_TRACE(address);
    TempDir dir("api-open");
    const auto config = writeConfig(dir, address);
    // Bounded: a service that took the address would run until stopped.
    const auto run = runCommand({"timeout", "20", wctmonPath(), "run", "--config", config});
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.exit_code, 124) << "it started:\n" << run.err << run.out;
    const auto lines = linesOf(run.err);
    ASSERT_EQ(lines.size(), 1U) << run.err;
    EXPECT_NE(lines[0].find("\"" + address + "\""), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("needs TLS"), std::string::npos) << lines[0];
    EXPECT_FALSE(std::filesystem::exists(dir / "api.sock"));

    // With a certificate and key, the same address is one the file may name.
    TempDir tls_dir("api-open-tls");
    const auto with_tls = writeConfig(tls_dir, address, certs.apiKeys(false));
    const auto valid = runCommand({wctmonPath(), "validate-config", with_tls});
    EXPECT_EQ(valid.exit_code, 0) << valid.err;
  }
}

TEST(ApiSecurity, AStartThatFailsOnATakenPortLeavesNoSocketFileBehind) {
  // The Unix socket is made first; the TCP address after it is another program's.
  const int taken = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(taken, 0);
  sockaddr_in name{};
  name.sin_family = AF_INET;
  name.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(name);
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&name), sizeof(name)), 0);
  ASSERT_EQ(::listen(taken, 1), 0);
  ASSERT_EQ(::getsockname(taken, reinterpret_cast<sockaddr*>(&name), &length), 0);
  const auto address = "127.0.0.1:" + std::to_string(ntohs(name.sin_port));
  TempDir dir("api-taken");
  const auto run =
      runCommand({"timeout", "20", wctmonPath(), "run", "--config", writeConfig(dir, address)});
  ::close(taken);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.exit_code, 124) << "it started:\n" << run.err << run.out;
  EXPECT_NE(run.err.find(address), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "api.sock")) << "a socket file nothing answers on";
}

// A path of api.listen that names a file, a directory or a link was deleted without a word.
TEST(ApiSecurity, ASocketPathThatIsNoSocketIsRefusedAndLeftAsItIs) {
  TempDir dir("api-not-a-socket");
  std::ofstream(dir / "precious") << "an operator's file";
  std::filesystem::create_symlink(dir / "precious", dir / "link");
  for (const auto& planted : {std::string("file"), std::string("link")}) {
    SCOPED_TRACE(planted);
    if (planted == "file") std::ofstream(dir / "api.sock") << "not a socket";
    if (planted == "link") std::filesystem::create_symlink(dir / "precious", dir / "api.sock");
    const auto run = runCommand(
        {"timeout", "20", wctmonPath(), "run", "--config", writeConfig(dir, "127.0.0.1:0")});
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.exit_code, 124) << "it started:\n" << run.err << run.out;
    EXPECT_NE(run.err.find("is there and is not a socket"), std::string::npos) << run.err;
    const auto kept = std::filesystem::symlink_status(dir / "api.sock");
    EXPECT_EQ(kept.type(), planted == "file" ? std::filesystem::file_type::regular
                                             : std::filesystem::file_type::symlink);
    EXPECT_EQ(readFile(dir / "precious"), "an operator's file");
    std::filesystem::remove(dir / "api.sock");
  }
}

/// A TCP connection from `source` (a loopback address) to `target` ("127.0.0.1:PORT") that has
/// sent the HTTP/2 preface and an empty SETTINGS frame: a client that spoke. -1 on failure.
int spokenConnection(const std::string& source, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(std::stoi(target.substr(target.rfind(':') + 1))));
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  static const std::string kHello =
      std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\4\0\0\0\0\0", 9);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0 ||
      ::write(fd, kHello.data(), kHello.size()) != static_cast<ssize_t>(kHello.size())) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

/// Whether the server answered `fd` with HTTP/2 (its SETTINGS frame) within 5 s, rather than
/// closing it.
bool answeredWithHttp2(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return false;
  char frame[9];
  return ::recv(fd, frame, sizeof(frame), MSG_PEEK) == 9 && frame[3] == 4;  // type 4: SETTINGS
}

// 1,100 connections from one address, each having spoken HTTP/2 a moment ago, filled all 1,024
// places: no other client could connect until they went idle.
TEST(ApiSecurity, OneAddressHoldsAQuarterOfTheConnectionsAndAnotherStillGetsIn) {
  rlimit limit{4096, 4096};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  ApiService service;
  ASSERT_FALSE(service.tcpTarget().empty());
  std::vector<int> flood;
  for (int i = 0; i < 1100; ++i) {
    const int fd = spokenConnection("127.0.0.2", service.tcpTarget());
    if (fd >= 0) flood.push_back(fd);
  }
  ASSERT_EQ(flood.size(), 1100U);
  const int other = spokenConnection("127.0.0.1", service.tcpTarget());
  ASSERT_GE(other, 0);
  EXPECT_TRUE(answeredWithHttp2(other));
  // The flooder's connections beyond its 256 were closed at once.
  std::size_t answered = 0;
  for (const int fd : flood) answered += answeredWithHttp2(fd) ? 1 : 0;
  EXPECT_EQ(answered, 256U);
  for (const int fd : flood) ::close(fd);
  ::close(other);
}

// In a directory others may write in (/tmp, say), someone may replace the socket between its bind
// and its chmod with a link to a root-only file, and the service gave that file the socket's mode
// 0660 (a race won 5 times in 5).
TEST(ApiSecurity, ASocketDirectoryOthersMayWriteInIsRefusedAtStart) {
  TempDir dir("api-shared-dir");
  const auto shared = dir / "shared";
  std::filesystem::create_directories(shared);
  std::filesystem::permissions(shared, std::filesystem::perms(01777));
  const auto config = (dir / "wctmon.json").string();
  std::ofstream(config) << R"({"state_dir": ")" << (dir / "state").string()
                        << R"(", "metrics": {"enabled": false}, "api": {"listen": ["unix:)"
                        << (shared / "api.sock").string()
                        << R"("]}, "alerts": {"sink": "none"}, "targets": []})";
  const auto run = runCommand({"timeout", "20", wctmonPath(), "run", "--config", config});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("api.listen: the directory " + shared.string() +
                         " of the API socket: its mode 1777 lets other users write in it"),
            std::string::npos)
      << run.err;
  EXPECT_TRUE(std::filesystem::is_empty(shared));
}

// Token files were read as they were: through a link to /dev/zero until memory ran out, and a
// file another user planted in the state directory was taken as the admin token.
TEST(ApiSecurity, ATokenFileThatIsALinkAnotherUsersOrReadableByAllIsRefused) {
  struct Case {
    std::string what;
    std::function<void(const std::filesystem::path&)> plant;
    std::string said;
  };
  const std::vector<Case> cases{
      {"a link to /dev/zero",
       [](const auto& token) { std::filesystem::create_symlink("/dev/zero", token); },
       "is a symbolic link"},
      {"another user's",
       [](const auto& token) {
         std::ofstream(token) << std::string(64, 'a') << "\n";
         std::filesystem::permissions(token, std::filesystem::perms(0600));
         ASSERT_EQ(::chown(token.c_str(), 65534, 65534), 0);
       },
       "belongs to user 65534"},
      {"readable by all",
       [](const auto& token) {
         std::ofstream(token) << std::string(64, 'b') << "\n";
         std::filesystem::permissions(token, std::filesystem::perms(0644));
       },
       "lets others read or change it"},
      {"a megabyte",
       [](const auto& token) {
         std::ofstream(token) << std::string(1 << 20, 'c');
         std::filesystem::permissions(token, std::filesystem::perms(0600));
       },
       "more than a token"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir dir("api-token");
    std::filesystem::create_directories(dir / "state");
    c.plant(dir / "state" / "api-admin.token");
    const auto run = runCommand(
        {"timeout", "20", wctmonPath(), "run", "--config", writeConfig(dir, "127.0.0.1:0")});
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.exit_code, 124) << "it started:\n" << run.err << run.out;
    EXPECT_NE(run.err.find("api-admin.token: "), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(c.said), std::string::npos) << run.err;
  }
}

/// The pid of the service that runs with the configuration file `config`.
pid_t servicePid(const std::string& config) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (!std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    auto cmdline = readFile(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    // `wctmon run` execs wctmond, which keeps the pid and the arguments.
    if (cmdline.find("--config " + config + " ") != std::string::npos &&
        cmdline.find("python") == std::string::npos) {
      return static_cast<pid_t>(std::stoi(name));
    }
  }
  return -1;
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
bool acceptsOnLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool accepts =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return accepts;
}

std::size_t countOf(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ApiSecurity, AnAddressBeyondLoopbackWithoutTlsIsRefusedAtReloadAndTheServiceGoesOn) {
  ApiService service;
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  const auto config_path = (service.dir() / "wctmon.json").string();
  const pid_t pid = servicePid(config_path);
  ASSERT_GT(pid, 0);
  const auto original = readFile(config_path);
  auto config = json::parse(original);
  config["api"]["listen"].push_back("0.0.0.0:47787");
  std::ofstream(config_path) << config.dump();

  const std::string refused = "reload refused, keeping the running config";
  const std::string reason =
      "\"0.0.0.0:47787\" is not a loopback address: listening there needs TLS";
  ASSERT_EQ(::kill(pid, SIGHUP), 0);
  ASSERT_TRUE(waitFor([&] { return countOf(readFile(service.log()), refused) == 1; }, 10s))
      << readFile(service.log());
  auto log = readFile(service.log());
  const auto line =
      log.substr(log.find(refused), log.find('\n', log.find(refused)) - log.find(refused));
  EXPECT_NE(line.find(reason), std::string::npos) << line;
  EXPECT_NE(line.find("/api/listen/2"), std::string::npos) << line;

  const auto reload = admin(service, "ReloadConfig");
  EXPECT_EQ(reload["code"], "INVALID_ARGUMENT") << reload.dump();
  EXPECT_NE(reload.value("details", "").find(reason), std::string::npos) << reload.dump();
  EXPECT_EQ(countOf(readFile(service.log()), refused), 2U) << readFile(service.log());

  // Still up, on the addresses it had, and nowhere else.
  expectHealthy(service);
  EXPECT_FALSE(acceptsOnLoopback(47787));
  log = readFile(service.log());
  EXPECT_EQ(log.find("0.0.0.0:47787\n"), std::string::npos);
  EXPECT_EQ(countOf(log, "API listening on"), 1U) << log;
  // And a good file is taken again.
  std::ofstream(config_path) << original;
  const auto again = admin(service, "ReloadConfig");
  EXPECT_EQ(again["code"], "OK") << again.dump();
  expectNoCrashIn(readFile(service.log()));
}

TEST(ApiSecurity, OversizeMalformedUnknownAndLateCallsGetTheirStatusAndTheServiceStaysHealthy) {
  ApiService service;
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  FixtureProcess abba("mutex-abba", "", service.tag());

  // Over 64 KiB: refused whole, whatever the call, the token or its lack.
  const json huge = {{"target", {{"name", std::string(100 * 1024, 'n')}, {"exe", "x"}}}};
  for (const auto& target : {service.unixTarget(), service.tcpTarget()}) {
    SCOPED_TRACE(target);
    const auto added = call(service, target, service.adminToken(), "AddTarget", huge);
    EXPECT_EQ(added["code"], "RESOURCE_EXHAUSTED") << added.dump();
  }
  for (const auto& token : {service.readerToken(), std::string("-")}) {
    const auto raw = call(service, service.unixTarget(), token, "GetStatus", {},
                          {"--raw=00", "--repeat=" + std::to_string(65 * 1024 + 1)});
    EXPECT_EQ(raw["code"], "RESOURCE_EXHAUSTED") << raw.dump();
  }
  // Under the limit it is read, and judged on what it says.
  const json large = {{"target", {{"name", std::string(60 * 1024, 'n')}}}};
  const auto judged = admin(service, "AddTarget", large);
  EXPECT_EQ(judged["code"], "INVALID_ARGUMENT") << judged.dump().substr(0, 300);

  // Bytes that are no AddTargetRequest: a field number 0, a length past the end, a varint that
  // never ends, a proto3 string (Target.name) that is not UTF-8, and groups nested 101 deep (one
  // more than protobuf reads). gRPC (1.51) answered these with UNIMPLEMENTED and no message, as
  // though the method did not exist: the service reads its requests itself and says what is
  // wrong.
  std::string nested;
  for (int i = 0; i < 101; ++i) nested += "7b";  // field 15, start group
  for (int i = 0; i < 101; ++i) nested += "7c";  // field 15, end group
  for (const std::string& hex :
       {std::string("00"), std::string("0a05"), std::string("08ffffffffffffffffffff01"),
        std::string("0a040a02c0af"), nested}) {
    SCOPED_TRACE(hex.substr(0, 24));
    const auto malformed = admin(service, "AddTarget", {}, {"--raw=" + hex});
    EXPECT_EQ(malformed.value("code", ""), "INVALID_ARGUMENT") << malformed.dump();
    EXPECT_NE(
        malformed.value("details", "").find("could not be read as a wctmon.v1.AddTargetRequest"),
        std::string::npos)
        << malformed.dump();
  }
  for (const std::string method : {"GetStatus", "ListIncidents", "GetIncident", "WatchIncidents",
                                   "/grpc.health.v1.Health/Check"}) {
    SCOPED_TRACE(method);
    const auto deep = admin(service, method, {}, {"--raw=" + nested});
    EXPECT_EQ(deep.value("code", ""), "INVALID_ARGUMENT") << deep.dump();
  }
  // Without a token, the token is what is wrong.
  const auto stranger =
      call(service, service.unixTarget(), "-", "GetStatus", {}, {"--raw=" + nested});
  EXPECT_EQ(stranger.value("code", ""), "UNAUTHENTICATED") << stranger.dump();
  EXPECT_EQ(admin(service, "ListTargets")["response"]["targets"].size(), 1U);
  // A list filter with an enum value this service does not know (a newer client's state 7, kind
  // 99) is refused, not read as "any".
  for (const std::string hex : {"0807", "1063"}) {
    SCOPED_TRACE(hex);
    const auto filtered = admin(service, "ListIncidents", {}, {"--raw=" + hex});
    EXPECT_EQ(filtered["code"], "INVALID_ARGUMENT") << filtered.dump();
  }

  for (const std::string path : {"/wctmon.v1.Monitor/DropIncidents", "/wctmon.v9.Monitor/GetStatus",
                                 "/grpc.health.v1.Health/Kill"}) {
    SCOPED_TRACE(path);
    const auto unknown = admin(service, path, {}, {"--raw="});
    EXPECT_EQ(unknown["code"], "UNIMPLEMENTED") << unknown.dump();
  }

  const json analyze = {{"pid", abba.pid()}, {"capture", true}};
  const auto late = admin(service, "AnalyzeProcess", analyze, {"--timeout=0.000001"});
  EXPECT_EQ(late["code"], "DEADLINE_EXCEEDED") << late.dump();
  // Deadlines that run out while the service works: it answers into calls that are gone.
  for (int i = 0; i < 3; ++i) {
    const auto tight = admin(service, "AnalyzeProcess", analyze, {"--timeout=0.003"});
    EXPECT_TRUE(tight["code"] == "DEADLINE_EXCEEDED" || tight["code"] == "OK") << tight.dump();
  }

  expectHealthy(service);
  const auto analysis = admin(service, "AnalyzeProcess", analyze);
  ASSERT_EQ(analysis["code"], "OK") << analysis.dump();
  EXPECT_EQ(analysis["response"]["deadlocks"].size(), 1U);
  expectNoCrashIn(readFile(service.log()));
  const auto [took, status] = service.terminate();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(took, 5s);
}

/// The names a fixture gave itself, as they must arrive: what is not UTF-8 replaced, one U+FFFD
/// per maximal ill-formed subpart; every other character as it is.
struct Names {
  std::string process;
  std::map<int, std::string> threads;  // of the cycle, by tid
};

/// The sequences of the fixtures that are not UTF-8: none may reach the log.
const std::vector<std::string> kIllFormed = {"\xf4\x90\x80\x80", "\xed\xa0\x80", "\xc0\xaf"};

/// Thread nodes of `chains` of process `pid`: tid → name; each node names the process as
/// `process`.
std::map<int, std::string> threadNames(const json& chains, pid_t pid, const std::string& process) {
  std::map<int, std::string> names;
  for (const auto& chain : chains) {
    for (const auto& node : chain["nodes"]) {
      if (node.value("object_type", "") != "OBJECT_TYPE_THREAD") continue;
      EXPECT_EQ(node.value("pid", 0), pid) << node.dump();
      EXPECT_EQ(node.value("process_name", ""), process) << node.dump();
      names[node["tid"].get<int>()] = node.value("thread_name", "");
    }
  }
  return names;
}

/// The thread names of `chains`: each thread of the cycle of `names` there, named as it must be;
/// the main thread, when there (blocked behind the cycle), named as the process; no other but
/// the fixture's "reporter".
void expectThreadNames(const json& chains, pid_t pid, const Names& names) {
  const auto got = threadNames(chains, pid, names.process);
  for (const auto& [tid, name] : names.threads) {
    ASSERT_TRUE(got.contains(tid)) << tid << " not in " << chains.dump();
    EXPECT_EQ(got.at(tid), name) << chains.dump();
  }
  for (const auto& [tid, name] : got) {
    if (tid == pid) {
      EXPECT_EQ(name, names.process) << chains.dump();
    } else if (!names.threads.contains(tid)) {
      EXPECT_EQ(name, "reporter") << chains.dump();
    }
  }
}

/// An incident of `pid` as ListIncidents, GetIncident and WatchIncidents give it.
void expectIncidentNames(const json& incident, pid_t pid, const Names& names, bool whole) {
  EXPECT_EQ(incident.value("pid", 0), pid) << incident.dump();
  EXPECT_EQ(incident.value("kind", ""), "INCIDENT_KIND_DEADLOCK");
  EXPECT_EQ(incident.value("target", ""), "fixtures");
  EXPECT_EQ(incident.value("process_name", ""), names.process) << incident.dump();
  ASSERT_EQ(incident["processes"].size(), 1U) << incident.dump();
  EXPECT_EQ(incident["processes"][0].value("name", ""), names.process);
  // The summary names the process and the threads of the cycle as the fields do.
  const std::string summary = incident.value("summary", "");
  EXPECT_NE(summary.find(names.process), std::string::npos) << summary;
  for (const auto& [tid, name] : names.threads) {
    EXPECT_NE(summary.find(std::to_string(tid) + "] " + name), std::string::npos) << summary;
  }
  if (whole) expectThreadNames(incident["chains"], pid, names);
}

TEST(ApiSecurity, ThreadNamesOfAnyBytesArriveThroughEveryRpcAsUtf8WithTheirControlCharacters) {
  ApiService service;
  // The check below is worth something only if the client's protobuf refuses a string that is
  // not UTF-8, as proto3 requires: it does, so every response that parses had none.
  const auto canary = admin(service, "utf8-canary");
  ASSERT_EQ(canary["response"]["refuses_ill_formed"], true) << canary.dump();
  ASSERT_EQ(canary["response"]["accepts_well_formed"], true) << canary.dump();

  FixtureProcess ill_formed("ill-formed-names", "", service.tag());
  FixtureProcess hostile("hostile-names", "", service.tag());
  const std::string fffd = "\xef\xbf\xbd";
  // A code point past U+10FFFF (4 subparts), a surrogate (3), an overlong '/' (2); then an OSC
  // that sets a terminal's title, a screen clear, and a C1 CSI with a right-to-left override.
  const std::map<pid_t, Names> expected = {
      {ill_formed.pid(),
       {"main" + fffd + fffd + fffd + fffd,
        {{ill_formed.tid("a"), "a" + fffd + fffd + fffd},
         {ill_formed.tid("b"), "b" + fffd + fffd}}}},
      {hostile.pid(),
       {"m\xc2\x9b"
        "31m\xe2\x80\xae",
        {{hostile.tid("a"), "a\x1b]0;pwn\x07"}, {hostile.tid("b"), "b\x1b[2J\x1b[H"}}}}};

  /// A call with the response's bytes as well, parsed by the client from them; every string
  /// field among them well-formed UTF-8 (the client reads each off the wire format: a search of
  /// the bytes for the fixtures' sequences would find them in the varints of registers).
  const auto read = [&](const std::string& method, const json& request = json::object()) {
    auto r = admin(service, method, request, {"--wire"});
    EXPECT_EQ(r["code"], "OK") << method << ": " << r.dump();
    EXPECT_TRUE(r.contains("ill_formed_strings")) << method << ": " << r.dump();
    EXPECT_EQ(r.value("ill_formed_strings", json::array()), json::array()) << method;
    return r["response"];
  };

  std::map<pid_t, json> listed;
  ASSERT_TRUE(waitFor(
      [&] {
        for (const auto& [pid, names] : expected) {
          const auto r =
              admin(service, "ListIncidents", {{"state", "INCIDENT_STATE_OPEN"}, {"pid", pid}});
          if (r["code"] != "OK" || r["response"]["incidents"].empty()) return false;
        }
        return true;
      },
      20s))
      << readFile(service.log());

  // The status counts what the feed has; it follows the store by the moment between the write
  // of a record and its publication.
  json status;
  waitFor(
      [&] {
        status = read("GetStatus");
        return status["open_incidents"][0].value("count", "") == "2";
      },
      5s);
  EXPECT_EQ(status["open_incidents"][0]["count"], "2") << status.dump();

  // The process names may be read before the fixture renames itself (the service found it
  // between its exec and its prctl): the next discovery reads them again, and the sample after
  // it renames the open incident, its summary included (seconds on a loaded machine).
  json processes;
  waitFor(
      [&] {
        processes = read("ListProcesses")["processes"];
        const bool renamed = std::all_of(processes.begin(), processes.end(), [&](const json& p) {
          return expected.at(p["pid"].get<pid_t>()).process == p.value("name", "");
        });
        return renamed && std::all_of(expected.begin(), expected.end(), [&](const auto& e) {
                 const auto open =
                     read("ListIncidents", {{"state", "INCIDENT_STATE_OPEN"}, {"pid", e.first}});
                 return !open["incidents"].empty() &&
                        open["incidents"][0].value("process_name", "") == e.second.process;
               });
      },
      20s);
  ASSERT_EQ(processes.size(), 2U) << processes.dump();
  for (const auto& p : processes) {
    const auto& names = expected.at(p["pid"].get<pid_t>());
    EXPECT_EQ(p.value("name", ""), names.process) << p.dump();
    EXPECT_EQ(p.value("target", ""), "fixtures");
    EXPECT_EQ(p.value("state", ""), "deadlocked");
  }

  for (const auto& [pid, names] : expected) {
    SCOPED_TRACE(names.process);
    const auto analysis = read("AnalyzeProcess", {{"pid", pid}});
    EXPECT_EQ(analysis.value("pid", 0), pid);
    EXPECT_EQ(analysis.value("process_name", ""), names.process) << analysis.dump();
    EXPECT_EQ(analysis["deadlocks"].size(), 1U);
    expectThreadNames(analysis["chains"], pid, names);

    const auto incidents =
        read("ListIncidents", {{"state", "INCIDENT_STATE_OPEN"}, {"pid", pid}})["incidents"];
    ASSERT_EQ(incidents.size(), 1U) << incidents.dump();
    expectIncidentNames(incidents[0], pid, names, false);
    const auto whole = read("GetIncident", {{"id", incidents[0]["id"]}});
    expectIncidentNames(whole, pid, names, true);
  }

  // The stream: both open incidents, each event parsed from its bytes.
  FixtureProcess watcher(
      std::vector<std::string>{"/usr/bin/python3", WCTMON_API_CLIENT, "--wire", WCTMON_PROTO_DIR,
                               service.dir().path().string(), service.unixTarget(),
                               service.readerToken(), "watch", json{{"events", 2}}.dump()},
      20s);
  std::set<pid_t> seen;
  for (int i = 0; i < 2; ++i) {
    const auto line = watcher.nextLine(20s);
    ASSERT_FALSE(line.empty());
    const auto event = json::parse(line);
    ASSERT_EQ(event.value("type", ""), "TYPE_EXISTING") << line;
    EXPECT_TRUE(event.contains("ill_formed_strings")) << line;
    EXPECT_EQ(event.value("ill_formed_strings", json::array()), json::array()) << line;
    const pid_t pid = event["incident"]["pid"];
    ASSERT_TRUE(expected.contains(pid)) << line;
    expectIncidentNames(event["incident"], pid, expected.at(pid), true);
    seen.insert(pid);
  }
  EXPECT_EQ(seen.size(), 2U);
  EXPECT_EQ(json::parse(watcher.nextLine(10s)).value("code", ""), "OK");
  const auto log = readFile(service.log());
  expectNoCrashIn(log);
  // The service's log names the incidents with the names made inert: no escape sequence, no
  // ill-formed UTF-8 from the fixtures reaches a terminal that shows the log.
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  EXPECT_EQ(log.find("\xc2\x9b"), std::string::npos) << log;  // U+009B, the one-byte CSI
  for (const auto& bad : kIllFormed) EXPECT_EQ(log.find(bad), std::string::npos) << log;
  EXPECT_NE(log.find("\\x1b"), std::string::npos) << log;  // shown as the four characters
}

TEST(ApiSecurity, AbuseOfTheApiIsShedAndAWellBehavedClientAndSamplingGoOn) {
  // tests/e2e/api_abuse.py: 1,000 idle connections, 50 that send bytes that are no HTTP/2, 200
  // watchers that never read, a client that opens and cancels streams in a loop, callers with
  // no token or a wrong one; the well-behaved client's GetStatus calls alone, then beside them.
  ApiService service(R"("watch_queue": 4, )");
  ASSERT_FALSE(service.tcpTarget().empty()) << readFile(service.log());
  const auto descriptors_before = descriptorsOf(service.pid());
  const auto memory_before = residentBytesOf(service.pid());
  std::optional<FixtureProcess> abba;
  std::thread deadlock([&] {
    // Formed while the abuse runs: sampling must catch it as it would without.
    std::this_thread::sleep_for(4s);
    abba.emplace("mutex-abba", "", service.tag());
  });
  const auto r = runCommand({"/usr/bin/python3", WCTMON_API_ABUSE, WCTMON_PROTO_DIR,
                             service.dir().path().string(), service.tcpTarget(), service.socket(),
                             service.readerToken(), "3"});
  deadlock.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto figures = json::parse(r.out);
  RecordProperty("figures", figures.dump());
  std::cout << figures.dump() << "\n";
  // The well-behaved client got every answer, alone and beside the abuse.
  for (const char* phase : {"alone", "abused"}) {
    SCOPED_TRACE(phase);
    EXPECT_GT(figures[phase]["calls"].get<int>(), 10);
    EXPECT_TRUE(figures[phase]["failures"].empty()) << figures.dump();
  }
  EXPECT_GE(figures["idle_connections"].get<int>(), 1000);
  EXPECT_GT(figures["opened_and_cancelled"].get<int>(), 0);
  // The hand-written rapid reset was cut off, and the service did not pile up its calls: gRPC
  // alone grew by 100 MB a second under it and answered nobody.
  EXPECT_GT(figures["rapid_reset"]["cut_off"].get<int>(), 0) << figures.dump();
  const auto memory_after = residentBytesOf(service.pid());
  EXPECT_LT(memory_after, memory_before + (150U << 20U))
      << memory_before << " bytes resident before, " << memory_after << " after";
  const auto metrics = httpGet("http://" + service.metricsAddress() + "/metrics");
  for (const char* reason : {"not_http2", "rapid_reset"}) {
    const auto line =
        std::string("wctmon_api_connections_closed_total{reason=\"") + reason + "\"} ";
    const auto at = metrics.find(line);
    ASSERT_NE(at, std::string::npos) << metrics;
    EXPECT_GT(std::stod(metrics.substr(at + line.size())), 0) << reason << "\n" << metrics;
  }
  // Strangers are told who they are not: no token, or a token that is none, is UNAUTHENTICATED.
  for (const auto& [code, count] : figures["strangers"].items()) {
    EXPECT_EQ(code, "UNAUTHENTICATED") << figures.dump();
  }
  // A watcher that never reads is cut off once its queue is full, or still waits for its first
  // events: never refused for others' sake, never OK.
  for (const auto& [code, count] : figures["watchers"].items()) {
    EXPECT_TRUE(code == "OPEN" || code == "RESOURCE_EXHAUSTED") << figures.dump();
  }
  // Sampling went on: the deadlock formed under the abuse is an incident.
  ASSERT_TRUE(abba.has_value());
  ASSERT_TRUE(waitFor(
      [&] {
        const auto listed = call(service, service.unixTarget(), service.readerToken(),
                                 "ListIncidents", {{"pid", abba->pid()}});
        return listed["code"] == "OK" && listed["response"].contains("incidents") &&
               listed["response"]["incidents"].size() == 1;
      },
      15s))
      << readFile(service.log());
  // What the abusers held is given back once they are gone.
  EXPECT_TRUE(waitFor([&] { return descriptorsOf(service.pid()) < descriptors_before + 20; }, 30s))
      << descriptorsOf(service.pid()) << " descriptors, " << descriptors_before << " before";
  expectHealthy(service);
  expectNoCrashIn(readFile(service.log()));
}

}  // namespace
}  // namespace wctmon
