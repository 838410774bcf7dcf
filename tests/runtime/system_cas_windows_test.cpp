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
#include <vector>

#include "runtime/system_cas.h"
// clang-format on

namespace wctmon {
namespace {

// A root made for this test alone (100 years), and a receiver's certificate it signed.
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

/// Whether a TLS client context that trusts what the system trusts takes the receiver's
/// certificate.
bool systemTrustsReceiver() {
  boost::asio::ssl::context tls(boost::asio::ssl::context::tls_client);
  if (auto failed = trustSystemCas(tls)) {
    ADD_FAILURE() << *failed;
    return false;
  }
  const auto receiver = parse(kReceiver);
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> check(X509_STORE_CTX_new(),
                                                                        &X509_STORE_CTX_free);
  X509_STORE_CTX_init(check.get(), SSL_CTX_get_cert_store(tls.native_handle()), receiver.get(),
                      nullptr);
  return X509_verify_cert(check.get()) == 1;
}

TEST(SystemCas, ARootAddedToTheWindowsStoreIsTrustedAndOnlyThen) {
  ASSERT_FALSE(systemTrustsReceiver()) << "the test's root is trusted before it is added";

  const auto root = parse(kRoot);
  ASSERT_NE(root, nullptr);
  unsigned char* der = nullptr;
  const int size = i2d_X509(root.get(), &der);
  ASSERT_GT(size, 0);
  const std::vector<BYTE> encoded(der, der + size);
  OPENSSL_free(der);

  // The current user's ROOT, as an operator's import into "Trusted Root Certification
  // Authorities" puts it.
  HCERTSTORE store =
      ::CertOpenStore(CERT_STORE_PROV_SYSTEM_W, 0, 0, CERT_SYSTEM_STORE_CURRENT_USER, L"Root");
  ASSERT_NE(store, nullptr) << ::GetLastError();
  PCCERT_CONTEXT added = nullptr;
  ASSERT_TRUE(::CertAddEncodedCertificateToStore(store, X509_ASN_ENCODING, encoded.data(),
                                                 static_cast<DWORD>(encoded.size()),
                                                 CERT_STORE_ADD_REPLACE_EXISTING, &added))
      << ::GetLastError();
  const bool trusted = systemTrustsReceiver();
  ::CertDeleteCertificateFromStore(added);  // frees `added`
  ::CertCloseStore(store, 0);
  EXPECT_TRUE(trusted);
  EXPECT_FALSE(systemTrustsReceiver()) << "still trusted once removed from the store";
}

}  // namespace
}  // namespace wctmon
