// The HTTP alert sinks against a receiver on loopback that records what it is sent and answers
// what the test says: Alertmanager's alerts (labels that end what they started, refreshes), a
// web hook's JSON and bearer token, and how each failure is told apart (try again or not).
#include "runtime/http_alert_sinks.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "model/calendar.h"
#include "runtime/http_exchange.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using nlohmann::json;
using namespace std::chrono_literals;

/// One request as the receiver read it.
struct Received {
  std::string line;
  std::string authorization;
  std::string body;
};

/// An HTTP server on 127.0.0.1 at a port of the system's choosing, one connection at a time:
/// answers each request with the status set, or (silent) never answers.
class Receiver {
 public:
  Receiver() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~Receiver() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      changed_.notify_all();
    }
    // A blocking accept is not woken by closing its socket: a connection wakes it, and it sees
    // that it is to stop.
    boost::system::error_code ignored;
    tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }

  [[nodiscard]] std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + path;
  }
  void answer(int status, std::string body = "") {
    std::lock_guard lock(mutex_);
    status_ = status;
    body_ = std::move(body);
  }
  void silence() {
    std::lock_guard lock(mutex_);
    silent_ = true;
  }
  /// What it was sent so far.
  std::vector<Received> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  void serve() {
    for (;;) {
      tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec) return;
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
      asio::streambuf buffer;
      asio::read_until(socket, buffer, "\r\n\r\n", ec);
      if (ec) continue;
      std::string text(asio::buffers_begin(buffer.data()), asio::buffers_end(buffer.data()));
      const auto head_end = text.find("\r\n\r\n") + 4;
      Received r;
      r.line = text.substr(0, text.find("\r\n"));
      std::size_t length = 0;
      std::istringstream headers(text.substr(0, head_end));
      for (std::string h; std::getline(headers, h);) {
        if (!h.empty() && h.back() == '\r') h.pop_back();
        if (h.starts_with("Content-Length: ")) length = std::stoul(h.substr(16));
        if (h.starts_with("Authorization: ")) r.authorization = h.substr(15);
      }
      r.body = text.substr(head_end);
      if (r.body.size() < length) {
        std::string rest(length - r.body.size(), '\0');
        asio::read(socket, asio::buffer(rest), ec);
        r.body += rest;
      }
      std::unique_lock lock(mutex_);
      received_.push_back(r);
      if (silent_) {
        // Holds the connection without a word until the test ends.
        changed_.wait(lock, [&] { return stopping_; });
        return;
      }
      const std::string answer = "HTTP/1.1 " + std::to_string(status_) +
                                 " X\r\nContent-Length: " + std::to_string(body_.size()) +
                                 "\r\nConnection: close\r\n\r\n" + body_;
      lock.unlock();
      asio::write(socket, asio::buffer(answer), ec);
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int status_ = 200;
  std::string body_;
  bool silent_ = false;
  bool stopping_ = false;
  std::vector<Received> received_;
};

std::shared_ptr<Incident> deadlock() {
  auto i = std::make_shared<Incident>();
  i->id = 42;
  i->kind = IncidentKind::kDeadlock;
  i->target = "web";
  i->process_name = "java";
  i->process.pid = Pid{1234};
  i->threads = {{Pid{1234}, Tid{1235}}, {Pid{1234}, Tid{1236}}};
  i->opened_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  i->summary = "deadlock: 2 threads of java (1234) wait for each other";
  return i;
}

Alert opened(std::shared_ptr<const Incident> i) {
  Alert a;
  a.kind = AlertKind::kDeadlockDetected;
  a.severity = AlertSeverity::kCritical;
  a.message = i->summary;
  a.target = i->target;
  a.fields = {{"THREADS", "1234:1235 1234:1236"}};
  a.incident = std::move(i);
  return a;
}

Alert resolved(std::shared_ptr<Incident> i) {
  i->state = IncidentState::kResolved;
  i->resolved_at = i->opened_at + 90s;
  Alert a = opened(i);
  a.kind = AlertKind::kIncidentResolved;
  a.severity = AlertSeverity::kInfo;
  a.message = "deadlock resolved (the process exited)";
  return a;
}

Alert service(AlertKind kind, AlertSeverity severity = AlertSeverity::kError) {
  Alert a;
  a.kind = kind;
  a.severity = severity;
  a.message = "the store fails";
  return a;
}

HttpSinkTarget at(const std::string& url, std::chrono::milliseconds timeout = 5s) {
  return {*parseHttpUrl(url), "", "", timeout};
}

TEST(AlertmanagerSink, AnIncidentIsOneAlertThatItsResolutionEndsWithTheSameLabels) {
  Receiver am;
  AlertmanagerSink sink(at(am.url("/am")), "db1");
  auto incident = deadlock();
  ASSERT_TRUE(sink.send(opened(incident)).ok());
  EXPECT_EQ(sink.firing(), 1U);
  ASSERT_TRUE(sink.send(resolved(incident)).ok());
  EXPECT_EQ(sink.firing(), 0U);

  const auto got = am.received();
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].line, "POST /am/api/v2/alerts HTTP/1.1");
  const auto first = json::parse(got[0].body);
  const auto second = json::parse(got[1].body);
  ASSERT_EQ(first.size(), 1U);
  const json labels = {{"alertname", "WctmonDeadlock"},
                       {"severity", "critical"},
                       {"kind", "deadlock"},
                       {"target", "web"},
                       {"process", "java"},
                       {"pid", "1234"},
                       {"incident_id", "42"},
                       {"host", "db1"}};
  EXPECT_EQ(first[0]["labels"], labels);
  EXPECT_EQ(second[0]["labels"], labels);
  EXPECT_EQ(first[0]["startsAt"], "2027-01-15T08:00:00.000Z");
  EXPECT_EQ(first[0]["annotations"]["summary"], incident->summary);
  EXPECT_EQ(first[0]["annotations"]["description"], "threads 1234:1235 1234:1236");
  // Firing: an end a few minutes ahead, pushed on by each refresh. Resolved: its own end.
  EXPECT_GT(first[0]["endsAt"].get<std::string>(), "2026");
  EXPECT_EQ(second[0]["endsAt"], "2027-01-15T08:01:30.000Z");
}

TEST(AlertmanagerSink, ARefreshSendsEveryFiringAlertAgainAndOneNotSentIsSentThen) {
  Receiver am;
  AlertmanagerSink sink(at(am.url()), "db1");
  am.answer(503, "busy");
  const auto refused = sink.send(opened(deadlock()));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kIo);
  EXPECT_EQ(refused.error().message, "Alertmanager answered 503: busy");
  am.answer(200);
  auto other = deadlock();
  other->id = 43;
  ASSERT_TRUE(sink.send(opened(other)).ok());
  ASSERT_TRUE(sink.refresh().ok());
  const auto got = am.received();
  ASSERT_EQ(got.size(), 3U);
  const auto all = json::parse(got[2].body);
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0]["labels"]["incident_id"], "42");
  EXPECT_EQ(all[1]["labels"]["incident_id"], "43");
}

TEST(AlertmanagerSink, AnIncidentOpenAcrossARestartFiresAgainFromItsOpeningUntilItResolves) {
  Receiver am;
  AlertmanagerSink sink(at(am.url()), "db1");
  auto incident = deadlock();
  ASSERT_TRUE(sink.resume(opened(incident)).ok());
  EXPECT_EQ(sink.firing(), 1U);
  ASSERT_TRUE(sink.refresh().ok());
  ASSERT_TRUE(sink.send(resolved(incident)).ok());
  EXPECT_EQ(sink.firing(), 0U);
  const auto got = am.received();
  ASSERT_EQ(got.size(), 3U);
  for (const auto& post : got) {
    const auto alerts = json::parse(post.body);
    ASSERT_EQ(alerts.size(), 1U);
    EXPECT_EQ(alerts[0]["labels"]["incident_id"], "42");
    EXPECT_EQ(alerts[0]["startsAt"], "2027-01-15T08:00:00.000Z");
  }
  EXPECT_EQ(json::parse(got[2].body)[0]["endsAt"], "2027-01-15T08:01:30.000Z");
}

TEST(WebhookSink, AnIncidentOpenAcrossARestartIsNotPostedTwice) {
  Receiver hook;
  WebhookSink sink(at(hook.url("/hook")), "db1");
  ASSERT_TRUE(sink.resume(opened(deadlock())).ok());
  EXPECT_TRUE(hook.received().empty());
}

TEST(AlertmanagerSink, AStoreFaultFiresUntilTheStoreRecoversAndTheStartIsNoAlert) {
  const auto now = std::chrono::system_clock::now();
  const auto fault = toAlertmanager(service(AlertKind::kStoreFault), "db1", now);
  const auto recovered =
      toAlertmanager(service(AlertKind::kStoreRecovered, AlertSeverity::kInfo), "db1", now);
  ASSERT_TRUE(fault && recovered);
  EXPECT_EQ(fault->key, recovered->key);
  EXPECT_EQ(fault->alert["labels"], recovered->alert["labels"]);
  EXPECT_FALSE(fault->once);
  EXPECT_TRUE(recovered->once);
  EXPECT_TRUE(recovered->alert.contains("endsAt"));
  // An event without an end of its own lasts kEventLifetime.
  const auto config = toAlertmanager(service(AlertKind::kConfigError), "db1", now);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->alert["labels"]["alertname"], "WctmonConfigError");
  EXPECT_EQ(config->alert["endsAt"], utcRfc3339(now + kEventLifetime));
  EXPECT_FALSE(toAlertmanager(service(AlertKind::kServiceStarted), "db1", now));
}

TEST(WebhookSink, EachAlertIsPostedAsJsonWithTheIncidentAndTheBearerToken) {
  Receiver hook;
  testing::TempDir dir("webhook");
  std::ofstream(dir / "token") << "s3cret\n";
  auto target = at(hook.url("/hooks/wctmon?team=db"));
  target.token_file = (dir / "token").string();
  WebhookSink sink(target, "db1");
  ASSERT_TRUE(sink.send(opened(deadlock())).ok());
  const auto got = hook.received();
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].line, "POST /hooks/wctmon?team=db HTTP/1.1");
  EXPECT_EQ(got[0].authorization, "Bearer s3cret");
  const auto body = json::parse(got[0].body);
  EXPECT_EQ(body["version"], 1);
  EXPECT_EQ(body["event"], "deadlock_detected");
  EXPECT_EQ(body["message_id"], messageId(AlertKind::kDeadlockDetected));
  EXPECT_EQ(body["severity"], "critical");
  EXPECT_EQ(body["host"], "db1");
  EXPECT_EQ(body["target"], "web");
  EXPECT_EQ(body["fields"]["THREADS"], "1234:1235 1234:1236");
  EXPECT_EQ(body["incident"]["id"], "42");
  EXPECT_EQ(body["incident"]["kind"], "INCIDENT_KIND_DEADLOCK");

  // A token file that cannot be read: nothing is sent, and it may be there later.
  std::filesystem::remove(dir / "token");
  const auto failed = sink.send(opened(deadlock()));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kIo);
  EXPECT_EQ(hook.received().size(), 1U);
}

TEST(WebhookSink, ARefusalIsFinalAndNoAnswerIsForLater) {
  Receiver hook;
  WebhookSink sink(at(hook.url("/h"), 300ms), "db1");
  hook.answer(401, "who are you\nmore");
  const auto refused = sink.send(opened(deadlock()));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message, "the web hook answered 401: who are you");
  hook.answer(429);
  EXPECT_EQ(sink.send(opened(deadlock())).error().code, ErrorCode::kIo);

  hook.silence();
  const auto start = std::chrono::steady_clock::now();
  const auto silent = sink.send(opened(deadlock()));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  ASSERT_FALSE(silent.ok());
  EXPECT_EQ(silent.error().code, ErrorCode::kIo);
  EXPECT_NE(silent.error().message.find("timed out after 300 ms waiting for the answer"),
            std::string::npos)
      << silent.error().message;
}

TEST(WebhookSink, NothingListeningIsForLater) {
  std::string url;
  {
    Receiver gone;
    url = gone.url("/h");
  }
  WebhookSink sink(at(url), "db1");
  const auto failed = sink.send(opened(deadlock()));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kIo);
  EXPECT_NE(failed.error().message.find("cannot connect"), std::string::npos)
      << failed.error().message;
}

TEST(HttpExchange, AChunkedBodyIsJoinedAndTheStatusRead) {
  const std::string answer =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  EXPECT_TRUE(httpResponseComplete(answer));
  EXPECT_EQ(httpStatus(answer), 200);
  EXPECT_EQ(httpBody(answer), "hello world");
  EXPECT_FALSE(httpResponseComplete("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"));
  EXPECT_EQ(httpStatus("SSH-2.0-OpenSSH"), 0);
}

}  // namespace
}  // namespace wctmon
