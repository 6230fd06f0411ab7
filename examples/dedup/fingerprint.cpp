// dedup/fingerprint.cpp: SHA-256 through OpenSSL's EVP interface.
#include "dedup/fingerprint.hpp"

#include <openssl/evp.h>

#include <utility>

namespace coact::dedup {

Fingerprint sha256(std::span<const uint8_t> data) {
  Fingerprint out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 || len != out.size())
    throw dedup_error("SHA-256 failed (OpenSSL EVP_Digest)");
  return out;
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(ctx_);
    throw dedup_error("SHA-256 init failed (OpenSSL)");
  }
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(ctx_); }

Sha256Stream::Sha256Stream(Sha256Stream&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}

Sha256Stream& Sha256Stream::operator=(Sha256Stream&& o) noexcept {
  std::swap(ctx_, o.ctx_);
  return *this;
}

void Sha256Stream::update(const void* data, size_t n) {
  if (EVP_DigestUpdate(ctx_, data, n) != 1) throw dedup_error("SHA-256 update failed (OpenSSL)");
}

Fingerprint Sha256Stream::finish() {
  Fingerprint out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, out.data(), &len) != 1 || len != out.size() ||
      EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1)
    throw dedup_error("SHA-256 final failed (OpenSSL)");
  return out;
}

Sha1Fingerprinter::Sha1Fingerprinter() : md_(EVP_MD_fetch(nullptr, "SHA1", nullptr)), ctx_(EVP_MD_CTX_new()) {
  if (!md_ || !ctx_) {
    EVP_MD_free(md_);
    EVP_MD_CTX_free(ctx_);
    throw dedup_error("SHA-1 init failed (OpenSSL EVP_MD_fetch)");
  }
}

Sha1Fingerprinter::~Sha1Fingerprinter() {
  EVP_MD_CTX_free(ctx_);
  EVP_MD_free(md_);
}

Fingerprint Sha1Fingerprinter::operator()(std::span<const uint8_t> data) {
  Fingerprint out{};
  unsigned int len = 0;
  if (EVP_DigestInit_ex(ctx_, md_, nullptr) != 1 || EVP_DigestUpdate(ctx_, data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx_, out.data(), &len) != 1 || len != 20)
    throw dedup_error("SHA-1 failed (OpenSSL EVP)");
  return out;  // bytes 20..31 stay zero
}

Fingerprint sha1_fingerprint(std::span<const uint8_t> data) {
  Fingerprint out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha1(), nullptr) != 1 || len != 20)
    throw dedup_error("SHA-1 failed (OpenSSL EVP_Digest)");
  return out;
}

std::string to_hex(const Fingerprint& fp) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(fp.size() * 2);
  for (uint8_t b : fp) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 15]);
  }
  return s;
}

}  // namespace coact::dedup
