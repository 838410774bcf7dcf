#include "api/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "api/connection_front.h"
#include "api/local_socket.h"
#include "core/listen_address.h"
#include "os/owned_files.h"

namespace wctmon::api {
namespace {

constexpr int kMaxRequestBytes = 64 * 1024;
constexpr int kMaxResponseBytes = 64 * 1024 * 1024;
constexpr int kMaxStreamsPerConnection = 256;
constexpr const char* kServiceName = "wctmon.v1.Monitor";
/// Health Watch calls open at once: they need no token.
constexpr std::size_t kMaxHealthWatches = 64;

std::filesystem::path underStateDir(const std::filesystem::path& state_dir,
                                    const std::filesystem::path& file) {
  std::error_code ec;
  // Absolute: the token files are published by these names (tokenFilesOf) for clients that run
  // in another directory.
  auto absolute = std::filesystem::absolute(file.is_absolute() ? file : state_dir / file, ec);
  return ec ? state_dir / file : absolute;
}

/// Where the service publishes, beside its Unix socket, the token files of that socket
/// ("/run/wctmon/api.sock.token-files"): wctctl then sends the token of the service it talks to,
/// never another's (client/connection.cpp reads it).
std::filesystem::path tokenFilesOf(const std::filesystem::path& socket) {
  return socket.string() + ".token-files";
}

/// Writes tokenFilesOf(socket): readable by all (it names files, it holds no secret; UMask=0077
/// would make it the service's alone), replaced whole so that a client never reads half.
Status publishTokenFiles(const std::filesystem::path& socket,
                         const std::filesystem::path& admin_file,
                         const std::filesystem::path& reader_file) {
  const auto published = tokenFilesOf(socket);
  const auto temporary = std::filesystem::path(published.string() + ".new");
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << "# wctmond: the token files of the service that listens on the socket beside this "
           "file.\n"
        << "# wctctl reads the first it may of these; no other token is sent to that socket.\n"
        << "admin_token_file=" << admin_file.string() << "\n"
        << "reader_token_file=" << reader_file.string() << "\n";
    if (!out.flush()) {
      return makeError(ErrorCode::kIo, "cannot write " + temporary.string());
    }
  }
  std::error_code ec;
  std::filesystem::permissions(
      temporary,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
          std::filesystem::perms::group_read | std::filesystem::perms::others_read,
      ec);
  if (!ec) std::filesystem::rename(temporary, published, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return makeError(ErrorCode::kIo, "cannot publish " + published.string() + ": " + ec.message());
  }
  return std::monostate{};
}

Result<std::string> readPem(const std::filesystem::path& file, const char* what) {
  std::ifstream in(file);
  if (!in) {
    return makeError(ErrorCode::kIo, std::string("cannot read the API's ") + what + " " +
                                         file.string() + ": " +
                                         std::error_code(errno, std::generic_category()).message());
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The credentials of TCP listeners: TLS when configured, else none (loopback only, which the
/// configuration enforces).
Result<std::shared_ptr<grpc::ServerCredentials>> tcpCredentials(const Config::Api& config) {
  if (config.tls_cert_file.empty() && config.tls_key_file.empty()) {
    return grpc::InsecureServerCredentials();
  }
  if (config.tls_cert_file.empty() || config.tls_key_file.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     "api.tls.cert_file and api.tls.key_file go together: set both for TLS");
  }
  auto cert = readPem(config.tls_cert_file, "certificate (api.tls.cert_file)");
  if (!cert) return cert.error();
  auto key = readPem(config.tls_key_file, "private key (api.tls.key_file)");
  if (!key) return key.error();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!config.tls_client_ca_file.empty()) {
    auto ca = readPem(config.tls_client_ca_file, "client CA (api.tls.client_ca_file)");
    if (!ca) return ca.error();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

Result<std::unique_ptr<ApiServer>> ApiServer::start(const Config::Api& config,
                                                    const std::filesystem::path& state_dir,
                                                    Dependencies deps) {
  std::unique_ptr<ApiServer> server(new ApiServer());
  const auto admin_file = underStateDir(state_dir, config.admin_token_file);
  const auto reader_file = underStateDir(state_dir, config.reader_token_file);
  auto tokens = Tokens::load(admin_file, reader_file);
  if (!tokens) return tokens.error();
  // Members of the group read with the reader token, as Performance Monitor Users do on Windows;
  // each start gives it again, to a token an earlier version made 0600 too.
  const auto group = findLocalGroup(config.group);
  if (localSocketsSupported() && !config.group.empty()) {
    if (group) {
      if (auto shared = shareWithGroup(reader_file, *group); !shared) return shared.error();
      spdlog::info(
          "members of group {} use the API: its Unix sockets are root:{} 0660, the "
          "reader token {} root:{} 0640",
          group->name, group->name, reader_file.string(), group->name);
    } else {
      spdlog::info(
          "no group named {} here (api.group): the API's Unix sockets and token files "
          "stay root's; create it (addgroup --system {}) and restart to let its members "
          "use wctctl",
          config.group, config.group);
    }
  }
  server->tokens_ = std::make_unique<Tokens>(std::move(*tokens));
  server->service_ = std::make_unique<MonitorService>(MonitorService::Dependencies{
      deps.monitor, deps.incidents, deps.targets, deps.analysis, deps.store, deps.control,
      *server->tokens_, std::move(deps.work), config.watch_queue,
      [raw = server.get()](const std::string& grpc_peer) {
        return raw->front_ ? raw->front_->peerOf(grpc_peer) : grpc_peer;
      }});

  auto tcp = tcpCredentials(config);
  if (!tcp) return tcp.error();
  const bool tls = !config.tls_cert_file.empty();

  // Health is answered by the API's own service (api/health_service.h), not gRPC's default one.
  server->health_ =
      std::make_unique<HealthService>(std::set<std::string>{"", kServiceName}, kMaxHealthWatches);
  // Reflection v1alpha is gRPC's plugin; v1, the API's own.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  server->reflection_ = std::make_unique<ReflectionService>(std::vector<std::string>{
      kServiceName, grpc::health::v1::Health::service_full_name(),
      grpc::reflection::v1::ServerReflection::service_full_name(),
      "grpc.reflection.v1alpha.ServerReflection"});  // the plugin's, whose header is internal
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  builder.SetMaxSendMessageSize(kMaxResponseBytes);
  // Streams open at once on one connection: a client that opens them and never reads holds
  // their memory until its watch queue is full.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
  builder.RegisterService(server->service_.get());
  builder.RegisterService(server->health_.get());
  builder.RegisterService(server->reflection_.get());
  // Unix sockets and plain TCP go through the API's own listeners where the platform has them
  // (api/connection_front.h); TLS and the rest, gRPC's.
  std::vector<ListenAddress> fronted;
  std::vector<std::optional<std::size_t>> front_index(config.listen.size());
  std::vector<int> ports(config.listen.size(), 0);
  for (std::size_t i = 0; i < config.listen.size(); ++i) {
    const auto address = parseListenAddress(config.listen[i]);
    if (!address)
      return makeError(ErrorCode::kInvalidArgument, "api.listen: " + address.error().message);
    if (address->isUnix()) {
      if (!localSocketsSupported()) {
        return makeError(ErrorCode::kInvalidArgument,
                         "api.listen: " + config.listen[i] +
                             ": Unix sockets are not served on this system; listen on "
                             "127.0.0.1:PORT");
      }
      std::error_code ec;
      std::filesystem::create_directories(address->unix_path.parent_path(), ec);
      if (ec) {
        return makeError(ErrorCode::kIo, "cannot make the directory of the API socket " +
                                             address->unix_path.string() + ": " + ec.message());
      }
      // Whoever may write in it may put a link where the socket is made, and have the service
      // give its own mode to another file.
      if (auto why = checkOwnedDirectory(address->unix_path.parent_path()); !why.empty()) {
        return makeError(ErrorCode::kInvalidArgument,
                         "api.listen: the directory " + address->unix_path.parent_path().string() +
                             " of the API socket: " + why);
      }
      // A socket left by a service that did not stop cleanly would refuse the bind; one that a
      // running service answers on is that service's, and stays.
      if (socketAnswers(address->unix_path)) {
        return makeError(ErrorCode::kBusy, "another service answers on the API socket " +
                                               address->unix_path.string() +
                                               " (api.listen): stop it, or listen elsewhere");
      }
      // Only a socket is removed: a file, a directory or a link at that path is someone's (a
      // mistyped api.listen must not delete it).
      const auto found = std::filesystem::symlink_status(address->unix_path, ec);
      if (std::filesystem::exists(found) && !std::filesystem::is_socket(found)) {
        return makeError(ErrorCode::kInvalidArgument,
                         "api.listen: " + address->unix_path.string() +
                             " is there and is not a socket: it is left as it is; name a path "
                             "for the API socket that is free or a socket");
      }
      std::filesystem::remove(address->unix_path, ec);
      server->sockets_.push_back(address->unix_path);
    }
    if (ConnectionFront::supported() && (address->isUnix() || !tls)) {
      front_index[i] = fronted.size();
      fronted.push_back(*address);
    } else {
      builder.AddListeningPort(config.listen[i],
                               address->isUnix() ? grpc::InsecureServerCredentials() : *tcp,
                               &ports[i]);
    }
  }
  if (!fronted.empty()) {
    auto front = ConnectionFront::listen(fronted);
    if (!front) return front.error();
    server->front_ = std::move(front).value();
  }
  server->server_ = builder.BuildAndStart();
  if (!server->server_) {
    std::string all;
    for (const auto& l : config.listen) all += (all.empty() ? "" : ", ") + l;
    return makeError(ErrorCode::kIo, "the API cannot listen on " + all +
                                         " (an address in use, or not this host's?)");
  }
  const auto front_listening =
      server->front_ ? server->front_->listening() : std::vector<std::string>{};
  for (std::size_t i = 0; i < config.listen.size(); ++i) {
    const auto address = parseListenAddress(config.listen[i]);
    if (address->isUnix()) {
      if (auto restricted = restrictSocket(address->unix_path, group); !restricted) {
        server->stop(std::chrono::milliseconds(0));
        return restricted.error();
      }
      if (auto published = publishTokenFiles(address->unix_path, admin_file, reader_file);
          !published) {
        server->stop(std::chrono::milliseconds(0));
        return published.error();
      }
    }
    if (front_index[i]) {
      server->listening_.push_back(address->isUnix() ? config.listen[i]
                                                     : front_listening[*front_index[i]]);
    } else if (address->isUnix()) {
      server->listening_.push_back(config.listen[i]);
    } else {
      if (ports[i] == 0) {
        server->stop(std::chrono::milliseconds(0));
        return makeError(ErrorCode::kIo, "the API cannot listen on " + config.listen[i]);
      }
      const bool v6 = address->host.find(':') != std::string::npos;
      server->listening_.push_back((v6 ? "[" + address->host + "]" : address->host) + ":" +
                                   std::to_string(ports[i]));
    }
  }
  if (server->front_) server->front_->serve(*server->server_);
  server->setServing(true);
  return server;
}

ApiServer::~ApiServer() { stop(std::chrono::milliseconds(0)); }

void ApiServer::setServing(bool serving) {
  // Called from the scheduler's threads while stop() may be releasing the server.
  std::lock_guard lock(serving_mutex_);
  if (server_ == nullptr) return;
  health_->setServing(serving);
}

void ApiServer::stop(std::chrono::milliseconds deadline) {
  if (server_ != nullptr) {
    if (front_) front_->stopAccepting();
    // Streams would otherwise hold the shutdown to its deadline.
    service_->endStreams();
    health_->endAll();
    server_->Shutdown(std::chrono::system_clock::now() + deadline);
    server_->Wait();
  }
  if (front_) front_->stop();
  {
    std::lock_guard lock(serving_mutex_);
    server_.reset();
  }
  // Also after a start that failed once a socket was made (another address in use): the file
  // would otherwise stay behind, though nothing answers on it.
  for (const auto& socket : sockets_) {
    std::error_code ignored;
    // Whatever was put in their place since is not the service's to delete.
    if (std::filesystem::is_socket(std::filesystem::symlink_status(socket, ignored))) {
      std::filesystem::remove(socket, ignored);
    }
    const auto published = tokenFilesOf(socket);
    if (std::filesystem::is_regular_file(std::filesystem::symlink_status(published, ignored))) {
      std::filesystem::remove(published, ignored);
    }
  }
  sockets_.clear();
}

}  // namespace wctmon::api
