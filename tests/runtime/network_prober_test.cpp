// The prober against real servers on loopback: a TCP listener, HTTP servers that answer, refuse,
// chunk or say nothing, an HTTPS server (openssl s_server), and an in-process gRPC server with
// the standard health service. Each verdict and its reason, and every probe ends by its deadline.
#include "runtime/network_prober.h"

#include <arpa/inet.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

namespace wctmon {
namespace {

using namespace std::chrono_literals;

/// The platform's probes are not these tests' business.
class NoLocalProber final : public LocalProber {
 public:
  ProbeOutcome connectUnix(const std::string&, std::chrono::milliseconds) override { return {}; }
  ProbeOutcome runCommand(const ProbeConfig&) override { return {}; }
};

/// A listening TCP socket on 127.0.0.1 at a port of the system's choosing; with `answer`, a
/// thread accepts each connection, reads the request and writes `answer` (nothing at all when
/// empty: a server that stopped answering), then closes.
class Server {
 public:
  explicit Server(std::string answer = "", bool accept = true) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    if (accept) thread_ = std::thread([this] { serve(); });
  }
  ~Server() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string request() {
    std::lock_guard lock(mutex_);
    return request_;
  }

 private:
  void serve() {
    while (!stop_) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      char buffer[4096];
      const auto n = ::recv(c, buffer, sizeof(buffer), 0);
      {
        std::lock_guard lock(mutex_);
        request_.assign(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
      }
      if (answer_.empty()) {
        // Holds the connection without a word until the test ends.
        while (!stop_) std::this_thread::sleep_for(10ms);
      } else {
        (void)!::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      }
      ::close(c);
    }
  }

  std::string answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string request_;
  std::thread thread_;
};

class NetworkProberTest : public ::testing::Test {
 protected:
  NetworkProberTest()
      : work_(boost::asio::make_work_guard(io_)),
        runner_([this] { io_.run(); }),
        prober_(
            io_, [](Task t) { std::thread(std::move(t)).detach(); }, local_) {}
  ~NetworkProberTest() override {
    work_.reset();
    io_.stop();
    runner_.join();
  }

  ProbeOutcome probe(const ProbeConfig& p) {
    std::promise<ProbeOutcome> done;
    prober_.asyncProbe(p, [&done](ProbeOutcome o) { done.set_value(std::move(o)); });
    auto f = done.get_future();
    // Every probe ends by its deadline, with a little room for a loaded machine.
    EXPECT_EQ(f.wait_for(p.timeout + 2s), std::future_status::ready) << p.describe();
    return f.get();
  }

  static ProbeConfig http(int port, std::string path = "/healthz") {
    ProbeConfig p;
    p.type = ProbeConfig::Type::kHttp;
    p.url = parseHttpUrl("http://127.0.0.1:" + std::to_string(port) + path).value();
    p.timeout = 500ms;
    return p;
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread runner_;
  NoLocalProber local_;
  NetworkProber prober_;
};

TEST_F(NetworkProberTest, TcpConnectPassesWhereSomeoneListensAndSaysWhyNotElsewhere) {
  Server listening("", false);
  ProbeConfig p;
  p.type = ProbeConfig::Type::kTcp;
  p.endpoint = {"127.0.0.1", listening.port()};
  auto o = probe(p);
  EXPECT_TRUE(o.passed) << o.detail;
  EXPECT_EQ(o.detail, "connected");
  EXPECT_GT(o.latency.count(), 0);

  int closed_port = 0;
  {
    Server gone("", false);
    closed_port = gone.port();
  }
  p.endpoint.port = closed_port;
  o = probe(p);
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.detail.find("refused"), std::string::npos) << o.detail;

  p.endpoint.host = "no-such-host.invalid";
  o = probe(p);
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.detail.find("cannot resolve"), std::string::npos) << o.detail;
}

TEST_F(NetworkProberTest, HttpPassesOnTheExpectedStatusAndBodyOnly) {
  Server ok("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nstatus=up");
  auto o = probe(http(ok.port()));
  EXPECT_TRUE(o.passed) << o.detail;
  EXPECT_EQ(o.detail, "200 OK");
  EXPECT_EQ(ok.request().rfind("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:", 0), 0U) << ok.request();

  auto p = http(ok.port());
  p.body_contains = "status=up";
  EXPECT_TRUE(probe(p).passed);
  p.body_contains = "status=down";
  o = probe(p);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "200 OK, without \"status=down\" in the body");

  Server unavailable("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
  o = probe(http(unavailable.port()));
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "503 Service Unavailable (expected 200)");
  p = http(unavailable.port());
  p.status = 503;
  EXPECT_TRUE(probe(p).passed) << "the status asked for";

  Server chunked("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nlive\r\n0\r\n\r\n");
  p = http(chunked.port());
  p.body_contains = "live";
  EXPECT_TRUE(probe(p).passed);

  Server garbage("SSH-2.0-OpenSSH_9.2\r\n");
  o = probe(http(garbage.port()));
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "not an HTTP answer");
}

TEST_F(NetworkProberTest, AServerThatAcceptsButNeverAnswersFailsAtTheDeadline) {
  Server silent("");
  const auto start = std::chrono::steady_clock::now();
  const auto o = probe(http(silent.port()));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "timed out after 500 ms waiting for the answer");
  EXPECT_GE(took, 490ms);
  EXPECT_LT(took, 1500ms);
}

TEST_F(NetworkProberTest, HttpsIsProbedWithoutCheckingTheCertificate) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("wctmon-https-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto key = (dir / "key.pem").string();
  const auto cert = (dir / "cert.pem").string();
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                         "-keyout " +
                         key + " -out " + cert + " >/dev/null 2>&1")
                            .c_str()),
            0);
  int port = 0;
  {
    Server pick("", false);
    port = pick.port();
  }
  const pid_t server = ::fork();
  if (server == 0) {
    ::execlp("openssl", "openssl", "s_server", "-quiet", "-www", "-accept",
             std::to_string(port).c_str(), "-cert", cert.c_str(), "-key", key.c_str(), nullptr);
    _exit(127);
  }
  ProbeConfig p;
  p.type = ProbeConfig::Type::kHttp;
  p.url = parseHttpUrl("https://localhost:" + std::to_string(port) + "/").value();
  p.timeout = 1s;
  ProbeOutcome o;
  for (int i = 0; i < 50 && !o.passed; ++i) {
    o = probe(p);
    if (!o.passed) std::this_thread::sleep_for(100ms);
  }
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(o.passed) << o.detail;
  EXPECT_EQ(o.detail, "200 ok");
}

TEST_F(NetworkProberTest, GrpcHealthChecksTheServingStatus) {
  grpc::EnableDefaultHealthCheckService(true);
  int port = 0;
  grpc::ServerBuilder builder;
  // A server needs a service of its own to serve the health service beside it.
  grpc::CallbackGenericService generic;
  builder.RegisterCallbackGenericService(&generic);
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  auto server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ProbeConfig p;
  p.type = ProbeConfig::Type::kGrpcHealth;
  p.endpoint = {"127.0.0.1", port};
  p.timeout = 1s;
  auto o = probe(p);
  EXPECT_TRUE(o.passed) << o.detail;
  EXPECT_EQ(o.detail, "SERVING");

  server->GetHealthCheckService()->SetServingStatus(false);
  o = probe(p);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "NOT_SERVING");

  p.service = "no.such.Service";
  o = probe(p);
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.detail.find("health check failed"), std::string::npos) << o.detail;

  server->Shutdown();
  p.service.clear();
  p.timeout = 300ms;
  o = probe(p);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail, "timed out after 300 ms");
}

}  // namespace
}  // namespace wctmon
