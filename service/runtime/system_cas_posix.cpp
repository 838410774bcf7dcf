#include "runtime/system_cas.h"

namespace wctmon {

std::optional<std::string> trustSystemCas(boost::asio::ssl::context& tls) {
  boost::system::error_code ec;
  tls.set_default_verify_paths(ec);
  if (ec) return ec.message();
  return std::nullopt;
}

}  // namespace wctmon
