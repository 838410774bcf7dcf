#pragma once
// The certificate authorities a host trusts, for the service's HTTPS posts (the alert sinks)
// where no CA file is configured.

#include <boost/asio/ssl/context.hpp>
#include <optional>
#include <string>

namespace wctmon {

/// Makes `tls` trust what the system trusts: OpenSSL's default paths (Debian's /etc/ssl/certs)
/// on Linux; the Windows certificate store ROOT on Windows, which OpenSSL, built into the service
/// there, would not read. Why it could not, or nothing.
[[nodiscard]] std::optional<std::string> trustSystemCas(boost::asio::ssl::context& tls);

}  // namespace wctmon
