// clang-format off
#include <windows.h>
// wincrypt.h needs windows.h first, and OpenSSL's headers after it (they undefine its X509_NAME).
#include <wincrypt.h>
#include <openssl/x509.h>

#include "runtime/system_cas.h"
// clang-format on

namespace wctmon {

std::optional<std::string> trustSystemCas(boost::asio::ssl::context& tls) {
  // The current user's ROOT store, which includes the machine's (LocalSystem's, for the service).
  HCERTSTORE store = ::CertOpenSystemStoreW(0, L"ROOT");
  if (store == nullptr) {
    return "cannot open the Windows certificate store ROOT (error " +
           std::to_string(::GetLastError()) + ")";
  }
  X509_STORE* trusted = SSL_CTX_get_cert_store(tls.native_handle());
  int added = 0;
  for (PCCERT_CONTEXT c = ::CertEnumCertificatesInStore(store, nullptr); c != nullptr;
       c = ::CertEnumCertificatesInStore(store, c)) {
    const unsigned char* der = c->pbCertEncoded;
    X509* certificate = d2i_X509(nullptr, &der, static_cast<long>(c->cbCertEncoded));
    if (certificate == nullptr) continue;
    // A certificate OpenSSL holds already (the store lists some twice) is no failure.
    if (X509_STORE_add_cert(trusted, certificate) == 1) ++added;
    X509_free(certificate);
  }
  ::CertCloseStore(store, 0);
  if (added == 0) return "the Windows certificate store ROOT holds no certificate";
  return std::nullopt;
}

}  // namespace wctmon
