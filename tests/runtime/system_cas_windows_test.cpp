// The system's certificate authorities on Windows: the certificate store ROOT, which the
// service's own OpenSSL would not read, trusted by the alert sinks' HTTPS posts that name no CA
// file. Under Wine, and natively.
// clang-format off
#include <windows.h>
// wincrypt.h needs windows.h first, and OpenSSL's headers after it (they undefine its X509_NAME).
#include <wincrypt.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "runtime/system_cas.h"
// clang-format on

namespace wctmon {
namespace {

// A root made for this test alone (100 years), in no store, and a receiver's certificate it
// signed.
constexpr const char* kRoot =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBqzCCAVGgAwIBAgIUNf60bS8pkTLV1r7UduUAgjcv1PYwCgYIKoZIzj0EAwIw\n"
    "KjEoMCYGA1UEAwwfd2N0bW9uIHRlc3Qgcm9vdCAoc3lzdGVtIHN0b3JlKTAgFw0y\n"
    "NjExMjgwMjQxNDFaGA8yMTI2MTEwNDAyNDE0MVowKjEoMCYGA1UEAwwfd2N0bW9u\n"
    "IHRlc3Qgcm9vdCAoc3lzdGVtIHN0b3JlKTBZMBMGByqGSM49AgEGCCqGSM49AwEH\n"
    "A0IABOmq8Bh6yeTBlWZxAIP3l6uJYAiYIK8g6Cu5/CAs8/OW5RTwxrZJpj6OfRxY\n"
    "6JvKV3mhS0eYH2TgPxeBfuvxZZajUzBRMB0GA1UdDgQWBBS9Vlac7+LVHgmm5lqq\n"
    "W0JJsThilDAfBgNVHSMEGDAWgBS9Vlac7+LVHgmm5lqqW0JJsThilDAPBgNVHRMB\n"
    "Af8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIECTtAbmYLiq3wcqf0ubhTtP7xew\n"
    "PIxEnmQQFCPGTxfhAiEAqgGIjrQIrNumVGVzRXTtLnRXbCk3yO/Qq+sikorLiNk=\n"
    "-----END CERTIFICATE-----\n";
constexpr const char* kReceiver =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBPzCB5QIUQAPKr0+ENOjfT4CU+Lh8R/S+nIgwCgYIKoZIzj0EAwIwKjEoMCYG\n"
    "A1UEAwwfd2N0bW9uIHRlc3Qgcm9vdCAoc3lzdGVtIHN0b3JlKTAgFw0yNjExMjgw\n"
    "MjQxNDFaGA8yMTI2MTEwNDAyNDE0MVowGDEWMBQGA1UEAwwNcmVjZWl2ZXIudGVz\n"
    "dDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABCyxCadFu2Ob2tl82onTfOsPGsL3\n"
    "QOvyiM1X2jK2vVFJ7nVeHJG5wX3i6jqcl5+hlK4SSB6K/R4ze0eJqiFap1gwCgYI\n"
    "KoZIzj0EAwIDSQAwRgIhAM8f13DVDStWEbxZQWjsjYM6UNz/vF48H+FypSr9o/D0\n"
    "AiEAqM5+xtFwLRH1cGmALxugnjffEFxR4E5hJsDchhZlVLM=\n"
    "-----END CERTIFICATE-----\n";

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;

X509Ptr parse(const char* pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem, -1), &BIO_free);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
}

/// A TLS client context that trusts what the system trusts.
std::unique_ptr<boost::asio::ssl::context> systemContext() {
  auto tls = std::make_unique<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
  if (auto failed = trustSystemCas(*tls)) ADD_FAILURE() << *failed;
  return tls;
}

/// Whether `tls` trusts `certificate` as a trust anchor (a certificate of its store, at any
/// date) or through one.
bool trusts(boost::asio::ssl::context& tls, X509* certificate) {
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> check(X509_STORE_CTX_new(),
                                                                        &X509_STORE_CTX_free);
  X509_STORE_CTX_init(check.get(), SSL_CTX_get_cert_store(tls.native_handle()), certificate,
                      nullptr);
  X509_STORE_CTX_set_flags(check.get(), X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_NO_CHECK_TIME);
  return X509_verify_cert(check.get()) == 1;
}

// Under Wine the store ROOT is the host's trusted roots (/etc/ssl/certs), made again at each
// opening: a root added to it cannot be shown to be trusted then, only each one it holds.
TEST(SystemCas, EveryRootOfTheWindowsStoreIsTrusted) {
  const auto tls = systemContext();
  HCERTSTORE store = ::CertOpenSystemStoreW(0, L"ROOT");
  ASSERT_NE(store, nullptr) << ::GetLastError();
  int roots = 0;
  int trusted = 0;
  for (PCCERT_CONTEXT c = ::CertEnumCertificatesInStore(store, nullptr); c != nullptr;
       c = ::CertEnumCertificatesInStore(store, c)) {
    const unsigned char* der = c->pbCertEncoded;
    X509Ptr root(d2i_X509(nullptr, &der, static_cast<long>(c->cbCertEncoded)), &X509_free);
    if (!root) continue;
    ++roots;
    trusted += trusts(*tls, root.get()) ? 1 : 0;
  }
  ::CertCloseStore(store, 0);
  EXPECT_GT(roots, 0);
  EXPECT_EQ(trusted, roots);
}

TEST(SystemCas, AReceiverSignedByARootOutsideTheStoreIsNotTrusted) {
  const auto tls = systemContext();
  const auto root = parse(kRoot);
  const auto receiver = parse(kReceiver);
  ASSERT_TRUE(root && receiver);
  EXPECT_FALSE(trusts(*tls, receiver.get()));
  EXPECT_FALSE(trusts(*tls, root.get()));
  // The same check takes the receiver once its root is trusted: it can tell them apart.
  ASSERT_EQ(X509_STORE_add_cert(SSL_CTX_get_cert_store(tls->native_handle()), root.get()), 1);
  EXPECT_TRUE(trusts(*tls, receiver.get()));
}

}  // namespace
}  // namespace wctmon
