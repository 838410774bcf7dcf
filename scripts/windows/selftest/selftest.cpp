// Proves a Windows dependency prefix: each library links statically and does real work under Wine.
// WCTMON_SELFTEST_CERT / WCTMON_SELFTEST_KEY name a PEM certificate (for IP 127.0.0.1) and its key.
#include <absl/strings/str_cat.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "selftest.grpc.pb.h"

namespace {

std::string readFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class EchoService final : public selftest::Echo::Service {
  grpc::Status Say(grpc::ServerContext*, const selftest::Ping* request,
                   selftest::Ping* reply) override {
    reply->set_text(absl::StrCat("echo: ", request->text()));
    return grpc::Status::OK;
  }
};

// Starts a server on an ephemeral loopback port, calls it once, returns the reply's text.
std::string roundTrip(const std::shared_ptr<grpc::ServerCredentials>& serverCredentials,
                      const std::shared_ptr<grpc::ChannelCredentials>& channelCredentials) {
  EchoService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", serverCredentials, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  EXPECT_NE(server, nullptr);
  EXPECT_GT(port, 0);
  if (server == nullptr || port <= 0) return {};

  auto stub = selftest::Echo::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), channelCredentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  selftest::Ping request;
  request.set_text("hi");
  selftest::Ping reply;
  const grpc::Status status = stub->Say(&context, request, &reply);
  server->Shutdown();
  EXPECT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  return reply.text();
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual long now() const = 0;
};

class MockClock : public Clock {
 public:
  MOCK_METHOD(long, now, (), (const, override));
};

}  // namespace

TEST(Selftest, Trivial) { EXPECT_EQ(1 + 1, 2); }

TEST(Grpc, InsecureServerAnswers) {
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  EXPECT_EQ(roundTrip(grpc::InsecureServerCredentials(), grpc::InsecureChannelCredentials()),
            "echo: hi");
}

TEST(Grpc, TlsServerAnswers) {
  const char* certPath = std::getenv("WCTMON_SELFTEST_CERT");
  const char* keyPath = std::getenv("WCTMON_SELFTEST_KEY");
  ASSERT_TRUE(certPath != nullptr && keyPath != nullptr)
      << "set WCTMON_SELFTEST_CERT and WCTMON_SELFTEST_KEY";
  const std::string cert = readFile(certPath);
  ASSERT_FALSE(cert.empty());
  grpc::SslServerCredentialsOptions serverOptions;
  serverOptions.pem_key_cert_pairs.push_back({readFile(keyPath), cert});
  grpc::SslCredentialsOptions channelOptions;
  channelOptions.pem_root_certs = cert;
  EXPECT_EQ(
      roundTrip(grpc::SslServerCredentials(serverOptions), grpc::SslCredentials(channelOptions)),
      "echo: hi");
}

TEST(Protobuf, JsonMapping) {
  selftest::Ping ping;
  ping.set_text("x");
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(ping, &json).ok());
  EXPECT_EQ(json, R"({"text":"x"})");
}

TEST(OpenSsl, Sha256) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  ASSERT_EQ(EVP_Digest("abc", 3, digest.data(), &size, EVP_sha256(), nullptr), 1);
  ASSERT_EQ(size, 32U);
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[31], 0xad);
}

TEST(Zlib, RoundTrip) {
  const std::string text(1000, 'w');
  std::vector<Bytef> packed(compressBound(text.size()));
  uLongf packedSize = packed.size();
  ASSERT_EQ(compress(packed.data(), &packedSize, reinterpret_cast<const Bytef*>(text.data()),
                     text.size()),
            Z_OK);
  std::string unpacked(text.size(), '\0');
  uLongf unpackedSize = unpacked.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(unpacked.data()), &unpackedSize, packed.data(),
                       packedSize),
            Z_OK);
  EXPECT_EQ(unpacked, text);
}

TEST(Sqlite, WalFileStore) {
  std::remove("selftest.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open("selftest.db", &db), SQLITE_OK);
  std::string mode;
  auto keepFirst = [](void* out, int, char** values, char**) {
    *static_cast<std::string*>(out) = values[0] != nullptr ? values[0] : "";
    return 0;
  };
  EXPECT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL", keepFirst, &mode, nullptr), SQLITE_OK);
  EXPECT_EQ(mode, "wal");
  EXPECT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  std::string count;
  EXPECT_EQ(sqlite3_exec(db, "SELECT count(*) FROM t", keepFirst, &count, nullptr), SQLITE_OK);
  EXPECT_EQ(count, "2");
  EXPECT_STREQ(sqlite3_libversion(), SQLITE_VERSION);
  sqlite3_close(db);
  std::remove("selftest.db");
}

TEST(Prometheus, PullEndpointServesOverAsio) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("selftest_requests_total")
      .Register(*registry)
      .Add({})
      .Increment(3);
  prometheus::Exposer exposer{"127.0.0.1:0"};
  exposer.RegisterCollectable(registry);
  ASSERT_FALSE(exposer.GetListeningPorts().empty());
  const int port = exposer.GetListeningPorts().front();

  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  boost::asio::write(socket, boost::asio::buffer(request));
  std::string response;
  boost::system::error_code error;
  boost::asio::read(socket, boost::asio::dynamic_buffer(response), error);
  EXPECT_EQ(error, boost::asio::error::eof);
  EXPECT_THAT(response, testing::HasSubstr("200 OK"));
  EXPECT_THAT(response, testing::HasSubstr("selftest_requests_total 3"));
}

TEST(HeaderOnly, JsonSpdlogFmtCli11) {
  const auto json = nlohmann::json::parse(R"({"interval_ms": 250})");
  EXPECT_EQ(json.at("interval_ms").get<int>(), 250);
  EXPECT_EQ(fmt::format("{:>4}", 7), "   7");
  spdlog::info("selftest: spdlog {} header-only", SPDLOG_VER_MAJOR);

  CLI::App app{"selftest"};
  int interval = 0;
  app.add_option("--interval", interval);
  app.parse("--interval 5", false);
  EXPECT_EQ(interval, 5);
}

TEST(Gmock, Expectations) {
  MockClock clock;
  EXPECT_CALL(clock, now()).WillOnce(testing::Return(42));
  const Clock& asClock = clock;
  EXPECT_EQ(asClock.now(), 42);
}
