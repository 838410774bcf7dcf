#include "client/connection.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <tuple>

#include "client/defaults.h"
#include "client/exit_codes.h"
#include "client/token_files.h"
#include "model/format.h"

namespace wctmon::client {
namespace {

/// The service's answers can be large (an incident with every stack); its own limit.
constexpr int kMaxResponseBytes = 64 * 1024 * 1024;

/// The whole of `file`, or nothing with the system's reason in `why`.
std::optional<std::string> readWhole(const std::string& file, std::string& why) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  return text.str();
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

bool isUnix(const std::string& server) { return server.rfind("unix:", 0) == 0; }

}  // namespace

std::string defaultServer() {
  std::error_code ec;
  const auto& d = defaults();
  return !d.socket.empty() && std::filesystem::exists(d.socket, ec) ? "unix:" + d.socket.string()
                                                                    : d.tcp;
}

std::variant<std::unique_ptr<Connection>, Failure> Connection::open(ConnectionOptions options) {
  if (options.server.empty()) options.server = defaultServer();
  std::unique_ptr<Connection> c(new Connection(std::move(options)));
  const auto& o = c->options_;

  std::string why;
  if (!o.token_file.empty()) {
    const auto token = readWhole(o.token_file, why);
    if (!token)
      return Failure{kExitDenied, "cannot read the token file " + o.token_file + ": " + why};
    c->token_file_ = o.token_file;
    c->token_ = trimmed(*token);
  } else {
    // The admin token grants every call; a user who may read only the reader's gets the calls
    // of a reader. Only the files of the service on that server: never another one's token.
    c->token_candidates_ = tokenFilesFor(o.server);
    for (const auto& file : c->token_candidates_) {
      if (const auto token = readWhole(file.string(), why)) {
        c->token_file_ = file.string();
        c->token_ = trimmed(*token);
        break;
      }
    }
  }

  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxResponseBytes);
  // A watch that reconnects finds the service back within seconds of its restart, not after
  // gRPC's default backoff of up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  if (o.tls) {
    if (isUnix(o.server)) {
      return Failure{kExitUsage, "--tls is for TCP servers; the Unix socket is local and plain"};
    }
    grpc::SslCredentialsOptions ssl;
    for (const auto& [file, field, what] :
         {std::tuple{o.ca_file, &ssl.pem_root_certs, "CA file (--ca-file)"},
          std::tuple{o.cert_file, &ssl.pem_cert_chain, "certificate (--cert-file)"},
          std::tuple{o.key_file, &ssl.pem_private_key, "private key (--key-file)"}}) {
      if (file.empty()) continue;
      const auto pem = readWhole(file, why);
      if (!pem)
        return Failure{kExitError,
                       std::string("cannot read the ") + what + " " + file + ": " + why};
      *field = *pem;
    }
    if (ssl.pem_cert_chain.empty() != ssl.pem_private_key.empty()) {
      return Failure{kExitUsage,
                     "--cert-file and --key-file go together: give both for mutual TLS"};
    }
    credentials = grpc::SslCredentials(ssl);
    if (!o.tls_server_name.empty()) args.SetSslTargetNameOverride(o.tls_server_name);
  }
  c->channel_ = grpc::CreateCustomChannel(o.server, credentials, args);
  c->monitor_ = v1::Monitor::NewStub(c->channel_);
  c->health_ = grpc::health::v1::Health::NewStub(c->channel_);
  return c;
}

std::unique_ptr<grpc::ClientContext> Connection::context(bool streaming) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!streaming) context->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  if (!token_.empty()) context->AddMetadata("authorization", "Bearer " + token_);
  return context;
}

bool Connection::connected() const { return channel_->GetState(false) == GRPC_CHANNEL_READY; }

bool Connection::waitForConnection(std::chrono::steady_clock::time_point deadline,
                                   const std::function<bool()>& stop) {
  constexpr auto kSlice = std::chrono::milliseconds(250);
  for (;;) {
    const auto state = channel_->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || stop()) return false;
    (void)channel_->WaitForStateChange(
        state, std::chrono::system_clock::now() +
                   std::min<std::chrono::steady_clock::duration>(kSlice, deadline - now));
  }
}

Failure Connection::explain(const grpc::Status& status) const {
  const std::string said = status.error_message();
  // The service answered when the channel stands connected: its UNAVAILABLE or deadline is about
  // the call, not about reaching it.
  const bool reached = channel_->GetState(false) == GRPC_CHANNEL_READY;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (reached) return {kExitError, "unavailable: " + said};
      if (said.find("Permission denied") != std::string::npos) {
        return {kExitDenied,
                "permission denied: cannot connect to the socket (root or its group may): " + said};
      }
      return {kExitUnavailable, "cannot connect (is wctmond running, its API enabled?): " + said};
    case grpc::StatusCode::DEADLINE_EXCEEDED: {
      const auto timeout = durationText(options_.timeout);
      if (reached) return {kExitError, "no answer within " + timeout + " (--timeout)"};
      return {kExitUnavailable,
              "cannot connect within " + timeout + " (is wctmond running, its API enabled?)" +
                  (said.empty() || said == "Deadline Exceeded" ? "" : ": " + said)};
    }
    case grpc::StatusCode::UNAUTHENTICATED:
      if (token_file_.empty() && token_candidates_.empty()) {
        return {kExitDenied, "unauthenticated: no token: " + options_.server +
                                 " is not the default service and publishes no token files "
                                 "beside its socket: give --token-file FILE"};
      }
      if (token_file_.empty()) {
        std::string files;
        for (const auto& file : token_candidates_) {
          files += (files.empty() ? "" : " nor ") + file.string();
        }
        return {kExitDenied, "unauthenticated: no token: neither " + files +
                                 " can be read here (run as " + defaults().token_readers +
                                 ", or give --token-file FILE)"};
      }
      return {kExitDenied, "unauthenticated: the service does not accept the token in " +
                               token_file_ + " (" + said + ")"};
    case grpc::StatusCode::PERMISSION_DENIED:
      if (said.find("reader token") != std::string::npos) {
        return {kExitDenied, "permission denied: this call needs the admin token (token file " +
                                 token_file_ + " is the reader's)"};
      }
      return {kExitDenied, "permission denied: " + said};
    case grpc::StatusCode::UNIMPLEMENTED:
      return {kExitError, "the service does not offer this call (an older wctmond?): " + said};
    case grpc::StatusCode::CANCELLED:
      return {kExitError, "cancelled: " + said};
    default:
      // NOT_FOUND, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, INTERNAL...: the service's words say it.
      return {kExitError,
              said.empty() ? "gRPC status " + std::to_string(status.error_code()) : said};
  }
}

}  // namespace wctmon::client
